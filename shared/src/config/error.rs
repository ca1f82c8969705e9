//! A setting that could not be used: the variable and why.

/// A setting that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("configuration variable {variable}: {reason}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub reason: String,
}

pub(super) fn bad(variable: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        variable,
        reason: reason.into(),
    }
}
