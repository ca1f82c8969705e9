//! Logging set-up shared by every binary: JSON lines for CloudWatch in Lambda, plain text
//! locally, both filtered by `RUST_LOG` (`info` by default).
//!
//! `RUST_LOG` takes a level (`debug`) or per-target levels (`warn,lineup=debug`); it is
//! parsed as [`Targets`], which needs no regex engine in the binaries.

use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

/// Installs the global subscriber. Calling it twice is harmless.
pub fn init() {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| directives.parse::<Targets>().ok())
        .unwrap_or_else(|| Targets::new().with_default(LevelFilter::INFO));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let _ = if in_lambda {
        let json = tracing_subscriber::fmt::layer()
            .json()
            .without_time()
            .with_current_span(false)
            .with_target(false);
        tracing_subscriber::registry()
            .with(json.with_filter(filter))
            .try_init()
    } else {
        let text = tracing_subscriber::fmt::layer().with_target(false);
        tracing_subscriber::registry()
            .with(text.with_filter(filter))
            .try_init()
    };
}
