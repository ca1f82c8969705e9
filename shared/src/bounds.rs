//! Whole numbers within bounds: the one range-checked number parser, used by the
//! environment's settings ([`crate::config`]), a queue's own settings
//! ([`crate::queue::settings`]) and query parameters; and the bounds of the queue settings,
//! which the environment's defaults and each queue's own values both keep.

use serde_json::Number;

/// An inclusive range of whole numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub min: u64,
    pub max: u64,
}

/// A value that is not a whole number within its bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("must be a whole number from {min} to {max}")]
pub struct OutOfBounds {
    pub min: u64,
    pub max: u64,
}

impl Bounds {
    pub const fn new(min: u64, max: u64) -> Self {
        Bounds { min, max }
    }

    /// `raw`, written in decimal digits, as a number within the bounds.
    pub fn parse(self, raw: &str) -> Result<u64, OutOfBounds> {
        self.check(raw.parse().ok())
    }

    /// `value` as a whole number within the bounds. JSON has one number type, so an integral
    /// `60.0` is accepted as 60; `2.5`, negatives and anything out of range are not.
    pub fn json(self, value: &Number) -> Result<u64, OutOfBounds> {
        self.check(value.as_u64().or_else(|| {
            value
                .as_f64()
                .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= u64::MAX as f64)
                .map(|f| f as u64)
        }))
    }

    /// Whether `value` lies within the bounds.
    pub fn holds(self, value: u64) -> bool {
        (self.min..=self.max).contains(&value)
    }

    fn check(self, whole: Option<u64>) -> Result<u64, OutOfBounds> {
        let Bounds { min, max } = self;
        whole
            .filter(|value| (min..=max).contains(value))
            .ok_or(OutOfBounds { min, max })
    }
}

/// Most buyers active at once in a queue.
pub const CAPACITY: Bounds = Bounds::new(1, 1_000_000);
/// How long an admitted buyer stays active, in seconds.
pub const SESSION_SECONDS: Bounds = Bounds::new(1, 86_400);
/// Most buyers one promotion tick admits to a queue.
pub const ADMIT_PER_TICK: Bounds = Bounds::new(1, 1_000_000);
/// How long a waiter may go unseen, in seconds. At least 5 s: a buyer told to poll every
/// second (the shortest `pollAfterSeconds`, at most a third of the idle period) then has
/// 4 s or more for its round trip.
pub const WAITING_IDLE_SECONDS: Bounds = Bounds::new(5, 86_400);
/// Most buyers waiting in one queue before new arrivals are refused as full.
pub const MAX_WAITING: Bounds = Bounds::new(1, 100_000_000);
/// A door challenge's cost, PBKDF2 iterations per try (`challengeCostMin`,
/// `challengeCostMax`). A solver tries 256 times on average; the function verifies with one
/// derivation.
pub const CHALLENGE_COST: Bounds = Bounds::new(100, 1_000_000);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_numbers_within_the_bounds_pass() {
        let bounds = Bounds::new(5, 10);
        assert_eq!(bounds.parse("5"), Ok(5));
        assert_eq!(bounds.parse("10"), Ok(10));
        let out = OutOfBounds { min: 5, max: 10 };
        let refused = Err(out);
        for raw in ["4", "11", "", "ten", "7.0", "-6", "99999999999999999999"] {
            assert_eq!(bounds.parse(raw), refused, "{raw:?}");
        }
        let json = |raw: &str| bounds.json(&serde_json::from_str(raw).unwrap());
        assert_eq!(json("7"), Ok(7));
        assert_eq!(json("7.0"), Ok(7));
        for raw in ["7.5", "-7", "4", "1e3"] {
            assert_eq!(json(raw), refused, "{raw}");
        }
        assert_eq!(out.to_string(), "must be a whole number from 5 to 10");
    }
}
