//! The scheduled work: promotion ticks and reaping, over every registered queue. Both
//! report, per queue, whom they admitted, expired and dropped, for events and metrics.

use serde::Serialize;

use redis::{FromRedisValue, ParsingError, Value};

use super::events::{admitted_events, seat_events, Admission, Seat};
use super::{parse_rate, QueueEvent, QueueEventKind, WaitingRoom, PROMOTE, REAP, RETIRE};
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::{queue_registry_key, Batch};

/// Waiters the reaper examines per script call, so no call blocks Redis for long.
pub const REAP_CHUNK: u32 = 50;

/// Most follow-up script calls per queue in one tick, beyond the first.
const MAX_EXTRA_SLICES: usize = 100;

/// What one promotion tick did in one queue.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuePromotion {
    pub queue_id: QueueId,
    pub admitted: u64,
    /// Absent waiters removed from the head of the line.
    pub abandoned: u64,
    /// Sessions that had run out, removed.
    pub expired: u64,
    pub waiting: u64,
    pub active: u64,
    pub admission_rate_per_minute: Option<f64>,
    #[serde(skip)]
    pub events: Vec<QueueEvent>,
}

impl QueuePromotion {
    /// Adds one slice's reply; returns whether the queue may admit more this tick, and how
    /// many.
    fn add(&mut self, reply: PromoteReply) -> (bool, u64) {
        let queue = self.queue_id.clone();
        let admitted = admitted_events(&queue, reply.admitted);
        self.admitted += admitted.len() as u64;
        self.abandoned += reply.dropped.len() as u64;
        self.expired += reply.expired.len() as u64;
        self.events.extend(admitted);
        self.events.extend(seat_events(
            QueueEventKind::Abandoned,
            &queue,
            reply.dropped,
        ));
        self.events
            .extend(seat_events(QueueEventKind::Expired, &queue, reply.expired));
        self.waiting = reply.waiting;
        self.active = reply.active;
        self.admission_rate_per_minute = reply.admission_rate_per_minute;
        (reply.more, reply.remaining)
    }
}

/// What one promotion tick did, per queue.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionReport {
    pub queues: Vec<QueuePromotion>,
}

impl PromotionReport {
    pub fn admitted(&self) -> u64 {
        self.queues.iter().map(|q| q.admitted).sum()
    }

    pub fn abandoned(&self) -> u64 {
        self.queues.iter().map(|q| q.abandoned).sum()
    }

    pub fn expired(&self) -> u64 {
        self.queues.iter().map(|q| q.expired).sum()
    }

    pub fn still_waiting(&self) -> u64 {
        self.queues.iter().map(|q| q.waiting).sum()
    }

    /// Every event of the tick, queue by queue.
    pub fn events(&self) -> impl Iterator<Item = &QueueEvent> {
        self.queues.iter().flat_map(|q| q.events.iter())
    }
}

/// What one reaper run did in one queue.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueReap {
    pub queue_id: QueueId,
    pub expired: u64,
    pub abandoned: u64,
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

    pub fn retired(&self) -> u64 {
        self.queues.iter().filter(|q| q.retired).count() as u64
    }

    pub fn script_calls(&self) -> u64 {
        self.queues.iter().map(|q| q.script_calls).sum()
    }

    pub fn events(&self) -> impl Iterator<Item = &QueueEvent> {
        self.queues.iter().flat_map(|q| q.events.iter())
    }
}

/// The promote script's `{admitted, dropped, expired, waiting, active, rate, remaining,
/// more}`: one slice of a tick, and whether the queue may admit more (`remaining` more).
struct PromoteReply {
    admitted: Vec<Admission>,
    dropped: Vec<Seat>,
    expired: Vec<Seat>,
    waiting: u64,
    active: u64,
    admission_rate_per_minute: Option<f64>,
    remaining: u64,
    more: bool,
}

impl FromRedisValue for PromoteReply {
    // The script's flat reply, named field by field below.
    #[allow(clippy::type_complexity)]
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (admitted, dropped, expired, waiting, active, rate, remaining, more): (
            Vec<Admission>,
            Vec<Seat>,
            Vec<Seat>,
            u64,
            u64,
            String,
            u64,
            u8,
        ) = FromRedisValue::from_redis_value(v)?;
        Ok(PromoteReply {
            admitted,
            dropped,
            expired,
            waiting,
            active,
            admission_rate_per_minute: parse_rate(&rate),
            remaining,
            more: more == 1,
        })
    }
}

/// The reap script's `{expired, abandoned, next cursor, idle}`: one chunk's removals, the
/// cursor to go on from (0 when done), and whether the queue is idle enough to retire.
struct ReapReply {
    expired: Vec<Seat>,
    abandoned: Vec<Seat>,
    next: u64,
    idle: bool,
}

impl FromRedisValue for ReapReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (expired, abandoned, next, idle): (Vec<Seat>, Vec<Seat>, u64, u8) =
            FromRedisValue::from_redis_value(v)?;
        Ok(ReapReply {
            expired,
            abandoned,
            next,
            idle: idle == 1,
        })
    }
}

