//! The Markdown report, and how it writes verdicts and numbers.

/// The Markdown report.
pub struct Report(Vec<String>);

impl Report {
    pub fn new() -> Self {
        Report(Vec::new())
    }

    pub fn heading(&mut self, text: &str) {
        self.0.push(format!("## {text}\n"));
        eprintln!("{text}");
    }

    pub fn section(&mut self, title: &str) {
        self.0.push(format!(
            "\n### {title}\n\n| measure | figure | against |\n|---|---|---|"
        ));
        eprintln!("… {title}");
    }

    pub fn row(&mut self, name: &str, value: &str, note: &str) {
        self.0.push(format!("| {name} | {value} | {note} |"));
        eprintln!("   {name}: {value} ({note})");
    }

    pub fn print(&self) {
        println!("{}", self.0.join("\n"));
    }
}

/// A goal's verdict as the report writes it.
pub fn met(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "**not met**"
    }
}

/// `n` with a space between thousands, as BENCHMARKS.md writes numbers.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
