//! What the line tells its queue's summary: how many wait and how many hold a session, as the
//! last tick left them. One small value beside the queue's settings (`{q:<queue>}`), which the
//! tick writes once it is done, the summary reads with one `GET`, and a container reads with
//! the settings.

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use super::handle::Line;
use super::keys::StripeKeys;
use super::shape::ms;
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::{Batch, Staged};

/// The line's counts as of one tick.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// When the tick ran (ms).
    pub tick: i64,
    /// Places in the segments the tick counted, after its walk: a join of the last second
    /// or two is not in it yet.
    pub waiting: u64,
    /// Live sessions, after the tick's admissions.
    pub active: u64,
    /// Every place on the line after the tick, those no tick has counted by segment yet
    /// and the pre-queue's too (a dark stripe's left out).
    #[serde(default)]
    pub queued: u64,
}

impl FromRedisValue for Counts {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let text: String = FromRedisValue::from_redis_value(v)?;
        serde_json::from_str(&text)
            .map_err(|e| ParsingError::from(format!("line counts: {e}: {text}")))
    }
}

/// The command that counts a stripe's sessions live after `now` (ms).
pub(super) fn count_live(keys: &StripeKeys, now: i64) -> redis::Cmd {
    redis::cmd("ZCOUNT")
        .arg(&keys.active)
        .arg(format!("({now}"))
        .arg("+inf")
        .clone()
}

/// The key of `queue`'s line counts: under the queue's settings' tag (`{q:<queue>}`), so a
/// container reads them with the settings in one request to one shard.
pub fn counts_key(prefix: &str, queue: &QueueId) -> String {
    format!("{prefix}:{{q:{queue}}}:line-counts")
}

impl Line {
    fn counts_key(&self) -> String {
        counts_key(&self.prefix, &self.queue)
    }

    /// Writes `counts`: one `SET`.
    pub(super) async fn write_counts(&self, counts: &Counts) -> Result<(), Error> {
        let key = self.counts_key();
        let text = serde_json::to_string(counts).map_err(|e| Error::Internal(e.to_string()))?;
        let _: () = self
            .conn
            .query(
                &key,
                redis::cmd("SET")
                    .arg(&key)
                    .arg(text)
                    .arg("PX")
                    .arg(ms(self.shape.keep))
                    .clone(),
            )
            .await?;
        Ok(())
    }

    /// How many wait and how many hold a live session at `now`, exactly: one pipeline over
    /// every stripe (`ZCARD`, `ZCOUNT`). For an operator's call, never a buyer's.
    pub async fn occupancy(&self, now: i64) -> Result<Counts, Error> {
        let mut batch = Batch::new();
        let staged: Vec<_> = self
            .stripe_keys
            .iter()
            .map(|keys| {
                let waiting: Staged<u64> =
                    batch.stage_command(&keys.line, redis::cmd("ZCARD").arg(&keys.line).clone());
                let active: Staged<u64> = batch.stage_command(&keys.active, count_live(keys, now));
                (waiting, active)
            })
            .collect();
        let replies = self.conn.send(&batch).await?;
        let mut counts = Counts {
            tick: now,
            ..Counts::default()
        };
        for (waiting, active) in &staged {
            counts.waiting += waiting.read(&replies)?;
            counts.active += active.read(&replies)?;
        }
        counts.queued = counts.waiting;
        Ok(counts)
    }

    /// Stages reading the counts the last tick wrote into `batch`, beside a caller's reads.
    pub fn stage_counts(&self, batch: &mut Batch) -> Staged<Option<Counts>> {
        let key = self.counts_key();
        batch.stage_command(&key, redis::cmd("GET").arg(&key).clone())
    }
}
