//! Redis time and commands of ranking writes on boards holding 10 000 concerts, each with
//! its details (capacity known, so rate boards are written too): a batch of 10 payments, and
//! a details update; bytes of details per concert.
//!
//! # Method
//!
//! - 10 000 concerts, each with details (so a capacity) and a payment in rock and pop, fill
//!   today's boards. Then 20 batches of 10 payments (2 genres each) go through the event applier as SQS
//!   batches, one script call each.
//! - The fold queue is never empty during them, so each call spends its whole fold budget; the
//!   tick's fold then takes what they left.
//! - `redis.calls` are every command `INFO commandstats` counts between two readings, those run
//!   inside the script included, less `EVALSHA` and `INFO`; writes leave out the reads (HGET,
//!   HMGET, EXISTS, ZSCORE, ZRANGE, …).
//!
//! # What limits the figures
//!
//! - A payment of two genres writes 24 board entries: 12 calendar, 6 rolling (2 windows × 3) and
//!   6 trending (2 generations × 3), with a rate entry beside each seat entry but trending's, and
//!   a field in each window's bucket hash.
//! - Inside the script, ZINCRBY on a 10 000-entry board of equal scores takes 2.2–2.7 µs and ZADD
//!   1.7–2.1 µs. Written in full, the 440 board writes of a batch of ten payments over ten
//!   concerts would take 0.9–1.1 ms before the script's own work. So a batch call records its
//!   payments and folds only what fits its budget (40 board entries); the tick's fold calls
//!   (80 entries each) take the rest (docs/rankings.md, "The fold").
//! - A batch for one concert, the shape of a hot sale, writes each (board, concert) once and
//!   stays near half a millisecond.

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    const CONCERTS: usize = 10_000;
    const ROUNDS: usize = 20;
    report.section("Ranking writes at 10 000 concerts (INFO commandstats; commands run inside the script counted too)");
    let an_hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let concerts: Vec<String> = (0..CONCERTS).map(|i| format!("rw-{i}")).collect();
    for chunk in concerts.chunks(100) {
        let details: Vec<_> = chunk
            .iter()
            .enumerate()
            .map(|(i, c)| bench.concert(c, 1000 + i as u32, &an_hour_ago))
            .collect();
        bench.apply(&details).await;
        let payments: Vec<_> = chunk
            .iter()
            .map(|c| bench.payment(&format!("fill-{c}"), c, &["rock", "pop"]))
            .collect();
        bench.apply(&payments).await;
    }
    bench.settle().await;
    // The batches below find the fold queue as a busy on-sale leaves it: never empty, so
    // each call spends its whole fold budget.
    batch_row(
        bench,
        report,
        "batch of 10 payments, 2 genres each (recorded, then folded within the call's budget)",
        ROUNDS,
        |round| {
            (0..10)
                .map(|i| {
                    let concert = &concerts[(round * 10 + i) * 37 % CONCERTS];
                    bench.payment(&format!("rw-{round}-{i}"), concert, &["rock", "pop"])
                })
                .collect()
        },
    )
    .await;
    fold_rows(bench, report, "10 concerts a batch").await;
    // An on-sale: every payment of the batch for the one concert.
    batch_row(
        bench,
        report,
        "batch of 10 payments for one concert, 2 genres each",
        ROUNDS,
        |round| {
            let concert = &concerts[round * 53 % CONCERTS];
            (0..10)
                .map(|i| bench.payment(&format!("hot-{round}-{i}"), concert, &["rock", "pop"]))
                .collect()
        },
    )
    .await;
    fold_rows(bench, report, "one concert a batch").await;
    let (mut usec, mut commands) = (0.0, 0);
    let now = chrono::Utc::now().to_rfc3339();
    for round in 0..ROUNDS {
        let concert = &concerts[round * 101 % CONCERTS];
        let before = bench.commandstats().await;
        bench.apply(&[bench.concert(concert, 5000, &now)]).await;
        let after = bench.commandstats().await;
        usec += measure::usec_per_call(&before, &after, "evalsha");
        commands += measure::commands_run(&before, &after).0;
    }
    report.row(
        "details update, new capacity (rates rewritten on the concert's 12 boards)",
        &format!("{:.3} ms", usec / ROUNDS as f64 / 1000.0),
        &format!("{:.1} redis.calls", commands as f64 / ROUNDS as f64),
    );
    let details_key = format!("{}:{{rk}}:concert-details", bench.app.config.key_prefix);
    let bytes: Option<i64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&details_key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut bench.app.inspect.clone())
        .await
        .expect("memory usage");
    report.row(
        "details hash bytes per concert",
        &format!("{:.1} B", bytes.unwrap_or(0) as f64 / CONCERTS as f64),
        "MEMORY USAGE of the one details hash ÷ 10 000 concerts",
    );
}

/// Sends `batch(round)` as one SQS batch for each of `rounds` rounds, and reports the row
/// `what`: the Redis time of a call, and the commands run per payment (all, and writes).
async fn batch_row(
    bench: &Bench,
    report: &mut Report,
    what: &str,
    rounds: usize,
    batch: impl Fn(usize) -> Vec<serde_json::Value>,
) {
    let (mut usec, mut commands, mut writes, mut payments) = (0.0, 0, 0, 0);
    for round in 0..rounds {
        let batch = batch(round);
        payments += batch.len();
        let before = bench.commandstats().await;
        bench.sqs_batch(batch).await;
        let after = bench.commandstats().await;
        usec += measure::usec_per_call(&before, &after, "evalsha");
        let (all, written) = measure::commands_run(&before, &after);
        commands += all;
        writes += written;
    }
    report.row(
        what,
        &format!("{:.3} ms", usec / rounds as f64 / 1000.0),
        &format!(
            "goal < 1 ms; {:.1} redis.calls per payment, of which {:.1} writes",
            commands as f64 / payments as f64,
            writes as f64 / payments as f64
        ),
    );
}

/// Folds what the batches left in the fold queue with the tick, and reports the fold's Redis
/// time: per call, per payment folded, and per board entry written (one seat-board
/// `ZINCRBY`, with its rate-board `ZADD` where the concert has a capacity).
async fn fold_rows(bench: &Bench, report: &mut Report, batches: &str) {
    let before = bench.commandstats().await;
    let tick = bench.settle().await;
    let after = bench.commandstats().await;
    let calls = after.get("evalsha").map_or(0, |a| a.0) - before.get("evalsha").map_or(0, |b| b.0);
    let usec = measure::usec_per_call(&before, &after, "evalsha") * calls as f64;
    let entries =
        after.get("zincrby").map_or(0, |a| a.0) - before.get("zincrby").map_or(0, |b| b.0);
    report.row(
        &format!("the tick's fold of what those batches left ({batches})"),
        &format!("{:.0} µs per call", usec / calls.max(1) as f64),
        &format!(
            "goal ≤ 1 ms; {} payments in {calls} calls: {:.0} µs per payment, {:.2} µs per board entry written ({entries} entries)",
            tick.folded,
            usec / tick.folded.max(1) as f64,
            usec / entries.max(1) as f64
        ),
    );
}
