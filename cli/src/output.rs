//! What the console prints: human tables by default, JSON with `--json`. Colours only on a
//! terminal, and never under `NO_COLOR` (<https://no-color.org>).

use std::io::IsTerminal;

use serde_json::Value;

/// How this run prints.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    pub json: bool,
    pub colour: bool,
}

impl Out {
    pub fn new(json: bool) -> Out {
        Out {
            json,
            colour: !json && colour_allowed() && std::io::stdout().is_terminal(),
        }
    }

    /// A JSON document, pretty, on stdout.
    pub fn json(&self, value: &Value) {
        println!(
            "{}",
            serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
        );
    }

    /// Rows of label and value, the labels aligned.
    pub fn pairs(&self, rows: &[(&str, String)]) {
        let width = rows
            .iter()
            .map(|(label, _)| label.chars().count())
            .max()
            .unwrap_or(0);
        for (label, value) in rows {
            let pad = width - label.chars().count();
            println!("{}{}  {value}", self.bold(label), " ".repeat(pad));
        }
    }

    /// A table with a header, each column as wide as its widest cell.
    pub fn table(&self, header: &[&str], rows: &[Vec<String>]) {
        let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
        for row in rows {
            for (at, cell) in row.iter().enumerate() {
                if let Some(width) = widths.get_mut(at) {
                    *width = (*width).max(cell.chars().count());
                }
            }
        }
        let line = |cells: Vec<String>| {
            cells
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_owned()
        };
        println!(
            "{}",
            self.bold(&line(header.iter().map(|h| h.to_string()).collect()))
        );
        for row in rows {
            println!("{}", line(row.clone()));
        }
    }

    pub fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn green(&self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn red(&self, text: &str) -> String {
        self.paint("31", text)
    }

    pub fn yellow(&self, text: &str) -> String {
        self.paint("33", text)
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.colour {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }
}

/// Whether colours may be used at all: `NO_COLOR` set to anything non-empty forbids them.
pub fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// A JSON value as a table cell: strings bare, null as `-`.
pub fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
