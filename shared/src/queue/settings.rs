//! A queue's own settings, changed at runtime (`PUT /queues/{queueId}/settings`) and read
//! by every script of that queue in the same round trip as its work. A setting a queue
//! has not set follows the environment's default. The first change creates the queue
//! (under `QUEUE_CREATION=operator`); `DELETE /queues/{queueId}/settings` closes it.

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Number;

use super::availability::{changed_events, Availability, AvailabilityChange, Mode};
use super::{QueueEvent, WaitingRoom, CLOSE, CONFIGURE};
use crate::bounds::{self, Bounds};
use crate::error::Error;
use crate::ids::QueueId;

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
}

/// The scripts' `{capacity, session ms, admit per tick, idle ms, paused, availability}`
/// (`settings_reply` in `common.lua`: part of configure's and summary's replies).
impl FromRedisValue for QueueSettings {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (capacity, session_ms, admit, idle_ms, paused, availability): (
            u32,
            u64,
            u32,
            u64,
            u8,
            Availability,
        ) = FromRedisValue::from_redis_value(v)?;
        Ok(QueueSettings {
            capacity,
            session_seconds: session_ms / 1000,
            admit_per_tick: admit,
            waiting_idle_seconds: idle_ms / 1000,
            paused: paused == 1,
            availability,
        })
    }
}

/// Configure's reply: `{settings in force, sold out before (0|1), mode before}`.
struct ConfigureReply {
    settings: QueueSettings,
    was_sold_out: bool,
    was: Mode,
}

impl FromRedisValue for ConfigureReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (settings, was_sold_out, was): (QueueSettings, u8, String) =
            FromRedisValue::from_redis_value(v)?;
        Ok(ConfigureReply {
            settings,
            was_sold_out: was_sold_out == 1,
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
    #[serde(default, deserialize_with = "present")]
    pub mode: Option<Option<Mode>>,
    #[serde(default, deserialize_with = "present")]
    pub sold_out: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub message: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub max_waiting: Option<Option<Number>>,
}

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
        match self.paused {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("paused", String::new())),
            Some(Some(true)) => args.push(("paused", "1".into())),
        }
        AvailabilityChange {
            mode: &self.mode,
            sold_out: &self.sold_out,
            message: &self.message,
            max_waiting: &self.max_waiting,
        }
        .arguments(&mut args)?;
        Ok(args)
    }
}

impl WaitingRoom {
    /// Applies `change` to `queue`'s settings; returns the settings now in force. Takes
    /// effect from the next operation on the queue. Changing the idle period restarts
    /// presence: every waiter gets one whole new idle period to poll. Selling out, closing
    /// and reopening are reported as queue events.
    pub async fn configure(
        &self,
        queue: &QueueId,
        change: &SettingsChange,
    ) -> Result<Configured, Error> {
        let args = change.arguments()?;
        let mut invocation = self.invocation(&CONFIGURE, queue);
        for (field, value) in &args {
            invocation.arg(*field).arg(value);
        }
        let reply: ConfigureReply = self.conn.invoke(invocation).await?;
        let events = changed_events(
            queue,
            reply.was_sold_out,
            reply.was,
            &reply.settings.availability,
        );
        Ok(Configured {
            settings: reply.settings,
            events,
        })
    }

    /// Removes `queue`'s settings, and so (under `QUEUE_CREATION=operator`) the queue: no
    /// more token requests. Only an empty queue closes ([`Error::Conflict`] otherwise: pause
    /// it and let it drain). The reaper then retires it as any idle queue.
    pub async fn close(&self, queue: &QueueId) -> Result<(), Error> {
        let closed: bool = self.conn.invoke(self.invocation(&CLOSE, queue)).await?;
        if !closed {
            return Err(Error::Conflict(
                "the queue still has buyers waiting or active; pause it and let it drain".into(),
            ));
        }
        Ok(())
    }
}
