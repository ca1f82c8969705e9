//! How fast the line moves, for a waiter's estimate: the places the line gave up over the
//! last minute, as the promoter's ticks saw them. A place goes when a session ends (it ran out,
//! was paid for or left: the room it frees is taken by the next waiter) and when the tick
//! passes over an absent waiter. The room a sale starts with is not counted: it says nothing
//! of how fast the line moves once full. The promoter that holds the lease keeps this in its
//! own memory, and each tick publishes it on every stripe ([`super::Published::speed`]); a
//! new holder starts again.

use std::collections::VecDeque;

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The window the speed is measured over, ms.
pub const SPEED_WINDOW_MS: i64 = 60_000;

/// The window of the line's best stretch, ms: the low end of a wait takes the line to keep
/// its best ten seconds of the last minute.
pub const BEST_WINDOW_MS: i64 = 10_000;

/// How fast the line has moved, in places a minute, over at most the last
/// [`SPEED_WINDOW_MS`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Speed {
    /// Over the whole window.
    pub per_minute: u64,
    /// Over the best [`BEST_WINDOW_MS`] of it, scaled to a minute.
    pub best_per_minute: u64,
}

/// A waiter's wait, as the line's speed and room give it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Estimate {
    pub expected: Duration,
    pub low: Duration,
    pub high: Duration,
}

impl Estimate {
    /// The wait of the waiter at `position`, in a line with room for `capacity` sessions of
    /// `session` each, that has moved at `speed`. The high end takes every session to run its
    /// full length: while the line is not halted, each of its `capacity` places frees at least
    /// once a session. The expected wait takes the line to keep its speed of the last minute,
    /// and the low end its best ten seconds; neither is above the high end. Until the ticks
    /// have measured a speed, or while nothing gives up a place, all three are the high end.
    pub fn of(position: u64, capacity: u64, session: Duration, speed: Option<Speed>) -> Estimate {
        let high = session.saturating_mul(position.div_ceil(capacity.max(1)) as u32);
        let at = |per_minute: u64| {
            (per_minute > 0)
                .then(|| Duration::from_millis(position.saturating_mul(60_000) / per_minute))
                .map_or(high, |wait| wait.min(high))
        };
        let expected = speed.map_or(high, |s| at(s.per_minute));
        let low = speed.map_or(high, |s| at(s.best_per_minute)).min(expected);
        Estimate {
            expected,
            low,
            high,
        }
    }

    /// The same wait, begun `wait` from now: a lane place that waits for the opening.
    pub fn after(self, wait: Duration) -> Estimate {
        Estimate {
            expected: self.expected + wait,
            low: self.low + wait,
            high: self.high + wait,
        }
    }
}

/// The promoter's record of the ticks it ran: when, and how many places each gave up.
#[derive(Debug, Default)]
pub(super) struct Pace {
    ticks: VecDeque<(i64, u64)>,
    /// Live sessions after the last tick, to tell how many ended by the next.
    live_after: Option<u64>,
}

impl Pace {
    /// Records the tick at `now` that found `live` sessions, passed over `dropped` waiters and
    /// left `live_after` sessions; forgets what falls out of the window.
    pub fn record(&mut self, now: i64, live: u64, dropped: u64, live_after: u64) {
        let ended = self
            .live_after
            .map_or(0, |before| before.saturating_sub(live));
        self.live_after = Some(live_after);
        self.ticks.push_back((now, ended + dropped));
        while self
            .ticks
            .front()
            .is_some_and(|(at, _)| now - at >= SPEED_WINDOW_MS)
        {
            self.ticks.pop_front();
        }
    }

    /// The speed as of `now`, once the ticks recorded span [`BEST_WINDOW_MS`]; `None` before.
    pub fn speed(&self, now: i64) -> Option<Speed> {
        let first = self.ticks.front()?.0;
        let span = (now - first).clamp(0, SPEED_WINDOW_MS);
        if span < BEST_WINDOW_MS {
            return None;
        }
        let total: u64 = self.ticks.iter().map(|(_, gone)| gone).sum();
        // The best stretch: the most given up by the ticks within BEST_WINDOW_MS of one
        // another.
        let ticks: Vec<(i64, u64)> = self.ticks.iter().copied().collect();
        let (mut best, mut sum, mut from) = (0, 0, 0);
        for &(at, gone) in &ticks {
            sum += gone;
            while at - ticks[from].0 >= BEST_WINDOW_MS {
                sum -= ticks[from].1;
                from += 1;
            }
            best = best.max(sum);
        }
        Some(Speed {
            per_minute: total * 60_000 / span as u64,
            best_per_minute: best * 60_000 / BEST_WINDOW_MS as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_never_above_every_session_running_out() {
        let session = Duration::from_secs(600);
        // 250 ahead of room for 100: three sessions at most.
        let none = Estimate::of(250, 100, session, None);
        assert_eq!(none.high, Duration::from_secs(1800));
        assert_eq!((none.expected, none.low), (none.high, none.high));
        let moving = Speed {
            per_minute: 50,
            best_per_minute: 100,
        };
        let est = Estimate::of(250, 100, session, Some(moving));
        assert_eq!(est.expected, Duration::from_secs(300));
        assert_eq!(est.low, Duration::from_secs(150));
        // A crawl is held to the high end.
        let crawl = Speed {
            per_minute: 1,
            best_per_minute: 1,
        };
        assert_eq!(
            Estimate::of(250, 100, session, Some(crawl)).expected,
            est.high
        );
    }

    #[test]
    fn the_room_a_sale_starts_with_is_not_speed() {
        let mut pace = Pace::default();
        // The first tick fills 100 places of room: nothing ended.
        pace.record(0, 0, 0, 100);
        for s in 1..=20 {
            // Each second 2 sessions end and the tick fills their room; 1 absent is passed.
            pace.record(s * 1000, 98, 1, 100);
        }
        let speed = pace.speed(20_000).expect("20 s recorded");
        // 60 places gone in 20 s: 180 a minute; the best 10 s held 30 (10 ticks of 3).
        assert_eq!(speed.per_minute, 180);
        assert_eq!(speed.best_per_minute, 180);
    }

    #[test]
    fn no_speed_before_ten_seconds_and_only_the_last_minute_counts() {
        let mut pace = Pace::default();
        pace.record(0, 0, 0, 10);
        assert_eq!(pace.speed(5_000), None);
        // A burst of 60 passed over at 5 s, then nothing for two minutes.
        pace.record(5_000, 10, 60, 10);
        assert_eq!(
            pace.speed(15_000),
            Some(Speed {
                per_minute: 60 * 60_000 / 15_000,
                best_per_minute: 360,
            })
        );
        for s in 6..=130 {
            pace.record(s * 1000, 10, 0, 10);
        }
        assert_eq!(
            pace.speed(130_000),
            Some(Speed {
                per_minute: 0,
                best_per_minute: 0,
            })
        );
    }
}
