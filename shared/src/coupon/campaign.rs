//! A campaign's settings as an operator sends them (`PUT /coupons/{couponId}`), checked into
//! [`CampaignSettings`], and the campaign as the scripts report it.

use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Number;

use super::limits::{MAX_QUANTITY, RETENTION};
use crate::bounds::{Bounds, CHALLENGE_COST};
use crate::door::{ChallengeMode, DEFAULT_COST_MIN};
use crate::error::Error;
use crate::ids::{CouponId, QueueId};
use crate::store::Fields;

/// The body of `PUT /coupons/{couponId}`: the whole campaign, each time.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CampaignChange {
    pub quantity: Number,
    #[serde(default)]
    pub opens_at: Option<String>,
    #[serde(default)]
    pub closes_at: Option<String>,
    #[serde(default)]
    pub queue_id: Option<String>,
    /// Whether a claim solves a door challenge first: `off` (the default) or `on`.
    #[serde(default)]
    pub challenge: Option<ChallengeMode>,
    /// The challenge's cost, PBKDF2 iterations per try (default 1 000).
    #[serde(default)]
    pub challenge_cost: Option<Number>,
}

/// A campaign's settings, every value checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignSettings {
    pub quantity: u64,
    pub opens_at: Option<DateTime<Utc>>,
    pub closes_at: Option<DateTime<Utc>>,
    pub queue: Option<QueueId>,
    /// The door's cost when a claim solves a challenge first; `None` when it does not.
    pub challenge_cost: Option<u32>,
}

impl TryFrom<&CampaignChange> for CampaignSettings {
    type Error = Error;

    fn try_from(change: &CampaignChange) -> Result<Self, Error> {
        let quantity = Bounds::new(1, MAX_QUANTITY)
            .json(&change.quantity)
            .map_err(|err| Error::invalid("quantity", err.to_string()))?;
        let instant = |field: &'static str, raw: &Option<String>| {
            raw.as_deref()
                .map(|raw| {
                    DateTime::parse_from_rfc3339(raw)
                        .map(|at| at.with_timezone(&Utc))
                        .map_err(|err| {
                            Error::invalid(field, format!("not an RFC 3339 instant: {err}"))
                        })
                })
                .transpose()
        };
        let opens_at = instant("opensAt", &change.opens_at)?;
        let closes_at = instant("closesAt", &change.closes_at)?;
        if let (Some(opens), Some(closes)) = (opens_at, closes_at) {
            if closes <= opens {
                return Err(Error::invalid("closesAt", "must be after opensAt"));
            }
        }
        let queue = change.queue_id.as_deref().map(QueueId::parse).transpose()?;
        let cost = change
            .challenge_cost
            .as_ref()
            .map(|cost| CHALLENGE_COST.json(cost))
            .transpose()
            .map_err(|err| Error::invalid("challengeCost", err.to_string()))?
            .map_or(DEFAULT_COST_MIN, |cost| cost as u32);
        let challenge_cost = match change.challenge.unwrap_or_default() {
            ChallengeMode::Off => None,
            ChallengeMode::On => Some(cost),
            ChallengeMode::Adaptive => {
                return Err(Error::invalid(
                    "challenge",
                    "a campaign takes off or on; adaptive is a queue's",
                ))
            }
        };
        Ok(CampaignSettings {
            quantity,
            opens_at,
            closes_at,
            queue,
            challenge_cost,
        })
    }
}

impl CampaignSettings {
    /// When every key of the campaign expires: [`RETENTION`] after it closes, or after `now`
    /// for a campaign without `closesAt`. A campaign that closed longer ago than that is
    /// refused: its keys would be gone at once.
    pub fn expires_at(&self, now: DateTime<Utc>) -> Result<DateTime<Utc>, Error> {
        let retention = chrono::Duration::from_std(RETENTION)
            .map_err(|err| Error::Internal(err.to_string()))?;
        let end = self.closes_at.unwrap_or(now);
        let expires = end
            .checked_add_signed(retention)
            // Every instant shown stays a four-digit-year RFC 3339 date-time.
            .filter(|at| at.year() <= 9999)
            .ok_or_else(|| Error::invalid("closesAt", "too far in the future"))?;
        if expires <= now {
            return Err(Error::invalid(
                "closesAt",
                format!(
                    "closed more than the {} days its claims are kept",
                    RETENTION.as_secs() / 86_400
                ),
            ));
        }
        Ok(expires)
    }
}

