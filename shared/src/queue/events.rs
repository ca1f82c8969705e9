//! What happened to a buyer's place, as the scripts report it: the queue state events that
//! [`crate::publish`] sends to EventBridge. They carry ids and tickets, never a token; a
//! queue's own events (sold out, closed, opened) carry the queue id alone.

use chrono::{DateTime, SecondsFormat, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::pace::TickPace;
use super::schedule::Draw;
use crate::ids::QueueId;

/// Kinds of queue state event, each an EventBridge `detail-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueEventKind {
    /// Admitted: the buyer may book until `activeUntil`.
    Activated,
    /// A session ran out.
    Expired,
    /// A waiter stopped polling and was dropped from the line.
    Abandoned,
    /// The buyer left, or paid and was released.
    Released,
    /// The queue sold out: nobody more is admitted.
    SoldOut,
    /// The queue's mode became `closed`: no new arrivals.
    Closed,
    /// The queue's mode left `closed`.
    Opened,
    /// The pace in force changed without an operator: a step of the capacity ramp or its
    /// end, or a change of the booking system's health level (in tenths).
    PaceChanged,
}

impl QueueEventKind {
    pub fn detail_type(self) -> &'static str {
        match self {
            QueueEventKind::Activated => "QueueTokenActivated",
            QueueEventKind::Expired => "QueueTokenExpired",
            QueueEventKind::Abandoned => "QueueWaiterAbandoned",
            QueueEventKind::Released => "QueueTokenReleased",
            QueueEventKind::SoldOut => "QueueSoldOut",
            QueueEventKind::Closed => "QueueClosed",
            QueueEventKind::Opened => "QueueOpened",
            QueueEventKind::PaceChanged => "QueuePaceChanged",
        }
    }
}

/// One queue state event. Its JSON form is the event's `detail`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEvent {
    #[serde(skip)]
    pub kind: QueueEventKind,
    /// What a consumer dedupes on: the same for every delivery of one event, a resend after a
    /// slow PutEvents included, and different for any two events. A buyer's event:
    /// `<queueId>:<detail-type>:<ticket>` (a ticket has at most one event of each kind). A
    /// queue's own event: `<queueId>:<detail-type>:<ms>`, the instant lineup saw it happen.
    pub event_id: String,
    pub queue_id: QueueId,
    /// The buyer's; absent from a queue's own events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ticket: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_until: Option<String>,
    /// For a release: `left` or `paid`. For a leave: which place was given up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    /// For a sell-out: the operator's or the booking system's message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For a scheduled opening: its draw, as the summary shows it, so that the queue's event
    /// consumers can check it whatever becomes of the schedule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub draw: Option<Draw>,
    /// For a pace change: the capacity in force, and what limits it (in `reason`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<u32>,
    /// For a pace change: the queue's own `capacity` setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configured_capacity: Option<u32>,
    /// For a pace change: how many a tick admits now, on average (`admitPerTick` × the
    /// health level).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admit_per_tick: Option<f64>,
    /// For a pace change: the queue's own `admitPerTick` setting.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub configured_admit_per_tick: Option<u32>,
    /// For a pace change: the booking system's health level in force, 0 to 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_level: Option<f64>,
    /// For a pace change: what holds the health level below 1 (`booking`, `alarm` or
    /// `recovery`); absent at 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub health_reason: Option<&'static str>,
}

impl QueueEvent {
    pub fn new(
        kind: QueueEventKind,
        queue: &QueueId,
        user: impl Into<String>,
        ticket: u64,
    ) -> Self {
        QueueEvent {
            kind,
            event_id: format!("{}:{}:{ticket}", queue.as_str(), kind.detail_type()),
            queue_id: queue.clone(),
            user_id: Some(user.into()),
            ticket: Some(ticket),
            active_until: None,
            reason: None,
            message: None,
            draw: None,
            capacity: None,
            configured_capacity: None,
            admit_per_tick: None,
            configured_admit_per_tick: None,
            health_level: None,
            health_reason: None,
        }
    }

    /// An event about the queue itself, naming no buyer, seen now.
    pub fn of_queue(kind: QueueEventKind, queue: &QueueId) -> Self {
        let seen = Utc::now().timestamp_millis();
        QueueEvent {
            kind,
            event_id: format!("{}:{}:{seen}", queue.as_str(), kind.detail_type()),
            queue_id: queue.clone(),
            user_id: None,
            ticket: None,
            active_until: None,
            reason: None,
            message: None,
            draw: None,
            capacity: None,
            configured_capacity: None,
            admit_per_tick: None,
            configured_admit_per_tick: None,
            health_level: None,
            health_reason: None,
        }
    }

