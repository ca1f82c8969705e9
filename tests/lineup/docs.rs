//! The prose a user reads says what is: README, `docs/`, BENCHMARKS.md and RELIABILITY.md
//! tell no history (run history belongs in git), and RELIABILITY.md's lines stay short enough
//! to read in a review.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Phrases that tell how things were or changed, not how they are.
const HISTORY: &[&str] = &[
    "It was ",
    "Now ",
    " is now ",
    " are now ",
    "before this change",
    "after this change",
    "This change",
    "this change",
    "used to be",
    "Previously",
    "previously",
    "Until now",
    "until now",
    "from now on",
];

/// README, every page of `docs/`, BENCHMARKS.md and RELIABILITY.md, as `(name, text)`.
fn prose() -> Vec<(String, String)> {
    let root = repo();
    let mut files: Vec<PathBuf> = ["README.md", "BENCHMARKS.md", "RELIABILITY.md"]
        .iter()
        .map(|name| root.join(name))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("readable");
            let name = path
                .strip_prefix(&root)
                .unwrap_or(&path)
                .display()
                .to_string();
            (name, text)
        })
        .collect()
}

#[test]
fn the_docs_say_what_is_not_what_was() {
    let mut found = Vec::new();
    for (name, text) in prose() {
        for (n, line) in text.lines().enumerate() {
            for phrase in HISTORY {
                if line.contains(phrase) {
                    found.push(format!("{name}:{}: {phrase:?} in {line:?}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "history in the docs:\n{}",
        found.join("\n")
    );
}

#[test]
fn reliability_lines_are_at_most_500_characters() {
    let text = std::fs::read_to_string(repo().join("RELIABILITY.md")).expect("RELIABILITY.md");
    let long: Vec<String> = text
        .lines()
        .enumerate()
        .filter(|(_, line)| line.chars().count() > 500)
        .map(|(n, line)| format!("line {}: {} characters", n + 1, line.chars().count()))
        .collect();
    assert!(long.is_empty(), "RELIABILITY.md:\n{}", long.join("\n"));
}
