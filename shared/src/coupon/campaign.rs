//! A campaign's settings as an operator sends them (`PUT /coupons/{couponId}`), checked into
//! [`CampaignSettings`]; the configure and read scripts' calls (`configure.lua`, `read.lua`)
//! and their answers, the campaign as the scripts report it.

use std::sync::LazyLock;

use chrono::{DateTime, Datelike, SecondsFormat, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Number;

use super::coupons::{coupon_lua, Coupons, STORED_KEYS};
use super::keys::Home;
use super::limits::{MAX_QUANTITY, RETENTION};
use crate::bounds::{Bounds, CHALLENGE_COST};
use crate::door::{ChallengeMode, DEFAULT_COST_MIN};
use crate::error::Error;
use crate::ids::{CouponId, QueueId};
use crate::store::{lua_script, primary_read_script, NamedScript, ScriptCall, Tagged};

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

/// The configure script: the campaign's prelude, then the change.
pub(super) static CONFIGURE: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&coupon_lua(include_str!("configure.lua")))),
    STORED_KEYS,
    &[
        "mode",
        "queue",
        "quantity",
        "opens_at",
        "closes_at",
        "expires",
        "write",
        "challenge_cost",
    ],
);

/// The read script: the campaign's prelude, then `campaign_reply()`.
pub(super) static READ: NamedScript = NamedScript::new(
    LazyLock::new(|| primary_read_script(&coupon_lua(include_str!("read.lua")))),
    &["CAMPAIGN"],
    &[],
);

/// What a configure call changes: a campaign with a queue's locator under the campaign's
/// own tag, or the campaign itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    Locator,
    Campaign,
}

/// Whether a configure call writes, or only answers as its write would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    Write,
    Check,
}

impl Coupons {
    /// A configure call of `coupon` under `home`'s tag: `step`, written or checked.
    pub(super) fn configure_call(
        &self,
        coupon: &CouponId,
        home: &Home,
        step: Step,
        write: Write,
        settings: &CampaignSettings,
        expires: DateTime<Utc>,
    ) -> ScriptCall {
        let mut call = ScriptCall::of(&CONFIGURE);
        for (name, key) in self.keys(coupon, home).stored() {
            call.named_key(name, key);
        }
        let ms = |at: Option<DateTime<Utc>>| {
            at.map(|at| at.timestamp_millis().to_string())
                .unwrap_or_default()
        };
        call.named(
            "mode",
            match step {
                Step::Locator => "locator",
                Step::Campaign => "campaign",
            },
        )
        .named(
            "queue",
            settings.queue.as_ref().map(QueueId::as_str).unwrap_or(""),
        )
        .named("quantity", settings.quantity)
        .named("opens_at", ms(settings.opens_at))
        .named("closes_at", ms(settings.closes_at))
        .named("expires", expires.timestamp_millis())
        .named(
            "write",
            match write {
                Write::Write => "write",
                Write::Check => "check",
            },
        )
        .named(
            "challenge_cost",
            settings
                .challenge_cost
                .map(|cost| cost.to_string())
                .unwrap_or_default(),
        );
        call
    }

    /// A read of `coupon` under `home`'s tag.
    pub(super) fn read_call(&self, coupon: &CouponId, home: &Home) -> ScriptCall {
        let mut call = ScriptCall::of(&READ);
        call.named_key("CAMPAIGN", self.keys(coupon, home).campaign);
        call
    }
}

/// The fields of `campaign_reply()` (`common.lua`).
fn campaign_from(r: &Tagged) -> Result<Campaign, ParsingError> {
    let quantity: u64 = r.number("quantity")?;
    let claimed: u64 = r.number("claimed")?;
    let challenge_cost = match r.optional_text("challenge-cost")? {
        Some(_) => Some(r.number::<u32>("challenge-cost")?),
        None => None,
    };
    Ok(Campaign {
        coupon_id: None,
        quantity,
        claimed,
        remaining: quantity.saturating_sub(claimed),
        opens_at: r.optional_instant("opens-at")?,
        closes_at: r.optional_instant("closes-at")?,
        queue_id: r.optional_text("queue")?.map(queue_id).transpose()?,
        expires_at: r.optional_instant("expires-at")?,
        challenge: if challenge_cost.is_some() {
            ChallengeMode::On
        } else {
            ChallengeMode::Off
        },
        challenge_cost,
    })
}

/// A queue id a script answered.
fn queue_id(raw: String) -> Result<QueueId, ParsingError> {
    QueueId::parse(&raw).map_err(|err| ParsingError::from(err.to_string()))
}

/// What the read script answers: `campaign_reply()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ReadReply {
    Campaign {
        campaign: Campaign,
    },
    /// Only a locator here: the campaign is under this queue's tag.
    Elsewhere {
        queue: QueueId,
    },
    Unknown,
}

impl FromRedisValue for ReadReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("read", &v, |r| {
            Ok(match r.tag() {
                "campaign" => ReadReply::Campaign {
                    campaign: campaign_from(r)?,
                },
                "elsewhere" => ReadReply::Elsewhere {
                    queue: queue_id(r.text("queue")?)?,
                },
                "unknown" => ReadReply::Unknown,
                _ => return Err(r.unknown()),
            })
        })
    }
}

