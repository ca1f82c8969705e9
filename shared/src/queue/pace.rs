//! The pace a queue admits at, beyond its own `capacity` and `admitPerTick`: the scheduled
//! capacity ramp (the setting `capacityRamp`), the booking system's health (see
//! [`super::health`]), and what the summary and `QueuePaceChanged` say of the pace in force.
//! `common.lua` computes both once per call (the capacity: the lowest of `capacity` and the
//! ramp's step; the health level), so issue, the promotion tick and a leave's hand-over all
//! admit within them.

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use crate::bounds::{self, Bounds};
use crate::error::Error;

/// The longest step of a ramp, in seconds: a day.
pub const RAMP_EVERY_MAX_SECONDS: u64 = 86_400;

/// A capacity that rises on a schedule: `from` at the start (the opening, or when it is set
/// where the queue has no opening), `step` more every `everySeconds`, up to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRamp {
    pub from: u32,
    pub step: u32,
    pub every_seconds: u64,
    pub to: u32,
}

impl CapacityRamp {
    /// The stored form, `from:step:every ms:to` (configure appends the ms it was set), once
    /// every number is within its bounds.
    pub(super) fn stored(&self) -> Result<String, Error> {
        let check = |field: &'static str, value: u64, within: Bounds| {
            if within.holds(value) {
                Ok(())
            } else {
                Err(Error::invalid(
                    "capacityRamp",
                    format!(
                        "{field} must be a whole number from {} to {}, not {value}",
                        within.min, within.max
                    ),
                ))
            }
        };
        check("from", self.from.into(), bounds::CAPACITY)?;
        check("step", self.step.into(), bounds::CAPACITY)?;
        check("to", self.to.into(), bounds::CAPACITY)?;
        check(
            "everySeconds",
            self.every_seconds,
            Bounds::new(1, RAMP_EVERY_MAX_SECONDS),
        )?;
        if self.to < self.from {
            return Err(Error::invalid("capacityRamp", "to must be at least from"));
        }
        Ok(format!(
            "{}:{}:{}:{}",
            self.from,
            self.step,
            self.every_seconds * 1000,
            self.to
        ))
    }
}

/// `settings_reply`'s ramp: `{from, step, every ms, to}`, or `{}` without one.
pub(super) struct RampReply(pub Option<CapacityRamp>);

impl FromRedisValue for RampReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let parts: Vec<u64> = FromRedisValue::from_redis_value(v)?;
        Ok(RampReply(match parts.as_slice() {
            [] => None,
            [from, step, every_ms, to] => Some(CapacityRamp {
                from: u32::try_from(*from).map_err(|_| "ramp from out of range")?,
                step: u32::try_from(*step).map_err(|_| "ramp step out of range")?,
                every_seconds: every_ms / 1000,
                to: u32::try_from(*to).map_err(|_| "ramp to out of range")?,
            }),
            _ => return Err("a ramp of other than four numbers".into()),
        }))
    }
}

/// What limits the capacity in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum LimitedBy {
    /// The queue's own `capacity`.
    Capacity,
    /// The capacity ramp's step.
    Ramp,
    /// The queue's allotment from its capacity pool.
    Pool,
}

impl LimitedBy {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitedBy::Capacity => "capacity",
            LimitedBy::Ramp => "ramp",
            LimitedBy::Pool => "pool",
        }
    }

    fn parse(word: &str) -> Result<Self, ParsingError> {
        match word {
            "capacity" => Ok(LimitedBy::Capacity),
            "ramp" => Ok(LimitedBy::Ramp),
            "pool" => Ok(LimitedBy::Pool),
            other => Err(format!("the pace is limited by {other:?}").into()),
        }
    }
}

/// What holds the health level below 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum HealthReason {
    /// The booking system's `BookingHealth` level.
    Booking,
    /// An alarm the queue names is in ALARM.
    Alarm,
    /// The level is climbing back after a fall (`healthRecoverySeconds`).
    Recovery,
}

impl HealthReason {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthReason::Booking => "booking",
            HealthReason::Alarm => "alarm",
            HealthReason::Recovery => "recovery",
        }
    }

    /// The scripts' word: `''` at level 1.
    fn parse(word: &str) -> Result<Option<Self>, ParsingError> {
        Ok(match word {
            "" => None,
            "booking" => Some(HealthReason::Booking),
            "alarm" => Some(HealthReason::Alarm),
            "recovery" => Some(HealthReason::Recovery),
            other => return Err(format!("the health is held by {other:?}").into()),
        })
    }
}

