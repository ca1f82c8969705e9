//! The waiting room's settings: the defaults of every queue's own settings, the timing of the
//! scheduled work, the rate limits and who may create a queue.

use std::time::Duration;

use super::error::ConfigError;
use super::rate_limits::RateLimits;
use super::vars::Vars;
use crate::bounds::{self, Bounds};

/// Who may create a queue (`QUEUE_CREATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueCreation {
    /// Only an operator, with `PUT /queues/{queueId}/settings`; a token request for any
    /// other queue is 404 and writes nothing. The default.
    Operator,
    /// Any buyer's first token request creates the queue (the local stack, tests).
    Open,
}

impl QueueCreation {
    /// The issue script's argument.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueCreation::Operator => "operator",
            QueueCreation::Open => "open",
        }
    }
}

/// How the waiting room behaves: the defaults of every queue's own settings, and the
/// timing of the scheduled work.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Most buyers active at once per queue.
    pub capacity: u32,
    /// How long an admitted buyer stays active.
    pub session: Duration,
    /// Most buyers one promotion tick admits per queue.
    pub admit_per_tick: u32,
    /// A waiter unseen this long is abandoned.
    pub waiting_idle: Duration,
    /// Pause between promotion ticks.
    pub promote_tick: Duration,
    /// How long one promoter invocation keeps ticking.
    pub promote_budget: Duration,
    /// An empty queue without arrivals this long leaves the registry.
    pub retire_after: Duration,
    /// Most token requests per user and per source IP per queue per minute.
    pub rate_limits: RateLimits,
    /// Who may create a queue.
    pub creation: QueueCreation,
    /// Most queues live (in the registry) at once: the promoter and the reaper visit each
    /// of them every run.
    pub max_queues: u32,
    /// `LINE_STRIPES`: every queue's line is spread over this many stripes (`crate::line`);
    /// unset, each queue lives under one hash tag.
    pub line_stripes: Option<u16>,
}

/// `LINE_STRIPES`, where set: 1 to 4,096.
fn line_stripes(vars: &Vars) -> Result<Option<u16>, ConfigError> {
    if vars.string("LINE_STRIPES").is_none() {
        return Ok(None);
    }
    let stripes = vars.number("LINE_STRIPES", 1, Bounds::new(1, 4_096))?;
    Ok(u16::try_from(stripes).ok())
}

impl QueueConfig {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let capacity = vars.count("QUEUE_CAPACITY", 100, bounds::CAPACITY)?;
        Ok(QueueConfig {
            capacity,
            session: vars.seconds("SESSION_SECONDS", 600, bounds::SESSION_SECONDS)?,
            admit_per_tick: vars.count("ADMIT_PER_TICK", capacity, bounds::ADMIT_PER_TICK)?,
            waiting_idle: vars.seconds(
                "WAITING_IDLE_SECONDS",
                120,
                bounds::WAITING_IDLE_SECONDS,
            )?,
            promote_tick: vars.seconds("PROMOTE_TICK_SECONDS", 10, Bounds::new(1, 3_600))?,
            promote_budget: vars.seconds("PROMOTE_BUDGET_SECONDS", 50, Bounds::new(0, 890))?,
            retire_after: vars.seconds(
                "QUEUE_RETIRE_AFTER_SECONDS",
                86_400,
                Bounds::new(1, 31_536_000),
            )?,
            rate_limits: RateLimits::read(vars)?,
            creation: vars.one_of(
                "QUEUE_CREATION",
                &[
                    ("operator", QueueCreation::Operator),
                    ("open", QueueCreation::Open),
                ],
            )?,
            max_queues: vars.count("MAX_QUEUES", 1_000, Bounds::new(1, 100_000))?,
            line_stripes: line_stripes(vars)?,
        })
    }
}
