//! The waiting room. Buyers take a ticket, wait in strict ticket order, and are admitted
//! for a session while fewer than the queue's capacity are active.
//!
//! Each operation is one Lua script over one queue's keys (see [`keys::QueueKeys`]),
//! sent with EVALSHA: one round trip, atomic, and safe on Redis Cluster. The scripts share
//! one prelude (`PRELUDE`): `common.lua` holds the settings in force and the queue's meta,
//! and the files after it the rules: who is present, how long sessions last, who left and
//! why, how promotion picks the next buyers, and what each call answers. The gatekeeper's
//! check is plain commands instead (`check.rs`).
//!
//! Presence: a waiter's status poll is its heartbeat. It writes one deadline in one string
//! (`presence.lua`): the idle period after the poll, or three of its poll intervals for a
//! waiter far from its turn, which is told to poll less often (`presence_for` and
//! `waiting_reply` in `replies.lua`). A waiter past its deadline is never promoted; the
//! promoter or the reaper removes it and reports it as abandoned.
//!
//! Wait estimates come from the live sessions' ends and the measured mean session length
//! (`wait_estimate` in `replies.lua`). A token that lost its place is answered with its
//! [`Departure`], recorded for a while by whatever removed it.
//!
//! Who may join and be admitted (mode, sold out, `maxWaiting`, the operator's message) is
//! part of the settings, read in the prelude's one settings read (`availability`). Those on
//! the operator's priority list wait in a lane of their own, admitted first (`priority`).
//! In a presale, only those on the access list or with an access code take a place
//! (`access`).

pub mod access;
mod alarm_watch;
mod availability;
mod buyer;
mod check;
pub mod door;
mod events;
pub mod health;
pub mod keys;
pub mod pace;
pub mod pool;
mod priority;
mod promotion;
mod reaping;
mod refusals;
mod registry;
pub mod schedule;
pub mod settings;
mod striped;
mod striped_door;
mod striped_open;
mod striped_pace;
mod striped_settings;
mod striped_tick;
mod terms;

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::Script;

use crate::config::QueueConfig;
use crate::ids::QueueId;
use crate::store::{
    assemble, lua_script, primary_read_script, Conn, NamedScript, ScriptCall, FIELDS_LUA,
    RATE_LIMIT_LUA,
};
use keys::QueueKeys;
use schedule::SeedCache;

pub use availability::{
    Availability, Mode, SellOut, SoldOutNotice, StagedSellOut, INVENTORY_SOLD_OUT,
    MESSAGE_MAX_CHARS,
};
pub use buyer::{Issued, Left, Paid, QueueSummary, StagedRelease};
pub use check::{Gate, Refusal, PRIMARY_GUARD_EVERY};
pub use events::{QueueEvent, QueueEventKind};
pub use health::{
    AlarmNotice, HealthApplied, HealthNotice, HealthTarget, StagedAlarm, StagedHealth,
};
pub use priority::PRIORITY_MAX;
pub use promotion::{PromotionReport, QueuePromotion};
#[cfg(feature = "bench")]
pub(crate) use reaping::REAP_CHUNK;
pub use reaping::{QueueReap, ReapReport};
use refusals::Absence;
pub use refusals::{Arrival, Departure};
pub use settings::{Configured, QueueSettings, SettingsChange};
pub use striped_tick::LEASE_FOR;

/// Windows per idle period: the bookkeeping of presence (when it was last seen, meta's TTL)
/// is written at most once per half window. A waiter is dropped the idle period after its
/// last poll, rounded up to a quarter second.
pub const IDLE_WINDOWS: u32 = 10;

/// The prelude every queue script begins with, in this order: `common.lua` (its keys, the
/// environment's defaults, the queue's settings and meta, the outage clock), then the helpers
/// by concern: the rate limit and the field writer (the store's), presence, sessions (their lengths), departures, promotion and replies (the
/// answers, the wait estimate and the poll interval). Each file uses only those before it.
const PRELUDE: [&str; 8] = [
    include_str!("common.lua"),
    RATE_LIMIT_LUA,
    FIELDS_LUA,
    include_str!("presence.lua"),
    include_str!("sessions.lua"),
    include_str!("departures.lua"),
    include_str!("promotion.lua"),
    include_str!("replies.lua"),
];

