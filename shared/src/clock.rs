//! Where time comes from: one [`Clock`] a caller passes in, so that tests move time rather than
//! sleep through it. The system clock in the functions; an instant stands for a clock that does
//! not move.

/// The time, in ms since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The machine's clock.
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// An instant is a clock that stands still.
impl Clock for i64 {
    fn now_ms(&self) -> i64 {
        *self
    }
}
