//! The waiting room's settings: what every call of its scripts carries ([`RoomSettings`]),
//! and the slices only some functions use: who may create a queue, how many queues may be
//! live, and how long one promoter invocation keeps ticking.

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

    /// `QUEUE_CREATION`: `operator` (the default) or `open`. Read by queue-api, which takes
    /// arrivals, and queue-reaper, which makes an open queue's settings again on the striped
    /// line.
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        vars.one_of(
            "QUEUE_CREATION",
            &[
                ("operator", QueueCreation::Operator),
                ("open", QueueCreation::Open),
            ],
        )
    }
}

/// The default of `MAX_QUEUES`.
const MAX_QUEUES_DEFAULT: u32 = 1_000;

/// `MAX_QUEUES`: most queues live (in the registry) at once, 1 to 100 000. Read by
/// queue-api, whose arrivals and settings changes register a queue.
pub(super) fn max_queues(vars: &Vars) -> Result<u32, ConfigError> {
    vars.count("MAX_QUEUES", MAX_QUEUES_DEFAULT, Bounds::new(1, 100_000))
}

/// What every call of the waiting room's scripts carries: the defaults of every queue's own
/// settings, how long an idle queue stays registered, the promotion tick (the estimates
/// count it) and the line's stripes. Every function that holds a waiting room reads them.
#[derive(Debug, Clone)]
pub struct RoomSettings {
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
    /// An empty queue without arrivals this long leaves the registry.
    pub retire_after: Duration,
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

impl RoomSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let capacity = vars.count("QUEUE_CAPACITY", 100, bounds::CAPACITY)?;
        Ok(RoomSettings {
            capacity,
            session: vars.seconds("SESSION_SECONDS", 600, bounds::SESSION_SECONDS)?,
            admit_per_tick: vars.count("ADMIT_PER_TICK", capacity, bounds::ADMIT_PER_TICK)?,
            waiting_idle: vars.seconds(
                "WAITING_IDLE_SECONDS",
                120,
                bounds::WAITING_IDLE_SECONDS,
            )?,
            promote_tick: vars.seconds("PROMOTE_TICK_SECONDS", 10, Bounds::new(1, 3_600))?,
            retire_after: vars.seconds(
                "QUEUE_RETIRE_AFTER_SECONDS",
                86_400,
                Bounds::new(1, 31_536_000),
            )?,
            line_stripes: line_stripes(vars)?,
        })
    }
}

/// What a waiting room runs with: its [`RoomSettings`], and the slices only some functions
/// use. A function that does not read a slice holds its default, and never uses it.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    pub room: RoomSettings,
    /// Who may create a queue.
    pub creation: QueueCreation,
    /// Most queues live (in the registry) at once: the promoter and the reaper visit each
    /// of them every run.
    pub max_queues: u32,
    /// Most token requests per user and per source IP per queue per minute.
    pub rate_limits: RateLimits,
}

impl QueueConfig {
    /// `room`, with every other slice at its default.
    pub fn new(room: RoomSettings) -> Self {
        QueueConfig {
            room,
            creation: QueueCreation::Operator,
            max_queues: MAX_QUEUES_DEFAULT,
            rate_limits: RateLimits::DEFAULT,
        }
    }
}

/// The promoter's own setting.
#[derive(Debug, Clone)]
pub struct PromoterSettings {
    /// `PROMOTE_BUDGET_SECONDS`: how long one promoter invocation keeps ticking.
    pub budget: Duration,
}

impl PromoterSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(PromoterSettings {
            budget: vars.seconds("PROMOTE_BUDGET_SECONDS", 50, Bounds::new(0, 890))?,
        })
    }
}