/// What the configure script answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ConfigureReply {
    /// A check or a locator: done (or, for a check, would be); whether this call created it
    /// (or would).
    Done { created: bool },
    /// The campaign written, and whether this call created it.
    Written { created: bool, campaign: Campaign },
    /// The campaign is kept under its own tag: it was created without a queue.
    WithoutQueue,
    /// The campaign belongs to this queue.
    HomeDiffers { queue: QueueId },
    /// The quantity would fall below the claims already made.
    BelowClaimed { claimed: u64 },
}

impl FromRedisValue for ConfigureReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("configure", &v, |r| {
            Ok(match r.tag() {
                "done" => ConfigureReply::Done {
                    created: r.flag("created")?,
                },
                "written" => ConfigureReply::Written {
                    created: r.flag("created")?,
                    campaign: campaign_from(r)?,
                },
                "without-queue" => ConfigureReply::WithoutQueue,
                "home-differs" => ConfigureReply::HomeDiffers {
                    queue: queue_id(r.text("queue")?)?,
                },
                "below-claimed" => ConfigureReply::BelowClaimed {
                    claimed: r.number("claimed")?,
                },
                _ => return Err(r.unknown()),
            })
        })
    }
}

impl ConfigureReply {
    /// Whether this call created it, and the campaign (none for a locator or a check), or
    /// the conflict that refused the change.
    pub(super) fn into_result(self, coupon: &CouponId) -> Result<(Option<Campaign>, bool), Error> {
        match self {
            ConfigureReply::Done { created } => Ok((None, created)),
            ConfigureReply::Written { created, campaign } => {
                Ok((Some(campaign.named(coupon)), created))
            }
            ConfigureReply::HomeDiffers { queue } => Err(Error::Conflict(format!(
                "campaign {coupon} belongs to queue {queue}; a campaign's queue cannot change"
            ))),
            ConfigureReply::WithoutQueue => Err(Error::Conflict(format!(
                "campaign {coupon} was created without a queue; a campaign's queue cannot \
                 change"
            ))),
            ConfigureReply::BelowClaimed { claimed } => Err(Error::Conflict(format!(
                "{claimed} coupons of campaign {coupon} are already claimed; the quantity \
                 cannot go below that"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_reply as reply;

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

    const CAMPAIGN: [&str; 14] = [
        "quantity",
        "500",
        "claimed",
        "20",
        "opens-at",
        "1700000000000",
        "closes-at",
        "",
        "queue",
        "onsale-1",
        "expires-at",
        "1700604800000",
        "challenge-cost",
        "",
    ];

    fn campaign() -> Campaign {
        Campaign {
            coupon_id: None,
            quantity: 500,
            claimed: 20,
            remaining: 480,
            opens_at: DateTime::from_timestamp_millis(1_700_000_000_000),
            closes_at: None,
            queue_id: Some(QueueId::parse("onsale-1").unwrap()),
            challenge: ChallengeMode::Off,
            challenge_cost: None,
            expires_at: DateTime::from_timestamp_millis(1_700_604_800_000),
        }
    }

    #[test]
    fn each_read_answer_decodes_into_its_variant() {
        let read = |items: &[&str]| ReadReply::from_redis_value(reply(items));
        assert_eq!(
            read(&[&["campaign"][..], &CAMPAIGN].concat()).unwrap(),
            ReadReply::Campaign {
                campaign: campaign()
            }
        );
        assert_eq!(
            read(&["elsewhere", "queue", "onsale-1"]).unwrap(),
            ReadReply::Elsewhere {
                queue: QueueId::parse("onsale-1").unwrap()
            }
        );
        assert_eq!(read(&["unknown"]).unwrap(), ReadReply::Unknown);
        let mut costly = [&["campaign"][..], &CAMPAIGN].concat();
        costly[14] = "2000";
        let ReadReply::Campaign { campaign } = read(&costly).unwrap() else {
            panic!("a campaign");
        };
        assert_eq!(
            (campaign.challenge, campaign.challenge_cost),
            (ChallengeMode::On, Some(2000))
        );
        for bad in [
            &["campaign", "quantity", "500"][..],
            &[&["campaign"][..], &CAMPAIGN[2..]].concat(),
            &["elsewhere"],
            &["gone"],
        ] {
            assert!(read(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn each_configure_answer_decodes_into_its_variant() {
        let configure = |items: &[&str]| ConfigureReply::from_redis_value(reply(items));
        assert_eq!(
            configure(&["done", "created", "1"]).unwrap(),
            ConfigureReply::Done { created: true }
        );
        assert_eq!(
            configure(&[&["written"][..], &CAMPAIGN, &["created", "0"]].concat()).unwrap(),
            ConfigureReply::Written {
                created: false,
                campaign: campaign()
            }
        );
        assert_eq!(
            configure(&["without-queue"]).unwrap(),
            ConfigureReply::WithoutQueue
        );
        assert_eq!(
            configure(&["home-differs", "queue", "onsale-2"]).unwrap(),
            ConfigureReply::HomeDiffers {
                queue: QueueId::parse("onsale-2").unwrap()
            }
        );
        assert_eq!(
            configure(&["below-claimed", "claimed", "20"]).unwrap(),
            ConfigureReply::BelowClaimed { claimed: 20 }
        );
        for bad in [
            &["ok", "created", "1"][..],
            &["done", "created", "yes"],
            &["written", "created", "1"],
            &["home-differs", "queue", ""],
            &["below-claimed"],
        ] {
            assert!(configure(bad).is_err(), "{bad:?}");
        }
    }
}
