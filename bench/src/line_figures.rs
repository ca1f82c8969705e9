//! `lineup-bench line-opening`'s figures: what one replay found, and the report's rows for
//! them. `line_opening.rs` drives the replays.

use std::collections::BTreeMap;

use crate::line_calibrate::{Calibrated, Paced, Prices};
use crate::report::{met, thousands, Report};

/// One scale's figures.
pub(crate) struct Figures {
    pub(crate) members: u32,
    pub(crate) arrivals: u32,
    /// The busiest window's share of a core, at the whole scale, of the busiest primary, and
    /// when that window ended (s from the opening).
    pub(crate) busiest_share: f64,
    pub(crate) busiest_at: f64,
    /// The same, priced: each primary's requests ÷ f at their kinds' prices measured at one
    /// primary's density, its ticks at the whole scale's pace, and its idle share.
    pub(crate) busiest_priced: f64,
    pub(crate) busiest_priced_at: f64,
    /// The same at the prices measured spread over every primary.
    pub(crate) busiest_spread: f64,
    pub(crate) busiest_spread_at: f64,
    pub(crate) first_polls_by_60: u32,
    pub(crate) last_first_poll_ms: i64,
    pub(crate) late_p99_ms: u64,
    pub(crate) dropped: u64,
    /// Calls a buyer made, on average.
    pub(crate) calls_per_buyer: f64,
    /// The hottest slot's GET-equivalents a second at the whole scale.
    pub(crate) hottest_slot: f64,
    /// What the hottest slot's load was made of: its window's end (s from the opening) and
    /// each kind's share of it, in GET-equivalents a second at the whole scale.
    pub(crate) hottest_parts: String,
    /// Each primary's CPU priced at the prices of the run's pace ÷ its `INFO cpu` above idle,
    /// over the run: lowest, highest.
    pub(crate) priced: (f64, f64),
    /// The same over the opening's first minute.
    pub(crate) priced_minute: (f64, f64),
    /// The primaries' idle share of a core before the run: lowest, highest.
    pub(crate) idle: (f64, f64),
    /// The prices, spread over every primary and dense on one.
    pub(crate) prices: Calibrated,
    /// The prices at the run's own pace.
    pub(crate) paced: Paced,
    /// The stripe whose slot was the hottest.
    pub(crate) hottest_stripe: u16,
    /// Where one stripe's slot had a primary of its own: what that primary did.
    pub(crate) isolated: Option<Isolated>,
}

/// A stripe's slot on a primary of its own, over the run.
pub(crate) struct Isolated {
    pub(crate) stripe: u16,
    /// Its `INFO cpu` above idle, and the slot's requests at the prices of the run's pace
    /// (µs).
    pub(crate) measured_us: f64,
    pub(crate) priced_us: f64,
    /// Its busiest 5 s at the whole scale, in GET-equivalents a second: from its `INFO cpu`
    /// ÷ f, and from the slot's requests at the dense prices.
    pub(crate) busiest_measured: f64,
    pub(crate) busiest_priced: f64,
}

