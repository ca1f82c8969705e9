//! Ranking events per second through the event applier, batched and one by one, against updates
//! sent command by command.
//!
//! # Method
//!
//! 16 callers for 3 s each: events one per invocation, SQS batches of 10, and the baseline
//! (`baseline::ranking_events_per_second`: a dedupe SET NX, then one ZINCRBY per board and the
//! concert's board index, each its own round trip).
//!
//! # What limits the figures
//!
//! - A batch of ten costs one script call. So batches beat single events, and single events beat
//!   the command-by-command baseline.
//! - Larger SQS batches (up to 100 per script call) would move it further.
//! - The `{rk}` shard is the ceiling.

use std::time::Duration;

use crate::baseline;
use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Ingest: ranking events per second (16 concurrent callers)");
    const CALLERS: usize = 16;
    const RUN: Duration = Duration::from_secs(3);
    let genres = ["rock"];
    let single = measure::rate(CALLERS, RUN, |n| async move {
        bench
            .apply(&[bench.payment(&format!("s-{n}"), &format!("c{}", n % 50), &genres)])
            .await;
    })
    .await;
    let batched = 10.0
        * measure::rate(CALLERS, RUN, |n| async move {
            let events = (0..10)
                .map(|i| bench.payment(&format!("b-{n}-{i}"), &format!("c{}", i * 5), &genres))
                .collect();
            bench.sqs_batch(events).await;
        })
        .await;
    let unbatched = baseline::ranking_events_per_second(bench, CALLERS, RUN).await;
    report.row(
        "one event per invocation",
        &format!("{single:.0} events/s"),
        &format!(
            "baseline command by command {unbatched:.0} events/s ({:.2} ×)",
            single / unbatched
        ),
    );
    report.row(
        "SQS batches of 10",
        &format!("{batched:.0} events/s"),
        &format!("{:.2} × one at a time", batched / single),
    );
}
