//! What decoding the coupon scripts' replies shares: an instant from their milliseconds, and
//! the answer for a campaign the scripts do not know.

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::ids::CouponId;

/// The answer for a campaign that does not exist.
pub(super) fn unknown_campaign(coupon: &CouponId) -> Error {
    Error::NotFound(format!("no coupon campaign {coupon}"))
}

/// An instant from the scripts' milliseconds.
pub(super) fn instant(ms: i64) -> Result<DateTime<Utc>, redis::ParsingError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| format!("instant {ms} out of range").into())
}