/// The rows of each scale's figures, on a layout of `primaries`.
pub(crate) fn scales(report: &mut Report, primaries: usize, by_scale: &BTreeMap<u64, Figures>) {
    for (fraction, figures) in by_scale {
        let at = format!("1/{fraction}");
        report.row(
            &format!("{at}: members, arrivals"),
            &format!(
                "{}, {}",
                thousands(u64::from(figures.members)),
                thousands(u64::from(figures.arrivals))
            ),
            &format!("requests late p99 {} ms", figures.late_p99_ms),
        );
        report.row(
            &format!("{at}: first polls within 60 s"),
            &format!(
                "{} of {} (last at {:.1} s)",
                thousands(u64::from(figures.first_polls_by_60)),
                thousands(u64::from(figures.members)),
                figures.last_first_poll_ms as f64 / 1000.0
            ),
            met(figures.first_polls_by_60 == figures.members),
        );
        report.row(
            &format!("{at}: busiest primary, busiest 5 s, whole scale, priced"),
            &format!(
                "{:.0} % of a core (the 5 s to {:+.0} s)",
                figures.busiest_priced * 100.0,
                figures.busiest_priced_at
            ),
            &format!("goal ≤ 70 %: {}", met(figures.busiest_priced <= 0.70)),
        );
        if primaries > 1 {
            report.row(
                &format!("{at}: the same at the prices spread over every primary"),
                &format!(
                    "{:.0} % of a core (the 5 s to {:+.0} s)",
                    figures.busiest_spread * 100.0,
                    figures.busiest_spread_at
                ),
                "each request its own wake-up: a bound above",
            );
        }
        report.row(
            &format!("{at}: the same from INFO cpu ÷ f"),
            &format!(
                "{:.0} % of a core (the 5 s to {:+.0} s)",
                figures.busiest_share * 100.0,
                figures.busiest_at
            ),
            "counts each sparse request's wake-up f times over",
        );
        let ways = [
            ("spread over every primary", &figures.prices.spread),
            ("dense on one primary", &figures.prices.dense),
        ];
        for (way, prices) in &ways[..primaries.min(2)] {
            report.row(
                &format!("{at}: Redis CPU per request, {way}, ÷ PING"),
                &per_request(prices),
                &format!("PING {:.1} µs", prices.ping),
            );
        }
        let paced = &figures.paced;
        report.row(
            &format!("{at}: Redis CPU per request at the run's pace, ÷ PING"),
            &per_request(&paced.all),
            &format!(
                "{} requests a second over every primary, the pace the run's average request met; PING {:.1} µs",
                thousands(paced.per_second as u64),
                paced.all.ping
            ),
        );
        if primaries > 1 {
            report.row(
                &format!("{at}: hottest slot, GET-equivalents a second, whole scale"),
                &format!(
                    "{} ({})",
                    thousands(figures.hottest_slot as u64),
                    figures.hottest_parts
                ),
                &format!("goal ≤ 20 000: {}", met(figures.hottest_slot <= 20_000.0)),
            );
        }
        report.row(
            &format!("{at}: idle, each primary, before the run"),
            &format!(
                "{:.2}–{:.2} % of a core",
                figures.idle.0 * 100.0,
                figures.idle.1 * 100.0
            ),
            "taken off each window",
        );
        let ways = [
            ("the opening's first minute", figures.priced_minute),
            ("the whole run", figures.priced),
        ];
        for (over, (low, high)) in ways {
            report.row(
                &format!(
                    "{at}: priced at the run's pace ÷ INFO cpu above idle, per primary, \
                     over {over}"
                ),
                &format!("{low:.2}–{high:.2}"),
                &format!(
                    "goal within 0.90–1.10: {}",
                    met(low >= 0.90 && high <= 1.10)
                ),
            );
        }
        report.row(
            &format!("{at}: calls per buyer, passed over"),
            &format!(
                "{:.1}, {}",
                figures.calls_per_buyer,
                thousands(figures.dropped)
            ),
            "",
        );
    }
}

/// The rows of a slot on a primary of its own, in a run at 1/`fraction`.
pub(crate) fn isolated(report: &mut Report, fraction: u64, alone: &Isolated) {
    report.row(
        &format!(
            "1/{fraction}: stripe {}'s slot on a primary of its own, its \
             INFO cpu above idle over the run",
            alone.stripe
        ),
        &format!(
            "{:.0} ms; the slot's requests at the prices of the run's pace {:.0} ms ({:.2})",
            alone.measured_us / 1000.0,
            alone.priced_us / 1000.0,
            alone.priced_us / alone.measured_us.max(1.0)
        ),
        "priced ÷ measured, goal within 0.90–1.10",
    );
    report.row(
        &format!("1/{fraction}: that primary's busiest 5 s, whole scale"),
        &format!(
            "{} GET-equivalents a second from its INFO cpu ÷ f; {} at the \
             dense prices",
            thousands(alone.busiest_measured as u64),
            thousands(alone.busiest_priced as u64)
        ),
        &format!("goal ≤ 20 000: {}", met(alone.busiest_priced <= 20_000.0)),
    );
}

/// The row of CPU per call as the scale grows: the larger scale ÷ the smaller.
pub(crate) fn growth(report: &mut Report, by_scale: &BTreeMap<u64, Figures>) {
    if let (Some(small), Some(large)) = (by_scale.values().last(), by_scale.values().next()) {
        // Each scale's price ÷ the PING of its own run, so that the machine's speed,
        // which drifts between runs, cancels out.
        let (large, small) = (&large.prices.spread, &small.prices.spread);
        let growth: Vec<f64> = (0..4)
            .map(|k| (large.per_kind[k] / large.ping) / (small.per_kind[k] / small.ping))
            .collect();
        let flat: Vec<String> = ["join", "poll", "check", "leave"]
            .iter()
            .zip(&growth)
            .map(|(name, g)| format!("{name} {g:.2}"))
            .collect();
        report.row(
            "CPU per call ÷ its run's PING, larger scale ÷ smaller",
            &flat.join("; "),
            &format!("goal ≤ 1.1: {}", met(growth.iter().all(|g| *g <= 1.1))),
        );
    }
}

/// Each kind's price ÷ the PING measured the same way, against its goal.
pub(crate) fn per_request(prices: &Prices) -> String {
    let names = ["join", "poll", "check", "leave", "tick (per stripe)"];
    let goals = [3.0, 1.5, 1.5, 2.0, f64::INFINITY];
    names
        .iter()
        .zip(prices.per_kind)
        .zip(goals)
        .map(|((name, us), goal)| {
            let ratio = us / prices.ping;
            if goal.is_finite() {
                format!("{name} {ratio:.1}× (≤ {goal}: {})", met(ratio <= goal))
            } else {
                format!("{name} {us:.0} µs")
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
