//! What the waiting room on the striped line reads of a queue's settings: whether an operator
//! created the queue, whether it takes new arrivals (its mode, sold out, the operator's
//! message), whether it is paused, and its capacity. One `HMGET` under the queue's own tag. A
//! container holds what it read for [`PUBLISHED_FOR`], so however many buyers join, the
//! queue's tag sees at most one read a second from each container.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use redis::{FromRedisValue, ParsingError, Value};

use super::keys::QueueKeys;
use super::{Arrival, Mode, WaitingRoom};
use crate::error::Error;
use crate::ids::QueueId;
use crate::line::PUBLISHED_FOR;

/// The settings fields a line reads, in the order [`Terms`] decodes them.
const FIELDS: [&str; 6] = [
    "created", "capacity", "paused", "mode", "sold-out", "message",
];

/// A queue's settings as the line reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Terms {
    /// An operator created the queue.
    pub created: bool,
    /// Its own capacity, where it set one.
    pub capacity: Option<u32>,
    pub paused: bool,
    pub mode: Mode,
    pub sold_out: bool,
    pub message: Option<String>,
}

impl FromRedisValue for Terms {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        type Fields = (
            Option<String>,
            Option<u32>,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let (created, capacity, paused, mode, sold_out, message): Fields =
            FromRedisValue::from_redis_value(v)?;
        Ok(Terms {
            created: created.is_some(),
            capacity,
            paused: paused.as_deref() == Some("1"),
            mode: Mode::from_script(mode.as_deref().unwrap_or(""))?,
            sold_out: sold_out.as_deref() == Some("1"),
            message: message.filter(|m| !m.is_empty()),
        })
    }
}

impl Terms {
    /// Whether a new arrival may take a place, or why not.
    pub(super) fn admits_arrivals(&self) -> Result<(), Error> {
        if !self.created {
            return Err(Error::NotFound(
                "no such queue: an operator creates it with PUT /queues/{queueId}/settings".into(),
            ));
        }
        let message = self.message.clone();
        if self.sold_out {
            return Err(Arrival::SoldOut { message }.into());
        }
        if self.mode == Mode::Closed {
            return Err(Arrival::Closed { message }.into());
        }
        Ok(())
    }
}

/// The terms a container read, by queue, with when (ms).
#[derive(Default)]
pub(super) struct HeldTerms(Mutex<HashMap<QueueId, (i64, Terms)>>);

/// The most queues whose terms a container holds; past it, it starts again from none.
const HELD: usize = 1_000;

impl WaitingRoom {
    /// `queue`'s terms at `now` (ms): those this container read less than [`PUBLISHED_FOR`]
    /// ago, else one `HMGET`. A queue not created yet is not held: its operator may create
    /// it any moment.
    pub(super) async fn terms(&self, queue: &QueueId, now: i64) -> Result<Terms, Error> {
        let fresh = PUBLISHED_FOR.as_millis() as i64;
        if let Some((at, terms)) = self
            .held_terms
            .0
            .lock()
            .ok()
            .and_then(|held| held.get(queue).cloned())
        {
            if now >= at && now - at < fresh {
                return Ok(terms);
            }
        }
        let terms = self.read_terms(queue).await?;
        if !terms.created {
            return Ok(terms);
        }
        let mut held = self
            .held_terms
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if held.len() >= HELD {
            held.clear();
        }
        held.insert(queue.clone(), (now, terms.clone()));
        Ok(terms)
    }

    /// Forgets what this container held of `queue`'s terms: its settings changed here.
    pub(super) fn forget_terms(&self, queue: &QueueId) {
        if let Ok(mut held) = self.held_terms.0.lock() {
            held.remove(queue);
        }
    }

    /// `queue`'s terms as they are now: one `HMGET`.
    pub(super) async fn read_terms(&self, queue: &QueueId) -> Result<Terms, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(&key).arg(&FIELDS[..]);
        Ok(self.conn.query(&key, cmd).await?)
    }
}

#[cfg(test)]
mod tests {
    /// Each field the line reads is one the scripts read and write under the same name.
    #[test]
    fn the_fields_are_the_settings_fields_the_scripts_name() {
        let common = include_str!("common.lua");
        let configure = include_str!("configure.lua");
        for field in super::FIELDS {
            let quoted = format!("'{field}'");
            assert!(
                common.contains(&quoted) || configure.contains(&quoted),
                "{field}"
            );
        }
        assert!(configure.contains("HSETNX', SETTINGS, 'created'"));
    }
}
