//! Health pacing: admission that follows the booking system's health. Two signals give a
//! level from 0 (down) to 1 (healthy):
//! - the booking system's own `BookingHealth` event (`{queueIds, level}`), which
//!   event-applier applies to each queue named ([`HealthNotice`], `health.lua`); a level
//!   lapses `healthTtlSeconds` after it was sent unless another renews it;
//! - CloudWatch alarms a queue names in `healthAlarms`: event-applier keeps each alarm's
//!   last state change ([`AlarmNotice`], `alarm.lua`), and the promoter's tick reads the
//!   states of the alarms its queues name and hands each queue its own (`alarm_watch`,
//!   `promote.lua`). ALARM is level 0, OK level 1.
//!
//! The level is kept in the queue's settings hash, so issue, the tick and a leave's hand-over
//! all read it in their own round trip (`common.lua`). At level `h` a tick admits
//! `h × admitPerTick`; below 1 nobody is admitted at once on arrival or by a hand-over; at 0
//! nobody at all. A fall takes effect at once; a rise climbs by 1 per
//! `healthRecoverySeconds`.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};
use serde_json::Number;

use super::availability::detail_of;
use super::{WaitingRoom, HEALTH};
use crate::bounds::Bounds;
use crate::error::Error;
use crate::ids::{PoolId, QueueId};
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged};

/// The `detail-type` of the booking system's health event.
pub const BOOKING_HEALTH: &str = "BookingHealth";
/// The `detail-type` and `source` of CloudWatch's alarm state changes.
pub const ALARM_STATE_CHANGE: &str = "CloudWatch Alarm State Change";
pub const ALARM_SOURCE: &str = "aws.cloudwatch";

/// Most alarms one queue names.
pub const HEALTH_ALARMS_MAX: usize = 10;
/// The longest alarm name CloudWatch allows, in characters.
pub const ALARM_NAME_MAX_CHARS: usize = 255;
/// Most queues one `BookingHealth` event names.
pub const HEALTH_QUEUES_MAX: usize = 100;
/// How long a rise from 0 to 1 takes by default (`healthRecoverySeconds`); `common.lua`'s
/// `HEALTH_RECOVERY_DEFAULT_MS` (a unit test holds them equal).
pub const HEALTH_RECOVERY_DEFAULT_SECONDS: u64 = 60;
/// How long a `BookingHealth` level counts by default (`healthTtlSeconds`); `replies.lua`'s
/// `HEALTH_TTL_DEFAULT_MS`.
pub const HEALTH_TTL_DEFAULT_SECONDS: u64 = 120;
/// `healthRecoverySeconds`: 0 (no ramp) to an hour.
pub const HEALTH_RECOVERY_SECONDS: Bounds = Bounds::new(0, 3_600);
/// `healthTtlSeconds`: 10 s to an hour.
pub const HEALTH_TTL_SECONDS: Bounds = Bounds::new(10, 3_600);
/// How far ahead of this clock a `BookingHealth` event may be dated.
pub const HEALTH_FUTURE_SKEW: chrono::TimeDelta = chrono::TimeDelta::minutes(5);
/// How long an alarm's last state is kept: an alarm in ALARM for longer stops holding
/// admission back.
pub const ALARM_KEEP: Duration = Duration::from_secs(7 * 86_400);

/// Stores one alarm's state change unless a later one is held; runs on the alarm's key alone.
static ALARM: NamedScript = NamedScript::new(
    std::sync::LazyLock::new(|| lua_script(include_str!("alarm.lua"))),
    &["ALARM"],
    &["level", "at", "keep_ms"],
);

/// The key of alarm `name`'s last state, under the hash tag `{health}`, so the promoter
/// reads every alarm it watches with one `MGET`.
pub fn alarm_key(prefix: &str, name: &AlarmName) -> String {
    format!("{prefix}:{{health}}:alarm:{}", name.0)
}

/// A CloudWatch alarm's name: 1 to 255 characters, none of them control characters.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AlarmName(String);

