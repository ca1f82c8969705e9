//! What the line's parts share: how a line is laid out ([`LineShape`]), a place and what the
//! tick publishes for a stripe's polls ([`Place`], [`Published`]), a scheduled opening, the
//! priority lane's scores, and the line's timings.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::keys::Stripe;
use super::speed::Speed;
use crate::ids::UserId;

/// Where the priority lane's places are scored: −2^53 plus the place's instant (ms), below
/// every draw place (the draw's lowest score is above −2^52), and exact as a double.
pub(crate) const LANE_BASE: i64 = -(1 << 53);

/// Where the priority lane's segments are numbered: −2^50 plus the instant's segment, below
/// every draw segment (−ranges to −1), and exact as a double.
pub(super) const LANE_SEGMENTS: i64 = -(1 << 50);

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
    /// A buyer's draw value, below 2^[`DRAW_VALUE_BITS`](super::DRAW_VALUE_BITS): the same for the same buyer.
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
    /// Why the line admits nobody, when the tick found it halted ([`Halt::as_str`](super::Halt::as_str)).
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

/// A `Duration` as whole ms for Redis, at least 1.
pub(super) fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}