/// A queue script's text: the prelude, without the helpers `body` never calls, then `body`.
fn queue_lua(body: &str) -> String {
    assemble(&PRELUDE, body)
}

/// A queue script and the names its file binds its own arguments to, in order (the `local`
/// statements at its top, from `ARGV[ARG]`): one list on each side, held equal by a unit
/// test, and followed by every call ([`ScriptCall::declare`]). A last name ending in `…`
/// is a tail of any length, bound in the file as `local NAME_from = ARG + k`.
pub(crate) struct QueueScript {
    script: LazyLock<Script>,
    args: &'static [&'static str],
}

impl QueueScript {
    #[cfg(feature = "bench")]
    /// The names the script binds its own arguments to, in order.
    pub(crate) fn arg_names(&self) -> &'static [&'static str] {
        self.args
    }
}

/// The arguments the prelude binds (`common.lua`): the environment's defaults, which a
/// queue's own settings override, before each script's own.
const PRELUDE_ARGS: &[&str] = &[
    "DEFAULT_CAPACITY",
    "DEFAULT_SESSION_MS",
    "DEFAULT_IDLE_MS",
    "DEFAULT_ADMIT_PER_TICK",
    "RETIRE_AFTER_MS",
    "TICK_MS_ARG",
];

static ISSUE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("issue.lua")))),
    args: &[
        "user",
        "ip",
        "user_limit",
        "ip_limit",
        "creation",
        "registered_now",
        "commitment",
        "draw_value",
        "again",
        "code_hash",
        "door",
        "redeemed_until",
    ],
};
static CHALLENGE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("challenge.lua")))),
    args: &["creation", "keep_ms"],
};
static STATUS: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("status.lua")))),
    args: &["user", "ticket"],
};
static LEAVE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("leave.lua")))),
    args: &["user", "ticket"],
};
static RELEASE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("release.lua")))),
    args: &["user", "paid_at", "paid_ticket", "remember", "skew"],
};
static SUMMARY: QueueScript = QueueScript {
    script: LazyLock::new(|| primary_read_script(&queue_lua(include_str!("summary.lua")))),
    args: &[],
};
static CONFIGURE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("configure.lua")))),
    args: &["seed", "commitment", "pairs…"],
};
static CLOSE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("close.lua")))),
    args: &[],
};
static PROMOTE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("promote.lua")))),
    args: &[
        "remaining",
        "alarm",
        "alarm_names",
        "grant",
        "shrink",
        "pool_signal",
        "word_pool",
    ],
};
static HEALTH: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("health.lua")))),
    args: &["level", "sent", "default_ttl"],
};
/// An alarm's state for a queue on the striped line (`line_alarm.lua`).
static LINE_ALARM: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("line_alarm.lua")))),
    args: &["alarm", "alarm_names"],
};
/// The pool ledger's word for a queue on the striped line (`line_pool.lua`).
static LINE_POOL: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("line_pool.lua")))),
    args: &["grant", "shrink", "pool_signal", "word_pool"],
};
static REAP: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("reap.lua")))),
    args: &["cursor", "chunk", "idle_after"],
};
static RETIRE: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("retire.lua")))),
    args: &["idle_after"],
};
static SELL_OUT: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("sell_out.lua")))),
    args: &["message", "has_message"],
};
static ACCESS: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("access.lua")))),
    args: &["op", "most", "values…"],
};
static PRIORITY: QueueScript = QueueScript {
    script: LazyLock::new(|| lua_script(&queue_lua(include_str!("priority.lua")))),
    args: &["op", "user", "most"],
};
/// Adds a queue to the registry within `MAX_QUEUES`; runs on the registry key alone.
static REGISTER: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("register.lua"))),
    &["REGISTRY"],
    &["queue", "most"],
);

