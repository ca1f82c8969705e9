//! The striped line: one queue's waiters spread over many hash tags, so that a sale of any size
//! uses every shard of a cluster and no slot runs hot, and a poll costs a few plain commands.
//!
//! - [`keys`]: a stripe's tag and keys, and which stripe a buyer is on.
//! - `access`: the operator's lists (presale access, priority), each id on its own stripe.
//! - `codes`: the presale access codes, each on a stripe of its own, bound to a buyer once.
//! - `door`: a challenge's serial and the redemption of a solved one, on the buyer's stripe.
//! - `draw`: how a line with an opening lays its draw's values over the stripes.
//! - `allowance`: passthrough's admissions on arrival, how the tick shares them among the
//!   stripes.
//! - `buyer`: what a buyer's calls do, each on its own stripe in one round trip: [`Line::join`]
//!   (a small script: the place depends on what is there), [`Line::poll`] and
//!   [`Line::leave`] (plain commands, pipelined).
//! - `check`: [`Line::check`], the gatekeeper's: a live session, one `ZSCORE`.
//! - `counts`: [`Line::counts`], how many wait and hold a session as of the last tick.
//! - `halt`: [`Line::halt`] and [`Line::resume`]: sold out, paused or unhealthy, on every
//!   stripe before the call returns.
//! - `lease`: [`Line::lease`], one promoter at a time, and the fence its tick's writes carry.
//! - `lines`: [`Lines`], one container's line of each queue it serves.
//! - `release`: [`Line::stage_release`], a paid session's end, staged into the caller's
//!   round trip.
//! - `speed`: how fast the line moves, measured by the promoter's ticks, and a waiter's
//!   [`Estimate`] from it.
//! - `apply`: the tick's work on one stripe (`apply.lua`), in calls of a bounded size.
//! - `ticked`: what a tick is given ([`Room`]) and what it did ([`Ticked`]).
//! - `tick`: [`Line::tick`], the only writer of admissions from the line (and of each stripe's
//!   allowance of admissions on arrival, in passthrough): it reads every stripe's head and
//!   counts, admits in order up to the free capacity, passes over the absent, and publishes on
//!   each stripe what its polls need to know their exact place.
//!
//! The order. A place's score is its arrival instant, in ms, by the clock the caller passes
//! (one `now` per call: tests move it). Time is cut into segments of `segment` length. Places
//! order by segment, then by stripe, then by score, then by user id. So two buyers on different
//! stripes swap places only when they arrive in the same segment: by less than `segment`, and
//! the clocks' disagreement, which `seal` bounds.
//!
//! The seal. The tick admits only from segments that ended `seal` ago or more, and publishes
//! that instant; a join scores a place no earlier than it. So no late place lands ahead of one
//! already admitted.
//!
//! A position. The tick publishes on each stripe one small value ([`Published`]): per sealed
//! segment, how many waiters of the other stripes are ahead of that segment's places, and the
//! last place it has walked. A function keeps it for up to [`PUBLISHED_FOR`]. A poll is two
//! plain commands in one pipeline: the buyer's rank on its own stripe (`ZRANK`, live) and its
//! mark kept alive (`PEXPIRE … GT`, which never shortens it); a third, `GET` of the published
//! value, when the function holds none fresh. The position is the published figure plus the
//! rank plus one: exact as of the tick the function last read, for the other stripes, and live
//! for its own. A place in a segment not sealed at that tick has no position yet.
//!
//! The draw. A line with an [`Opening`] orders the places taken before it by each buyer's draw
//! value, exactly, whatever stripe the buyer is on (`draw`): the values are cut into ranges,
//! consecutive ranges on stripes far apart, each range a segment of its own ahead of every
//! arrival's, in value order. So the draw's front moves over every stripe and primary in turn.
//! A draw place's score is below zero: the value, then the order of arrival on the stripe, for
//! equal values. The draw is admitted from only once every stripe has been sealed past the
//! opening, so no place joins it after the tick has started on it.
//!
//! The mark. Each buyer has one key with a TTL: `w` while it waits, set by the join and kept
//! alive by each poll for as long as the poll keeps it present; `a:<until>` once the tick
//! admits it; `d` once the tick passes it over as absent. When the line reaches a buyer whose
//! mark has lapsed, the tick passes it over. A buyer whose place the last read tick had walked
//! is answered from its session and its mark.

pub mod keys;

