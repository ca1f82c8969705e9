//! Who may join a queue and be admitted: its mode (`queue`, `passthrough`, `closed`), sold
//! out, the most waiters (`maxWaiting`) and the operator's message. Kept in the queue's
//! settings hash and read by the prelude's one settings read (`common.lua`), so they cost the
//! hot path no Redis call of its own. Set with `PUT /queues/{queueId}/settings`; sold out is
//! also set by the booking system's `InventorySoldOut` event, which event-applier applies
//! here ([`SoldOutNotice`]). Changes that matter to others are reported as queue events:
//! `QueueSoldOut`, `QueueClosed`, `QueueOpened`.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Number;

use super::{QueueEvent, QueueEventKind, WaitingRoom, SELL_OUT};
use crate::bounds;
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::{Batch, Staged};

/// The `detail-type` of the booking system's sold-out event.
pub const INVENTORY_SOLD_OUT: &str = "InventorySoldOut";

/// The longest operator message, in characters.
pub const MESSAGE_MAX_CHARS: usize = 280;

/// How a queue takes new arrivals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Arrivals line up; the promoter admits them in ticket order.
    #[default]
    Queue,
    /// No line: each arrival is admitted at once while a place is free, else refused as full.
    Passthrough,
    /// New arrivals are refused; those in line keep their places and are admitted as usual.
    Closed,
}

impl Mode {
    /// The value stored in settings (`''` for the default, which is not stored).
    fn stored(self) -> &'static str {
        match self {
            Mode::Queue => "",
            Mode::Passthrough => "passthrough",
            Mode::Closed => "closed",
        }
    }

    pub(super) fn from_script(raw: &str) -> Result<Self, ParsingError> {
        match raw {
            "queue" | "" => Ok(Mode::Queue),
            "passthrough" => Ok(Mode::Passthrough),
            "closed" => Ok(Mode::Closed),
            other => Err(format!("queue script returned mode {other:?}").into()),
        }
    }
}

/// The availability settings in force, part of [`super::QueueSettings`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Availability {
    pub mode: Mode,
    /// Nobody more is admitted; waiters are told `soldout`; new arrivals are refused.
    pub sold_out: bool,
    /// The operator's message, shown in status and summary answers.
    pub message: Option<String>,
    /// Most waiters before new arrivals are refused as full; `None`: no limit.
    pub max_waiting: Option<u64>,
}

/// The scripts' `{mode, sold out, message, max waiting}` (`settings_reply` in `replies.lua`).
impl FromRedisValue for Availability {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (mode, sold_out, message, max_waiting): (String, u8, String, u64) =
            FromRedisValue::from_redis_value(v)?;
        Ok(Availability {
            mode: Mode::from_script(&mode)?,
            sold_out: sold_out == 1,
            message: (!message.is_empty()).then_some(message),
            max_waiting: (max_waiting > 0).then_some(max_waiting),
        })
    }
}

/// A checked operator message: plain text of 1 to 280 characters, no control characters.
fn message(raw: &str) -> Result<String, Error> {
    let chars = raw.chars().count();
    if chars == 0 {
        return Err(Error::invalid(
            "message",
            "must not be empty; null removes it",
        ));
    }
    if chars > MESSAGE_MAX_CHARS {
        return Err(Error::invalid(
            "message",
            format!("{chars} characters; at most {MESSAGE_MAX_CHARS}"),
        ));
    }
    if raw.chars().any(char::is_control) {
        return Err(Error::invalid(
            "message",
            "plain text on one line: no control characters",
        ));
    }
    Ok(raw.to_owned())
}

/// The availability part of a settings change. Each field is left alone when absent, set
/// when given, and returned to its default when `null`.
#[derive(Debug, Clone)]
pub struct AvailabilityChange<'a> {
    pub mode: &'a Option<Option<Mode>>,
    pub sold_out: &'a Option<Option<bool>>,
    pub message: &'a Option<Option<String>>,
    pub max_waiting: &'a Option<Option<Number>>,
}

impl AvailabilityChange<'_> {
    /// Adds the script arguments, pairs of stored field and value (empty for a reset), to
    /// `args`; every value is checked here.
    pub(super) fn arguments(&self, args: &mut Vec<(&'static str, String)>) -> Result<(), Error> {
        if let Some(mode) = self.mode {
            args.push(("mode", mode.unwrap_or_default().stored().into()));
        }
        match self.sold_out {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("sold-out", String::new())),
            Some(Some(true)) => args.push(("sold-out", "1".into())),
        }
        match self.message {
            None => {}
            Some(None) => args.push(("message", String::new())),
            Some(Some(raw)) => args.push(("message", message(raw)?)),
        }
        match self.max_waiting {
            None => {}
            Some(None) => args.push(("max-waiting", String::new())),
            Some(Some(value)) => {
                let value = bounds::MAX_WAITING
                    .json(value)
                    .map_err(|err| Error::invalid("maxWaiting", err.to_string()))?;
                args.push(("max-waiting", value.to_string()));
            }
        }
        Ok(())
    }
}

/// The queue events a settings change causes, from the availability before and after it.
pub(super) fn changed_events(
    queue: &QueueId,
    was_sold_out: bool,
    was: Mode,
    now: &Availability,
) -> Vec<QueueEvent> {
    let mut events = Vec::new();
    if !was_sold_out && now.sold_out {
        events.push(QueueEvent::sold_out(queue, now.message.clone()));
    }
    match (was == Mode::Closed, now.mode == Mode::Closed) {
        (false, true) => events.push(QueueEvent::of_queue(QueueEventKind::Closed, queue)),
        (true, false) => events.push(QueueEvent::of_queue(QueueEventKind::Opened, queue)),
        _ => {}
    }
    events
}

