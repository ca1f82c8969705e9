//! Logging set-up shared by every binary: JSON lines for CloudWatch in Lambda, plain text
//! locally, both filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

/// Installs the global subscriber. Calling it twice is harmless.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let in_lambda = std::env::var_os("AWS_LAMBDA_FUNCTION_NAME").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let _ = if in_lambda {
        builder
            .json()
            .without_time()
            .with_current_span(false)
            .try_init()
    } else {
        builder.try_init()
    };
}
