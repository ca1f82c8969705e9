//! A queue's own settings, changed at runtime (`PUT /queues/{queueId}/settings`) and read
//! by every script of that queue in the same round trip as its work. A setting a queue
//! has not set follows the environment's default. The first change creates the queue
//! (under `QUEUE_CREATION=operator`); `DELETE /queues/{queueId}/settings` closes it.
//!
//! The waiting-room page's settings ([`PageSettings`], in `pages::settings`: theme and
//! return-URL allow-list) are stored as one JSON field of the same hash, checked before they
//! are stored, and read with one `HGET` when the page is served.

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Number;

use chrono::{DateTime, Utc};

use super::access::Access;
use super::availability::{changed_events, Availability, AvailabilityChange, Mode};
use super::door::DoorSettings;
use super::health::{AlarmName, HealthChange, HealthSettings};
use super::keys::QueueKeys;
use super::pace::{CapacityRamp, RampReply};
use super::schedule::{DrawSeed, Schedule, ScheduleChange};
use super::{QueueEvent, WaitingRoom, CLOSE, CONFIGURE};
use crate::bounds::{self, Bounds};
use crate::door::ChallengeMode;
use crate::error::Error;
use crate::ids::{PoolId, QueueId};
use crate::pages::settings::PageSettings;

/// The settings in force for one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSettings {
    /// Most buyers active at once.
    pub capacity: u32,
    /// How long an admitted buyer stays active.
    pub session_seconds: u64,
    /// Most buyers one promotion tick admits.
    pub admit_per_tick: u32,
    /// A waiter unseen this long is abandoned.
    pub waiting_idle_seconds: u64,
    /// No admissions while true; the line still forms and reports positions.
    pub paused: bool,
    /// Mode, sold out, message and maxWaiting.
    #[serde(flatten)]
    pub availability: Availability,
    /// opensAt, closesAt and prequeueOpensAt.
    #[serde(flatten)]
    pub schedule: Schedule,
    /// Whether the priority lane is admitted before `opensAt` (within the schedule's gates);
    /// by default nobody is.
    pub lane_before_opening: bool,
    /// Who may take a new place: `open`, `list` or `code` (see [`super::access`]).
    pub access: Access,
    /// challenge, challengeCostMin and challengeCostMax (see [`super::door`]).
    #[serde(flatten)]
    pub door: DoorSettings,
    /// The scheduled capacity ramp, if any (see [`super::pace`]).
    pub capacity_ramp: Option<CapacityRamp>,
    /// healthAlarms, healthRecoverySeconds and healthTtlSeconds (see [`super::health`]).
    #[serde(flatten)]
    pub health: HealthSettings,
    /// The capacity pool the queue shares its capacity with, if any (see [`super::pool`]).
    pub pool: Option<PoolId>,
}

/// The scripts' `{capacity, session ms, admit per tick, idle ms, paused, availability,
/// schedule, lane before opening, access, door, {capacity ramp, health, pool}}`
/// (`settings_reply` in `replies.lua`: part of configure's and summary's replies).
impl FromRedisValue for QueueSettings {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (
            capacity,
            session_ms,
            admit,
            idle_ms,
            paused,
            availability,
            schedule,
            lane_early,
            access,
            door,
            (RampReply(capacity_ramp), health, pool),
        ): (
            u32,
            u64,
            u32,
            u64,
            u8,
            Availability,
            Schedule,
            u8,
            String,
            DoorSettings,
            PaceSettingsReply,
        ) = FromRedisValue::from_redis_value(v)?;
        let access = serde_json::from_value(serde_json::Value::String(access.clone()))
            .map_err(|_| format!("settings hold access {access:?}"))?;
        Ok(QueueSettings {
            capacity,
            session_seconds: session_ms / 1000,
            admit_per_tick: admit,
            waiting_idle_seconds: idle_ms / 1000,
            paused: paused == 1,
            availability,
            schedule,
            lane_before_opening: lane_early == 1,
            access,
            door,
            capacity_ramp,
            health,
            pool: match pool.as_str() {
                "" => None,
                id => Some(PoolId::parse(id).map_err(|_| format!("settings hold pool {id:?}"))?),
            },
        })
    }
}

/// `settings_reply`'s pace settings: `{capacity ramp, health, pool or ''}`.
type PaceSettingsReply = (RampReply, HealthSettings, String);

