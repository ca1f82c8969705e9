//! How far a campaign reaches: how long its keys are kept after it closes, how many live at
//! once, and how many coupons one holds.

use std::time::Duration;

/// How long a campaign's claims and outbox are kept after `closesAt` (or, without one, after
/// the campaign's last change): then every key of the campaign expires.
pub const RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);
/// Most campaigns live at once (in the registry the publisher reads).
pub const MAX_CAMPAIGNS: u32 = 1000;
/// Most coupons one campaign holds.
pub const MAX_QUANTITY: u64 = 10_000_000;
