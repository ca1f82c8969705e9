//! What happened to a buyer's place, as the scripts report it: the queue state events that
//! [`crate::publish`] sends to EventBridge. They carry ids and tickets, never a token.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

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
}

impl QueueEventKind {
    pub fn detail_type(self) -> &'static str {
        match self {
            QueueEventKind::Activated => "QueueTokenActivated",
            QueueEventKind::Expired => "QueueTokenExpired",
            QueueEventKind::Abandoned => "QueueWaiterAbandoned",
            QueueEventKind::Released => "QueueTokenReleased",
        }
    }
}

/// One queue state event. Its JSON form is the event's `detail`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueEvent {
    #[serde(skip)]
    pub kind: QueueEventKind,
    pub queue_id: QueueId,
    pub user_id: String,
    pub ticket: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_until: Option<String>,
    /// For a release: `left` or `paid`. For a leave: which place was given up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
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
            queue_id: queue.clone(),
            user_id: user.into(),
            ticket,
            active_until: None,
            reason: None,
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

/// The scripts' admitted list, `{user, ticket, active until ms}` each.
pub(super) type AdmittedReply = Vec<(String, u64, i64)>;
/// The scripts' dropped, expired and abandoned lists, `{user, ticket}` each.
pub(super) type SeatsReply = Vec<(String, u64)>;

pub(super) fn admitted_events(queue: &QueueId, admitted: AdmittedReply) -> Vec<QueueEvent> {
    admitted
        .into_iter()
        .filter_map(|(user, ticket, until_ms)| {
            Some(QueueEvent::activated(
                queue,
                user,
                ticket,
                DateTime::from_timestamp_millis(until_ms)?,
            ))
        })
        .collect()
}

pub(super) fn seat_events(
    kind: QueueEventKind,
    queue: &QueueId,
    seats: SeatsReply,
) -> Vec<QueueEvent> {
    seats
        .into_iter()
        .map(|(user, ticket)| QueueEvent::new(kind, queue, user, ticket))
        .collect()
}