/// Configure's reply: `{settings in force, sold out before (0|1), mode before, register
/// (0|1)}`, or a change refused (a schedule's, or passthrough with an opening or a pool):
/// `{'invalid', field, why}` or `{'locked', why}`.
enum ConfigureReply {
    Applied {
        settings: Box<QueueSettings>,
        was_sold_out: bool,
        was: Mode,
        /// The settings name health alarms or a pool, and the queue is not marked
        /// registered.
        register: bool,
    },
    Refused(Error),
}

impl FromRedisValue for ConfigureReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        if let Value::Array(items) = &v {
            if let Some(Value::BulkString(first)) = items.first() {
                let why = |i: usize| -> Result<String, ParsingError> {
                    items
                        .get(i)
                        .cloned()
                        .map(String::from_redis_value)
                        .unwrap_or_else(|| Err("configure refusal without a reason".into()))
                };
                return Ok(ConfigureReply::Refused(match first.as_slice() {
                    b"locked" => Error::Conflict(why(1)?),
                    b"invalid" => {
                        let field = match why(1)?.as_str() {
                            "closesAt" => "closesAt",
                            "prequeueOpensAt" => "prequeueOpensAt",
                            "mode" => "mode",
                            "pool" => "pool",
                            _ => "opensAt",
                        };
                        Error::invalid(field, why(2)?)
                    }
                    other => {
                        return Err(format!(
                            "configure script returned {:?}",
                            String::from_utf8_lossy(other)
                        )
                        .into())
                    }
                }));
            }
        }
        let (settings, was_sold_out, was, register): (QueueSettings, u8, String, u8) =
            FromRedisValue::from_redis_value(v)?;
        Ok(ConfigureReply::Applied {
            settings: Box::new(settings),
            was_sold_out: was_sold_out == 1,
            register: register == 1,
            was: serde_json::from_value(serde_json::Value::String(was.clone()))
                .map_err(|_| format!("configure script returned mode {was:?}"))?,
        })
    }
}

/// The settings in force after a change, and the queue events it causes.
#[derive(Debug, Clone)]
pub struct Configured {
    pub settings: QueueSettings,
    pub events: Vec<QueueEvent>,
}

/// A change to a queue's settings. Each field is left alone when absent, set when given,
/// and returned to the environment's default when `null`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsChange {
    #[serde(default, deserialize_with = "present")]
    pub capacity: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub session_seconds: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub admit_per_tick: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub waiting_idle_seconds: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub paused: Option<Option<bool>>,
    /// The waiting-room page's theme and return-URL allow-list, replaced whole.
    #[serde(default, deserialize_with = "present")]
    pub page: Option<Option<PageSettings>>,
    #[serde(default, deserialize_with = "present")]
    pub mode: Option<Option<Mode>>,
    #[serde(default, deserialize_with = "present")]
    pub sold_out: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub message: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub max_waiting: Option<Option<Number>>,
    /// The opening (RFC 3339); before it arrivals join the pre-queue.
    #[serde(default, deserialize_with = "present")]
    pub opens_at: Option<Option<DateTime<Utc>>>,
    /// From when new arrivals are refused (RFC 3339, after opensAt).
    #[serde(default, deserialize_with = "present")]
    pub closes_at: Option<Option<DateTime<Utc>>>,
    /// From when arrivals may join the pre-queue (RFC 3339, before opensAt; default: when
    /// the schedule is set).
    #[serde(default, deserialize_with = "present")]
    pub prequeue_opens_at: Option<Option<DateTime<Utc>>>,
    /// Whether the priority lane is admitted before the opening (default false).
    #[serde(default, deserialize_with = "present")]
    pub lane_before_opening: Option<Option<bool>>,
    /// Who may take a new place (default `open`).
    #[serde(default, deserialize_with = "present")]
    pub access: Option<Option<Access>>,
    /// Whether a new arrival solves a challenge first (default `off`).
    #[serde(default, deserialize_with = "present")]
    pub challenge: Option<Option<ChallengeMode>>,
    /// The floor of a challenge's cost (PBKDF2 iterations per try).
    #[serde(default, deserialize_with = "present")]
    pub challenge_cost_min: Option<Option<Number>>,
    /// The ceiling of a challenge's cost, which `adaptive` rises to.
    #[serde(default, deserialize_with = "present")]
    pub challenge_cost_max: Option<Option<Number>>,
    /// A capacity that rises on a schedule, from the opening (or from now without one).
    #[serde(default, deserialize_with = "present")]
    pub capacity_ramp: Option<Option<CapacityRamp>>,
    /// CloudWatch alarms whose ALARM state stops admission (at most 10).
    #[serde(default, deserialize_with = "present")]
    pub health_alarms: Option<Option<Vec<AlarmName>>>,
    /// How long the health level takes to climb from 0 to 1 (default 60 s).
    #[serde(default, deserialize_with = "present")]
    pub health_recovery_seconds: Option<Option<Number>>,
    /// How long a `BookingHealth` level counts unless renewed (default 120 s).
    #[serde(default, deserialize_with = "present")]
    pub health_ttl_seconds: Option<Option<Number>>,
    /// The capacity pool the queue joins (`PUT /pools/{poolId}` makes it).
    #[serde(default, deserialize_with = "present")]
    pub pool: Option<Option<String>>,
}