mod access;
mod allowance;
mod apply;
mod buyer;
mod check;
mod codes;
mod counts;
mod door;
mod draw;
mod halt;
mod lease;
mod lines;
mod release;
mod speed;
mod tick;
mod ticked;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use access::{List, ACCESS_CHUNK};
pub use allowance::ALLOW_FOR;
pub use buyer::{
    in_draw, score_of, ticket_of, Entry, Joined, Left, Standing, Welcome, STALE_AFTER,
};
pub use check::Checked;
pub use codes::{Bound, Unbound};
pub use counts::{counts_key, Counts};
pub use door::{Pass, Serial, Turned, SERIALS_PER_BITMAP};
use draw::DrawLayout;
pub use draw::DRAW_VALUE_BITS;
pub use halt::Halt;
pub use keys::{Stripe, StripeKeys};
pub use lease::{Fence, Lease};
pub use lines::{Lines, NamedOpening};
pub use release::{Payment, Released};
pub use speed::{Estimate, Speed, BEST_WINDOW_MS, SPEED_WINDOW_MS};
pub use tick::{DECIDED_FOR, HEAD_WINDOW};
pub use ticked::{Room, TickRefused, Ticked};

use crate::ids::{QueueId, UserId};
use crate::store::Conn;

/// Where the priority lane's places are scored: −2^53 plus the place's instant (ms), below
/// every draw place (the draw's lowest score is above −2^52), and exact as a double.
pub(crate) const LANE_BASE: i64 = -(1 << 53);

/// Where the priority lane's segments are numbered: −2^50 plus the instant's segment, below
/// every draw segment (−ranges to −1), and exact as a double.
const LANE_SEGMENTS: i64 = -(1 << 50);

/// Whether a place scored `score` is in the priority lane.
pub(crate) fn is_lane(score: i64) -> bool {
    score < LANE_BASE / 2
}

/// Whether `segment` is one of the priority lane's.
pub(super) fn is_lane_segment(segment: i64) -> bool {
    segment < LANE_SEGMENTS / 2
}

/// How long a function keeps a stripe's published state before reading it again.
pub const PUBLISHED_FOR: Duration = Duration::from_secs(1);

/// How often a promoter ticks a line: back to back, about once a second.
pub const TICK_EVERY: Duration = Duration::from_secs(1);

/// A scheduled opening: before `at` (ms), a join takes a place in the draw, by `value`.
#[derive(Clone)]
pub struct Opening {
    /// The opening instant, ms.
    pub at: i64,
    /// A buyer's draw value, below 2^[`DRAW_VALUE_BITS`]: the same for the same buyer.
    pub value: Arc<dyn Fn(&UserId) -> u32 + Send + Sync>,
}

/// A place, ordered as the line orders places: by segment, stripe, score (ms), then user id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Place {
    pub segment: i64,
    pub stripe: Stripe,
    pub score: i64,
    pub user: String,
}

/// What the tick publishes on each stripe for its polls, as JSON: one small value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Published {
    /// When the tick that wrote it ran (ms).
    pub tick: i64,
    /// The last place the ticks have walked on this stripe: every place of the stripe up to
    /// it was admitted or passed over, so a buyer whose place is not after it waits no more.
    pub head: Option<Place>,
    /// The last lane place the ticks have walked on this stripe: the lane's own head, since
    /// a new lane place sorts before the main line's walked places.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lane_head: Option<Place>,
    /// For each sealed segment with places on this stripe: the waiters of the other stripes
    /// ahead of them.
    pub ahead: BTreeMap<i64, u64>,
    /// Why the line admits nobody, when the tick found it halted ([`Halt::as_str`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
    /// How fast the line has moved over the last minute, once the ticks have seen ten
    /// seconds of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<Speed>,
}

/// How one queue's line is laid out and paced.
#[derive(Debug, Clone, Copy)]
pub struct LineShape {
    /// How many stripes the line is spread over (1 on one server; on a cluster, enough that
    /// each primary holds several).
    pub stripes: u16,
    /// The segment length: arrivals closer than this on different stripes may swap places.
    pub segment: Duration,
    /// How long after a segment ends the tick may admit from it: more than the callers' clocks
    /// disagree by.
    pub seal: Duration,
    /// How long a poll keeps its buyer present.
    pub presence: Duration,
    /// How long a session lasts.
    pub session: Duration,
    /// How long the line's keys outlive the last call that touched them.
    pub keep: Duration,
    /// In a line with an opening, how many ranges of the draw's values each stripe holds
    /// (`draw`): more spread the draw's front over more stripes.
    pub draw_ranges: u16,
}

