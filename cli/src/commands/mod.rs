//! One module per operator task. Each command checks its ids before anything is sent,
//! makes its calls through [`crate::api`], and prints through [`crate::output`].

pub mod access;
pub mod codes;
pub mod coupon;
pub mod health;
pub mod lists;
pub mod pool;
pub mod queue;
pub mod rankings;

use crate::error::CliError;

/// Checks an id as lineup checks it before it reaches a Redis key.
pub fn check_id<T>(
    parse: fn(&str) -> Result<T, lineup::Error>,
    raw: &str,
) -> Result<String, CliError> {
    parse(raw)
        .map(|_| raw.to_owned())
        .map_err(|err| CliError::Usage(err.to_string()))
}

/// A queue id, checked.
pub fn queue_id(raw: &str) -> Result<String, CliError> {
    check_id(lineup::ids::QueueId::parse, raw)
}

/// A user id, checked.
pub fn user_id(raw: &str) -> Result<String, CliError> {
    check_id(lineup::ids::UserId::parse, raw)
}

/// An RFC 3339 instant, checked, as given.
pub fn instant(field: &str, raw: &str) -> Result<String, CliError> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|_| raw.to_owned())
        .map_err(|err| CliError::Usage(format!("{field}: {raw:?} is not RFC 3339 ({err})")))
}