/// The settings field holding [`PageSettings`] as JSON.
const PAGE_FIELD: &str = "page";

/// Tells a field given as `null` (`Some(None)`) from one left out (`None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

impl SettingsChange {
    /// The script arguments: pairs of stored field and value, an empty value for a reset.
    /// Every value is checked here, so nothing invalid reaches Redis.
    fn arguments(&self) -> Result<Vec<(&'static str, String)>, Error> {
        let mut args = Vec::new();
        let mut number = |field: &'static str,
                          stored: &'static str,
                          change: &Option<Option<Number>>,
                          within: Bounds,
                          scale: u64|
         -> Result<(), Error> {
            match change {
                None => {}
                Some(None) => args.push((stored, String::new())),
                Some(Some(value)) => {
                    let value = within
                        .json(value)
                        .map_err(|err| Error::invalid(field, err.to_string()))?;
                    args.push((stored, (value * scale).to_string()))
                }
            }
            Ok(())
        };
        number("capacity", "capacity", &self.capacity, bounds::CAPACITY, 1)?;
        number(
            "sessionSeconds",
            "session-ms",
            &self.session_seconds,
            bounds::SESSION_SECONDS,
            1000,
        )?;
        number(
            "admitPerTick",
            "admit-per-tick",
            &self.admit_per_tick,
            bounds::ADMIT_PER_TICK,
            1,
        )?;
        number(
            "waitingIdleSeconds",
            "idle-ms",
            &self.waiting_idle_seconds,
            bounds::WAITING_IDLE_SECONDS,
            1000,
        )?;
        number(
            "challengeCostMin",
            "challenge-cost-min",
            &self.challenge_cost_min,
            bounds::CHALLENGE_COST,
            1,
        )?;
        number(
            "challengeCostMax",
            "challenge-cost-max",
            &self.challenge_cost_max,
            bounds::CHALLENGE_COST,
            1,
        )?;
        match self.paused {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("paused", String::new())),
            Some(Some(true)) => args.push(("paused", "1".into())),
        }
        match self.lane_before_opening {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("lane-before-opening", String::new())),
            Some(Some(true)) => args.push(("lane-before-opening", "1".into())),
        }
        match self.access {
            None => {}
            Some(access) => args.push((
                "access",
                access.and_then(Access::stored).unwrap_or_default().into(),
            )),
        }
        match self.challenge {
            None => {}
            Some(mode) => args.push((
                "challenge",
                mode.and_then(ChallengeMode::stored)
                    .unwrap_or_default()
                    .into(),
            )),
        }
        match &self.capacity_ramp {
            None => {}
            Some(None) => args.push(("capacity-ramp", String::new())),
            Some(Some(ramp)) => args.push(("capacity-ramp", ramp.stored()?)),
        }
        match &self.page {
            None => {}
            Some(None) => args.push((PAGE_FIELD, String::new())),
            Some(Some(page)) => args.push((
                PAGE_FIELD,
                serde_json::to_string(page).map_err(|err| Error::Internal(err.to_string()))?,
            )),
        }
        AvailabilityChange {
            mode: &self.mode,
            sold_out: &self.sold_out,
            message: &self.message,
            max_waiting: &self.max_waiting,
        }
        .arguments(&mut args)?;
        self.schedule().arguments(&mut args)?;
        HealthChange {
            alarms: &self.health_alarms,
            recovery_seconds: &self.health_recovery_seconds,
            ttl_seconds: &self.health_ttl_seconds,
        }
        .arguments(&mut args)?;
        match &self.pool {
            None => {}
            Some(None) => args.push(("pool", String::new())),
            Some(Some(raw)) => {
                let pool = PoolId::parse(raw)
                    .map_err(|_| Error::invalid("pool", "1 to 64 letters, digits and . _ : -"))?;
                args.push(("pool", pool.as_str().to_owned()))
            }
        }
        Ok(args)
    }

    fn schedule(&self) -> ScheduleChange<'_> {
        ScheduleChange {
            opens_at: &self.opens_at,
            closes_at: &self.closes_at,
            prequeue_opens_at: &self.prequeue_opens_at,
        }
    }
}

