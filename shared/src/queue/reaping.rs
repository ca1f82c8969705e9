//! Reaping: the reaper's sweep of one queue, in chunks, removing run-out sessions and absent
//! waiters, and retiring the queue once it is idle (see [`super::registry`]).

use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::events::{seat_events, Seat};
use super::{QueueEvent, QueueEventKind, WaitingRoom, REAP};
use crate::error::Error;
use crate::ids::QueueId;
use crate::metrics::Record;
use crate::telemetry::Totals;

/// Waiters the reaper examines per script call, so no call blocks Redis for long.
pub(crate) const REAP_CHUNK: u32 = 50;

/// What one reaper run did in one queue.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReap {
    pub queue_id: QueueId,
    pub expired: u64,
    pub abandoned: u64,
    /// Waiters of a sold-out queue whose places were given back.
    pub given_back: u64,
    /// Empty, and without arrivals for `QUEUE_RETIRE_AFTER_SECONDS`: taken off the registry.
    pub retired: bool,
    pub script_calls: u64,
    #[serde(skip)]
    pub events: Vec<QueueEvent>,
}

/// What one reaper run did, per queue.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReapReport {
    pub queues: Vec<QueueReap>,
}

impl ReapReport {
    pub fn expired(&self) -> u64 {
        self.queues.iter().map(|q| q.expired).sum()
    }

    pub fn abandoned(&self) -> u64 {
        self.queues.iter().map(|q| q.abandoned).sum()
    }

    pub fn given_back(&self) -> u64 {
        self.queues.iter().map(|q| q.given_back).sum()
    }

    pub fn retired(&self) -> u64 {
        self.queues.iter().filter(|q| q.retired).count() as u64
    }

    pub fn script_calls(&self) -> u64 {
        self.queues.iter().map(|q| q.script_calls).sum()
    }

    /// The run's totals for its log line.
    pub fn totals(&self) -> Totals {
        Totals(vec![
            ("queues", self.queues.len() as u64),
            ("expired", self.expired()),
            ("abandoned", self.abandoned()),
            ("givenBack", self.given_back()),
            ("retired", self.retired()),
        ])
    }

    pub fn events(&self) -> impl Iterator<Item = &QueueEvent> {
        self.queues.iter().flat_map(|q| q.events.iter())
    }

    /// The run's metrics, a record per queue.
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        self.queues.iter().map(|queue| {
            Record::new()
                .dimension("queueId", queue.queue_id.as_str())
                .count("expired", queue.expired)
                .count("abandoned", queue.abandoned)
                .count("givenBack", queue.given_back)
        })
    }
}

/// The reap script's `{expired, abandoned, next cursor, idle, given back}`: one chunk's
/// removals, the cursor to go on from (0 when done), whether the queue is idle enough to
/// retire, and how many waiters of a sold-out queue it gave back.
struct ReapReply {
    expired: Vec<Seat>,
    abandoned: Vec<Seat>,
    next: u64,
    idle: bool,
    given_back: u64,
}

impl FromRedisValue for ReapReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (expired, abandoned, next, idle, given_back): (Vec<Seat>, Vec<Seat>, u64, u8, u64) =
            FromRedisValue::from_redis_value(v)?;
        Ok(ReapReply {
            expired,
            abandoned,
            next,
            idle: idle == 1,
            given_back,
        })
    }
}

impl WaitingRoom {
    /// Removes expired sessions and abandoned waiters of one queue (every waiter, once it is
    /// sold out), `REAP_CHUNK` waiters per script call. On the striped line the line's tick
    /// does that, and the reaper only retires a closed queue (`retire_closed_line`).
    pub async fn reap(&self, queue: &QueueId) -> Result<QueueReap, Error> {
        let mut report = QueueReap {
            queue_id: queue.clone(),
            expired: 0,
            abandoned: 0,
            given_back: 0,
            retired: false,
            script_calls: 0,
            events: Vec::new(),
        };
        if let Some(lines) = self.lines.clone() {
            report.retired = self.retire_closed_line(&lines, queue).await?;
            return Ok(report);
        }
        let mut cursor = 0u64;
        loop {
            let mut invocation = self.invocation(&REAP, queue);
            invocation
                .named("cursor", cursor)
                .named("chunk", REAP_CHUNK)
                .named("idle_after", super::millis(self.config.room.retire_after));
            let reply: ReapReply = self.conn.invoke(invocation).await?;
            report.script_calls += 1;
            report.expired += reply.expired.len() as u64;
            report.abandoned += reply.abandoned.len() as u64;
            report.given_back += reply.given_back;
            report
                .events
                .extend(seat_events(QueueEventKind::Expired, queue, reply.expired));
            report.events.extend(seat_events(
                QueueEventKind::Abandoned,
                queue,
                reply.abandoned,
            ));
            if reply.next != 0 {
                cursor = reply.next;
                continue;
            }
            if reply.idle {
                report.retired = self.retire(queue).await?;
            }
            return Ok(report);
        }
    }
}
