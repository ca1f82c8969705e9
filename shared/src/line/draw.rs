//! How a line with an opening lays out its draw: the draw values (below 2^[`DRAW_VALUE_BITS`])
//! are cut into `stripes × draw_ranges` equal ranges, in value order, and range `r` lies on
//! stripe `(r × step) mod stripes`, `step` the number nearest 0.618 × stripes that shares no
//! factor with it. So the draw's front, where buyers poll most and are admitted, moves over
//! every stripe instead of lying on one, and consecutive ranges lie far apart in the slot range:
//! a cluster's primaries own runs of stripes, so the front's few ranges are on as many
//! primaries. Each range is a segment of its own, ahead of every arrival's segment and in value
//! order: range `r` of `R` is segment `r − R`, from `−R` to `−1`.
//!
//! A draw place's score is below zero: the value's lowest score, then its order of arrival
//! among equal values on its stripe ([`DrawLayout::score_of`]).

use super::keys::Stripe;
use super::shape::LineShape;

/// A draw value's bits: values run from 0 to 2²⁸ − 1 (docs/draw.md).
pub const DRAW_VALUE_BITS: u32 = 28;

/// The bits of a draw place's score below its value: its order of arrival among equal values
/// on its stripe.
pub(super) const DRAW_TIE_BITS: u32 = 24;

/// The draw's ranges for one line's shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct DrawLayout {
    stripes: u64,
    /// How many ranges the values are cut into: `stripes × draw_ranges`.
    ranges: u64,
    /// How far apart consecutive ranges' stripes are: coprime with `stripes`, so every stripe
    /// takes its share of the ranges.
    step: u64,
}

impl DrawLayout {
    pub(super) fn of(shape: &LineShape) -> DrawLayout {
        let stripes = u64::from(shape.stripes.max(1));
        DrawLayout {
            stripes,
            ranges: stripes * u64::from(shape.draw_ranges.max(1)),
            step: step(stripes),
        }
    }

    /// The range `value` falls in.
    fn range(&self, value: u32) -> u64 {
        let value = u64::from(value) & ((1 << DRAW_VALUE_BITS) - 1);
        (value * self.ranges) >> DRAW_VALUE_BITS
    }

    /// The least value of range `range` (2²⁸ for the range past the last).
    fn low(&self, range: u64) -> u64 {
        (range << DRAW_VALUE_BITS).div_ceil(self.ranges)
    }

    /// The stripe of a buyer with draw value `value`.
    pub(super) fn stripe(&self, value: u32) -> Stripe {
        Stripe(((self.range(value) % self.stripes) * self.step % self.stripes) as u16)
    }

    /// The segment of a draw place with `value`: its range's, below zero.
    pub(super) fn segment(&self, value: u32) -> i64 {
        self.range(value) as i64 - self.ranges as i64
    }

    /// The lowest score of a draw place with `value`: all draw scores lie below zero, in value
    /// order, exactly (below 2⁵² in magnitude).
    pub(super) fn score_of(value: u32) -> i64 {
        let value = i64::from(value & ((1 << DRAW_VALUE_BITS) - 1));
        -(1i64 << (DRAW_VALUE_BITS + DRAW_TIE_BITS)) + (value << DRAW_TIE_BITS)
    }

    /// The value a draw place's score (below zero) was made from.
    fn value_of(score: i64) -> u32 {
        let from_lowest = score.saturating_add(1i64 << (DRAW_VALUE_BITS + DRAW_TIE_BITS));
        (from_lowest.max(0) >> DRAW_TIE_BITS).min((1 << DRAW_VALUE_BITS) - 1) as u32
    }

    /// The segment of a draw place scored `score` (below zero).
    pub(super) fn segment_of_score(&self, score: i64) -> i64 {
        self.segment(Self::value_of(score))
    }

    /// The scores of draw segment `segment`'s places, as `ZCOUNT`'s bounds.
    pub(super) fn bounds(&self, segment: i64) -> (String, String) {
        let range = (segment + self.ranges as i64).clamp(0, self.ranges as i64 - 1) as u64;
        let min = Self::score_of(self.low(range) as u32);
        let max = if range + 1 == self.ranges {
            0
        } else {
            Self::score_of(self.low(range + 1) as u32)
        };
        (min.to_string(), format!("({max}"))
    }

    /// When a member with `value` should come back for its first poll after the opening, as a
    /// share (0 to 1) of the time the first polls are spread over: its place among its own
    /// stripe's values. So the first polls reach every stripe at once, each stripe's front
    /// first.
    pub(super) fn first_poll_share(&self, value: u32) -> f64 {
        let range = self.range(value);
        let (low, high) = (self.low(range), self.low(range + 1));
        let within = (u64::from(value) & ((1 << DRAW_VALUE_BITS) - 1)).saturating_sub(low) as f64
            / (high - low).max(1) as f64;
        let per_stripe = (self.ranges / self.stripes) as f64;
        (((range / self.stripes) as f64 + within) / per_stripe).clamp(0.0, 1.0)
    }
}

