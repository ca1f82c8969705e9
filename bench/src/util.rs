//! Helpers several sections share: bench user ids, durations in milliseconds and the poll
//! interval a waiter is told.

use std::time::Duration;

use lineup::ids::UserId;
use lineup::queue::POLL_AFTER_WAIT_PART;

/// Ids used across sections.
pub fn user(name: &str) -> UserId {
    UserId::parse(name).expect("a valid bench user id")
}

/// A duration in milliseconds.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `pollAfterSeconds` a waiter `wait_s` seconds from its turn is told, with the default
/// idle period `idle_s` (`TokenState::poll_after_seconds` and `presence_for`): a quarter of
/// its wait ([`POLL_AFTER_WAIT_PART`]), at least 1 s, at most a third of eight idle periods
/// (its poll keeps it present for three times what it is told).
pub fn told_interval(wait_s: f64, idle_s: u64) -> u64 {
    let wanted = (wait_s.ceil() as u64) / POLL_AFTER_WAIT_PART;
    wanted.clamp(1, 8 * idle_s / 3)
}
