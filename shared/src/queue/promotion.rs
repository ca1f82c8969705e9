//! Promotion ticks over the registered queues: each admits the next waiters in ticket order
//! while places are free, and removes the absent waiters and run-out sessions it meets. It
//! reports, per queue, whom it admitted, expired and dropped, for events and metrics.

use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::events::{admitted_events, seat_events, Admission, Seat};
use super::pace::{PaceReply, TickPace};
use super::pool::{PoolReport, PoolReportReply};
use super::schedule::{Draw, DrawReply};
use super::{parse_rate, QueueEvent, QueueEventKind, WaitingRoom, PROMOTE};
use crate::error::Error;
use crate::ids::QueueId;
use crate::metrics::{Record, Unit, MAX_VALUES};
use crate::store::{Batch, Staged};
use crate::telemetry::Totals;

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
    /// The pace in force (capacity, admissions a tick, health level) as the tick saw it.
    #[serde(skip)]
    pub pace: Option<TickPace>,
    /// How long each buyer admitted this tick waited, in ms, by the queue's ticket clock (at
    /// most a second over the true wait).
    #[serde(skip)]
    pub waits_ms: Vec<u64>,
    #[serde(skip)]
    pub events: Vec<QueueEvent>,
}

impl QueuePromotion {
    /// Adds one slice's reply; returns whether the queue may admit more this tick, and how
    /// many.
    fn add(&mut self, reply: PromoteReply) -> (bool, u64) {
        let queue = self.queue_id.clone();
        if let Some(draw) = reply.opened {
            self.events.push(QueueEvent::opened_by_draw(&queue, draw));
        }
        if reply.closed {
            self.events
                .push(QueueEvent::of_queue(QueueEventKind::Closed, &queue));
        }
        if let Some(pace) = reply.pace.pace {
            if reply.pace.changed {
                self.events.push(QueueEvent::pace_changed(&queue, pace));
            }
            self.pace = Some(pace);
        }
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
        self.waits_ms.extend(reply.waits_ms);
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

    /// The tick's totals for its log line.
    pub fn totals(&self) -> Totals {
        Totals(vec![
            ("queues", self.queues.len() as u64),
            ("admitted", self.admitted()),
            ("abandoned", self.abandoned()),
            ("expired", self.expired()),
            ("waiting", self.still_waiting()),
        ])
    }

    /// Every event of the tick, queue by queue.
    pub fn events(&self) -> impl Iterator<Item = &QueueEvent> {
        self.queues.iter().flat_map(|q| q.events.iter())
    }

    /// The tick's metrics, queue by queue: the counts, and how long each admitted buyer
    /// waited, in records of at most [`MAX_VALUES`] values (CloudWatch gives their
    /// percentiles per queue).
    pub fn records(&self) -> impl Iterator<Item = Record> + '_ {
        self.queues.iter().flat_map(|queue| {
            let mut counts = Record::new()
                .dimension("queueId", queue.queue_id.as_str())
                .count("waiting", queue.waiting)
                .count("active", queue.active)
                .count("admitted", queue.admitted)
                .count("expired", queue.expired)
                .count("abandoned", queue.abandoned);
            if let Some(rate) = queue.admission_rate_per_minute {
                counts = counts.metric("admissionRatePerMinute", rate, Unit::CountPerMinute);
            }
            if let Some(pace) = queue.pace {
                counts = counts
                    .count("capacityInForce", pace.capacity.into())
                    .count("capacityConfigured", pace.configured_capacity.into())
                    .metric("admitPerTickInForce", pace.admit_per_tick, Unit::Count)
                    .count(
                        "admitPerTickConfigured",
                        pace.configured_admit_per_tick.into(),
                    )
                    .metric("healthLevel", pace.health.level, Unit::None);
            }
            let waits = queue.waits_ms.chunks(MAX_VALUES).map(|waits| {
                let seconds: Vec<f64> = waits.iter().map(|ms| *ms as f64 / 1000.0).collect();
                Record::new()
                    .dimension("queueId", queue.queue_id.as_str())
                    .values("waitSeconds", &seconds, Unit::Seconds)
            });
            std::iter::once(counts).chain(waits)
        })
    }
}

/// The promote script's `{admitted, dropped, expired, waiting, active, rate, remaining,
/// more, opened, waits, closed, pace, alarms, pool}`: one slice of a tick, whether the queue may admit more
/// (`remaining` more), the draw when this slice saw the scheduled opening first (a `QueueOpened`
/// to publish, carrying it), how long each admitted buyer waited, whether it saw `closesAt` pass first (a
/// `QueueClosed`), a change of the pace it saw first (a `QueuePaceChanged`), and the alarms the
/// queue names (`healthAlarms`, one a line), and its report to its pool's ledger.
struct PromoteReply {
    admitted: Vec<Admission>,
    dropped: Vec<Seat>,
    expired: Vec<Seat>,
    waiting: u64,
    active: u64,
    admission_rate_per_minute: Option<f64>,
    remaining: u64,
    more: bool,
    opened: Option<Draw>,
    waits_ms: Vec<u64>,
    closed: bool,
    /// The pace in force, and whether no operator changed it since it was last reported
    /// (the ramp, the health level): a `QueuePaceChanged`.
    pace: PaceReply,
    alarms: String,
    pool: Option<PoolReport>,
}