#[cfg(feature = "bench")]
/// The issue script, for [`crate::bench_support`].
pub(crate) fn issue_script() -> &'static QueueScript {
    &ISSUE
}

#[cfg(feature = "bench")]
/// The status script, for [`crate::bench_support`].
pub(crate) fn status_script() -> &'static QueueScript {
    &STATUS
}

#[cfg(feature = "bench")]
/// The leave script, for [`crate::bench_support`].
pub(crate) fn leave_script() -> &'static QueueScript {
    &LEAVE
}

#[cfg(feature = "bench")]
/// The summary script, for [`crate::bench_support`].
pub(crate) fn summary_script() -> &'static QueueScript {
    &SUMMARY
}

/// The waiting room over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct WaitingRoom {
    conn: Conn,
    prefix: String,
    config: QueueConfig,
    /// The draw seeds this container has learnt.
    seeds: SeedCache,
    /// The alarms the queues name, and their states, as the last promotion tick read them.
    alarms: alarm_watch::AlarmWatch,
    /// The pools' reports and words, as the last promotion tick exchanged them.
    pools: pool::PoolWatch,
    /// Each queue's line, in a deployment with `LINE_STRIPES` (`striped`).
    lines: Option<std::sync::Arc<crate::line::Lines>>,
    /// What the line read of each queue's settings (`terms`).
    held_terms: std::sync::Arc<terms::HeldTerms>,
    /// Where the striped line's calls take the time from: the system's, or a test's.
    clock: std::sync::Arc<dyn crate::clock::Clock>,
}

impl WaitingRoom {
    pub fn new(conn: Conn, prefix: impl Into<String>, config: QueueConfig) -> Self {
        let prefix = prefix.into();
        let lines = config.room.line_stripes.map(|stripes| {
            std::sync::Arc::new(crate::line::Lines::new(
                conn.clone(),
                &prefix,
                crate::line::LineShape {
                    stripes,
                    presence: config.room.waiting_idle,
                    session: config.room.session,
                    ..crate::line::LineShape::default()
                },
            ))
        });
        WaitingRoom {
            conn,
            prefix,
            config,
            lines,
            held_terms: Default::default(),
            clock: std::sync::Arc::new(crate::clock::SystemClock),
            seeds: SeedCache::default(),
            alarms: alarm_watch::AlarmWatch::default(),
            pools: pool::PoolWatch::default(),
        }
    }

    /// The same room, its striped line's calls timed by `clock`: a test moves time.
    pub fn with_clock(mut self, clock: std::sync::Arc<dyn crate::clock::Clock>) -> Self {
        self.clock = clock;
        self
    }

    pub fn config(&self) -> &QueueConfig {
        &self.config
    }

    /// `KEY_PREFIX`, which every key of the waiting room begins with.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// A script call with the keys and leading arguments every queue script expects: the
    /// environment's defaults, which the queue's own settings override inside Redis. The
    /// caller adds the script's own arguments by name ([`ScriptCall::named`]).
    pub(crate) fn invocation(&self, script: &'static QueueScript, queue: &QueueId) -> ScriptCall {
        let keys = QueueKeys::new(&self.prefix, queue);
        let mut invocation = ScriptCall::new(&script.script);
        for key in keys.all() {
            invocation.key(key);
        }
        invocation
            .declare(PRELUDE_ARGS)
            .named("DEFAULT_CAPACITY", self.config.room.capacity)
            .named("DEFAULT_SESSION_MS", millis(self.config.room.session))
            .named("DEFAULT_IDLE_MS", millis(self.config.room.waiting_idle))
            .named("DEFAULT_ADMIT_PER_TICK", self.config.room.admit_per_tick)
            .named("RETIRE_AFTER_MS", millis(self.config.room.retire_after))
            .named("TICK_MS_ARG", millis(self.config.room.promote_tick))
            .declare(script.args);
        invocation
    }
}

