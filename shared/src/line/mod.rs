//! The striped line: one queue's waiters spread over many hash tags, so that a sale of any size
//! uses every shard of a cluster and no slot runs hot, and a poll costs a few plain commands.
//!
//! - [`keys`]: a stripe's tag and keys, and which stripe a buyer is on.
//! - `buyer`: what a buyer's calls do, each on its own stripe in one round trip: [`Line::join`]
//!   (a small script: the place depends on what is there), [`Line::poll`] and
//!   [`Line::leave`] (plain commands, pipelined).
//! - `tick`: [`Line::tick`], the only writer of admissions: it reads every stripe's head and
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
//! A position. The tick publishes, per stripe and segment, how many waiters of the other
//! stripes are ahead of that segment's places on that stripe. A poll reads that figure and its
//! rank on its own stripe (`ZRANK`, live) in one pipeline: the position is their sum plus one,
//! exact as of the last tick. A place in a segment the tick has not seen yet has no position
//! until the next tick.
//!
//! Presence. Each poll sets a key with a TTL of how long it keeps the buyer present. When the
//! line reaches a buyer whose key has lapsed, the tick passes it over and removes its place.

pub mod keys;

mod buyer;
mod tick;

use std::time::Duration;

pub use buyer::{Joined, Standing};
pub use keys::{Stripe, StripeKeys};
pub use tick::Ticked;

use crate::ids::{QueueId, UserId};
use crate::store::Conn;

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
        }
    }
}

/// One queue's striped line, reached through `conn`.
pub struct Line {
    conn: Conn,
    prefix: String,
    queue: QueueId,
    shape: LineShape,
}

impl Line {
    pub fn new(conn: Conn, prefix: &str, queue: QueueId, shape: LineShape) -> Line {
        Line {
            conn,
            prefix: prefix.to_owned(),
            queue,
            shape,
        }
    }

    pub fn shape(&self) -> &LineShape {
        &self.shape
    }

    /// The stripe `user` is on.
    pub fn stripe_of(&self, user: &UserId) -> Stripe {
        Stripe::of(&self.queue, user, self.shape.stripes)
    }

    fn keys(&self, stripe: Stripe) -> StripeKeys {
        StripeKeys::new(&self.prefix, &self.queue, stripe)
    }

    /// The segment a score falls in.
    fn segment_of(&self, score_ms: i64) -> i64 {
        score_ms.div_euclid(self.segment_ms())
    }

    fn segment_ms(&self) -> i64 {
        (self.shape.segment.as_millis() as i64).max(1)
    }
}

/// A `Duration` as whole ms for Redis, at least 1.
fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}