impl AlarmName {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        let chars = raw.chars().count();
        if chars == 0 || chars > ALARM_NAME_MAX_CHARS {
            return Err(Error::invalid(
                "healthAlarms",
                format!("an alarm name has 1 to {ALARM_NAME_MAX_CHARS} characters, not {chars}"),
            ));
        }
        if raw.chars().any(char::is_control) {
            return Err(Error::invalid(
                "healthAlarms",
                "an alarm name has no control characters",
            ));
        }
        Ok(AlarmName(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for AlarmName {
    type Error = Error;
    fn try_from(raw: String) -> Result<Self, Error> {
        AlarmName::parse(&raw)
    }
}

impl From<AlarmName> for String {
    fn from(name: AlarmName) -> String {
        name.0
    }
}

/// The health settings in force, part of [`super::settings::QueueSettings`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HealthSettings {
    /// CloudWatch alarms whose ALARM state stops admission.
    pub health_alarms: Vec<String>,
    /// How long the level takes to climb from 0 to 1.
    pub health_recovery_seconds: u64,
    /// How long a `BookingHealth` level counts unless renewed.
    pub health_ttl_seconds: u64,
}

/// The scripts' `{alarms (one a line), recovery ms, ttl ms}` (`settings_reply`).
impl FromRedisValue for HealthSettings {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (alarms, recovery_ms, ttl_ms): (String, u64, u64) =
            FromRedisValue::from_redis_value(v)?;
        Ok(HealthSettings {
            health_alarms: stored_names(&alarms),
            health_recovery_seconds: recovery_ms / 1000,
            health_ttl_seconds: ttl_ms / 1000,
        })
    }
}

/// The stored list of alarm names: one a line.
fn stored_names(stored: &str) -> Vec<String> {
    stored
        .lines()
        .filter(|name| !name.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The health part of a settings change; each field left alone when absent, set when given,
/// and returned to its default when `null`.
pub struct HealthChange<'a> {
    pub alarms: &'a Option<Option<Vec<AlarmName>>>,
    pub recovery_seconds: &'a Option<Option<Number>>,
    pub ttl_seconds: &'a Option<Option<Number>>,
}

impl HealthChange<'_> {
    /// Adds the script arguments (stored field, value; empty for a reset) to `args`.
    pub(super) fn arguments(&self, args: &mut Vec<(&'static str, String)>) -> Result<(), Error> {
        match self.alarms {
            None => {}
            Some(None) => args.push(("health-alarms", String::new())),
            Some(Some(names)) => {
                let unique: BTreeSet<&str> = names.iter().map(AlarmName::as_str).collect();
                if unique.len() > HEALTH_ALARMS_MAX {
                    return Err(Error::invalid(
                        "healthAlarms",
                        format!("at most {HEALTH_ALARMS_MAX} alarms, not {}", unique.len()),
                    ));
                }
                let joined: Vec<&str> = unique.into_iter().collect();
                args.push(("health-alarms", joined.join("\n")));
            }
        }
        for (field, stored, change, within) in [
            (
                "healthRecoverySeconds",
                "health-recovery-ms",
                self.recovery_seconds,
                HEALTH_RECOVERY_SECONDS,
            ),
            (
                "healthTtlSeconds",
                "health-ttl-ms",
                self.ttl_seconds,
                HEALTH_TTL_SECONDS,
            ),
        ] {
            match change {
                None => {}
                Some(None) => args.push((stored, String::new())),
                Some(Some(value)) => {
                    let seconds = within
                        .json(value)
                        .map_err(|err| Error::invalid(field, err.to_string()))?;
                    args.push((stored, (seconds * 1000).to_string()));
                }
            }
        }
        Ok(())
    }
}

/// Whom a `BookingHealth` event speaks for.
#[derive(Debug, Clone, PartialEq)]
pub enum HealthTarget {
    /// The queues it names (`queueIds`).
    Queues(Vec<QueueId>),
    /// Every queue of a capacity pool (`pool`): the ledger keeps the level and the
    /// promoter's ticks hand it to the pool's queues.
    Pool(PoolId),
}

/// A `BookingHealth` event: how well the booking system copes, for the queues it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthNotice {
    pub target: HealthTarget,
    /// 0.0 (down) to 1.0 (healthy).
    pub level: f64,
    /// When it was sent (the event's `time`): a later event wins.
    pub sent: DateTime<Utc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct HealthDetail {
    #[serde(default)]
    queue_ids: Option<Vec<String>>,
    #[serde(default)]
    pool: Option<String>,
    level: f64,
}

impl HealthNotice {
    /// The notice `event` (an EventBridge envelope as JSON) carries, when it is a
    /// `BookingHealth` from `source`; `None` for any other event. A malformed one is
    /// [`Error::Invalid`].
    pub fn from_event(event: &serde_json::Value, source: &str) -> Result<Option<Self>, Error> {
        let Some((detail, time)) = detail_of::<HealthDetail>(event, BOOKING_HEALTH, source)? else {
            return Ok(None);
        };
        let sent = sent_at(time)?;
        let target = match (detail.queue_ids, detail.pool) {
            (Some(ids), None) => {
                if ids.is_empty() || ids.len() > HEALTH_QUEUES_MAX {
                    return Err(Error::invalid(
                        "detail.queueIds",
                        format!("1 to {HEALTH_QUEUES_MAX} queues, not {}", ids.len()),
                    ));
                }
                let unique: BTreeSet<&String> = ids.iter().collect();
                HealthTarget::Queues(
                    unique
                        .into_iter()
                        .map(|id| QueueId::parse(id))
                        .collect::<Result<Vec<_>, _>>()?,
                )
            }
            (None, Some(pool)) => HealthTarget::Pool(
                PoolId::parse(&pool).map_err(|_| Error::invalid("detail.pool", "not a pool id"))?,
            ),
            _ => {
                return Err(Error::invalid(
                    "detail",
                    "name the queues in queueIds or their capacity pool in pool: one of the two",
                ))
            }
        };
        if !(0.0..=1.0).contains(&detail.level) {
            return Err(Error::invalid(
                "detail.level",
                format!("from 0.0 (down) to 1.0 (healthy), not {}", detail.level),
            ));
        }
        // A later signal wins, so one dated far ahead would hold every true one off.
        if sent > Utc::now() + HEALTH_FUTURE_SKEW {
            return Err(Error::invalid(
                "time",
                "sent further ahead of this clock than clocks drift",
            ));
        }
        Ok(Some(HealthNotice {
            target,
            level: detail.level,
            sent,
        }))
    }
}

/// The envelope's `time`, which orders one signal against the next.
fn sent_at(time: Option<DateTime<Utc>>) -> Result<DateTime<Utc>, Error> {
    time.ok_or_else(|| Error::invalid("time", "the event says when it was sent"))
}

/// A CloudWatch alarm's state, as a health level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlarmState {
    /// ALARM: level 0.
    Alarm,
    /// OK: level 1.
    Ok,
    /// INSUFFICIENT_DATA: no signal either way.
    InsufficientData,
}

impl AlarmState {
    fn stored(self) -> &'static str {
        match self {
            AlarmState::Alarm => "0",
            AlarmState::Ok => "1",
            AlarmState::InsufficientData => "",
        }
    }
}