/// Where a token stands right now.
#[derive(Debug, Clone, PartialEq)]
pub enum Standing {
    /// In line, `position` (1-based) among the waiting.
    Waiting { position: u64 },
    /// Admitted: the session that began at `since` and ends at `until`.
    Active {
        since: DateTime<Utc>,
        until: DateTime<Utc>,
    },
    /// In a queue that sold out: nobody more is admitted.
    SoldOut,
    /// In the pre-queue: placed by the draw at the opening.
    Prequeue { opens_at: DateTime<Utc> },
    /// In line on the striped line, in a segment no tick has counted yet: its position is
    /// known for certain by `placed_by`.
    Placing { placed_by: DateTime<Utc> },
}

/// A live token's state, as the scripts report it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenState {
    pub ticket: u64,
    pub standing: Standing,
    /// A waiter's expected wait (see `replies.lua`, `wait_estimate`); `None` while paused or
    /// sold out, and once active.
    pub expected_wait: Option<Duration>,
    /// The range around `expected_wait`: the low end takes sessions to last the mean of those
    /// that ended (before any has, the live ones' ages), the high end takes them to run out.
    /// Present exactly when `expected_wait` is.
    pub wait_range: Option<WaitRange>,
    /// How long this reply keeps the token present without another poll: the queue's idle
    /// period in force, or, for a waiter far from the front, three times a quarter of the low
    /// end of its wait ([`POLL_AFTER_WAIT_PART`]), up to the long presence period of eight idle
    /// periods (`presence_for` in `replies.lua`).
    pub present_for: Duration,
    /// Whether admissions are paused in this queue.
    pub paused: bool,
    /// The operator's message, if any.
    pub message: Option<String>,
    /// Placed by the draw, which has happened: the ticket begins with the draw value
    /// ([`schedule::value_hex`]).
    pub drawn: bool,
}

impl TokenState {
    /// The draw value that placed this token (7 hex digits), once the draw happened.
    pub fn draw_value(&self) -> Option<String> {
        self.drawn.then(|| schedule::value_hex(self.ticket))
    }

    /// The expected wait in whole seconds, rounded up: from when the active sessions are
    /// expected to end, given how long sessions last. `None` while the queue is paused or
    /// sold out and before the opening (no honest estimate exists then), 0 once active.
    pub fn estimated_wait_seconds(&self) -> Option<u64> {
        match self.standing {
            Standing::Active { .. } => Some(0),
            Standing::SoldOut | Standing::Prequeue { .. } | Standing::Placing { .. } => None,
            Standing::Waiting { .. } if self.paused => None,
            Standing::Waiting { .. } => self
                .expected_wait
                .map(|wait| wait.as_millis().div_ceil(1000) as u64),
        }
    }

    /// The range of the wait in whole seconds: the low end rounded down, the high end up.
    /// Present exactly when [`TokenState::estimated_wait_seconds`] is.
    pub fn estimated_wait_range(&self) -> Option<(u64, u64)> {
        match self.standing {
            Standing::Active { .. } => Some((0, 0)),
            Standing::Waiting { .. } if !self.paused => self.wait_range.map(|range| {
                (
                    range.low.as_secs(),
                    range.high.as_millis().div_ceil(1000) as u64,
                )
            }),
            _ => None,
        }
    }

