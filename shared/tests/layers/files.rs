//! Circles between files, in every crate of the workspace: the library, the bench, the
//! console and each function. A file that uses another (by a `crate::`, `super::` or
//! `self::` path, a child module's path, or through a re-export) must not be used back along
//! any path. With no circle, no arrow runs back up inside a folder either: each file stands
//! above all it uses. `shared/src/queue/` is left out (issue #44 rebuilds it).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

#[test]
fn no_file_closes_a_circle_outside_the_queue() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut crates = vec![
        root.join("shared/src"),
        root.join("bench/src"),
        root.join("cli/src"),
    ];
    let functions = std::fs::read_dir(root.join("functions")).expect("functions/");
    for entry in functions {
        let src = entry.expect("a directory entry").path().join("src");
        if src.is_dir() {
            crates.push(src);
        }
    }
    let mut problems = Vec::new();
    let mut read = 0;
    for src in &crates {
        let mut files = Vec::new();
        collect(src, src, &mut files);
        // Beside a lib.rs, main.rs is the root of a binary crate of its own.
        if files.iter().any(|(file, _)| file == Path::new("lib.rs")) {
            files.retain(|(file, _)| file != Path::new("main.rs"));
        }
        read += files.len();
        let skip_queue = src.ends_with("shared/src");
        for circle in circles(&files) {
            if skip_queue && circle.iter().all(|file| file.starts_with("queue")) {
                continue;
            }
            let names: Vec<String> = circle.iter().map(|f| f.display().to_string()).collect();
            let place = src.strip_prefix(&root).unwrap_or(src);
            problems.push(format!("{}: {}", place.display(), names.join(" -> ")));
        }
    }
    assert!(read > 100, "read only {read} source files");
    assert!(problems.is_empty(), "circles:\n{}", problems.join("\n"));
}

/// The `.rs` files of one crate under `dir`, as paths relative to `src` and their text; a
/// binary under `src/bin/` is a crate of its own and is left out (and so is a `main.rs`
/// beside a `lib.rs`: see the test).
fn collect(src: &Path, dir: &Path, files: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).expect("a readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            if path != src.join("bin") {
                collect(src, &path, files);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let relative = path.strip_prefix(src).expect("under src").to_path_buf();
            files.push((relative, text));
        }
    }
}

/// A module's path from the crate root: `[]` for `lib.rs` or `main.rs`, `[a]` for `a.rs` or
/// `a/mod.rs`, `[a, b]` for `a/b.rs`.
fn module_of(file: &Path) -> Vec<String> {
    let mut parts: Vec<String> = file
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !(matches!(stem, "mod") || parts.is_empty() && matches!(stem, "lib" | "main")) {
        parts.push(stem.to_string());
    }
    parts
}

/// A crate's files by module, and what each module re-exports: `(module, name)` to the
/// path it names.
struct Crate {
    files: BTreeMap<Vec<String>, PathBuf>,
    reexports: BTreeMap<(Vec<String>, String), Vec<String>>,
}

impl Crate {
    /// The file a path from the root names: the deepest module along it, or, where the path
    /// goes on into an item a module re-exports, the file that item comes from.
    fn resolve(&self, path: &[String], depth: usize) -> Option<&PathBuf> {
        let mut module = Vec::new();
        for name in path {
            let mut next = module.clone();
            next.push(name.clone());
            if self.files.contains_key(&next) {
                module = next;
                continue;
            }
            if depth < 8 {
                if let Some(target) = self.reexports.get(&(module.clone(), name.clone())) {
                    return self.resolve(target, depth + 1);
                }
            }
            break;
        }
        self.files.get(&module)
    }
}

/// The code of `text` without its comments and its test modules (`#[cfg(test)] mod … { … }`):
/// a file's tests are no part of what it uses.
fn code(text: &str) -> String {
    let mut code = without_comments(text);
    while let Some(start) = code.find("#[cfg(test)]") {
        let after = start + "#[cfg(test)]".len();
        let item = code[after..].trim_start();
        let end = match item.strip_prefix("mod ").and_then(|rest| rest.find('{')) {
            Some(open) => {
                let open = code.len() - item.len() + "mod ".len() + open;
                matching_brace(&code, open).map_or(code.len(), |close| close + 1)
            }
            None => after,
        };
        code.replace_range(start..end, "");
    }
    code
}