/// A campaign, as `GET /coupons/{couponId}` and `PUT` answer it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub coupon_id: Option<CouponId>,
    pub quantity: u64,
    pub claimed: u64,
    pub remaining: u64,
    #[serde(serialize_with = "rfc3339")]
    pub opens_at: Option<DateTime<Utc>>,
    #[serde(serialize_with = "rfc3339")]
    pub closes_at: Option<DateTime<Utc>>,
    pub queue_id: Option<QueueId>,
    /// Whether a claim solves a door challenge first (docs/door.md), and at what cost.
    pub challenge: ChallengeMode,
    pub challenge_cost: Option<u32>,
    /// When every key of the campaign expires, its claims with it.
    #[serde(serialize_with = "rfc3339")]
    pub expires_at: Option<DateTime<Utc>>,
}

impl Campaign {
    pub(super) fn named(mut self, coupon: &CouponId) -> Self {
        self.coupon_id = Some(coupon.clone());
        self
    }
}

fn rfc3339<S: Serializer>(at: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match at {
        Some(at) => s.serialize_str(&at.to_rfc3339_opts(SecondsFormat::Millis, true)),
        None => s.serialize_none(),
    }
}

/// `campaign_reply()` of `common.lua`, from its fields after the leading `'campaign'`.
fn campaign_from(fields: &[Value]) -> Result<Campaign, ParsingError> {
    let fields = Fields::new("campaign", fields);
    let quantity: u64 = fields.number(0)?;
    let claimed: u64 = fields.number(1)?;
    let queue = fields.text(4)?;
    let cost = fields.text(6)?;
    let challenge_cost = if cost.is_empty() {
        None
    } else {
        Some(fields.number::<u32>(6)?)
    };
    Ok(Campaign {
        coupon_id: None,
        quantity,
        claimed,
        remaining: quantity.saturating_sub(claimed),
        opens_at: fields.instant(2)?,
        closes_at: fields.instant(3)?,
        queue_id: if queue.is_empty() {
            None
        } else {
            Some(QueueId::parse(&queue).map_err(|err| ParsingError::from(err.to_string()))?)
        },
        expires_at: fields.instant(5)?,
        challenge: if challenge_cost.is_some() {
            ChallengeMode::On
        } else {
            ChallengeMode::Off
        },
        challenge_cost,
    })
}

/// What the read script answers: `campaign_reply()`.
pub(super) enum ReadReply {
    Campaign(Campaign),
    /// Only a locator here: the campaign is under this queue's tag.
    Elsewhere(QueueId),
    Unknown,
}

impl FromRedisValue for ReadReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let fields: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let kind = fields
            .first()
            .map(String::from_redis_value_ref)
            .transpose()?
            .unwrap_or_default();
        match kind.as_str() {
            "campaign" => Ok(ReadReply::Campaign(campaign_from(&fields[1..])?)),
            "elsewhere" => {
                let queue: String = fields
                    .get(1)
                    .map(String::from_redis_value_ref)
                    .transpose()?
                    .unwrap_or_default();
                QueueId::parse(&queue)
                    .map(ReadReply::Elsewhere)
                    .map_err(|err| err.to_string().into())
            }
            "unknown" => Ok(ReadReply::Unknown),
            other => Err(format!("unexpected read reply {other:?}").into()),
        }
    }
}

/// What the configure script answers.
pub(super) enum ConfigureReply {
    /// Done (or, for a check, would be); whether this call created it (or would), and the
    /// campaign (absent for a locator or a check).
    Done {
        created: bool,
        campaign: Option<Campaign>,
    },
    /// The campaign lives elsewhere: under this queue (`None`: under its own tag).
    HomeDiffers(Option<String>),
    /// The quantity would fall below the claims already made.
    BelowClaimed(u64),
}

