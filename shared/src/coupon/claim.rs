//! A claim, as the claim script answers it, and what each answer means for the buyer.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::decode::{instant, unknown_campaign};
use crate::door::{Proof, Refused, Scope};
use crate::error::{Error, Refusal, Turned};
use crate::ids::{CouponId, QueueId, UserId};
use crate::store::Fields;

/// A buyer's coupon: its number (1 … quantity) and when it was claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub number: u64,
    pub claimed_at: DateTime<Utc>,
}

/// What `claim.lua` answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    /// A new claim, written with its outbox entry.
    Claimed(Claim),
    /// The buyer's claim from before.
    Held(Claim),
    Unknown,
    /// Only a locator under this tag: the campaign is kept under this queue's tag.
    Elsewhere(QueueId),
    NotOpen(DateTime<Utc>),
    Closed(DateTime<Utc>),
    SoldOut {
        quantity: u64,
    },
    /// The buyer holds no claim and has no active session with the token's ticket (or
    /// showed none) in this queue.
    Inactive(QueueId),
    Limited {
        retry_after: Duration,
    },
    /// The campaign asks for a solved challenge; none came (`required`), or a bad one.
    Door {
        required: bool,
    },
}

impl FromRedisValue for ClaimReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let values: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let fields = Fields::new("claim", &values);
        let text = |i: usize| fields.text(i);
        let number = |i: usize| fields.number::<i64>(i);
        let claim = || -> Result<Claim, ParsingError> {
            Ok(Claim {
                number: number(1)? as u64,
                claimed_at: instant(number(2)?)?,
            })
        };
        let queue = || QueueId::parse(&text(1)?).map_err(|err| ParsingError::from(err.to_string()));
        Ok(match text(0)?.as_str() {
            "claimed" => ClaimReply::Claimed(claim()?),
            "held" => ClaimReply::Held(claim()?),
            "unknown" => ClaimReply::Unknown,
            "elsewhere" => ClaimReply::Elsewhere(queue()?),
            "not-open" => ClaimReply::NotOpen(instant(number(1)?)?),
            "closed" => ClaimReply::Closed(instant(number(1)?)?),
            "sold-out" => ClaimReply::SoldOut {
                quantity: number(1)? as u64,
            },
            "inactive" => ClaimReply::Inactive(queue()?),
            "challenge-required" => ClaimReply::Door { required: true },
            "challenge-failed" => ClaimReply::Door { required: false },
            "limited" => ClaimReply::Limited {
                retry_after: Duration::from_millis(number(1)?.max(0) as u64),
            },
            other => return Err(format!("unexpected claim reply {other:?}").into()),
        })
    }
}

impl ClaimReply {
    /// The buyer's claim and whether it is new, or the error that answers the buyer, who
    /// brought `proof` to the door.
    pub fn into_result(self, coupon: &CouponId, proof: &Proof) -> Result<(Claim, bool), Error> {
        let at = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Millis, true);
        match self {
            ClaimReply::Claimed(claim) => Ok((claim, true)),
            ClaimReply::Held(claim) => Ok((claim, false)),
            ClaimReply::Unknown => Err(unknown_campaign(coupon)),
            ClaimReply::Elsewhere(queue) | ClaimReply::Inactive(queue) => {
                Err(Error::Forbidden(format!(
                    "campaign {coupon} is for buyers with an active session in queue {queue}; \
                     send that queue's token as `token`"
                )))
            }
            ClaimReply::NotOpen(opens) => Err(Error::Conflict(format!(
                "campaign {coupon} opens at {}",
                at(opens)
            ))),
            ClaimReply::Closed(closes) => Err(Error::Conflict(format!(
                "campaign {coupon} closed at {}",
                at(closes)
            ))),
            ClaimReply::SoldOut { quantity } => Err(Error::refused(AllClaimed { quantity })),
            ClaimReply::Limited { retry_after } => Err(Error::RateLimited {
                retry_after: retry_after.max(Duration::from_secs(1)),
            }),
            ClaimReply::Door { .. } => Err(Refused::of(Scope::Coupon(coupon), proof, false).into()),
        }
    }
}

/// A claim as `POST /coupons/{couponId}/claims` answers it, and the `CouponClaimed`
/// event's detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimView<'a> {
    pub coupon_id: &'a CouponId,
    pub user_id: &'a UserId,
    pub claim_number: u64,
    pub claimed_at: String,
}

impl<'a> ClaimView<'a> {
    pub fn new(coupon_id: &'a CouponId, user_id: &'a UserId, claim: &Claim) -> Self {
        ClaimView {
            coupon_id,
            user_id,
            claim_number: claim.number,
            claimed_at: claim
                .claimed_at
                .to_rfc3339_opts(SecondsFormat::Millis, true),
        }
    }
}

/// A campaign has given out every coupon it holds (410), until an operator raises its
/// quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("all {quantity} coupons of this campaign are claimed")]
pub struct AllClaimed {
    pub quantity: u64,
}

impl Refusal for AllClaimed {
    fn turned(&self) -> Turned {
        Turned::Gone
    }

    fn kind(&self) -> &'static str {
        "sold-out"
    }

    fn title(&self) -> &'static str {
        "Sold out"
    }
}
