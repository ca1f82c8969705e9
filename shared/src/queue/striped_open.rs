//! A queue its first buyer creates on the striped line (`QUEUE_CREATION=open`). The join
//! that finds no settings takes the queue's place in the registry (within `MAX_QUEUES`) and
//! writes settings marked `by-arrival` (`open_line.lua`), which end
//! `QUEUE_RETIRE_AFTER_SECONDS` after the last tick that found anyone on the line. An
//! operator's change keeps them for good. Once they are gone and every stripe is empty, the
//! reaper takes the queue off the registry (`registry.rs`, `retire_closed_line`).

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::keys::QueueKeys;
use super::WaitingRoom;
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall};

static OPEN_LINE: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("open_line.lua"))),
    &["SETTINGS"],
    &["now", "keep_ms"],
);

/// What `open_line.lua` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Opened {
    /// Nobody had made the queue: this buyer's join did.
    Created,
    /// The queue existed (an operator's, or another buyer's a moment before).
    Found,
}

impl FromRedisValue for Opened {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        match i64::from_redis_value(v)? {
            1 => Ok(Opened::Created),
            0 => Ok(Opened::Found),
            other => Err(ParsingError::from(format!("open line: {other}"))),
        }
    }
}

impl WaitingRoom {
    /// Creates `queue` for its first buyer: the registry first (refused past `MAX_QUEUES`,
    /// with nothing written), then its settings. Two round trips, on a queue's first join
    /// only. A crash in between leaves a registered queue without settings, which the reaper
    /// takes off again.
    pub(super) async fn open_line(&self, queue: &QueueId) -> Result<Opened, Error> {
        self.register(queue).await?;
        let mut call = ScriptCall::of(&OPEN_LINE);
        call.named_key("SETTINGS", QueueKeys::new(&self.prefix, queue).settings)
            .named("now", self.clock.now_ms())
            .named("keep_ms", super::millis(self.config.room.retire_after));
        let opened = self.conn.invoke(call).await?;
        self.forget_terms(queue);
        Ok(opened)
    }

    /// Stages renewing the settings a buyer made for `queue` into `batch`: they end
    /// `QUEUE_RETIRE_AFTER_SECONDS` from now. `XX`: settings an operator has kept for good
    /// meanwhile stay so.
    pub(super) fn stage_keep_open(&self, batch: &mut Batch, queue: &QueueId) {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let renew = redis::cmd("PEXPIRE")
            .arg(&key)
            .arg(super::millis(self.config.room.retire_after))
            .arg("XX")
            .clone();
        batch.stage_command::<bool>(&key, renew);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_script_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("open_line.lua"), &super::OPEN_LINE);
    }
}
