//! What can go wrong, and the exit code each failure ends the process with (README, "Exit
//! codes").

use std::process::ExitCode;

/// A problem+json answer, as the console shows it: one line, title and detail.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    pub status: u16,
    pub title: String,
    pub detail: String,
    /// `Retry-After`, in seconds, when the answer carried one.
    pub retry_after: Option<u64>,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.title, self.status, self.detail)?;
        if let Some(seconds) = self.retry_after {
            write!(f, " (retry after {seconds} s)")?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The API answered 4xx: the request was refused, and nothing was done.
    #[error("{0}")]
    Refused(Problem),
    /// The API answered 5xx (a Redis outage is 503).
    #[error("{0}")]
    Failed(Problem),
    /// The API or AWS could not be reached in time.
    #[error("cannot reach {what}: {reason}")]
    Unreachable { what: String, reason: String },
    /// A bad argument or input file, found before anything was sent.
    #[error("{0}")]
    Usage(String),
    /// No target, no credentials, or a stack without the output the console needs.
    #[error("{0}")]
    Setup(String),
    /// A step that asks first was not confirmed.
    #[error("{0}")]
    NotConfirmed(String),
    /// Some ids or batches were refused or not sent; what was done has been reported.
    #[error("{0}")]
    Partial(String),
}

impl CliError {
    /// The process's exit code for this failure. Success is 0.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Refused(_) => 1,
            CliError::Usage(_) => 2,
            CliError::Failed(_) | CliError::Unreachable { .. } => 3,
            CliError::Setup(_) => 4,
            CliError::NotConfirmed(_) => 5,
            CliError::Partial(_) => 6,
        }
    }

    pub fn exit(&self) -> ExitCode {
        ExitCode::from(self.exit_code())
    }
}

/// Every exit code, with what it means: README's table, kept in step by a test.
pub const EXIT_CODES: &[(u8, &str)] = &[
    (0, "done"),
    (
        1,
        "the API refused the request (a 4xx problem); nothing was done",
    ),
    (
        2,
        "bad usage: an unknown flag, a bad value, an unreadable file",
    ),
    (
        3,
        "the API or AWS could not be reached, or answered 5xx (503 during a Redis outage)",
    ),
    (
        4,
        "no target, no credentials, or a stack without the output needed",
    ),
    (
        5,
        "not confirmed: the answer was no, or there was no terminal and no --yes",
    ),
    (
        6,
        "partly done: some ids or batches were refused or not sent; what was done is reported",
    ),
];