/// A "CloudWatch Alarm State Change" event: `alarmName` entered `state.value` at
/// `state.timestamp`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlarmNotice {
    pub name: AlarmName,
    pub state: AlarmState,
    pub at: DateTime<Utc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlarmDetail {
    alarm_name: String,
    state: AlarmStateDetail,
}

#[derive(Deserialize)]
struct AlarmStateDetail {
    value: String,
    #[serde(default)]
    timestamp: Option<String>,
}

impl AlarmNotice {
    /// The notice `event` carries, when it is an alarm state change from CloudWatch; `None`
    /// for any other event. A malformed one is [`Error::Invalid`].
    pub fn from_event(event: &serde_json::Value) -> Result<Option<Self>, Error> {
        let Some((detail, time)) =
            detail_of::<AlarmDetail>(event, ALARM_STATE_CHANGE, ALARM_SOURCE)?
        else {
            return Ok(None);
        };
        let sent = sent_at(time)?;
        let state = match detail.state.value.as_str() {
            "ALARM" => AlarmState::Alarm,
            "OK" => AlarmState::Ok,
            "INSUFFICIENT_DATA" => AlarmState::InsufficientData,
            other => {
                return Err(Error::invalid(
                    "detail.state.value",
                    format!("ALARM, OK or INSUFFICIENT_DATA, not {other:?}"),
                ))
            }
        };
        // CloudWatch writes "2026-11-27T20:01:02.345+0000"; the envelope's time is the
        // second the event was made, for one without its own.
        let at = match detail.state.timestamp.as_deref() {
            None => sent,
            Some(raw) => DateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S%.f%z")
                .or_else(|_| DateTime::parse_from_rfc3339(raw))
                .map_err(|_| {
                    Error::invalid(
                        "detail.state.timestamp",
                        format!("not a time CloudWatch writes: {raw:?}"),
                    )
                })?
                .with_timezone(&Utc),
        };
        Ok(Some(AlarmNotice {
            name: AlarmName::parse(&detail.alarm_name)
                .map_err(|_| Error::invalid("detail.alarmName", "not an alarm name"))?,
            state,
            at,
        }))
    }
}

