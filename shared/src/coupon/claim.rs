//! A claim: the claim script's call (`claim.lua`), its answer, and what each answer means for
//! the buyer.

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::coupons::{coupon_lua, Coupons};
use super::decode::unknown_campaign;
use super::keys::Home;
use crate::door::{Proof, Refused, Scope};
use crate::error::{Error, Refusal, Turned};
use crate::ids::{CouponId, QueueId, UserId};
use crate::store::{lua_script, NamedScript, ScriptCall, Tagged};

/// A buyer's coupon: its number (1 … quantity) and when it was claimed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub number: u64,
    pub claimed_at: DateTime<Utc>,
}

/// The claim script: the campaign's prelude, then the claim.
pub(super) static CLAIM: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&coupon_lua(include_str!("claim.lua")))),
    &[
        "CAMPAIGN",
        "CLAIMS",
        "OUTBOX",
        "RATE_0",
        "RATE_1",
        "QUEUE_ACTIVE?",
        "QUEUE_TICKETS?",
    ],
    &["user", "ip", "user_limit", "ip_limit", "ticket", "door"],
);

impl Coupons {
    /// A claim of `coupon` for `user` from `ip`, under `home`'s tag, with the ticket of the
    /// buyer's queue token there; the caller adds `door`.
    pub(super) fn claim_call(
        &self,
        coupon: &CouponId,
        user: &UserId,
        ip: &str,
        home: &Home,
        ticket: Option<u64>,
    ) -> ScriptCall {
        let mut call = ScriptCall::of(&CLAIM);
        for (name, key) in self.keys(coupon, home).claim() {
            call.named_key(name, key);
        }
        call.named("user", user.as_str())
            .named("ip", ip)
            .named("user_limit", self.limits.user_per_minute)
            .named("ip_limit", self.limits.ip_per_minute)
            .named(
                "ticket",
                ticket.map(|ticket| ticket.to_string()).unwrap_or_default(),
            );
        call
    }
}

/// What `claim.lua` answers, one variant per tag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimReply {
    /// A new claim, written with its outbox entry (`claimed`).
    Claimed {
        claim: Claim,
    },
    /// The buyer's claim from before (`held`).
    Held {
        claim: Claim,
    },
    Unknown,
    /// Only a locator under this tag: the campaign is kept under this queue's tag.
    Elsewhere {
        queue: QueueId,
    },
    NotOpen {
        opens_at: DateTime<Utc>,
    },
    Closed {
        closes_at: DateTime<Utc>,
    },
    SoldOut {
        quantity: u64,
    },
    /// The buyer holds no claim and has no active session with the token's ticket (or
    /// showed none) in this queue.
    Inactive {
        queue: QueueId,
    },
    Limited {
        retry_after: Duration,
    },
    /// The campaign asks for a solved challenge, and none came.
    ChallengeRequired,
    /// The campaign asks for a solved challenge, and the one that came does not hold.
    ChallengeFailed,
}

impl FromRedisValue for ClaimReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("claim", &v, |r| {
            let claim = || -> Result<Claim, ParsingError> {
                Ok(Claim {
                    number: r.number("number")?,
                    claimed_at: r.instant("at")?,
                })
            };
            let queue = || {
                QueueId::parse(&r.text("queue")?).map_err(|err| ParsingError::from(err.to_string()))
            };
            Ok(match r.tag() {
                "claimed" => ClaimReply::Claimed { claim: claim()? },
                "held" => ClaimReply::Held { claim: claim()? },
                "unknown" => ClaimReply::Unknown,
                "elsewhere" => ClaimReply::Elsewhere { queue: queue()? },
                "not-open" => ClaimReply::NotOpen {
                    opens_at: r.instant("opens-at")?,
                },
                "closed" => ClaimReply::Closed {
                    closes_at: r.instant("closes-at")?,
                },
                "sold-out" => ClaimReply::SoldOut {
                    quantity: r.number("quantity")?,
                },
                "inactive" => ClaimReply::Inactive { queue: queue()? },
                "challenge-required" => ClaimReply::ChallengeRequired,
                "challenge-failed" => ClaimReply::ChallengeFailed,
                "limited" => ClaimReply::Limited {
                    retry_after: Duration::from_millis(r.number::<i64>("retry-in")?.max(0) as u64),
                },
                _ => return Err(r.unknown()),
            })
        })
    }
}