    /// `QueueOpened` at a scheduled opening, with the draw that placed the pre-queue.
    pub fn opened_by_draw(queue: &QueueId, draw: Draw) -> Self {
        QueueEvent {
            draw: Some(draw),
            ..QueueEvent::of_queue(QueueEventKind::Opened, queue)
        }
    }

    /// `QueuePaceChanged`: the capacity in force, what limits it (`reason`: `capacity`,
    /// `ramp` or `pool`) and the queue's own `capacity`; the admissions a tick in force, the
    /// queue's own `admitPerTick`, and the health level with what holds it below 1.
    pub fn pace_changed(queue: &QueueId, pace: TickPace) -> Self {
        QueueEvent {
            capacity: Some(pace.capacity),
            configured_capacity: Some(pace.configured_capacity),
            reason: Some(pace.limited_by.as_str()),
            admit_per_tick: Some(pace.admit_per_tick),
            configured_admit_per_tick: Some(pace.configured_admit_per_tick),
            health_level: Some(pace.health.level),
            health_reason: pace.health.reason.map(|reason| reason.as_str()),
            ..QueueEvent::of_queue(QueueEventKind::PaceChanged, queue)
        }
    }

    /// `QueueSoldOut`, with the message buyers are shown.
    pub fn sold_out(queue: &QueueId, message: Option<String>) -> Self {
        QueueEvent {
            message,
            ..QueueEvent::of_queue(QueueEventKind::SoldOut, queue)
        }
    }

    pub fn activated(
        queue: &QueueId,
        user: impl Into<String>,
        ticket: u64,
        until: DateTime<Utc>,
    ) -> Self {
        QueueEvent {
            active_until: Some(until.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ..QueueEvent::new(QueueEventKind::Activated, queue, user, ticket)
        }
    }

    pub fn released(
        queue: &QueueId,
        user: impl Into<String>,
        ticket: u64,
        reason: &'static str,
    ) -> Self {
        QueueEvent {
            reason: Some(reason),
            ..QueueEvent::new(QueueEventKind::Released, queue, user, ticket)
        }
    }
}

/// An admission a script reports: `{user, ticket, active until ms}`.
pub(super) struct Admission {
    user: String,
    ticket: u64,
    /// `None` when the script's instant is out of range: no event is sent for it.
    until: Option<DateTime<Utc>>,
}

impl FromRedisValue for Admission {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (user, ticket, until_ms): (String, u64, i64) = FromRedisValue::from_redis_value(v)?;
        Ok(Admission {
            user,
            ticket,
            until: DateTime::from_timestamp_millis(until_ms),
        })
    }
}

/// A buyer a script names as dropped, expired or abandoned: `{user, ticket}`.
pub(super) struct Seat {
    user: String,
    ticket: u64,
}

impl FromRedisValue for Seat {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (user, ticket): (String, u64) = FromRedisValue::from_redis_value(v)?;
        Ok(Seat { user, ticket })
    }
}

pub(super) fn admitted_events(queue: &QueueId, admitted: Vec<Admission>) -> Vec<QueueEvent> {
    admitted
        .into_iter()
        .filter_map(|a| Some(QueueEvent::activated(queue, a.user, a.ticket, a.until?)))
        .collect()
}

pub(super) fn seat_events(
    kind: QueueEventKind,
    queue: &QueueId,
    seats: Vec<Seat>,
) -> Vec<QueueEvent> {
    seats
        .into_iter()
        .map(|seat| QueueEvent::new(kind, queue, seat.user, seat.ticket))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buyers_event_is_named_by_its_queue_kind_and_ticket_and_a_queues_by_its_instant() {
        let queue = QueueId::parse("show").unwrap();
        let released = QueueEvent::released(&queue, "ana", 7, "paid");
        let detail = serde_json::to_value(&released).unwrap();
        assert_eq!(detail["eventId"], "show:QueueTokenReleased:7");
        // A resend serializes the same event: the same id.
        assert_eq!(
            serde_json::to_value(released.clone()).unwrap()["eventId"],
            detail["eventId"]
        );
        let before = Utc::now().timestamp_millis();
        let closed =
            serde_json::to_value(QueueEvent::of_queue(QueueEventKind::Closed, &queue)).unwrap();
        let id = closed["eventId"].as_str().unwrap();
        let seen: i64 = id
            .strip_prefix("show:QueueClosed:")
            .and_then(|ms| ms.parse().ok())
            .unwrap();
        assert!(
            seen >= before && seen <= Utc::now().timestamp_millis(),
            "{id}"
        );
    }
}
