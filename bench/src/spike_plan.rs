//! The opening spike's plan (`spike.rs` runs it): the whole scale it extrapolates to, the
//! measured windows, what an admitted buyer does, and the goals the report holds figures to.

use std::time::Duration;

/// New buyers a second at the whole scale.
pub const FULL_ARRIVALS_PER_SECOND: f64 = 2_000.0;
/// Active buyers at once at the whole scale. Buyers leave seconds after their admission, so
/// each 10 s tick admits about this many: 500 a second.
pub const FULL_CAPACITY: f64 = 5_000.0;
/// The measured stretch's windows.
pub const WINDOW: Duration = Duration::from_secs(5);
/// Gatekeeper checks an admitted buyer passes, a second apart, before leaving.
pub const CHECKS: u8 = 3;
/// Buckets of told poll intervals: up to each bound, s.
pub const TOLD: [u64; 6] = [1, 4, 9, 39, 40, u64::MAX];
/// SLOWLOG keeps every call slower than this, µs: the goal's bound. (Keeping faster calls
/// too would fill it with thousands of entries a second on a loaded machine, and reading
/// them back would load Redis.)
pub const SLOW_US: u64 = 1_000;
/// The goals.
pub const CPU_GOAL: f64 = 0.70;
pub const FIRST_POLL_GOAL_S: f64 = 60.0;
pub const BYTES_GOAL: f64 = 150.0;
/// The bench keeps up when it sends 99 % of requests within this of when they fall due.
pub const KEPT_UP_MS: f64 = 1_000.0;