    /// When to poll again: a quarter of the low end of the wait ([`POLL_AFTER_WAIT_PART`]),
    /// at least 1 s, and never more than a third of how long this reply keeps the token
    /// present (rounded down), so a buyer who follows it is never dropped as absent: it counts
    /// as present for that whole time after its poll, which leaves two thirds of it (4 s or
    /// more, as the idle period is at least 5 s) for the round trip. A waiter far from its turn is kept present for three
    /// times a quarter of the low end of its wait (up to eight idle periods), so it is told that
    /// quarter, up to a third of eight idle periods: it polls in proportion to its distance,
    /// each look a quarter nearer its turn than the last.
    ///
    /// In the pre-queue presence does not count yet: poll again after the opening, spread by
    /// expected place over a third of the idle period. A member whose draw value is the
    /// fraction f of the draw's range (its ticket − 1 over 2^52) comes back f of that third
    /// after the opening, so the front of the line, admitted first, comes back first and the
    /// pre-queue does not come back in the same second. At most
    /// [`PREQUEUE_POLL_MAX_SECONDS`] ahead, so a change of schedule is seen.
    pub fn poll_after_seconds(&self, now: DateTime<Utc>) -> u64 {
        let ceiling = (self.present_for.as_secs() / 3).max(1);
        if let Standing::Prequeue { opens_at } = self.standing {
            let until = ((opens_at - now).num_milliseconds().max(0) as u64).div_ceil(1000);
            if until >= PREQUEUE_POLL_MAX_SECONDS {
                return PREQUEUE_POLL_MAX_SECONDS;
            }
            return (until + prequeue_spread(self.ticket, ceiling)).max(1);
        }
        let wanted = match self.standing {
            // From the low end of the range, so that a wide range never brings a buyer back
            // after its turn.
            Standing::Waiting { position } => {
                self.estimated_wait_range().map_or(position, |(low, _)| low) / POLL_AFTER_WAIT_PART
            }
            Standing::Active { until, .. } => (until - now).num_seconds().max(0) as u64 / 4,
            // Back when the position is certain to be known.
            Standing::Placing { placed_by } => {
                ((placed_by - now).num_milliseconds().max(0) as u64).div_ceil(1000)
            }
            // Only an operator reverses a sell-out: poll as seldom as presence allows.
            Standing::SoldOut | Standing::Prequeue { .. } => ceiling,
        };
        wanted.clamp(1, ceiling)
    }
}

/// The range of a waiter's wait, as the scripts compute it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitRange {
    pub low: Duration,
    pub high: Duration,
}

/// The longest a pre-queue member is told to wait before polling again.
pub const PREQUEUE_POLL_MAX_SECONDS: u64 = 300;

/// A waiter is told to poll again after this part of the low end of its wait (a quarter):
/// often enough that it hears of its turn soon after it comes, seldom enough that a line of
/// millions far from its turn polls about 2.5 times less than at a tenth
/// (`lineup-bench line-opening`).
pub const POLL_AFTER_WAIT_PART: u64 = 4;

/// How many seconds after the opening the holder of `ticket` comes back, of `over`: its
/// draw value's fraction of the draw's range, rounded down (0 to `over` − 1).
fn prequeue_spread(ticket: u64, over: u64) -> u64 {
    let value = ticket.saturating_sub(1).min(schedule::DRAW_BASE - 1);
    ((u128::from(value) * u128::from(over)) >> 52) as u64
}

/// The instant `ms` milliseconds after the epoch, as the scripts report times.
fn instant(ms: i64) -> Result<DateTime<Utc>, redis::ParsingError> {
    DateTime::from_timestamp_millis(ms).ok_or_else(|| format!("instant {ms} out of range").into())
}

fn parse_rate(raw: &str) -> Option<f64> {
    raw.parse::<f64>().ok().filter(|r| r.is_finite())
}

/// Converts a duration to whole milliseconds for a script argument.
fn millis(d: Duration) -> u64 {
    d.as_millis() as u64
}

#[cfg(test)]
mod tests {
    use super::{queue_lua, POLL_AFTER_WAIT_PART, PREQUEUE_POLL_MAX_SECONDS};

    /// The pre-queue comes back by its place in the draw: the front at the opening, the back
    /// a third of the idle period after it, never later.
    #[test]
    fn the_prequeue_comes_back_in_draw_order_within_a_third_of_the_idle_period() {
        use super::{prequeue_spread, schedule::DRAW_BASE};
        assert_eq!(prequeue_spread(1, 40), 0);
        assert_eq!(prequeue_spread(DRAW_BASE, 40), 39);
        assert_eq!(prequeue_spread(DRAW_BASE / 2 + 1, 40), 20);
        let spreads: Vec<u64> = (1..=1000u64)
            .map(|i| prequeue_spread(i * (DRAW_BASE / 1000), 40))
            .collect();
        assert!(spreads.windows(2).all(|w| w[0] <= w[1]), "{spreads:?}");
        assert_eq!(spreads.iter().filter(|&&s| s == 0).count(), 25);
        assert_eq!(prequeue_spread(DRAW_BASE, 1), 0);
    }

