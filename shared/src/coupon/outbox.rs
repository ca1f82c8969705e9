//! The outbox: claims EventBridge has not accepted yet, and the `CouponClaimed` event each
//! becomes.

use redis::{FromRedisValue, ParsingError, Value};

use super::claim::{Claim, ClaimView};
use super::decode::instant;
use crate::ids::{CouponId, UserId};

/// The `source` of coupon events.
pub const SOURCE: &str = "lineup.coupon";
/// The `detail-type` of a claim's event.
pub const DETAIL_TYPE: &str = "CouponClaimed";

/// The oldest outbox entries of one campaign, as `pending.lua` answers them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pending(pub Vec<(UserId, Claim)>);

impl FromRedisValue for Pending {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let flat: Vec<String> = FromRedisValue::from_redis_value(v)?;
        flat.chunks(3)
            .map(|entry| match entry {
                [user, number, at] => {
                    let user = UserId::parse(user).map_err(|err| err.to_string())?;
                    let number = number.parse().map_err(|_| "claim number not a number")?;
                    let at = at.parse().map_err(|_| "claimed-at not a number")?;
                    Ok((
                        user,
                        Claim {
                            number,
                            claimed_at: instant(at)?,
                        },
                    ))
                }
                _ => Err(ParsingError::from("outbox reply not in threes")),
            })
            .collect::<Result<_, _>>()
            .map(Pending)
    }
}

/// A `CouponClaimed` event's detail: `couponId`, `userId`, `claimNumber`, `claimedAt`.
/// Consumers dedupe by (`couponId`, `userId`): an event may arrive more than once.
pub struct CouponClaimed;

impl CouponClaimed {
    /// The detail JSON of `user`'s `claim` of `coupon`.
    pub fn detail(coupon: &CouponId, user: &UserId, claim: &Claim) -> String {
        serde_json::to_string(&ClaimView::new(coupon, user, claim))
            .unwrap_or_else(|_| String::from("{}"))
    }
}
