//! The scheduled work: promotion ticks and reaping, over every registered queue.

use serde::Serialize;

use super::{WaitingRoom, PROMOTE, REAP};
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::queue_registry_key;

/// Waiters the reaper examines per script call, so no call blocks Redis for long.
pub const REAP_CHUNK: u32 = 1000;

/// What one promotion tick did, summed over queues.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromotionReport {
    pub queues: u64,
    pub admitted: u64,
    /// Absent waiters removed from the head of a line.
    pub dropped: u64,
    pub still_waiting: u64,
}

/// What one reaper run did, summed over queues.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReapReport {
    pub queues: u64,
    pub expired_sessions: u64,
    pub abandoned_waiters: u64,
    /// Empty queues without arrivals for `QUEUE_RETIRE_AFTER_SECONDS`, taken off the registry.
    pub retired_queues: u64,
    pub script_calls: u64,
}

impl WaitingRoom {
    /// Every queue that ever had a buyer.
    pub async fn registered_queues(&self) -> Result<Vec<QueueId>, Error> {
        let raw: Vec<String> = self
            .conn
            .query(redis::cmd("SMEMBERS").arg(queue_registry_key(&self.prefix)))
            .await?;
        // Only ids that passed validation are ever registered; skip anything else.
        Ok(raw.iter().filter_map(|q| QueueId::parse(q).ok()).collect())
    }

    /// One promotion tick for every queue in `queues`, all in one pipelined round trip.
    /// Each queue's step is atomic, so overlapping promoters never exceed capacity.
    pub async fn promote(&self, queues: &[QueueId]) -> Result<PromotionReport, Error> {
        let mut report = PromotionReport::default();
        if queues.is_empty() {
            return Ok(report);
        }
        let mut pipe = redis::pipe();
        for queue in queues {
            let mut inv = self.invocation(&PROMOTE, queue);
            inv.arg(self.settings.admit_per_tick);
            pipe.invoke_script(&inv);
        }
        let replies: Vec<(u64, u64, u64, u64)> = self.conn.pipeline(&pipe, &[&PROMOTE]).await?;
        for (admitted, dropped, waiting, _active) in replies {
            report.queues += 1;
            report.admitted += admitted;
            report.dropped += dropped;
            report.still_waiting += waiting;
        }
        Ok(report)
    }

    /// Removes expired sessions and abandoned waiters of one queue, `REAP_CHUNK` waiters per
    /// script call.
    pub async fn reap(&self, queue: &QueueId) -> Result<ReapReport, Error> {
        let mut report = ReapReport {
            queues: 1,
            ..ReapReport::default()
        };
        let mut cursor = 0u64;
        loop {
            let mut invocation = self.invocation(&REAP, queue);
            invocation
                .arg(cursor)
                .arg(REAP_CHUNK)
                .arg(super::millis(self.settings.retire_after));
            let (expired, dropped, next, idle): (u64, u64, u64, u8) =
                self.conn.invoke(&invocation).await?;
            report.script_calls += 1;
            report.expired_sessions += expired;
            report.abandoned_waiters += dropped;
            if next != 0 {
                cursor = next;
                continue;
            }
            if idle == 1 {
                // Safe against a racing arrival: issue and status both re-register their
                // queue in the same round trip, so a live queue is back at its next request.
                self.conn
                    .query::<()>(
                        redis::cmd("SREM")
                            .arg(queue_registry_key(&self.prefix))
                            .arg(queue.as_str()),
                    )
                    .await?;
                report.retired_queues += 1;
            }
            return Ok(report);
        }
    }
}

impl ReapReport {
    pub fn add(&mut self, other: &ReapReport) {
        self.queues += other.queues;
        self.expired_sessions += other.expired_sessions;
        self.abandoned_waiters += other.abandoned_waiters;
        self.retired_queues += other.retired_queues;
        self.script_calls += other.script_calls;
    }
}