/// The booking system's health in force (see [`super::health`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// 0 (nobody is admitted) to 1 (the configured pace).
    pub level: f64,
    /// What holds it below 1; absent at 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<HealthReason>,
}

impl Health {
    fn read(level: &str, reason: &str) -> Result<Self, ParsingError> {
        Ok(Health {
            level: level
                .parse()
                .map_err(|_| format!("a health level of {level:?}"))?,
            reason: HealthReason::parse(reason)?,
        })
    }
}

/// The pace in force and why: the summary's `pace`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pace {
    /// Most buyers active at once right now.
    pub capacity: u32,
    /// What limits `capacity`.
    pub limited_by: LimitedBy,
    /// How many a promotion tick admits now, on average: `admitPerTick` × the health level.
    pub admit_per_tick: f64,
    pub health: Health,
    /// When the booking system's level lapses unless renewed; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_until: Option<DateTime<Utc>>,
}

/// A number the scripts format as text (`'%.4f'`).
fn decimal(raw: &str) -> Result<f64, ParsingError> {
    raw.parse()
        .map_err(|_| ParsingError::from(format!("a number of {raw:?}")))
}

/// The summary's `{capacity in force, what limits it, admissions a tick in force, health
/// level, what holds it, until ms or ''}`.
impl FromRedisValue for Pace {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (capacity, limited_by, admit, level, reason, until): (
            u32,
            String,
            String,
            String,
            String,
            String,
        ) = FromRedisValue::from_redis_value(v)?;
        let health_until = match until.as_str() {
            "" => None,
            ms => Some(
                ms.parse::<i64>()
                    .ok()
                    .and_then(DateTime::from_timestamp_millis)
                    .ok_or_else(|| format!("a health level until {ms:?}"))?,
            ),
        };
        Ok(Pace {
            capacity,
            limited_by: LimitedBy::parse(&limited_by)?,
            admit_per_tick: decimal(&admit)?,
            health: Health::read(&level, &reason)?,
            health_until,
        })
    }
}

/// The pace in force as a tick saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickPace {
    pub capacity: u32,
    pub configured_capacity: u32,
    pub limited_by: LimitedBy,
    pub admit_per_tick: f64,
    pub configured_admit_per_tick: u32,
    pub health: Health,
}

/// `promote.lua`'s `{changed (0|1), capacity in force, capacity set, what limits it,
/// admissions a tick in force, admitPerTick set, health level, what holds it}` (`{}` from a
/// queue retired meanwhile): the pace in force, and whether no operator changed it since it
/// was last reported (a `QueuePaceChanged`).
pub(super) struct PaceReply {
    pub pace: Option<TickPace>,
    pub changed: bool,
}

impl FromRedisValue for PaceReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let parts: Vec<String> = FromRedisValue::from_redis_value(v)?;
        Ok(match parts.as_slice() {
            [] => PaceReply {
                pace: None,
                changed: false,
            },
            [changed, capacity, configured, limited_by, admit, configured_admit, level, reason] => {
                let number = |text: &str| {
                    text.parse::<u32>()
                        .map_err(|_| ParsingError::from(format!("a count of {text:?}")))
                };
                PaceReply {
                    pace: Some(TickPace {
                        capacity: number(capacity)?,
                        configured_capacity: number(configured)?,
                        limited_by: LimitedBy::parse(limited_by)?,
                        admit_per_tick: decimal(admit)?,
                        configured_admit_per_tick: number(configured_admit)?,
                        health: Health::read(level, reason)?,
                    }),
                    changed: changed == "1",
                }
            }
            _ => return Err("a pace of other than eight parts".into()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_is_stored_in_ms_and_checked() {
        let ramp = CapacityRamp {
            from: 200,
            step: 100,
            every_seconds: 120,
            to: 1000,
        };
        assert_eq!(ramp.stored().unwrap(), "200:100:120000:1000");
        for bad in [
            CapacityRamp { from: 0, ..ramp },
            CapacityRamp { step: 0, ..ramp },
            CapacityRamp { to: 100, ..ramp },
            CapacityRamp {
                every_seconds: 0,
                ..ramp
            },
            CapacityRamp {
                every_seconds: 86_401,
                ..ramp
            },
        ] {
            assert!(bad.stored().is_err(), "{bad:?}");
        }
    }
}
