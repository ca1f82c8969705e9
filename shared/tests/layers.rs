//! The layers of the `lineup` library, checked. The tour in `src/lib.rs` lists the top-level
//! modules layer by layer, bottom to top (`//! 1. …`, then `//!    - [`module`]: …`). This
//! test reads that list and every module's `crate::…` and `super::…` paths, and fails if a
//! module is missing from the list (or listed but absent), uses a module in a layer above
//! its own, or closes a circle with modules of its own layer. `files` checks the files of
//! every crate of the workspace for circles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Circles between files, in every crate of the workspace.
#[path = "layers/files.rs"]
mod files;

#[test]
fn every_module_uses_only_its_own_layer_and_those_below_without_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let mut files = Vec::new();
    collect(&src, &src, &mut files);
    assert!(files.len() > 10, "found only {} source files", files.len());
    let problems = problems(&lib, &files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The `.rs` files under `dir`, as paths relative to `src` and their text.
fn collect(src: &Path, dir: &Path, files: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).expect("a readable source directory") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect(src, &path, files);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = std::fs::read_to_string(&path).expect("a readable source file");
            let relative = path.strip_prefix(src).expect("under src").to_path_buf();
            files.push((relative, text));
        }
    }
}

/// Everything wrong with the layering of `files` (paths relative to `src/`), by the tour in
/// `lib`.
fn problems(lib: &str, files: &[(PathBuf, String)]) -> Vec<String> {
    let layers = layers(lib);
    let reexports = reexports(lib);
    let mut problems = Vec::new();
    let mut present = BTreeSet::new();
    let mut uses: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (path, text) in files {
        let Some((module, depth)) = top_module(path) else {
            continue;
        };
        present.insert(module.clone());
        let used = uses.entry(module.clone()).or_default();
        for name in referenced(text, depth) {
            let target = if layers.contains_key(&name) {
                Some(name)
            } else {
                reexports.get(&name).cloned()
            };
            if let Some(target) = target.filter(|target| *target != module) {
                used.insert(target);
            }
        }
    }
    for module in &present {
        if !layers.contains_key(module) {
            problems.push(format!("{module} is in no layer of the tour in src/lib.rs"));
        }
    }
    for module in layers.keys() {
        if !present.contains(module) {
            problems.push(format!(
                "the tour in src/lib.rs lists {module}, which is gone"
            ));
        }
    }
    for (module, used) in &uses {
        let Some(own) = layers.get(module) else {
            continue;
        };
        for target in used {
            if let Some(theirs) = layers.get(target).filter(|theirs| *theirs > own) {
                problems.push(format!(
                    "{module} (layer {own}) uses {target} (layer {theirs}), a layer above it"
                ));
            }
        }
    }
    if let Some(circle) = circle(&uses, &layers) {
        problems.push(format!(
            "a circle within one layer: {}",
            circle.join(" -> ")
        ));
    }
    problems
}

/// The layer of each module the tour lists.
fn layers(lib: &str) -> BTreeMap<String, u32> {
    let mut layers = BTreeMap::new();
    let mut current = None;
    for line in lib.lines().map_while(|line| line.strip_prefix("//!")) {
        let line = line.trim();
        if let Some((number, _)) = line.split_once(". ") {
            if let Ok(number) = number.parse::<u32>() {
                current = Some(number);
                continue;
            }
        }
        if let (Some(layer), Some(rest)) = (current, line.strip_prefix("- [`")) {
            if let Some((module, _)) = rest.split_once("`]") {
                layers.insert(module.to_string(), layer);
            }
        }
    }
    layers
}

/// The items `lib` re-exports (`pub use config::Config;`), by the module they come from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    lib.lines()
        .filter_map(|line| line.trim().strip_prefix("pub use ")?.strip_suffix(';'))
        .filter_map(|path| {
            let (module, _) = path.split_once("::")?;
            let (_, item) = path.rsplit_once("::")?;
            Some((item.to_string(), module.to_string()))
        })
        .collect()
}

/// The top-level module `path` belongs to, and how deep its file's module sits (1 for
/// `queue/mod.rs` or `error.rs`, 2 for `queue/keys.rs`). `None` for `lib.rs`.
fn top_module(path: &Path) -> Option<(String, usize)> {
    let parts: Vec<&str> = path.iter().filter_map(|part| part.to_str()).collect();
    let first = match parts.as_slice() {
        ["lib.rs"] => return None,
        [file] => file.strip_suffix(".rs")?,
        [dir, ..] => *dir,
        [] => return None,
    };
    let depth = match parts.last() {
        Some(&"mod.rs") => parts.len() - 1,
        _ => parts.len(),
    };
    Some((first.to_string(), depth))
}