/// What became of a [`HealthNotice`] in one queue (`health.lua`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum HealthApplied {
    /// The level is the queue's signal now; the level in force before and after.
    Applied { before: f64, after: f64 },
    /// A signal sent at the same time or later is held.
    Stale,
    /// It would have lapsed already: sent more than the level's TTL ago.
    Lapsed,
    /// No such queue (or pool); nothing was written.
    NoQueue,
    /// Kept for a pool's queues: the promoter's ticks hand it to each.
    Pooled,
}

impl FromRedisValue for HealthApplied {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let parts: Vec<String> = FromRedisValue::from_redis_value(v)?;
        let level = |raw: &str| -> Result<f64, ParsingError> {
            raw.parse()
                .map_err(|_| format!("health.lua returned a level {raw:?}").into())
        };
        Ok(match parts.as_slice() {
            [word] if word == "stale" => HealthApplied::Stale,
            [word] if word == "lapsed" => HealthApplied::Lapsed,
            [word] if word == "no-queue" || word == "no-pool" => HealthApplied::NoQueue,
            [word] if word == "pooled" => HealthApplied::Pooled,
            [word, before, after] if word == "applied" => HealthApplied::Applied {
                before: level(before)?,
                after: level(after)?,
            },
            other => return Err(format!("health.lua returned {other:?}").into()),
        })
    }
}

/// A [`HealthNotice`] staged in a batch, one call per queue.
pub struct StagedHealth(Vec<Staged<HealthApplied>>);

impl StagedHealth {
    /// Each queue's outcome, in the notice's order.
    pub fn read(&self, replies: &[Value]) -> Result<Vec<HealthApplied>, Error> {
        self.0
            .iter()
            .map(|staged| Ok(staged.read(replies)?))
            .collect()
    }
}

/// An [`AlarmNotice`] staged in a batch: whether it was stored (false: a later one is held).
pub struct StagedAlarm(Staged<bool>);

impl StagedAlarm {
    pub fn read(&self, replies: &[Value]) -> Result<bool, Error> {
        Ok(self.0.read(replies)?)
    }
}

impl WaitingRoom {
    /// Stages `notice` for each queue it names (`health.lua`), or for its pool
    /// (`pool_signal.lua`), in `batch`, so an event batch stays one round trip. On the striped
    /// line a level of 0 halts every stripe of those queues in that round trip; for a pool,
    /// its queues are read from its ledger first (one round trip more, only then).
    pub async fn stage_health(
        &self,
        batch: &mut Batch,
        notice: &HealthNotice,
    ) -> Result<StagedHealth, Error> {
        let sent = notice.sent.timestamp_millis();
        let level = format!("{:.4}", notice.level);
        Ok(StagedHealth(match &notice.target {
            HealthTarget::Queues(queues) => queues
                .iter()
                .map(|queue| {
                    // On the striped line a level of 0 halts every stripe in this round trip;
                    // the promoter clears it once the level in force rises.
                    if let Some(lines) = self.lines.as_ref().filter(|_| notice.level <= 0.0) {
                        lines
                            .any(queue)
                            .stage_halt(batch, crate::line::Halt::Unhealthy);
                    }
                    let mut call = self.invocation(&HEALTH, queue);
                    call.named("level", &level)
                        .named("sent", sent)
                        .named("default_ttl", HEALTH_TTL_DEFAULT_SECONDS * 1000);
                    batch.stage(call)
                })
                .collect(),
            HealthTarget::Pool(pool) => {
                if let Some(lines) = self.lines.as_ref().filter(|_| notice.level <= 0.0) {
                    for queue in self.pool_queues(pool).await? {
                        lines
                            .any(&queue)
                            .stage_halt(batch, crate::line::Halt::Unhealthy);
                    }
                }
                vec![self.stage_pool_signal(batch, pool, &level, sent)]
            }
        }))
    }

