//! Status and issue latency with 10k, 100k and 1M buyers waiting in one queue,
//! against the global-queue design whose status fetches the whole line.
//!
//! # Method
//!
//! One queue is filled to 10 000, 100 000 and 1 000 000 waiters (512 issues in flight). At each
//! size the bench times 2 000 status calls and a single caller's issue, and the design lineup
//! replaces on a global line of the same size (`baseline.rs`: a status that fetches the whole
//! line with `ZRANGE 0 -1`, and an issue of seven separate commands).
//!
//! # What limits the figures
//!
//! - Status is one EVALSHA. Its work (ZSCORE, a `BITFIELD` read and write of the ticket's
//!   presence deadline, ZRANK) is logarithmic in the line's length. So it is flat from 10k to 1M.
//!   The baseline's ZRANGE 0 -1 grows linearly.
//! - Network latency dominates in AWS: about 0.2–0.5 ms within an AZ.
//! - Issue is one round trip against the replaced design's seven. Both do logarithmic work in the
//!   line's length, so the ratio does not move with N. It falls further where each round trip
//!   costs a network hop.

use std::time::Instant;

use serde_json::json;

use crate::baseline;
use crate::measure::{percentile, Bench};
use crate::report::Report;
use crate::util::ms;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Scale: one queue with N waiting");
    let queue = "scale";
    bench.configure(queue, json!({"capacity": 1})).await;
    bench.issue(queue, "holder").await;
    let mut filled = 0usize;
    for target in [10_000usize, 100_000, 1_000_000] {
        let started = Instant::now();
        bench.fill(queue, filled, target).await;
        let fill_rate = (target - filled) as f64 / started.elapsed().as_secs_f64();
        filled = target;
        let samples = bench.status_latencies(queue, 2000).await;
        let (p50, p99) = (percentile(&samples, 50.0), percentile(&samples, 99.0));
        let baseline = baseline::global_status_latency(bench, target).await;
        report.row(
            &format!("status p50 / p99 at {target}"),
            &format!("{:.3} / {:.3} ms", ms(p50), ms(p99)),
            &format!(
                "baseline ZRANGE 0 -1: {:.1} / {:.1} ms; lineup ÷ baseline {:.4} (p50)",
                ms(baseline.0),
                ms(baseline.1),
                ms(p50) / ms(baseline.0)
            ),
        );
        let issue = baseline::issue_latency(bench, queue, target).await;
        report.row(
            &format!("token issue p50 at {target}, one caller"),
            &format!("{:.3} ms", ms(issue.0)),
            &format!(
                "baseline 7 separate commands {:.3} ms; lineup ÷ baseline {:.2}",
                ms(issue.1),
                ms(issue.0) / ms(issue.1)
            ),
        );
        report.row(
            &format!("fill to {target}"),
            &format!("{fill_rate:.0} issues/s"),
            "512 in flight",
        );
    }
}