impl WaitingRoom {
    /// Every live queue: registered by its first buyer, until the reaper retires it.
    pub async fn registered_queues(&self) -> Result<Vec<QueueId>, Error> {
        let registry = queue_registry_key(&self.prefix);
        let raw: Vec<String> = self
            .conn
            .query(&registry, redis::cmd("SMEMBERS").arg(&registry).clone())
            .await?;
        Ok(queue_ids(raw))
    }

    /// One promotion tick for every queue in `queues`, all in one batch: one pipelined
    /// round trip (per shard, all at once, on a cluster). Each queue's step is atomic, so
    /// overlapping promoters never exceed capacity.
    pub async fn promote(&self, queues: &[QueueId]) -> Result<PromotionReport, Error> {
        Ok(self.promote_and_list(queues, false).await?.0)
    }

    /// [`WaitingRoom::promote`], reading the registry in the same round trip: the promoter
    /// promotes the queues it knew from its last tick and learns the list for the next.
    pub async fn promote_and_list(
        &self,
        queues: &[QueueId],
        list: bool,
    ) -> Result<(PromotionReport, Option<Vec<QueueId>>), Error> {
        let mut batch = Batch::new();
        let registry = queue_registry_key(&self.prefix);
        let listed =
            list.then(|| batch.command(&registry, redis::cmd("SMEMBERS").arg(&registry).clone()));
        for queue in queues {
            let mut call = self.invocation(&PROMOTE, queue);
            call.arg("");
            batch.script(call);
        }
        let mut replies = self.conn.send(&batch).await?;
        let registered = match listed {
            Some(index) => {
                let raw: Vec<String> = redis::from_redis_value(replies.remove(index))
                    .map_err(|err| Error::Internal(format!("registry reply: {err}")))?;
                Some(queue_ids(raw))
            }
            None => None,
        };
        let mut promotions: Vec<QueuePromotion> = queues
            .iter()
            .map(|queue| QueuePromotion {
                queue_id: queue.clone(),
                admitted: 0,
                abandoned: 0,
                expired: 0,
                waiting: 0,
                active: 0,
                admission_rate_per_minute: None,
                events: Vec::new(),
            })
            .collect();
        // Each call admits one slice; a queue that may admit more this tick gets another
        // call, all such queues together in one more round trip.
        let mut sent: Vec<usize> = (0..queues.len()).collect();
        for round in 0..=MAX_EXTRA_SLICES {
            let mut more: Vec<(usize, u64)> = Vec::new();
            for (reply, index) in replies.into_iter().zip(&sent) {
                let reply: PromoteReply = redis::from_redis_value(reply)
                    .map_err(|err| Error::Internal(format!("promotion reply: {err}")))?;
                if let (true, remaining) = promotions[*index].add(reply) {
                    more.push((*index, remaining));
                }
            }
            if more.is_empty() || round == MAX_EXTRA_SLICES {
                break;
            }
            let mut batch = Batch::new();
            for (index, remaining) in &more {
                let mut call = self.invocation(&PROMOTE, &queues[*index]);
                call.arg(*remaining);
                batch.script(call);
            }
            replies = self.conn.send(&batch).await?;
            sent = more.into_iter().map(|(index, _)| index).collect();
        }
        Ok((PromotionReport { queues: promotions }, registered))
    }

    /// Removes expired sessions and abandoned waiters of one queue, `REAP_CHUNK` waiters per
    /// script call.
    pub async fn reap(&self, queue: &QueueId) -> Result<QueueReap, Error> {
        let mut report = QueueReap {
            queue_id: queue.clone(),
            expired: 0,
            abandoned: 0,
            retired: false,
            script_calls: 0,
            events: Vec::new(),
        };
        let mut cursor = 0u64;
        loop {
            let mut invocation = self.invocation(&REAP, queue);
            invocation
                .arg(cursor)
                .arg(REAP_CHUNK)
                .arg(super::millis(self.config.retire_after));
            let reply: ReapReply = self.conn.invoke(invocation).await?;
            report.script_calls += 1;
            report.expired += reply.expired.len() as u64;
            report.abandoned += reply.abandoned.len() as u64;
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

impl WaitingRoom {
    /// Takes an idle queue off the registry. Registry first, then the queue's own check
    /// (which clears its registration mark only if it is still idle): an arrival in between
    /// found the mark still set and did not register, so the queue goes back in.
    /// Returns whether it was retired. The reaper calls it for queues its chunks found idle.
    pub async fn retire(&self, queue: &QueueId) -> Result<bool, Error> {
        let registry = queue_registry_key(&self.prefix);
        let remove = redis::cmd("SREM")
            .arg(&registry)
            .arg(queue.as_str())
            .clone();
        self.conn.query::<()>(&registry, remove).await?;
        let mut invocation = self.invocation(&RETIRE, queue);
        invocation.arg(super::millis(self.config.retire_after));
        let retired: bool = self.conn.invoke(invocation).await?;
        if !retired {
            let add = redis::cmd("SADD")
                .arg(&registry)
                .arg(queue.as_str())
                .clone();
            self.conn.query::<()>(&registry, add).await?;
        }
        Ok(retired)
    }
}

/// The registry's members as queue ids. Only ids that passed validation are ever
/// registered; anything else is skipped.
fn queue_ids(raw: Vec<String>) -> Vec<QueueId> {
    raw.iter().filter_map(|q| QueueId::parse(q).ok()).collect()
}