impl ClaimReply {
    /// The buyer's claim and whether it is new, or the error that answers the buyer, who
    /// brought `proof` to the door.
    pub fn into_result(self, coupon: &CouponId, proof: &Proof) -> Result<(Claim, bool), Error> {
        let at = |at: DateTime<Utc>| at.to_rfc3339_opts(SecondsFormat::Millis, true);
        match self {
            ClaimReply::Claimed { claim } => Ok((claim, true)),
            ClaimReply::Held { claim } => Ok((claim, false)),
            ClaimReply::Unknown => Err(unknown_campaign(coupon)),
            ClaimReply::Elsewhere { queue } | ClaimReply::Inactive { queue } => {
                Err(Error::Forbidden(format!(
                    "campaign {coupon} is for buyers with an active session in queue {queue}; \
                     send that queue's token as `token`"
                )))
            }
            ClaimReply::NotOpen { opens_at } => Err(Error::Conflict(format!(
                "campaign {coupon} opens at {}",
                at(opens_at)
            ))),
            ClaimReply::Closed { closes_at } => Err(Error::Conflict(format!(
                "campaign {coupon} closed at {}",
                at(closes_at)
            ))),
            ClaimReply::SoldOut { quantity } => Err(Error::refused(AllClaimed { quantity })),
            ClaimReply::Limited { retry_after } => Err(Error::RateLimited {
                retry_after: retry_after.max(Duration::from_secs(1)),
            }),
            ClaimReply::ChallengeRequired | ClaimReply::ChallengeFailed => {
                Err(Refused::of(Scope::Coupon(coupon), proof, false).into())
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_reply;

    fn decode(items: &[&str]) -> Result<ClaimReply, ParsingError> {
        ClaimReply::from_redis_value(test_reply(items))
    }

    #[test]
    fn each_claim_answer_decodes_into_its_variant() {
        let at = DateTime::from_timestamp_millis(1_700_000_000_000).unwrap();
        let claim = Claim {
            number: 3,
            claimed_at: at,
        };
        let queue = QueueId::parse("onsale-1").unwrap();
        let cases = [
            (
                &["claimed", "number", "3", "at", "1700000000000"][..],
                ClaimReply::Claimed {
                    claim: claim.clone(),
                },
            ),
            (
                &["held", "at", "1700000000000", "number", "3"],
                ClaimReply::Held { claim },
            ),
            (&["unknown"], ClaimReply::Unknown),
            (
                &["elsewhere", "queue", "onsale-1"],
                ClaimReply::Elsewhere {
                    queue: queue.clone(),
                },
            ),
            (
                &["not-open", "opens-at", "1700000000000"],
                ClaimReply::NotOpen { opens_at: at },
            ),
            (
                &["closed", "closes-at", "1700000000000"],
                ClaimReply::Closed { closes_at: at },
            ),
            (
                &["sold-out", "quantity", "500"],
                ClaimReply::SoldOut { quantity: 500 },
            ),
            (
                &["inactive", "queue", "onsale-1"],
                ClaimReply::Inactive { queue },
            ),
            (
                &["limited", "retry-in", "1500"],
                ClaimReply::Limited {
                    retry_after: Duration::from_millis(1500),
                },
            ),
            (&["challenge-required"], ClaimReply::ChallengeRequired),
            (&["challenge-failed"], ClaimReply::ChallengeFailed),
        ];
        for (items, expected) in cases {
            assert_eq!(decode(items).unwrap(), expected, "{items:?}");
        }
    }

    #[test]
    fn a_malformed_claim_answer_is_an_error() {
        for items in [
            &["granted"][..],
            &["claimed", "number", "3"],
            &["claimed", "number", "three", "at", "1700000000000"],
            &["sold-out", "quantity", "500", "claimed", "500"],
            &["elsewhere", "queue", "a{b}"],
            &["not-open", "1700000000000"],
        ] {
            assert!(decode(items).is_err(), "{items:?}");
        }
    }
}
