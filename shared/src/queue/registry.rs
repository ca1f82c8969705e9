//! The queue registry: the set of live queues the promoter and reaper work through, so they
//! find queues without scanning the keyspace. A queue's first buyer registers it (within
//! `MAX_QUEUES`), or before any buyer the settings change that names health alarms or a pool;
//! the reaper retires it once idle (never while its settings name either). The queue's meta
//! hash holds a registration mark, so a buyer's script can tell when its queue must be
//! registered again.

use super::keys::{queue_registry_key, QueueKeys};
use super::{Arrival, WaitingRoom, REGISTER, RETIRE};
use crate::config::QueueCreation;
use crate::error::Error;
use crate::ids::QueueId;
use crate::line::Lines;
use crate::store::{Batch, ScriptCall, Staged};

/// The registry's members, staged with [`WaitingRoom::stage_registered_queues`].
pub(super) struct StagedQueues(Staged<Vec<String>>);

impl StagedQueues {
    pub(super) fn read(&self, replies: &[redis::Value]) -> Result<Vec<QueueId>, Error> {
        Ok(queue_ids(self.0.read(replies)?))
    }
}

impl WaitingRoom {
    /// Every live queue: registered by its first buyer, or by the settings change that names
    /// health alarms or a pool, until the reaper retires it.
    pub async fn registered_queues(&self) -> Result<Vec<QueueId>, Error> {
        let mut batch = Batch::new();
        let listed = self.stage_registered_queues(&mut batch);
        listed.read(&self.conn.send(&batch).await?)
    }

    /// Stages the registry's listing in `batch`, to share a round trip with other work.
    pub(super) fn stage_registered_queues(&self, batch: &mut Batch) -> StagedQueues {
        let registry = queue_registry_key(&self.prefix);
        StagedQueues(batch.stage_command(&registry, redis::cmd("SMEMBERS").arg(&registry).clone()))
    }

    /// Adds `queue` to the registry unless it already holds `MAX_QUEUES` others.
    pub(super) async fn register(&self, queue: &QueueId) -> Result<(), Error> {
        let mut call = ScriptCall::of(&REGISTER);
        call.named_key("REGISTRY", queue_registry_key(&self.prefix))
            .named("queue", queue.as_str())
            .named("most", self.config.max_queues);
        let registered: bool = self.conn.invoke(call).await?;
        if !registered {
            return Err(Arrival::QueueLimit {
                max: self.config.max_queues,
            }
            .into());
        }
        Ok(())
    }

    /// Adds `queue` to the registry when issue or status found a live queue unmarked,
    /// whatever `MAX_QUEUES` says: its buyers hold places that must be promoted; and when a
    /// settings change found one unmarked whose settings name health alarms or a pool. The registry
    /// is written first and the mark second: a crash in between leaves the queue unmarked,
    /// and the next issue or status registers it again.
    pub(super) async fn reregister(&self, queue: &QueueId) -> Result<(), Error> {
        self.write_registry("SADD", queue).await?;
        let meta = QueueKeys::new(&self.prefix, queue).meta;
        self.conn
            .query::<()>(
                &meta,
                redis::cmd("HSET")
                    .arg(&meta)
                    .arg("registered")
                    .arg(1)
                    .clone(),
            )
            .await?;
        Ok(())
    }

    /// Takes an idle queue off the registry. Registry first, then the queue's own check
    /// (which clears its registration mark only if it is still idle): an arrival in between
    /// found the mark still set and did not register, so the queue goes back in.
    /// Returns whether it was retired. The reaper calls it for queues its chunks found idle.
    pub async fn retire(&self, queue: &QueueId) -> Result<bool, Error> {
        self.write_registry("SREM", queue).await?;
        let mut invocation = self.invocation(&RETIRE, queue);
        invocation.named("idle_after", super::millis(self.config.room.retire_after));
        let retired: bool = self.conn.invoke(invocation).await?;
        if !retired {
            self.write_registry("SADD", queue).await?;
        }
        Ok(retired)
    }

    /// On the striped line: takes `queue` off the registry once its settings are gone and
    /// every stripe is empty, so the promoter ticks it no more. Settings go when an operator
    /// closes the queue, or, where its first buyer made them (`QUEUE_CREATION=open`), once
    /// nobody has been on its line for `QUEUE_RETIRE_AFTER_SECONDS`. A queue that exists
    /// stays. So does one whose settings went while someone still holds a place (a join that
    /// came with the settings its container held from a moment before): it is ticked until
    /// it drains, and under `QUEUE_CREATION=open` its settings are made again, as its first
    /// buyer's join made them. The registry is written first and the settings read after: a
    /// queue created again in between is put back. Whether it was taken off.
    pub(super) async fn retire_closed_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
    ) -> Result<bool, Error> {
        if self.read_terms(queue).await?.created {
            return Ok(false);
        }
        let held = lines.any(queue).occupancy(self.clock.now_ms()).await?;
        if held.waiting + held.active > 0 {
            if self.config.creation == QueueCreation::Open {
                self.open_line(queue).await?;
            }
            return Ok(false);
        }
        self.write_registry("SREM", queue).await?;
        if self.read_terms(queue).await?.created {
            self.write_registry("SADD", queue).await?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Adds `queue` to the registry (`SADD`) or takes it off (`SREM`).
    async fn write_registry(&self, verb: &str, queue: &QueueId) -> Result<(), Error> {
        let registry = queue_registry_key(&self.prefix);
        let cmd = redis::cmd(verb).arg(&registry).arg(queue.as_str()).clone();
        Ok(self.conn.query::<()>(&registry, cmd).await?)
    }
}

/// The registry's members as queue ids. Only ids that passed validation are ever
/// registered; anything else is skipped.
fn queue_ids(raw: Vec<String>) -> Vec<QueueId> {
    raw.iter().filter_map(|q| QueueId::parse(q).ok()).collect()
}
