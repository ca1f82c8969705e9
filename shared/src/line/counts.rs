//! What the line tells its queue's summary: how many wait and how many hold a session, as the
//! last tick left them. One small value under the queue's own tag (`{l:<queue>}`), which the
//! tick writes once it is done and the summary reads with one `GET`.

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use super::{ms, Line};
use crate::error::Error;

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
}

impl FromRedisValue for Counts {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let text: String = FromRedisValue::from_redis_value(v)?;
        serde_json::from_str(&text)
            .map_err(|e| ParsingError::from(format!("line counts: {e}: {text}")))
    }
}

impl Line {
    /// The key of the line's counts, under the queue's own tag.
    fn counts_key(&self) -> String {
        self.own_key("counts")
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

    /// The counts the last tick wrote, if a tick has run within the line's keep.
    pub async fn counts(&self) -> Result<Option<Counts>, Error> {
        let key = self.counts_key();
        Ok(self
            .conn
            .query(&key, redis::cmd("GET").arg(&key).clone())
            .await?)
    }
}