impl WaitingRoom {
    /// Applies `change` to `queue`'s settings; returns the settings now in force. Takes
    /// effect from the next operation on the queue. Changing the idle period restarts
    /// presence: every waiter gets one whole new idle period to poll. Selling out, closing
    /// and reopening are reported as queue events. Setting an opening when none is pending
    /// starts a new draw with a fresh seed (see [`super::schedule`]); a pending one keeps
    /// its seed.
    ///
    /// A queue whose settings name health alarms or a pool is in the registry from then on,
    /// so the promoter watches it before its first buyer. A change that names them takes the
    /// queue's place first: one more round trip, refused past `MAX_QUEUES`
    /// ([`super::Arrival::QueueLimit`]) with nothing written. A queue the script finds
    /// unmarked is then put in the registry and marked, registry first, as status does
    /// (`reregister`): two more, once.
    pub async fn configure(
        &self,
        queue: &QueueId,
        change: &SettingsChange,
    ) -> Result<Configured, Error> {
        let args = change.arguments()?;
        if self.lines.is_some() {
            self.check_line_change(queue, change).await?;
        }
        // On the striped line the promoter ticks every queue from its first settings.
        let names_a_watch = self.lines.is_some()
            || args.iter().any(|(field, value)| {
                matches!(*field, "health-alarms" | "pool") && !value.is_empty()
            });
        if names_a_watch {
            self.register(queue).await?;
        }
        let mut invocation = self.invocation(&CONFIGURE, queue);
        let (seed, commitment) = if change.schedule().sets_opening() {
            let seed = DrawSeed::random();
            (seed.hex(), seed.commitment())
        } else {
            (String::new(), String::new())
        };
        invocation
            .named("seed", seed)
            .named("commitment", commitment);
        for (field, value) in &args {
            invocation.named("pairs", *field).named("pairs", value);
        }
        let (settings, was_sold_out, was, register) = match self.conn.invoke(invocation).await? {
            ConfigureReply::Applied {
                settings,
                was_sold_out,
                was,
                register,
            } => (settings, was_sold_out, was, register),
            ConfigureReply::Refused(err) => return Err(err),
        };
        // The settings keep the reaper from retiring the queue now; the registry is written
        // before the mark, so a retirement that ran in between cannot leave a mark behind
        // without the queue in the registry.
        if register {
            self.reregister(queue).await?;
        }
        if let Some(lines) = &self.lines {
            self.settle_line(lines, queue, &settings).await?;
        }
        let events = changed_events(queue, was_sold_out, was, &settings.availability);
        Ok(Configured {
            settings: *settings,
            events,
        })
    }

    /// `queue`'s page settings: one `HGET`, the defaults where none are set.
    pub async fn page_settings(&self, queue: &QueueId) -> Result<PageSettings, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut cmd = redis::cmd("HGET");
        cmd.arg(&key).arg(PAGE_FIELD);
        let stored: Option<String> = self.conn.query(&key, cmd).await?;
        match stored {
            None => Ok(PageSettings::default()),
            Some(json) => PageSettings::from_stored(&json),
        }
    }

    /// Removes `queue`'s settings, and so (under `QUEUE_CREATION=operator`) the queue: no
    /// more token requests. Only an empty queue closes ([`Error::Conflict`] otherwise: pause
    /// it and let it drain); on the striped line, every stripe is read first. The reaper then
    /// retires it as any idle queue.
    pub async fn close(&self, queue: &QueueId) -> Result<(), Error> {
        if let Some(lines) = &self.lines {
            let held = lines.any(queue).occupancy(self.clock.now_ms()).await?;
            if held.waiting + held.active > 0 {
                return Err(Error::Conflict(
                    "the queue still has buyers waiting or active; pause it and let it drain"
                        .into(),
                ));
            }
        }
        let closed: bool = self.conn.invoke(self.invocation(&CLOSE, queue)).await?;
        self.forget_terms(queue);
        if !closed {
            return Err(Error::Conflict(
                "the queue still has buyers waiting or active; pause it and let it drain".into(),
            ));
        }
        if let Some(lines) = &self.lines {
            lines.any(queue).forget_access().await?;
            lines.forget(queue);
        }
        Ok(())
    }
}
