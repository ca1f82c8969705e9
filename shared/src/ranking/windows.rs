//! Rolling windows and trending: which bucket and generations a moment falls in, and the
//! weight a sale carries on a trending generation. Keys are named in `mod.rs`; the writes
//! are `windows.lua` (payments, refunds) and `roll.lua` (the tick).
//!
//! Rolling boards: time is cut into 5-minute buckets (UTC, index `⌊t_ms / 300 000⌋`). A
//! window of `n` buckets holds the current bucket and the `n − 1` before it, so it covers
//! between its length minus 5 minutes and its length. A payment adds its seats to the
//! rolling board and to its bucket's hash; the tick takes a bucket off once it has left.
//!
//! Trending: a sale of `s` seats at `t` weighs `s · 2^((t − now)/H)` at `now`. Scores are
//! kept per generation `k` of length `P = 12 H`: generation `k` holds every sale with `t`
//! in `[(k − 1)P, (k + 1)P)`, weighted `2^((t − kP)/H)`, an exponent in `[−12, 12)`. A read
//! at `now` uses generation `⌊now / P⌋`, which holds every sale of the last `P` to `2P`;
//! older sales weigh less than `2^−12` of a sale now and are left out. Dividing a score by
//! `2^((now − kP)/H)` gives the sale's weight now; ranking needs no division.

use chrono::{DateTime, Utc};

/// Length of a rolling bucket.
pub const BUCKET_MS: i64 = 300_000;

/// How long a rolling board or bucket hash outlives its last write, and a trending
/// generation its last read: a tick that lags by less than this loses nothing.
pub const MARGIN_SECONDS: i64 = 86_400;

/// Most bucket fields one tick call takes off: 50 × (1 + genres) boards × 2 commands, about
/// half a millisecond with two genres.
pub const TICK_FIELDS: u32 = 50;

/// Most buckets one tick call looks at (an empty one costs one command).
pub const TICK_STEPS: u32 = 300;

/// Most tick calls per tick (800 fields a minute); what is left waits for the next tick.
pub const TICK_CALLS: u32 = 16;

/// A rolling window.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// The name of its watermark and bucket hashes: `24h`, `7d`.
    pub name: &'static str,
    /// Buckets in the window.
    pub buckets: i64,
}

impl Window {
    /// Seconds a board or bucket hash outlives its last write.
    pub fn keep_seconds(self) -> i64 {
        self.buckets * BUCKET_MS / 1000 + MARGIN_SECONDS
    }
}

pub const LAST_24H: Window = Window {
    name: "24h",
    buckets: 24 * 12,
};
pub const LAST_7D: Window = Window {
    name: "7d",
    buckets: 7 * 24 * 12,
};

/// The rolling bucket holding `at`.
pub fn bucket_of(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis().div_euclid(BUCKET_MS)
}

/// Trending with half-life `half_life_ms`.
#[derive(Debug, Clone, Copy)]
pub struct Trend {
    pub half_life_ms: i64,
}

/// One trending generation a sale counts on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Generation {
    pub index: i64,
    /// What one seat weighs on it: `2^((t − kP)/H)`.
    pub weight: f64,
    /// When its board expires (seconds): the end of its reads plus the margin.
    pub expires_at: i64,
}

impl Trend {
    /// The length of a generation, 12 half-lives.
    pub fn generation_ms(self) -> i64 {
        12 * self.half_life_ms
    }

    /// The generation a read at `now` uses.
    pub fn generation_at(self, now: DateTime<Utc>) -> i64 {
        now.timestamp_millis().div_euclid(self.generation_ms())
    }

    /// The two generations holding a sale at `at`, with its weight on each. The weight on
    /// the second is the first's ÷ 2¹², exactly, as a record keeps only the first
    /// (`record.lua`).
    pub fn generations_for(self, at: DateTime<Utc>) -> [Generation; 2] {
        let t = at.timestamp_millis();
        let p = self.generation_ms();
        let index = t.div_euclid(p);
        let weight = ((t - index * p) as f64 / self.half_life_ms as f64).exp2();
        let generation = |index: i64, weight: f64| Generation {
            index,
            weight,
            expires_at: ((index + 1) * p).div_euclid(1000) + MARGIN_SECONDS,
        };
        [
            generation(index, weight),
            generation(index + 1, weight / 4096.0),
        ]
    }

    /// What a score on generation `index` is worth at `now`, in seats sold now: the score
    /// times this.
    pub fn scale(self, index: i64, now: DateTime<Utc>) -> f64 {
        let t = now.timestamp_millis();
        ((index * self.generation_ms() - t) as f64 / self.half_life_ms as f64).exp2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn buckets_are_five_utc_minutes() {
        assert_eq!(
            bucket_of(at("2026-11-24T00:04:59.999Z")),
            bucket_of(at("2026-11-24T00:00:00Z"))
        );
        assert_eq!(
            bucket_of(at("2026-11-24T00:05:00Z")),
            bucket_of(at("2026-11-24T00:00:00Z")) + 1
        );
    }

    #[test]
    fn a_sale_weighs_within_twelve_half_lives_on_both_its_generations() {
        let trend = Trend {
            half_life_ms: 6 * 3_600_000,
        };
        let sale = at("2026-11-24T08:00:00Z");
        let [first, second] = trend.generations_for(sale);
        assert_eq!(second.index, first.index + 1);
        assert!((1.0..4096.0).contains(&first.weight), "{first:?}");
        assert!((1.0 / 4096.0..1.0).contains(&second.weight), "{second:?}");
        // The same sale, seen from either generation, is worth the same at any moment.
        let now = at("2026-11-25T00:00:00Z");
        let a = first.weight * trend.scale(first.index, now);
        let b = second.weight * trend.scale(second.index, now);
        assert!((a - b).abs() < 1e-12, "{a} {b}");
        // 16 hours later: 2^(-16/6).
        assert!((a - (-16.0f64 / 6.0).exp2()).abs() < 1e-12, "{a}");
        // A read uses the generation its moment falls in, which holds the sale.
        let read = trend.generation_at(now);
        assert!(read == first.index || read == second.index);
    }
}