    /// Stages storing `notice`'s alarm state (`alarm.lua`) in `batch`.
    pub fn stage_alarm(&self, batch: &mut Batch, notice: &AlarmNotice) -> StagedAlarm {
        let mut call = ScriptCall::of(&ALARM);
        call.named_key("ALARM", alarm_key(&self.prefix, &notice.name))
            .named("level", notice.state.stored())
            .named("at", notice.at.timestamp_millis())
            .named("keep_ms", ALARM_KEEP.as_millis() as u64);
        StagedAlarm(batch.stage(call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, source: &str, detail: serde_json::Value) -> serde_json::Value {
        json!({"version": "0", "id": "e1", "detail-type": kind, "source": source,
            "account": "1", "time": "2026-11-27T20:00:00Z", "region": "eu-west-1",
            "resources": [], "detail": detail})
    }

    #[test]
    fn a_health_notice_names_valid_queues_and_a_level_from_0_to_1() {
        let read =
            |detail| HealthNotice::from_event(&event(BOOKING_HEALTH, "shop", detail), "shop");
        let notice = read(json!({"queueIds": ["q1", "q2", "q1"], "level": 0.25}))
            .unwrap()
            .unwrap();
        assert!(
            matches!(&notice.target, HealthTarget::Queues(queues) if queues.len() == 2),
            "a queue named twice counts once"
        );
        let pooled = read(json!({"pool": "north", "level": 0.5}))
            .unwrap()
            .unwrap();
        assert_eq!(
            pooled.target,
            HealthTarget::Pool(PoolId::parse("north").unwrap())
        );
        assert_eq!(notice.level, 0.25);
        assert_eq!(notice.sent.to_rfc3339(), "2026-11-27T20:00:00+00:00");
        for bad in [
            json!({"queueIds": [], "level": 1}),
            json!({"queueIds": ["a b"], "level": 1}),
            json!({"queueIds": ["q1"], "level": 1.5}),
            json!({"queueIds": ["q1"], "level": -0.1}),
            json!({"queueIds": ["q1"]}),
            json!({"level": 1}),
            json!({"pool": "p", "queueIds": ["q1"], "level": 1}),
            json!({"pool": "a b", "level": 1}),
            json!({"queueIds": ["q1"], "level": 1, "extra": 1}),
            json!({"queueIds": (0..101).map(|i| format!("q{i}")).collect::<Vec<_>>(), "level": 1}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        let other = event(BOOKING_HEALTH, "elsewhere", json!({}));
        assert_eq!(HealthNotice::from_event(&other, "shop").unwrap(), None);
    }

    #[test]
    fn an_alarm_notice_reads_cloudwatch_s_own_timestamp() {
        let read =
            |detail| AlarmNotice::from_event(&event(ALARM_STATE_CHANGE, ALARM_SOURCE, detail));
        let notice = read(json!({"alarmName": "booking-p99",
            "state": {"value": "ALARM", "timestamp": "2026-11-27T20:01:02.345+0000"}}))
        .unwrap()
        .unwrap();
        assert_eq!(notice.name.as_str(), "booking-p99");
        assert_eq!(notice.state, AlarmState::Alarm);
        assert_eq!(notice.at.timestamp_millis() % 1000, 345);
        let without = read(json!({"alarmName": "a", "state": {"value": "OK"}}))
            .unwrap()
            .unwrap();
        assert_eq!(without.at.to_rfc3339(), "2026-11-27T20:00:00+00:00");
        for bad in [
            json!({"alarmName": "a", "state": {"value": "MAYBE"}}),
            json!({"alarmName": "", "state": {"value": "OK"}}),
            json!({"alarmName": "a", "state": {"value": "OK", "timestamp": "yesterday"}}),
            json!({"state": {"value": "OK"}}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        let elsewhere = event(ALARM_STATE_CHANGE, "shop", json!({}));
        assert_eq!(AlarmNotice::from_event(&elsewhere).unwrap(), None);
    }

    #[test]
    fn the_alarm_script_binds_its_keys_and_arguments_by_the_names_rust_sends() {
        crate::store::bindings::assert_binds(include_str!("alarm.lua"), &ALARM);
    }

    #[test]
    fn the_defaults_are_the_scripts_defaults() {
        assert!(include_str!("common.lua").contains(&format!(
            "local HEALTH_RECOVERY_DEFAULT_MS = {}\n",
            HEALTH_RECOVERY_DEFAULT_SECONDS * 1000
        )));
        assert!(include_str!("common.lua").contains(&format!(
            "local HEALTH_TTL_DEFAULT_MS = {}\n",
            HEALTH_TTL_DEFAULT_SECONDS * 1000
        )));
    }
}
