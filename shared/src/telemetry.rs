//! Logging set-up shared by every binary: JSON lines for CloudWatch in the functions, plain
//! text in the local stack, both filtered by `RUST_LOG` (`info` by default).
//!
//! `RUST_LOG` takes a level (`debug`) or per-target levels (`warn,lineup=debug`); it is
//! parsed as [`Targets`], which needs no regex engine in the binaries.

use std::fmt;

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

/// `RUST_LOG`'s directives, or `info`.
fn filter() -> Targets {
    std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO))
}

/// Installs the global subscriber of a function binary: JSON lines, as CloudWatch reads
/// them. The binaries only run in Lambda (or its emulators), so they carry no text
/// formatter. Calling it twice is harmless.
pub fn init() {
    let json = tracing_subscriber::fmt::layer()
        .json()
        .without_time()
        .with_current_span(false)
        .with_target(false);
    let _ = tracing_subscriber::registry()
        .with(json.with_filter(filter()))
        .try_init();
}

/// Installs the global subscriber of the local stack: plain text on a terminal. Calling it
/// twice is harmless.
pub fn init_text() {
    let text = tracing_subscriber::fmt::layer().with_target(false);
    let _ = tracing_subscriber::registry()
        .with(text.with_filter(filter()))
        .try_init();
}

/// A pass's totals for its one log line (the promoter's tick, the reaper's run), shown as
/// `name=value` pairs in the order given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Totals(pub Vec<(&'static str, u64)>);

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (name, value)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{name}={value}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::Totals;

    #[test]
    fn totals_read_as_name_value_pairs_in_order() {
        let totals = Totals(vec![("queues", 2), ("admitted", 10)]);
        assert_eq!(totals.to_string(), "queues=2 admitted=10");
        assert_eq!(Totals(vec![]).to_string(), "");
    }
}