impl FromRedisValue for PromoteReply {
    // The script's flat reply, named field by field below.
    #[allow(clippy::type_complexity)]
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        // Fourteen parts: the last two are read apart (redis-rs reads tuples of up to twelve).
        let mut parts: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        if parts.len() != 14 {
            return Err(format!("promote.lua returned {} parts, not 14", parts.len()).into());
        }
        let (Some(pool), Some(alarms)) = (parts.pop(), parts.pop()) else {
            return Err("promote.lua returned too few parts".into());
        };
        let PoolReportReply(pool) = FromRedisValue::from_redis_value(pool)?;
        let alarms = String::from_redis_value(alarms)?;
        let (
            admitted,
            dropped,
            expired,
            waiting,
            active,
            rate,
            remaining,
            more,
            opened,
            waits_ms,
            closed,
            pace,
        ): (
            Vec<Admission>,
            Vec<Seat>,
            Vec<Seat>,
            u64,
            u64,
            String,
            u64,
            u8,
            DrawReply,
            Vec<u64>,
            u8,
            PaceReply,
        ) = FromRedisValue::from_redis_value(Value::Array(parts))?;
        Ok(PromoteReply {
            admitted,
            dropped,
            expired,
            waiting,
            active,
            admission_rate_per_minute: parse_rate(&rate),
            remaining,
            more: more == 1,
            opened: opened.0,
            waits_ms,
            closed: closed == 1,
            pace,
            alarms,
            pool,
        })
    }
}

impl WaitingRoom {
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
        if let Some(lines) = self.lines.clone() {
            // The registry lives on one shard: while it fails over, the lines of the queues
            // known from the last tick still tick, and the list is learned again after.
            let registered = match list {
                true => self
                    .registered_queues()
                    .await
                    .inspect_err(|err| tracing::warn!(%err, "the queue registry was not read"))
                    .ok(),
                false => None,
            };
            return Ok((self.tick_lines(&lines, queues).await?, registered));
        }
        let mut batch = Batch::new();
        let listed = list.then(|| self.stage_registered_queues(&mut batch));
        // The alarms the queues name, read for the next tick (alarm_watch.rs).
        let alarms = self.alarms.stage_read(&self.prefix, &mut batch);
        // Each pool's ledger, with its queues' reports from the last tick (pool.rs PoolWatch).
        let ledgers = self.pools.stage_ledgers(&self.prefix, &mut batch);
        let mut slices: Vec<(usize, Staged<PromoteReply>)> = queues
            .iter()
            .enumerate()
            .map(|(index, queue)| {
                let mut call = self.invocation(&PROMOTE, queue);
                let word = self.pools.word(queue);
                let (alarm, names) = self.alarms.argument(queue);
                call.named("remaining", "")
                    .named("alarm", alarm)
                    .named("alarm_names", names)
                    .named("grant", word.grant)
                    .named("shrink", word.shrink)
                    .named("pool_signal", word.signal)
                    .named("word_pool", word.pool);
                (index, batch.stage(call))
            })
            .collect();
        let mut replies = self.conn.send(&batch).await?;
        let registered = match listed {
            Some(listed) => Some(listed.read(&replies)?),
            None => None,
        };
        if let Some(alarms) = &alarms {
            self.alarms.record(alarms, &replies)?;
        }
        self.pools.record(&ledgers, &replies)?;

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
                pace: None,
                waits_ms: Vec::new(),
                events: Vec::new(),
            })
            .collect();
        // Each call admits one slice; a queue that may admit more this tick gets another
        // call, all such queues together in one more round trip.
        for round in 0..=MAX_EXTRA_SLICES {
            let mut more: Vec<(usize, u64)> = Vec::new();
            for (index, slice) in &slices {
                let reply = slice.read(&replies)?;
                if round == 0 {
                    self.alarms.learn(&queues[*index], &reply.alarms);
                    self.pools.learn(&queues[*index], reply.pool.clone());
                }
                if let (true, remaining) = promotions[*index].add(reply) {
                    more.push((*index, remaining));
                }
            }
            if more.is_empty() || round == MAX_EXTRA_SLICES {
                break;
            }
            let mut batch = Batch::new();
            slices = more
                .into_iter()
                .map(|(index, remaining)| {
                    let mut call = self.invocation(&PROMOTE, &queues[index]);
                    call.named("remaining", remaining)
                        .named("alarm", "")
                        .named("alarm_names", "")
                        .named("grant", "")
                        .named("shrink", "")
                        .named("pool_signal", "")
                        .named("word_pool", "");
                    (index, batch.stage(call))
                })
                .collect();
            replies = self.conn.send(&batch).await?;
        }
        // Alarms named by a queue this tick learned of (new to the promoter, or a list the
        // operator changed) are read at once, so the next tick hands their state on: one
        // more round trip, only in a tick that learns such names.
        if self.alarms.has_unread() {
            let mut batch = Batch::new();
            if let Some(staged) = self.alarms.stage_read(&self.prefix, &mut batch) {
                let replies = self.conn.send(&batch).await?;
                self.alarms.record(&staged, &replies)?;
            }
        }
        Ok((PromotionReport { queues: promotions }, registered))
    }
}