impl Default for LineShape {
    fn default() -> Self {
        LineShape {
            stripes: 1,
            segment: Duration::from_secs(1),
            seal: Duration::from_millis(500),
            presence: Duration::from_secs(30),
            session: Duration::from_secs(600),
            keep: Duration::from_secs(24 * 3600),
            draw_ranges: 1,
        }
    }
}

impl redis::FromRedisValue for Published {
    fn from_redis_value(v: redis::Value) -> Result<Self, redis::ParsingError> {
        let text: String = redis::FromRedisValue::from_redis_value(v)?;
        serde_json::from_str(&text)
            .map_err(|e| redis::ParsingError::from(format!("published state: {e}: {text}")))
    }
}

/// One queue's striped line, reached through `conn`.
pub struct Line {
    conn: Conn,
    prefix: String,
    queue: QueueId,
    shape: LineShape,
    /// Each stripe's keys, by stripe: their tags are found once.
    stripe_keys: Vec<StripeKeys>,
    /// The scheduled opening, if the line has a draw.
    opening: Option<Opening>,
    /// How the draw's values lie over the stripes.
    draw: DrawLayout,
    /// Whether a tick has found every stripe sealed past the opening (kept once found).
    draw_open: AtomicBool,
    /// Each stripe's published state, and when (ms, the callers' clock) it was read.
    published: Mutex<HashMap<Stripe, (i64, Arc<Published>)>>,
    /// The ticks this container ran, for the line's speed.
    pace: Mutex<speed::Pace>,
    /// What this container's last tick found on each stripe.
    seen: Mutex<ticked::Seen>,
    /// The session length in force (ms): the shape's, or the queue's own ([`Line::time`]).
    session_ms: AtomicU64,
    /// The presence period in force (ms): the shape's, or the queue's own.
    presence_ms: AtomicU64,
}

impl Line {
    pub fn new(conn: Conn, prefix: &str, queue: QueueId, shape: LineShape) -> Line {
        Line {
            conn,
            prefix: prefix.to_owned(),
            stripe_keys: (0..shape.stripes.max(1))
                .map(|k| StripeKeys::new(prefix, &queue, Stripe(k), shape.stripes))
                .collect(),
            queue,
            draw: DrawLayout::of(&shape),
            shape,
            opening: None,
            draw_open: AtomicBool::new(false),
            published: Mutex::new(HashMap::new()),
            pace: Mutex::new(speed::Pace::default()),
            seen: Mutex::new(ticked::Seen::default()),
            session_ms: AtomicU64::new(ms(shape.session)),
            presence_ms: AtomicU64::new(ms(shape.presence)),
        }
    }

    /// Times the line's next calls by the queue's settings, which may change mid-sale: a
    /// session of `session`, and a poll that keeps its buyer present for `presence`. Each
    /// call reads them once. A session already begun keeps its end.
    pub fn time(&self, session: Duration, presence: Duration) {
        self.session_ms.store(ms(session), Ordering::Relaxed);
        self.presence_ms.store(ms(presence), Ordering::Relaxed);
    }

    /// How long a session lasts (ms).
    fn session_ms(&self) -> u64 {
        self.session_ms.load(Ordering::Relaxed)
    }

    /// How long a poll keeps its buyer present (ms).
    fn presence_ms(&self) -> u64 {
        self.presence_ms.load(Ordering::Relaxed)
    }

    /// How long a session lasts, as the line is timed now.
    pub fn session(&self) -> Duration {
        Duration::from_millis(self.session_ms())
    }

    /// How long a poll keeps its buyer present, as the line is timed now.
    pub fn presence(&self) -> Duration {
        Duration::from_millis(self.presence_ms())
    }

    /// The line with a scheduled opening: joins before it take places in the draw.
    pub fn with_opening(mut self, opening: Opening) -> Line {
        self.opening = Some(opening);
        self
    }

    /// `stripe`'s published state as this function holds it, unless older than
    /// [`PUBLISHED_FOR`] at `now`.
    fn held(&self, stripe: Stripe, now: i64) -> Option<Arc<Published>> {
        let held = self.published.lock().ok()?;
        let (at, published) = held.get(&stripe)?;
        (now - at < PUBLISHED_FOR.as_millis() as i64 && now >= *at).then(|| published.clone())
    }

