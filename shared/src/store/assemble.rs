//! Builds a script's text from its Lua files, the one way every domain does: the preludes it
//! begins with (helpers and bindings it shares with other scripts), then its own body.
//!
//! A prelude's helpers that the script never calls, directly or through another helper, are
//! left out. Each top-level `local function` makes a closure on every call, so a status poll
//! would otherwise pay for the promotion's helpers. Their lines stay, empty, so a line number
//! in a Redis error still points at the source file. A helper is a top-level
//! `local function NAME(` up to the next line that is `end` alone.

/// One prelude helper: its name, and the first and last line of its text, 0-based.
struct Helper {
    prelude: usize,
    name: String,
    first: usize,
    last: usize,
}

/// `line` without a comment line, so that a helper named in a comment is not taken for a
/// call.
fn code(line: &str) -> &str {
    if line.trim_start().starts_with("--") {
        ""
    } else {
        line
    }
}

/// Whether `text` names `name` as a whole word.
fn calls(text: &str, name: &str) -> bool {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    text.match_indices(name).any(|(at, _)| {
        !word(text[..at].chars().next_back()) && !word(text[at + name.len()..].chars().next())
    })
}

/// The helpers of `lines`, the lines of prelude `prelude`.
fn helpers(prelude: usize, lines: &[&str]) -> Vec<Helper> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(rest) = lines[i].strip_prefix("local function ") else {
            i += 1;
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // A helper that never reaches an `end` alone is kept whole: nothing after it is
        // taken for its text.
        let Some(last) = (i..lines.len()).find(|&j| lines[j] == "end") else {
            break;
        };
        found.push(Helper {
            prelude,
            name,
            first: i,
            last,
        });
        i = last + 1;
    }
    found
}

/// The script made of `preludes`, in order, each without the helpers nothing calls, then
/// `body`.
pub fn assemble(preludes: &[&str], body: &str) -> String {
    let lines: Vec<Vec<&str>> = preludes
        .iter()
        .map(|prelude| prelude.lines().map(code).collect())
        .collect();
    let helpers: Vec<Helper> = lines
        .iter()
        .enumerate()
        .flat_map(|(prelude, lines)| helpers(prelude, lines))
        .collect();
    let inside = |prelude: usize, n: usize| {
        helpers
            .iter()
            .any(|h| h.prelude == prelude && h.first <= n && n <= h.last)
    };
    // What runs whatever is called: the body, and the preludes' lines outside any helper.
    let mut roots: String = body.lines().map(code).collect::<Vec<_>>().join("\n");
    for (prelude, lines) in lines.iter().enumerate() {
        for (n, line) in lines.iter().enumerate() {
            if !inside(prelude, n) {
                roots.push('\n');
                roots.push_str(line);
            }
        }
    }
    let mut used: Vec<bool> = helpers.iter().map(|h| calls(&roots, &h.name)).collect();
    loop {
        let mut more = false;
        for k in 0..helpers.len() {
            if !used[k] {
                continue;
            }
            let h = &helpers[k];
            let text = lines[h.prelude][h.first + 1..=h.last].join("\n");
            for (m, other) in helpers.iter().enumerate() {
                if !used[m] && calls(&text, &other.name) {
                    used[m] = true;
                    more = true;
                }
            }
        }
        if !more {
            break;
        }
    }
    let left_out = |prelude: usize, n: usize| {
        helpers
            .iter()
            .zip(&used)
            .any(|(h, used)| !used && h.prelude == prelude && h.first <= n && n <= h.last)
    };
    let mut script =
        String::with_capacity(preludes.iter().map(|p| p.len()).sum::<usize>() + body.len());
    for (prelude, text) in preludes.iter().enumerate() {
        for (n, line) in text.lines().enumerate() {
            if !left_out(prelude, n) {
                script.push_str(line);
            }
            script.push('\n');
        }
    }
    script.push_str(body);
    script
}

#[cfg(test)]
mod tests {
    use super::assemble;

    const PRELUDE: &str = "\
-- helpers
local X = 1
local function a()
  return b()
end
local function b()
  return X
end
local function c()
  -- a()
  return 3
end
";

    /// A script carries the helpers it calls, through others too, and not those it never
    /// calls (a name in a comment is no call); the preludes keep their line count, so Redis's
    /// line numbers still match the source.
    #[test]
    fn a_script_carries_only_the_helpers_it_calls() {
        let script = assemble(&[PRELUDE], "return a()\n");
        assert!(script.contains("local function a("));
        assert!(script.contains("local function b("), "a calls b");
        assert!(!script.contains("local function c("));
        assert!(!script.contains("return 3"));
        assert_eq!(script.lines().count(), PRELUDE.lines().count() + 1);
        assert!(script.ends_with("end\n\n\n\n\nreturn a()\n"));
        // A helper a later prelude calls is kept too.
        let script = assemble(&[PRELUDE, "local Y = c()\n"], "return Y\n");
        assert!(script.contains("local function c("));
        assert!(!script.contains("local function a("));
    }
}
