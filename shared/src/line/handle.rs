//! [`Line`]: one queue's striped line over its connection, its stripes' keys, its draw's
//! layout and what this container last read and ran; each other part of `line/` adds its own
//! `impl Line`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::draw::DrawLayout;
use super::keys::{Stripe, StripeKeys};
use super::seen::Seen;
use super::shape::{
    is_lane, is_lane_segment, ms, LineShape, Opening, Published, LANE_BASE, LANE_SEGMENTS,
    PUBLISHED_FOR, TICK_EVERY,
};
use super::speed;
use crate::ids::{QueueId, UserId};
use crate::store::Conn;

/// One queue's striped line, reached through `conn`.
pub struct Line {
    pub(super) conn: Conn,
    pub(super) prefix: String,
    pub(super) queue: QueueId,
    pub(super) shape: LineShape,
    /// Each stripe's keys, by stripe: their tags are found once.
    pub(super) stripe_keys: Vec<StripeKeys>,
    /// The scheduled opening, if the line has a draw.
    pub(super) opening: Option<Opening>,
    /// How the draw's values lie over the stripes.
    pub(super) draw: DrawLayout,
    /// Whether a tick has found every stripe sealed past the opening (kept once found).
    pub(super) draw_open: AtomicBool,
    /// Each stripe's published state, and when (ms, the callers' clock) it was read.
    pub(super) published: Mutex<HashMap<Stripe, (i64, Arc<Published>)>>,
    /// The ticks this container ran, for the line's speed.
    pub(super) pace: Mutex<speed::Pace>,
    /// What this container's last tick found on each stripe.
    pub(super) seen: Mutex<Seen>,
    /// The session length in force (ms): the shape's, or the queue's own ([`Line::time`]).
    pub(super) session_ms: AtomicU64,
    /// The presence period in force (ms): the shape's, or the queue's own.
    pub(super) presence_ms: AtomicU64,
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
            seen: Mutex::new(Seen::default()),
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
    pub(super) fn session_ms(&self) -> u64 {
        self.session_ms.load(Ordering::Relaxed)
    }

    /// How long a poll keeps its buyer present (ms).
    pub(super) fn presence_ms(&self) -> u64 {
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
    pub(super) fn held(&self, stripe: Stripe, now: i64) -> Option<Arc<Published>> {
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
    pub(super) fn hold(&self, stripe: Stripe, now: i64, published: Published) {
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
    pub(super) fn draw_place(&self, user: &UserId, now: i64) -> Option<(i64, i64)> {
        let opening = self.opening.as_ref()?;
        let value = (opening.value)(user);
        (now < opening.at && !self.draw_open.load(Ordering::Relaxed))
            .then(|| (DrawLayout::score_of(value), self.draw.segment(value)))
    }

    /// A key of the line's own, under the queue's tag (`{l:<queue>}`), apart from every
    /// stripe's: the lease and its fence.
    pub(super) fn own_key(&self, name: &str) -> String {
        format!("{}:{{l:{}}}:{name}", self.prefix, self.queue)
    }

    pub(super) fn keys(&self, stripe: Stripe) -> &StripeKeys {
        &self.stripe_keys[usize::from(stripe.0).min(self.stripe_keys.len() - 1)]
    }

    /// The segment a score falls in: a lane place's instant's, below every other; a draw
    /// place's range's; else its instant's.
    pub(super) fn segment_of(&self, score: i64) -> i64 {
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
    pub(super) fn segment_bounds(&self, segment: i64) -> (String, String) {
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

    pub(super) fn segment_ms(&self) -> i64 {
        (self.shape.segment.as_millis() as i64).max(1)
    }
}