/// An `InventorySoldOut` event: the booking system has nothing more to sell for `queue`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoldOutNotice {
    pub queue: QueueId,
    /// Replaces the operator's message when given.
    pub message: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SoldOutDetail {
    queue_id: String,
    #[serde(default)]
    message: Option<String>,
}

/// An event's detail and the envelope's `time`.
pub(super) type Received<D> = (D, Option<DateTime<Utc>>);

/// The detail of `event` (an EventBridge envelope as JSON) and its `time`, when it is a
/// `detail_type` from `source`; `None` for any other event. A malformed one is
/// [`Error::Invalid`]. Each event the waiting room takes in is read through here.
pub(super) fn detail_of<D: DeserializeOwned>(
    event: &serde_json::Value,
    detail_type: &str,
    source: &str,
) -> Result<Option<Received<D>>, Error> {
    if event.get("detail-type").and_then(serde_json::Value::as_str) != Some(detail_type)
        || event.get("source").and_then(serde_json::Value::as_str) != Some(source)
    {
        return Ok(None);
    }
    let envelope: EventBridgeEvent<serde_json::Value> = serde_json::from_value(event.clone())
        .map_err(|err| Error::invalid("event", format!("not an EventBridge event: {err}")))?;
    let detail = serde_path_to_error::deserialize(envelope.detail)
        .map_err(|err| Error::invalid_at("detail", err))?;
    Ok(Some((detail, envelope.time)))
}

impl SoldOutNotice {
    /// The notice `event` (an EventBridge envelope as JSON) carries, when it is an
    /// `InventorySoldOut` from `source`; `None` for any other event. A malformed one is
    /// [`Error::Invalid`].
    pub fn from_event(event: &serde_json::Value, source: &str) -> Result<Option<Self>, Error> {
        let Some((detail, _)) = detail_of::<SoldOutDetail>(event, INVENTORY_SOLD_OUT, source)?
        else {
            return Ok(None);
        };
        Ok(Some(SoldOutNotice {
            queue: QueueId::parse(&detail.queue_id)?,
            message: detail.message.as_deref().map(message).transpose()?,
        }))
    }
}

/// What became of a [`SoldOutNotice`].
#[derive(Debug, Clone, PartialEq)]
pub enum SellOut {
    /// The queue is sold out from now on; the event to publish (boxed: the other answers
    /// carry nothing).
    SoldOut(Box<QueueEvent>),
    /// It already was (a redelivery, or the operator was first); a message given replaced
    /// the old one.
    Already,
    /// No such queue; nothing was written.
    NoQueue,
}

/// A sell-out staged with [`WaitingRoom::stage_sell_out`].
pub struct StagedSellOut {
    reply: Staged<i64>,
    notice: SoldOutNotice,
}

impl StagedSellOut {
    pub fn read(&self, replies: &[Value]) -> Result<SellOut, Error> {
        Ok(match self.reply.read(replies)? {
            1 => SellOut::SoldOut(Box::new(QueueEvent::sold_out(
                &self.notice.queue,
                self.notice.message.clone(),
            ))),
            0 => SellOut::Already,
            _ => SellOut::NoQueue,
        })
    }
}

impl WaitingRoom {
    /// Stages marking `notice`'s queue sold out (`sell_out.lua`) in `batch`, so an event
    /// batch stays one round trip. On the striped line, every stripe halts in the same round
    /// trip.
    pub fn stage_sell_out(&self, batch: &mut Batch, notice: &SoldOutNotice) -> StagedSellOut {
        if let Some(lines) = &self.lines {
            lines
                .any(&notice.queue)
                .stage_halt(batch, crate::line::Halt::SoldOut);
        }
        let mut invocation = self.invocation(&SELL_OUT, &notice.queue);
        invocation
            .named("message", notice.message.as_deref().unwrap_or(""))
            .named("has_message", u8::from(notice.message.is_some()));
        StagedSellOut {
            reply: batch.stage(invocation),
            notice: notice.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(detail: serde_json::Value) -> serde_json::Value {
        json!({"version": "0", "id": "e1", "detail-type": INVENTORY_SOLD_OUT, "source": "shop",
            "account": "1", "time": "2026-01-01T00:00:00Z", "region": "eu-west-1",
            "resources": [], "detail": detail})
    }

    #[test]
    fn a_sold_out_notice_names_a_valid_queue_and_a_plain_message() {
        let notice = SoldOutNotice::from_event(&event(json!({"queueId": "q1"})), "shop").unwrap();
        assert_eq!(
            notice,
            Some(SoldOutNotice {
                queue: QueueId::parse("q1").unwrap(),
                message: None
            })
        );
        let with = event(json!({"queueId": "q1", "message": "All gone, thanks!"}));
        assert_eq!(
            SoldOutNotice::from_event(&with, "shop")
                .unwrap()
                .unwrap()
                .message
                .as_deref(),
            Some("All gone, thanks!")
        );
        assert_eq!(SoldOutNotice::from_event(&with, "elsewhere").unwrap(), None);
        for bad in [
            json!({}),
            json!({"queueId": "a b"}),
            json!({"queueId": "q1", "message": "x".repeat(281)}),
            json!({"queueId": "q1", "message": "two\nlines"}),
            json!({"queueId": "q1", "message": ""}),
        ] {
            assert!(
                SoldOutNotice::from_event(&event(bad.clone()), "shop").is_err(),
                "{bad}"
            );
        }
        assert!(SoldOutNotice::from_event(
            &event(json!({"queueId": "q1", "message": "é".repeat(280)})),
            "shop"
        )
        .is_ok());
    }
}
