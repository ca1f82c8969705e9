//! The waiting room. Buyers take a ticket, wait in strict ticket order, and are admitted
//! for a session while fewer than the queue's capacity are active.
//!
//! Each operation is one Lua script over one queue's keys (see [`crate::store::QueueKeys`]),
//! sent with EVALSHA: one round trip, atomic, and safe on Redis Cluster. The scripts share
//! the prelude in `common.lua`, which holds the rules: the settings in force, who is
//! present, who is active, and how promotion picks the next buyers.
//!
//! Presence: a waiter's status polls are its heartbeat, recorded as one bit per ticket in
//! rotating time-window bitmaps. A waiter unseen for the idle period is never promoted;
//! the promoter or reaper removes it and reports it as abandoned.

mod buyer;
mod events;
mod housekeeping;
pub mod settings;

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::Script;

use crate::config::QueueConfig;
use crate::ids::QueueId;
use crate::store::{primary_read_script, Conn, QueueKeys, ScriptCall};

pub use buyer::{Gate, Issued, Left, QueueSummary};
pub use events::{QueueEvent, QueueEventKind};
pub use housekeeping::{PromotionReport, QueuePromotion, QueueReap, ReapReport, REAP_CHUNK};
pub use settings::{QueueSettings, SettingsChange};

/// Heartbeat windows per idle period: a waiter is dropped between the idle period and that
/// plus a tenth of it after its last poll.
pub const IDLE_WINDOWS: u32 = 10;

macro_rules! queue_script {
    ($file:literal) => {
        LazyLock::new(|| Script::new(concat!(include_str!("common.lua"), include_str!($file))))
    };
    (primary_read $file:literal) => {
        LazyLock::new(|| {
            primary_read_script(concat!(include_str!("common.lua"), include_str!($file)))
        })
    };
}

static ISSUE: LazyLock<Script> = queue_script!("issue.lua");
static STATUS: LazyLock<Script> = queue_script!("status.lua");
static LEAVE: LazyLock<Script> = queue_script!("leave.lua");
static CHECK: LazyLock<Script> = queue_script!(primary_read "check.lua");
static RELEASE: LazyLock<Script> = queue_script!("release.lua");
static SUMMARY: LazyLock<Script> = queue_script!(primary_read "summary.lua");
static CONFIGURE: LazyLock<Script> = queue_script!("configure.lua");
static CLOSE: LazyLock<Script> = queue_script!("close.lua");
static PROMOTE: LazyLock<Script> = queue_script!("promote.lua");
static REAP: LazyLock<Script> = queue_script!("reap.lua");
static RETIRE: LazyLock<Script> = queue_script!("retire.lua");
/// Adds a queue to the registry within `MAX_QUEUES`; runs on the registry key alone.
static REGISTER: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("register.lua")));

/// The issue script, for benchmarks that run it raw (`redis-benchmark`) beside the handler.
pub fn issue_script() -> &'static Script {
    &ISSUE
}

/// The status script, for the same benchmarks.
pub fn status_script() -> &'static Script {
    &STATUS
}

/// The waiting room over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct WaitingRoom {
    conn: Conn,
    prefix: String,
    config: QueueConfig,
}

impl WaitingRoom {
    pub fn new(conn: Conn, prefix: impl Into<String>, config: QueueConfig) -> Self {
        WaitingRoom {
            conn,
            prefix: prefix.into(),
            config,
        }
    }

    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// A script call with the keys and leading arguments every queue script expects: the
    /// environment's defaults, which the queue's own settings override inside Redis. Public
    /// for the benchmark, which runs the same calls raw.
    pub fn invocation(&self, script: &'static Script, queue: &QueueId) -> ScriptCall {
        let keys = QueueKeys::new(&self.prefix, queue);
        let mut invocation = ScriptCall::new(script);
        for key in keys.all() {
            invocation.key(key);
        }
        invocation
            .arg(self.config.capacity)
            .arg(millis(self.config.session))
            .arg(millis(self.config.waiting_idle))
            .arg(self.config.admit_per_tick)
            .arg(millis(self.config.retire_after));
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
    /// The queue's idle period in force.
    pub waiting_idle: Duration,
    /// Whether admissions are paused in this queue.
    pub paused: bool,
}

impl TokenState {
    /// `ceil(position × 60 / rate)`: the time the line ahead takes to clear at the measured
    /// admission rate. `None` while no rate has been measured or the queue is paused (no
    /// honest estimate exists then), 0 once active.
    pub fn estimated_wait_seconds(&self) -> Option<u64> {
        match self.standing {
            Standing::Active { .. } => Some(0),
            Standing::Waiting { .. } if self.paused => None,
            Standing::Waiting { position } => {
                let rate = self.admission_rate_per_minute.filter(|r| *r > 0.0)?;
                Some((position as f64 * 60.0 / rate).ceil() as u64)
            }
        }
    }

    /// When to poll again: about a tenth of the expected wait, at least 1 s, and never more
    /// than a third of the idle period, so a buyer who follows it is never dropped as absent.
    pub fn poll_after_seconds(&self, now: DateTime<Utc>) -> u64 {
        let ceiling = (self.waiting_idle.as_secs() / 3).max(1);
        let wanted = match self.standing {
            Standing::Waiting { position } => {
                self.estimated_wait_seconds().unwrap_or(position) / 10
            }
            Standing::Active { until } => (until - now).num_seconds().max(0) as u64 / 4,
        };
        wanted.clamp(1, ceiling)
    }
}

/// The reply of the buyer-facing scripts:
/// `{created, status, ticket, position, active_until_ms, rate, idle_ms, paused, register}`.
type ScriptReply = (u8, String, u64, u64, i64, String, u64, u8, u8);

/// Decodes a [`ScriptReply`]: whether the entry is new and its state, or `None` if gone.
fn decode_reply(reply: ScriptReply) -> Result<Option<(bool, TokenState)>, crate::Error> {
    let (created, status, ticket, position, until_ms, rate, idle_ms, paused, _) = reply;
    let standing = match status.as_str() {
        "gone" => return Ok(None),
        "limited" => {
            return Err(crate::Error::RateLimited {
                retry_after: Duration::from_millis(until_ms.max(0) as u64)
                    .max(Duration::from_secs(1)),
            })
        }
        "no-queue" => {
            return Err(crate::Error::NotFound(
                "no such queue: an operator creates it with PUT /queues/{queueId}/settings".into(),
            ))
        }
        "waiting" => Standing::Waiting { position },
        "active" => Standing::Active {
            until: instant(until_ms)?,
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
            waiting_idle: Duration::from_millis(idle_ms),
            paused: paused == 1,
        },
    )))
}

/// The instant `ms` milliseconds after the epoch, as the scripts report times.
fn instant(ms: i64) -> Result<DateTime<Utc>, crate::Error> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| crate::Error::Internal(format!("instant {ms} out of range")))
}

fn parse_rate(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|r| r.is_finite())
}

/// Converts a duration to whole milliseconds for a script argument.
fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}