/// The step between consecutive ranges' stripes: the number nearest 0.618 × `stripes` (the
/// golden ratio's spread) that shares no factor with `stripes`.
fn step(stripes: u64) -> u64 {
    let golden = (stripes as f64 * 0.618_033_988_749_895).round() as u64;
    (0..=stripes)
        .flat_map(|d| [golden + d, golden.saturating_sub(d)])
        .find(|step| *step > 0 && gcd(*step, stripes) == 1)
        .unwrap_or(1)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: u32 = (1 << DRAW_VALUE_BITS) - 1;

    fn layout(stripes: u16, draw_ranges: u16) -> DrawLayout {
        DrawLayout::of(&LineShape {
            stripes,
            draw_ranges,
            ..LineShape::default()
        })
    }

    #[test]
    fn one_range_a_stripe_puts_each_quarter_on_its_own_stripe() {
        let layout = layout(4, 1);
        assert_eq!(layout.stripe(0), Stripe(0));
        assert_eq!(layout.stripe(TOP / 4), Stripe(0));
        assert_eq!(layout.stripe(TOP / 4 + 1), Stripe(3));
        assert_eq!(layout.stripe(TOP / 2 + 1), Stripe(2));
        assert_eq!(layout.stripe(TOP), Stripe(1));
        assert_eq!(self::layout(1, 1).stripe(TOP), Stripe(0));
        assert_eq!(self::layout(2, 3).stripe(TOP), Stripe(1));
    }

    /// 128 stripes on 8 primaries, 16 each in runs: any four consecutive ranges (the draw's
    /// front for about 10 s at the whole scale) lie on four primaries, and each stripe holds
    /// the same number of ranges.
    #[test]
    fn consecutive_ranges_lie_on_different_primaries() {
        let layout = layout(128, 32);
        let stripes: Vec<u16> = (0..layout.ranges)
            .map(|r| layout.stripe(layout.low(r) as u32).0)
            .collect();
        for window in stripes.windows(4) {
            let primaries: std::collections::BTreeSet<u16> =
                window.iter().map(|s| s / 16).collect();
            assert_eq!(primaries.len(), 4, "{window:?}");
        }
        for stripe in 0..128 {
            assert_eq!(stripes.iter().filter(|s| **s == stripe).count(), 32);
        }
        for stripes in 1..300 {
            assert_eq!(gcd(step(stripes), stripes), 1, "{stripes}");
        }
    }

    #[test]
    fn ranges_go_round_the_stripes_in_value_order() {
        let layout = layout(7, 5);
        let (mut last_segment, mut last_range) = (i64::MIN, 0);
        for value in (0..=TOP).step_by(9973) {
            let segment = layout.segment(value);
            assert!(segment >= last_segment && (-35..0).contains(&segment));
            let range = (segment + 35) as u16;
            assert_eq!(layout.stripe(value), Stripe(range % 7 * 4 % 7));
            if segment > last_segment {
                assert!(range == last_range + 1 || last_segment == i64::MIN);
            }
            (last_segment, last_range) = (segment, range);
        }
        assert_eq!(last_segment, -1);
    }

    #[test]
    fn a_segments_bounds_hold_exactly_its_scores() {
        let layout = layout(3, 4);
        for value in [0, 1, TOP / 12, TOP / 12 + 1, TOP / 2, TOP - 1, TOP] {
            let segment = layout.segment(value);
            let (min, max) = layout.bounds(segment);
            let min: i64 = min.parse().unwrap();
            let max: i64 = max.trim_start_matches('(').parse().unwrap();
            for tie in [0, (1 << DRAW_TIE_BITS) - 1] {
                let score = DrawLayout::score_of(value) + tie;
                assert!(min <= score && score < max, "{value}: {min} {score} {max}");
                assert_eq!(layout.segment_of_score(score), segment);
            }
        }
        // Neighbouring segments' bounds meet, and the last ends at zero.
        for segment in -12..-1 {
            assert_eq!(
                layout.bounds(segment).1.trim_start_matches('('),
                layout.bounds(segment + 1).0
            );
        }
        assert_eq!(layout.bounds(-1).1, "(0");
    }

    #[test]
    fn first_polls_go_by_value_within_each_stripe_and_span_the_spread() {
        let layout = layout(4, 8);
        for stripe in 0..4 {
            let shares: Vec<f64> = (0..=TOP)
                .step_by(4099)
                .filter(|v| layout.stripe(*v) == Stripe(stripe))
                .map(|v| layout.first_poll_share(v))
                .collect();
            assert!(shares.windows(2).all(|w| w[0] <= w[1]), "stripe {stripe}");
            assert!(shares[0] < 0.01 && *shares.last().unwrap() > 0.99);
        }
    }
}