impl FromRedisValue for ConfigureReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let values: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let fields = Fields::new("configure", &values);
        let text = |i: usize| fields.text(i);
        match text(0)?.as_str() {
            "ok" => Ok(ConfigureReply::Done {
                created: text(1)? == "1",
                campaign: match values.get(2) {
                    Some(_) => Some(campaign_from(&values[3..])?),
                    None => None,
                },
            }),
            "home-differs" => {
                let queue = text(1)?;
                Ok(ConfigureReply::HomeDiffers(
                    (!queue.is_empty()).then_some(queue),
                ))
            }
            "below-claimed" => Ok(ConfigureReply::BelowClaimed(fields.number(1)?)),
            other => Err(format!("unexpected configure reply {other:?}").into()),
        }
    }
}

impl ConfigureReply {
    /// Whether this call created it, and the campaign (none for a locator or a check), or
    /// the conflict that refused the change.
    pub(super) fn into_result(self, coupon: &CouponId) -> Result<(Option<Campaign>, bool), Error> {
        match self {
            ConfigureReply::Done { created, campaign } => {
                Ok((campaign.map(|campaign| campaign.named(coupon)), created))
            }
            ConfigureReply::HomeDiffers(held) => Err(Error::Conflict(match held {
                Some(queue) => format!(
                    "campaign {coupon} belongs to queue {queue}; a campaign's queue cannot change"
                ),
                None => format!(
                    "campaign {coupon} was created without a queue; a campaign's queue cannot \
                     change"
                ),
            })),
            ConfigureReply::BelowClaimed(claimed) => Err(Error::Conflict(format!(
                "{claimed} coupons of campaign {coupon} are already claimed; the quantity \
                 cannot go below that"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(body: serde_json::Value) -> Result<CampaignSettings, Error> {
        let change: CampaignChange = serde_json::from_value(body).expect("a change");
        CampaignSettings::try_from(&change)
    }

    #[test]
    fn a_campaign_is_checked_once_at_the_edge() {
        let ok = settings(serde_json::json!({
            "quantity": 500,
            "opensAt": "2026-11-24T10:00:00+09:00",
            "closesAt": "2026-11-24T02:00:00Z",
            "queueId": "onsale-1",
        }))
        .unwrap();
        assert_eq!(ok.quantity, 500);
        assert_eq!(
            ok.opens_at.unwrap().to_rfc3339(),
            "2026-11-24T01:00:00+00:00"
        );
        for (body, field) in [
            (serde_json::json!({"quantity": 0}), "quantity"),
            (serde_json::json!({"quantity": 10_000_001}), "quantity"),
            (serde_json::json!({"quantity": 2.5}), "quantity"),
            (
                serde_json::json!({"quantity": 1, "opensAt": "tomorrow"}),
                "opensAt",
            ),
            (
                serde_json::json!({"quantity": 1, "opensAt": "2026-11-24T02:00:00Z",
                                   "closesAt": "2026-11-24T02:00:00Z"}),
                "closesAt",
            ),
            (
                serde_json::json!({"quantity": 1, "queueId": "a{b}"}),
                "queueId",
            ),
        ] {
            let err = settings(body.clone()).unwrap_err();
            assert!(err.to_string().contains(field), "{body}: {err}");
        }
    }

    #[test]
    fn every_key_ends_seven_days_after_the_campaign_closes_or_changes() {
        let now = DateTime::parse_from_rfc3339("2026-11-24T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let open = settings(serde_json::json!({"quantity": 1})).unwrap();
        assert_eq!(
            open.expires_at(now).unwrap().to_rfc3339(),
            "2026-12-01T00:00:00+00:00"
        );
        let closing =
            settings(serde_json::json!({"quantity": 1, "closesAt": "2026-12-24T00:00:00Z"}))
                .unwrap();
        assert_eq!(
            closing.expires_at(now).unwrap().to_rfc3339(),
            "2026-12-31T00:00:00+00:00"
        );
        let long_closed =
            settings(serde_json::json!({"quantity": 1, "closesAt": "2026-11-01T00:00:00Z"}))
                .unwrap();
        assert!(long_closed.expires_at(now).is_err());
        let far = settings(serde_json::json!({"quantity": 1, "closesAt": "9999-12-31T00:00:00Z"}))
            .unwrap();
        assert!(far.expires_at(now).is_err());
    }
}
