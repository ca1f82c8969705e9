//! Ships the Lua scripts without their comments and indentation: Redis never reads them,
//! and every binary would carry them. Each script is written to `OUT_DIR/<module>/<name>`
//! line for line (a comment line becomes an empty line), so a line number in a Redis error
//! still points at the source.

use std::error::Error;
use std::fs;
use std::path::Path;

fn main() -> Result<(), Box<dyn Error>> {
    let out = std::env::var("OUT_DIR")?;
    for module in ["queue", "ranking", "coupon"] {
        let dir = Path::new("src").join(module);
        println!("cargo:rerun-if-changed={}", dir.display());
        fs::create_dir_all(Path::new(&out).join(module))?;
        for entry in fs::read_dir(&dir)? {
            let path = entry?.path();
            if path.extension().is_some_and(|ext| ext == "lua") {
                let name = path.file_name().ok_or("a script without a name")?;
                let stripped: String = fs::read_to_string(&path)?
                    .lines()
                    .map(|line| {
                        let code = line.trim();
                        if code.starts_with("--") {
                            "\n".to_owned()
                        } else {
                            format!("{code}\n")
                        }
                    })
                    .collect();
                fs::write(Path::new(&out).join(module).join(name), stripped)?;
            }
        }
    }
    unused_helpers(&out)?;
    Ok(())
}

/// For each queue script, the lines of `common.lua`'s helpers it never calls, directly or
/// through another helper: `OUT_DIR/queue/<script>.unused`, ranges `first-last` (1-based) a
/// line each. The prelude is joined to the script without them (`queue::joined`), so a call
/// does not create closures it never uses. A helper is a top-level `local function NAME(`
/// up to the next line that is `end` alone.
fn unused_helpers(out: &str) -> Result<(), Box<dyn Error>> {
    let dir = Path::new("src").join("queue");
    let common = fs::read_to_string(dir.join("common.lua"))?;
    // Comment lines blanked, so that a helper named in a comment is not taken for a call.
    fn code(line: &str) -> &str {
        if line.trim_start().starts_with("--") {
            ""
        } else {
            line
        }
    }
    let lines: Vec<&str> = common.lines().map(code).collect();
    let mut helpers: Vec<(String, usize, usize)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some(rest) = lines[i].strip_prefix("local function ") {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let end = (i..lines.len())
                .find(|&j| lines[j] == "end")
                .ok_or("a helper without its end")?;
            helpers.push((name, i, end));
            i = end + 1;
        } else {
            i += 1;
        }
    }
    let calls = |text: &str, name: &str| {
        text.match_indices(name).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !word(before) && !word(after)
        })
    };
    let outside: String = lines
        .iter()
        .enumerate()
        .filter(|(n, _)| !helpers.iter().any(|(_, s, e)| s <= n && n <= e))
        .map(|(_, l)| *l)
        .collect::<Vec<_>>()
        .join("\n");
    for entry in fs::read_dir(&dir)? {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !name.ends_with(".lua") || name == "common.lua" {
            continue;
        }
        let body: String = fs::read_to_string(&path)?
            .lines()
            .map(code)
            .collect::<Vec<_>>()
            .join("\n");
        let mut used: Vec<bool> = helpers
            .iter()
            .map(|(h, _, _)| calls(&body, h) || calls(&outside, h))
            .collect();
        loop {
            let mut more = false;
            for (k, (_, s, e)) in helpers.iter().enumerate() {
                if !used[k] {
                    continue;
                }
                let text = lines[s + 1..=*e].join("\n");
                for (m, (other, _, _)) in helpers.iter().enumerate() {
                    if !used[m] && calls(&text, other) {
                        used[m] = true;
                        more = true;
                    }
                }
            }
            if !more {
                break;
            }
        }
        let unused: String = helpers
            .iter()
            .zip(&used)
            .filter(|(_, used)| !**used)
            .map(|((_, s, e), _)| format!("{}-{}\n", s + 1, e + 1))
            .collect();
        fs::write(
            Path::new(out).join("queue").join(format!("{name}.unused")),
            unused,
        )?;
    }
    Ok(())
}