/// The byte index of the `}` that closes the `{` at `open`.
fn matching_brace(code: &str, open: usize) -> Option<usize> {
    let mut level = 0;
    for (index, byte) in code.bytes().enumerate().skip(open) {
        match byte {
            b'{' => level += 1,
            b'}' => {
                level -= 1;
                if level == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` without its comments.
fn without_comments(text: &str) -> String {
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            if trimmed.starts_with("//") {
                ""
            } else {
                line.split(" // ").next().unwrap_or(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths a use tree starting at `text` names, each as its segments (`self` in a group
/// names the group's own path; a glob names the module), and, for each, the name it is
/// bound to (the last segment, or the `as` alias).
fn tree(text: &str) -> Vec<(Vec<String>, String)> {
    let mut out = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            for item in group_items(group) {
                for (inner, bound) in tree(item) {
                    let mut full = path.clone();
                    full.extend(inner);
                    let bound = if bound == "self" {
                        full.last().cloned().unwrap_or_default()
                    } else {
                        bound
                    };
                    out.push((full, bound));
                }
            }
            return out;
        }
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        if name != "self" || path.is_empty() {
            path.push(name);
        }
        match rest.strip_prefix("::") {
            Some(after) => rest = after,
            None => break,
        }
    }
    let bound = match rest.trim_start().strip_prefix("as ") {
        Some(alias) => alias
            .trim_start()
            .chars()
            .take_while(|c| is_ident(*c))
            .collect(),
        None => path.last().cloned().unwrap_or_default(),
    };
    out.push((path, bound));
    out
}

/// The items of a use group, `text` starting just inside its `{`.
fn group_items(text: &str) -> Vec<&str> {
    let (mut items, mut level, mut start) = (Vec::new(), 0, 0);
    for (index, c) in text.char_indices() {
        match c {
            '{' => level += 1,
            '}' | ',' if level == 0 => {
                if !text[start..index].trim().is_empty() {
                    items.push(&text[start..index]);
                }
                start = index + 1;
                if c == '}' {
                    break;
                }
            }
            '}' => level -= 1,
            _ => {}
        }
    }
    items
}

/// For each byte of `code`, how many inline modules (`mod tests { … }`) it sits in.
fn inline_depths(code: &str) -> Vec<usize> {
    let mut depths = vec![0; code.len() + 1];
    let (mut braces, mut opened): (usize, Vec<usize>) = (0, Vec::new());
    let bytes = code.as_bytes();
    for (index, byte) in bytes.iter().enumerate() {
        match byte {
            b'{' => {
                braces += 1;
                let head = code[..index].trim_end();
                let word_start = head
                    .char_indices()
                    .rev()
                    .find(|(_, c)| !is_ident(*c))
                    .map_or(0, |(n, c)| n + c.len_utf8());
                let before = head[..word_start].trim_end();
                let is_mod = before
                    .strip_suffix("mod")
                    .is_some_and(|rest| !rest.ends_with(is_ident));
                if word_start < head.len() && is_mod {
                    opened.push(braces);
                }
            }
            b'}' => {
                if opened.last() == Some(&braces) {
                    opened.pop();
                }
                braces = braces.saturating_sub(1);
            }
            _ => {}
        }
        depths[index] = opened.len();
    }
    depths
}

/// Each path `code` (of the file of `module`) names from the crate root, with the name a
/// `use` binds it to, and whether it is a public re-export (`pub use`, `pub(…) use`). A
/// `super::` inside an inline module climbs out of it first.
fn paths(code: &str, module: &[String], files: &BTreeSet<Vec<String>>) -> Vec<Reference> {
    let mut found = Vec::new();
    let inline = inline_depths(code);
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let before = code[..at].chars().next_back();
        let starts = before.is_none_or(|c| !is_ident(c) && c != ':');
        let first: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if starts && !first.is_empty() && rest[first.len()..].starts_with("::") {
            let reexport = {
                let line_start = code[..at].rfind('\n').map_or(0, |n| n + 1);
                let head = code[line_start..at].trim();
                head.starts_with("pub") && head.ends_with("use")
            };
            let base: Option<Vec<String>> = match first.as_str() {
                "crate" => Some(Vec::new()),
                "self" => Some(module.to_vec()),
                "super" => {
                    let mut after = rest;
                    let mut climbs: usize = 0;
                    while let Some(next) = after.strip_prefix("super::") {
                        after = next;
                        climbs += 1;
                    }
                    let climbs = climbs.saturating_sub(inline[at]);
                    let keep = module.len().checked_sub(climbs);
                    if let Some(keep) = keep {
                        for (path, bound) in tree(after) {
                            let mut full = module[..keep].to_vec();
                            full.extend(path);
                            found.push(Reference {
                                full,
                                bound,
                                reexport,
                            });
                        }
                    }
                    at += rest.len() - after.len();
                    continue;
                }
                child => {
                    let mut path = module.to_vec();
                    path.push(child.to_string());
                    files.contains(&path).then_some(module.to_vec())
                }
            };
            if let Some(base) = base {
                let skip = if matches!(first.as_str(), "crate" | "self") {
                    first.len() + 2
                } else {
                    0
                };
                for (path, bound) in tree(&rest[skip..]) {
                    let mut full = base.clone();
                    full.extend(path);
                    found.push(Reference {
                        full,
                        bound,
                        reexport,
                    });
                }
            }
            at += first.len();
            continue;
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
    }
    found
}

/// One path a file names from the crate root.
struct Reference {
    full: Vec<String>,
    bound: String,
    reexport: bool,
}

/// Every circle among `files` (one crate), each as the files along it, first file again
/// last.
fn circles(files: &[(PathBuf, String)]) -> Vec<Vec<PathBuf>> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|(f, _)| module_of(f)).collect();
    let mut krate = Crate {
        files: files
            .iter()
            .map(|(file, _)| (module_of(file), file.clone()))
            .collect(),
        reexports: BTreeMap::new(),
    };
    let mut references = Vec::new();
    for (file, text) in files {
        let module = module_of(file);
        for reference in paths(&code(text), &module, &modules) {
            if reference.reexport {
                krate.reexports.insert(
                    (module.clone(), reference.bound.clone()),
                    reference.full.clone(),
                );
            }
            references.push((file.clone(), reference.full));
        }
    }
    let mut uses: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    for (file, full) in references {
        if let Some(target) = krate.resolve(&full, 0).filter(|target| **target != file) {
            uses.entry(file).or_default().insert(target.clone());
        }
    }
    let mut found: Vec<Vec<PathBuf>> = Vec::new();
    let mut seen = BTreeSet::new();
    for start in uses.keys() {
        if let Some(circle) = circle_from(start, &uses) {
            let members: BTreeSet<PathBuf> = circle.iter().cloned().collect();
            if seen.insert(members) {
                found.push(circle);
            }
        }
    }
    found
}

/// A circle through `start`, if there is one: a shortest path back to it.
fn circle_from(
    start: &PathBuf,
    uses: &BTreeMap<PathBuf, BTreeSet<PathBuf>>,
) -> Option<Vec<PathBuf>> {
    let mut came_from: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
    let mut frontier = vec![start.clone()];
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for file in frontier {
            for target in uses.get(&file).into_iter().flatten() {
                if target == start {
                    let mut path = vec![file.clone()];
                    let mut at = file;
                    while let Some(previous) = came_from.get(&at).filter(|p| *p != start) {
                        path.push(previous.clone());
                        at = previous.clone();
                    }
                    if path.last() != Some(start) {
                        path.push(start.clone());
                    }
                    path.reverse();
                    path.push(start.clone());
                    return Some(path);
                }
                if !came_from.contains_key(target) {
                    came_from.insert(target.clone(), file.clone());
                    next.push(target.clone());
                }
            }
        }
        frontier = next;
    }
    None
}

/// The checker itself finds what it is there to find.
mod checker {
    use super::*;

    fn files(sources: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        sources
            .iter()
            .map(|(path, text)| (PathBuf::from(path), text.to_string()))
            .collect()
    }

    fn shown(found: Vec<Vec<PathBuf>>) -> Vec<String> {
        found
            .iter()
            .map(|circle| {
                circle
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" -> ")
            })
            .collect()
    }

    #[test]
    fn uses_through_a_re_export_and_downward_make_no_circle() {
        let ok = files(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Thing;\n"),
            (
                "a/mod.rs",
                "mod keys;\npub use keys::Key;\npub struct Thing;\n",
            ),
            (
                "a/keys.rs",
                "// use super::Thing in a comment is no use\npub struct Key;\n",
            ),
            (
                "b.rs",
                "use crate::a::Key;\nuse crate::{Thing, a::keys};\nuse crate::c::C;\n",
            ),
            // A test module's uses are the tests': c's test of b makes no circle.
            (
                "c.rs",
                "pub struct C;\n#[cfg(test)]\nmod tests {\n    use crate::b;\n}\n",
            ),
        ]);
        assert_eq!(shown(circles(&ok)), Vec::<String>::new());
    }

    #[test]
    fn a_circle_fails_however_it_is_written() {
        for (child, parent) in [
            ("use super::Thing;", "pub use keys::Key;"),
            ("fn f() -> crate::a::Thing {}", "use self::keys::Key;"),
            ("use super::{Thing as T, keys};", "fn f() { keys::make(); }"),
        ] {
            let circle = files(&[
                ("lib.rs", "mod a;"),
                (
                    "a/mod.rs",
                    &format!("mod keys;\n{parent}\npub struct Thing;\n"),
                ),
                ("a/keys.rs", child),
            ]);
            assert_eq!(
                shown(circles(&circle)),
                ["a/keys.rs -> a/mod.rs -> a/keys.rs"],
                "{child} / {parent}"
            );
        }
        let root = files(&[
            (
                "lib.rs",
                "mod buyer;\npub use buyer::X;\npub struct Deps;\nfn f() { buyer::go(); }\n",
            ),
            ("buyer.rs", "use crate::Deps;\npub fn go() {}\n"),
        ]);
        assert_eq!(shown(circles(&root)), ["buyer.rs -> lib.rs -> buyer.rs"]);
        let three = files(&[
            ("main.rs", "mod x;\nmod y;\nmod z;"),
            ("x.rs", "use crate::y::Y;"),
            ("y.rs", "use super::z::Z;"),
            ("z.rs", "use crate::x;"),
        ]);
        assert_eq!(shown(circles(&three)), ["x.rs -> y.rs -> z.rs -> x.rs"]);
    }
}
