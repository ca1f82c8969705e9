//! The waiting room. Buyers take a ticket, wait in strict ticket order, and are admitted
//! for a session of `SESSION_SECONDS` while fewer than `QUEUE_CAPACITY` are active.
//!
//! Each operation is one Lua script over one queue's keys (see [`crate::store::QueueKeys`]),
//! sent with EVALSHA: one round trip, atomic, and safe on Redis Cluster. The scripts share
//! the prelude in `common.lua`, which holds the rules: who is present, who is active, and
//! how promotion picks the next buyers.
//!
//! Presence: a waiter's status polls are its heartbeat, recorded as one bit per ticket in
//! rotating time-window bitmaps. A waiter unseen for `WAITING_IDLE_SECONDS` is never
//! promoted; whichever script meets it first removes it.

mod buyer;
mod housekeeping;

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::Script;

use crate::config::QueueSettings;
use crate::store::{Conn, QueueKeys};

pub use buyer::{Issued, QueueSummary};
pub use housekeeping::{PromotionReport, ReapReport};

/// Heartbeat windows per idle period: a waiter is dropped between `WAITING_IDLE_SECONDS`
/// and that plus a tenth of it after its last poll.
pub const IDLE_WINDOWS: u32 = 10;

macro_rules! queue_script {
    ($file:literal) => {
        LazyLock::new(|| Script::new(concat!(include_str!("common.lua"), include_str!($file))))
    };
}

static ISSUE: LazyLock<Script> = queue_script!("issue.lua");
static STATUS: LazyLock<Script> = queue_script!("status.lua");
static LEAVE: LazyLock<Script> = queue_script!("leave.lua");
static SUMMARY: LazyLock<Script> = queue_script!("summary.lua");
static PROMOTE: LazyLock<Script> = queue_script!("promote.lua");
static REAP: LazyLock<Script> = queue_script!("reap.lua");

/// The waiting room over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct WaitingRoom {
    conn: Conn,
    prefix: String,
    settings: QueueSettings,
}

impl WaitingRoom {
    pub fn new(conn: Conn, prefix: impl Into<String>, settings: QueueSettings) -> Self {
        WaitingRoom {
            conn,
            prefix: prefix.into(),
            settings,
        }
    }

    pub fn settings(&self) -> &QueueSettings {
        &self.settings
    }

    /// A script invocation with the keys and leading arguments every queue script expects.
    fn invocation<'s>(
        &self,
        script: &'s Script,
        queue: &crate::ids::QueueId,
    ) -> redis::ScriptInvocation<'s> {
        let keys = QueueKeys::new(&self.prefix, queue);
        let mut invocation = script.prepare_invoke();
        for key in keys.all() {
            invocation.key(key);
        }
        invocation
            .arg(self.settings.capacity)
            .arg(millis(self.settings.session))
            .arg(millis(self.settings.waiting_idle));
        invocation
    }
}

/// Where a token stands right now.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// In line, `position` (1-based) among the waiting.
    Waiting { position: u64 },
    /// Admitted until the given instant.
    Active { until: DateTime<Utc> },
}

/// A live token's state, as the scripts report it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenState {
    pub ticket: u64,
    pub standing: Standing,
    /// Measured admissions per minute, if any have been measured.
    pub admission_rate_per_minute: Option<f64>,
}

impl TokenState {
    /// `ceil(position × 60 / rate)`: the time the line ahead takes to clear at the measured
    /// admission rate. `None` while no rate has been measured, 0 once active.
    pub fn estimated_wait_seconds(&self) -> Option<u64> {
        match self.standing {
            Standing::Active { .. } => Some(0),
            Standing::Waiting { position } => {
                let rate = self.admission_rate_per_minute.filter(|r| *r > 0.0)?;
                Some((position as f64 * 60.0 / rate).ceil() as u64)
            }
        }
    }

    /// When to poll again: about a tenth of the expected wait, at least 1 s, and never more
    /// than a third of the idle period, so a buyer who follows it is never dropped as absent.
    pub fn poll_after_seconds(&self, settings: &QueueSettings, now: DateTime<Utc>) -> u64 {
        let ceiling = (settings.waiting_idle.as_secs() / 3).max(1);
        let wanted = match self.standing {
            Standing::Waiting { position } => {
                self.estimated_wait_seconds().unwrap_or(position) / 10
            }
            Standing::Active { until } => (until - now).num_seconds().max(0) as u64 / 4,
        };
        wanted.clamp(1, ceiling)
    }
}

/// Decodes the reply `{created, status, ticket, position, active_until_ms, rate}`.
fn decode_reply(reply: ScriptReply) -> Result<Option<(bool, TokenState)>, crate::Error> {
    let (created, status, ticket, position, until_ms, rate) = reply;
    let standing = match status.as_str() {
        "gone" => return Ok(None),
        "waiting" => Standing::Waiting { position },
        "active" => Standing::Active {
            until: DateTime::from_timestamp_millis(until_ms).ok_or_else(|| {
                crate::Error::Internal(format!("session end {until_ms} out of range"))
            })?,
        },
        other => {
            return Err(crate::Error::Internal(format!(
                "queue script returned status {other:?}"
            )))
        }
    };
    Ok(Some((
        created == 1,
        TokenState {
            ticket,
            standing,
            admission_rate_per_minute: parse_rate(&rate),
        },
    )))
}

type ScriptReply = (u8, String, u64, u64, i64, String);

fn parse_rate(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|r| r.is_finite())
}

/// Converts a duration to whole milliseconds for a script argument.
fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