/// The first segment of every path from the crate root in `text`: `crate::x`, each name of
/// `crate::{x, y::z}`, and `super::x` where the `super`s climb to the root from a file's
/// module at `depth`. Comments are left out.
fn referenced(text: &str, depth: usize) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|line| {
            let line = line.trim_start();
            if line.starts_with("//") {
                ""
            } else {
                line.split(" // ").next().unwrap_or(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut names = BTreeSet::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut at = 0;
    while at < code.len() {
        let rest = &code[at..];
        let preceded_by_ident = at > 0 && is_ident(bytes[at - 1]);
        let root = if preceded_by_ident {
            None
        } else if let Some(after) = rest.strip_prefix("crate::") {
            Some(after)
        } else if rest.starts_with("super::") {
            let mut after = rest;
            let mut climbs = 0;
            while let Some(next) = after.strip_prefix("super::") {
                after = next;
                climbs += 1;
            }
            at += rest.len() - after.len() - 1;
            (climbs >= depth).then_some(after)
        } else {
            None
        };
        if let Some(after) = root {
            let first_name = |item: &str| -> String {
                item.trim_start()
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect()
            };
            match after.strip_prefix('{') {
                Some(group) => {
                    let mut level = 0;
                    let mut item_start = 0;
                    for (index, c) in group.char_indices() {
                        match c {
                            '{' => level += 1,
                            '}' | ',' if level == 0 => {
                                names.insert(first_name(&group[item_start..index]));
                                item_start = index + 1;
                                if c == '}' {
                                    break;
                                }
                            }
                            '}' => level -= 1,
                            _ => {}
                        }
                    }
                }
                None => {
                    names.insert(first_name(after));
                }
            }
        }
        at += rest.chars().next().map_or(1, char::len_utf8);
    }
    names.remove("");
    names
}

/// A circle among modules of one layer, if there is one, as the modules along it.
fn circle(
    uses: &BTreeMap<String, BTreeSet<String>>,
    layers: &BTreeMap<String, u32>,
) -> Option<Vec<String>> {
    fn visit(
        module: &str,
        uses: &BTreeMap<String, BTreeSet<String>>,
        layers: &BTreeMap<String, u32>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == module) {
            let mut circle = path[start..].to_vec();
            circle.push(module.to_string());
            return Some(circle);
        }
        if done.contains(module) {
            return None;
        }
        path.push(module.to_string());
        let own = layers.get(module);
        for target in uses.get(module).into_iter().flatten() {
            if own.is_some() && layers.get(target) == own {
                if let Some(circle) = visit(target, uses, layers, path, done) {
                    return Some(circle);
                }
            }
        }
        path.pop();
        done.insert(module.to_string());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys()
        .find_map(|module| visit(module, uses, layers, &mut Vec::new(), &mut done))
}

/// The checker itself finds what it is there to find.
mod checker {
    use super::*;

    const LIB: &str = "//! Tour.\n//!\n//! 1. Bottom:\n//!    - [`error`]: errors.\n\
                       //!    - [`ids`]: ids.\n//! 2. Top:\n//!    - [`queue`]: the queue.\n\
                       \npub mod error;\npub use error::Error;\n";

    fn files(sources: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        sources
            .iter()
            .map(|(path, text)| (PathBuf::from(path), text.to_string()))
            .collect()
    }

    #[test]
    fn uses_downward_and_within_a_layer_pass() {
        let ok = files(&[
            ("error.rs", "use crate::ids::QueueId;\n"),
            ("ids.rs", "// crate::queue in a comment is no use\n"),
            (
                "queue/mod.rs",
                "use crate::{error::Error, ids};\nmod keys;\n",
            ),
            (
                "queue/keys.rs",
                "use super::Thing;\nfn f() -> crate::Error {}\n",
            ),
        ]);
        assert_eq!(problems(LIB, &ok), Vec::<String>::new());
    }

    #[test]
    fn a_use_of_a_higher_layer_fails_however_it_is_written() {
        for source in [
            "use crate::queue::Departure;",
            "use crate::{ids::QueueId, queue::Departure};",
            "fn f() -> crate::queue::Departure {}",
            "use super::queue::Departure;",
        ] {
            let back = files(&[("error.rs", source), ("ids.rs", ""), ("queue/mod.rs", "")]);
            assert_eq!(
                problems(LIB, &back),
                ["error (layer 1) uses queue (layer 2), a layer above it"],
                "{source}"
            );
        }
    }

    #[test]
    fn a_circle_within_a_layer_fails() {
        let circle = files(&[
            ("error.rs", "use crate::ids::QueueId;"),
            ("ids.rs", "use crate::Error;"),
            ("queue/mod.rs", ""),
        ]);
        assert_eq!(
            problems(LIB, &circle),
            ["a circle within one layer: error -> ids -> error"]
        );
    }

    #[test]
    fn a_module_missing_from_the_tour_or_gone_from_the_tree_fails() {
        let extra = files(&[
            ("error.rs", ""),
            ("ids.rs", ""),
            ("queue/mod.rs", ""),
            ("extra.rs", ""),
        ]);
        assert_eq!(
            problems(LIB, &extra),
            ["extra is in no layer of the tour in src/lib.rs"]
        );
        let gone = files(&[("error.rs", ""), ("ids.rs", "")]);
        assert_eq!(
            problems(LIB, &gone),
            ["the tour in src/lib.rs lists queue, which is gone"]
        );
    }
}