    /// `user`'s stripe's published state, as this function holds it fresh at `now` (a poll
    /// reads it when it holds none): as of the last tick.
    pub fn published_for(&self, user: &UserId, now: i64) -> Option<Arc<Published>> {
        self.held(self.stripe_of(user), now)
    }

    /// Keeps `published`, read at `now`, for `stripe`.
    fn hold(&self, stripe: Stripe, now: i64, published: Published) {
        if let Ok(mut held) = self.published.lock() {
            held.insert(stripe, (now, Arc::new(published)));
        }
    }

    pub fn shape(&self) -> &LineShape {
        &self.shape
    }

    /// The stripe `user` is on: by its draw value in a line with an opening, else by
    /// [`Stripe::of`].
    pub fn stripe_of(&self, user: &UserId) -> Stripe {
        match &self.opening {
            Some(opening) => self.draw.stripe((opening.value)(user)),
            None => Stripe::of(&self.queue, user, self.shape.stripes),
        }
    }

    /// When a draw member should come back for its first poll after the opening, as a share
    /// (0 to 1) of the time the first polls are spread over: its value's place among its
    /// stripe's values. So the first polls reach every stripe at once, each stripe's front
    /// first, and no stripe runs hot. A member is back before the line reaches it while the
    /// spread is shorter than a stripe's members take to admit. `None` without an opening.
    pub fn first_poll_share(&self, user: &UserId) -> Option<f64> {
        let opening = self.opening.as_ref()?;
        Some(self.draw.first_poll_share((opening.value)(user)))
    }

    /// A draw place of `user`'s lowest score and its segment, while the draw is open to joins
    /// at `now`.
    fn draw_place(&self, user: &UserId, now: i64) -> Option<(i64, i64)> {
        let opening = self.opening.as_ref()?;
        let value = (opening.value)(user);
        (now < opening.at && !self.draw_open.load(Ordering::Relaxed))
            .then(|| (DrawLayout::score_of(value), self.draw.segment(value)))
    }

    /// A key of the line's own, under the queue's tag (`{l:<queue>}`), apart from every
    /// stripe's: the lease and its fence.
    fn own_key(&self, name: &str) -> String {
        format!("{}:{{l:{}}}:{name}", self.prefix, self.queue)
    }

    fn keys(&self, stripe: Stripe) -> &StripeKeys {
        &self.stripe_keys[usize::from(stripe.0).min(self.stripe_keys.len() - 1)]
    }

    /// The segment a score falls in: a lane place's instant's, below every other; a draw
    /// place's range's; else its instant's.
    fn segment_of(&self, score: i64) -> i64 {
        if is_lane(score) {
            LANE_SEGMENTS + (score - LANE_BASE).div_euclid(self.segment_ms())
        } else if score < 0 {
            self.draw.segment_of_score(score)
        } else {
            score.div_euclid(self.segment_ms())
        }
    }

    /// When a place scored `score` has a position for certain (ms): its segment sealed, a
    /// tick past that, and a function's held published state read after that tick. A buyer
    /// told to come back then learns its position in one poll, not one a second until it has
    /// one. A draw place's segments seal at the opening.
    pub fn placed_by(&self, score: i64) -> i64 {
        let ends = if is_lane(score) {
            ((score - LANE_BASE).div_euclid(self.segment_ms()) + 1) * self.segment_ms()
        } else if score < 0 {
            self.opening.as_ref().map_or(0, |opening| opening.at)
        } else {
            (score.div_euclid(self.segment_ms()) + 1) * self.segment_ms()
        };
        ends + (ms(self.shape.seal) + ms(TICK_EVERY) + ms(PUBLISHED_FOR)) as i64
    }

    /// The scores of `segment`'s places, as `ZCOUNT`'s bounds.
    fn segment_bounds(&self, segment: i64) -> (String, String) {
        if is_lane_segment(segment) {
            let width = self.segment_ms();
            let from = LANE_BASE + (segment - LANE_SEGMENTS) * width;
            (from.to_string(), format!("({}", from + width))
        } else if segment < 0 {
            self.draw.bounds(segment)
        } else {
            let width = self.segment_ms();
            (
                (segment * width).to_string(),
                format!("({}", (segment + 1) * width),
            )
        }
    }

    fn segment_ms(&self) -> i64 {
        (self.shape.segment.as_millis() as i64).max(1)
    }
}

/// A `Duration` as whole ms for Redis, at least 1.
fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}