    /// Configure's presence grace covers the longest poll a pre-queue member was told.
    #[test]
    fn configure_knows_the_longest_prequeue_poll() {
        let line = format!(
            "local PREQUEUE_POLL_MAX_MS = {}\n",
            PREQUEUE_POLL_MAX_SECONDS * 1000
        );
        assert!(include_str!("configure.lua").contains(&line), "{line}");
    }

    /// The waiting reply keeps a waiter present for three times the part of its wait it is
    /// told to wait.
    #[test]
    fn replies_know_the_part_of_the_wait_a_waiter_is_told() {
        let line = format!("local POLL_AFTER_WAIT_PART = {POLL_AFTER_WAIT_PART}\n");
        assert!(include_str!("replies.lua").contains(&line), "{line}");
    }

    /// The issue script keeps as many serials in a redemption bitmap as the key names say.
    #[test]
    fn issue_knows_the_serials_per_redemption_bitmap() {
        let line = format!(
            "local SERIALS_PER_BITMAP = {}\n",
            crate::door::SERIALS_PER_BITMAP
        );
        assert!(include_str!("issue.lua").contains(&line), "{line}");
    }

    /// Status carries the helpers it calls, and not the promotion's.
    #[test]
    fn status_carries_its_helpers_and_not_the_promotions() {
        let status = queue_lua(include_str!("status.lua"));
        // Status calls waiting_reply, which calls heartbeat.
        assert!(status.contains("local function heartbeat("));
        assert!(status.contains("local function waiting_reply("));
        assert!(!status.contains("local function promote("));
        let summary = queue_lua(include_str!("summary.lua"));
        assert!(!summary.contains("local function heartbeat("));
    }

    /// Each queue script's arguments are named once in its Lua source and once in Rust
    /// (`QueueScript::args`, which every call follows), and the two lists are equal; so are
    /// the prelude's.
    #[test]
    fn each_script_binds_its_arguments_by_the_names_rust_sends_them_under() {
        use super::*;
        use crate::store::bindings::{bound, Base};
        assert_eq!(
            bound(include_str!("common.lua"), "ARGV", Base::One),
            PRELUDE_ARGS.to_vec()
        );
        let scripts: [(&str, &QueueScript); 17] = [
            (include_str!("issue.lua"), &ISSUE),
            (include_str!("challenge.lua"), &CHALLENGE),
            (include_str!("status.lua"), &STATUS),
            (include_str!("leave.lua"), &LEAVE),
            (include_str!("release.lua"), &RELEASE),
            (include_str!("summary.lua"), &SUMMARY),
            (include_str!("configure.lua"), &CONFIGURE),
            (include_str!("close.lua"), &CLOSE),
            (include_str!("promote.lua"), &PROMOTE),
            (include_str!("reap.lua"), &REAP),
            (include_str!("retire.lua"), &RETIRE),
            (include_str!("sell_out.lua"), &SELL_OUT),
            (include_str!("health.lua"), &HEALTH),
            (include_str!("line_alarm.lua"), &LINE_ALARM),
            (include_str!("line_pool.lua"), &LINE_POOL),
            (include_str!("access.lua"), &ACCESS),
            (include_str!("priority.lua"), &PRIORITY),
        ];
        for (source, script) in scripts {
            assert_eq!(
                bound(source, "ARGV", Base::Arg),
                script.args.to_vec(),
                "{source}"
            );
        }
        crate::store::bindings::assert_binds(include_str!("register.lua"), &REGISTER);
    }
}
