//! The outbox: claims EventBridge has not accepted yet, as the pending script's call
//! (`pending.lua`) reads them, and the `CouponClaimed` event each becomes.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::claim::{Claim, ClaimView};
use super::coupons::{coupon_lua, Coupons, Registered, STORED_KEYS};
use super::decode::instant;
use crate::ids::{CouponId, UserId};
use crate::store::{primary_read_script, Batch, NamedScript, ScriptCall, Staged, Tagged};

/// The `source` of coupon events.
pub const SOURCE: &str = "lineup.coupon";
/// The `detail-type` of a claim's event.
pub const DETAIL_TYPE: &str = "CouponClaimed";

/// The pending script: the campaign's prelude, then a read of the outbox.
pub(super) static PENDING: NamedScript = NamedScript::new(
    LazyLock::new(|| primary_read_script(&coupon_lua(include_str!("pending.lua")))),
    STORED_KEYS,
    &["most"],
);

impl Coupons {
    /// Stages a read of up to `limit` of the oldest outbox entries of `campaign`.
    pub fn stage_pending(
        &self,
        batch: &mut Batch,
        campaign: &Registered,
        limit: usize,
    ) -> Staged<Pending> {
        let mut call = ScriptCall::of(&PENDING);
        for (name, key) in self.keys(&campaign.coupon, &campaign.home).stored() {
            call.named_key(name, key);
        }
        call.named("most", limit);
        batch.stage(call)
    }
}

/// What `pending.lua` answers: the oldest outbox entries of one campaign, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    Entries { entries: Vec<(UserId, Claim)> },
}

impl FromRedisValue for Pending {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("pending", &v, |r| {
            if r.tag() != "pending" {
                return Err(r.unknown());
            }
            let (users, numbers, at) = (r.texts("users")?, r.numbers("numbers")?, r.numbers("at")?);
            if numbers.len() != users.len() || at.len() != users.len() {
                return Err("pending reply's columns differ in length".into());
            }
            let entries = users
                .iter()
                .zip(numbers)
                .zip(at)
                .map(|((user, number), at)| {
                    Ok((
                        UserId::parse(user).map_err(|err| err.to_string())?,
                        Claim {
                            number,
                            claimed_at: instant(at)?,
                        },
                    ))
                })
                .collect::<Result<_, ParsingError>>()?;
            Ok(Pending::Entries { entries })
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn column(items: &[&str]) -> Value {
        Value::Array(
            items
                .iter()
                .map(|item| Value::BulkString(item.as_bytes().to_vec()))
                .collect(),
        )
    }

    fn reply(users: &[&str], numbers: &[&str], at: &[&str]) -> Value {
        let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        Value::Array(vec![
            text("pending"),
            text("users"),
            column(users),
            text("numbers"),
            column(numbers),
            text("at"),
            column(at),
        ])
    }

    #[test]
    fn the_outbox_entries_decode_by_column() {
        let Pending::Entries { entries } =
            Pending::from_redis_value(reply(&["u1", "u2"], &["1", "2"], &["1700000000000", "0"]))
                .unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].0.as_str(), "u1");
        assert_eq!(
            entries[0].1.claimed_at.timestamp_millis(),
            1_700_000_000_000
        );
        assert_eq!(entries[1].1.number, 2);
        let Pending::Entries { entries } = Pending::from_redis_value(reply(&[], &[], &[])).unwrap();
        assert!(entries.is_empty());
    }

    #[test]
    fn a_malformed_outbox_reply_is_an_error() {
        for bad in [
            reply(&["u1"], &["1", "2"], &["0", "0"]),
            reply(&["u1"], &["one"], &["0"]),
            reply(&["a b"], &["1"], &["0"]),
            Value::Array(vec![Value::BulkString(b"entries".to_vec())]),
        ] {
            assert!(Pending::from_redis_value(bad.clone()).is_err(), "{bad:?}");
        }
    }
}
