//! Bytes of the rankings' exactly-once memory: what a payment leaves in Redis once it is on
//! its boards, for payments of 0, 2 and 5 genres; the Redis CPU of a batch of 10; and what
//! freeing a large record group costs.
//!
//! # Method
//!
//! - For each run: 200 concerts, each with details and a payment in the run's genres, fill
//!   every board (calendar, rate, rolling, trending) and the window fields. Then 5 000
//!   payments for those 200 concerts go through the event applier in batches of 100, and the tick
//!   folds what the batches left. Payment ids are 36-character UUIDs.
//! - The figure is `used_memory` after less before, ÷ the payments: the payment records, and
//!   whatever else a payment adds once its concert is on its boards (nothing, by design).
//! - The group's 256 hashes (a marker each) are made by the first payment of its span: the
//!   first run's fill, here. Each run then writes into them, as every later payment does.
//! - A site taking 1 000 000 payments a day puts about 34 000 records in each hash. Hash
//!   tables grow by doubling, so bytes per record vary with the fill; the last run writes
//!   300 000 payments (about 1 200 a hash) to show a fuller table.
//! - 30 days at 1 000 000 payments a day is the figure × 30 000 000.
//! - Redis time per batch: 100 SQS batches of 10 payments (2 genres, 10 concerts each),
//!   the main thread's CPU (`INFO cpu`) over them ÷ 100, beside EVALSHA's µs, with five
//!   record groups live (four redeployments with other windows made the other four), as a
//!   steady window leaves them: each payment never seen reads five.
//! - Freeing: a hash of 34 000 records built by a script, then `DEL`, which frees on the main
//!   thread as an expiry does. The tick unlinks a group before that (`UNLINK`).

use serde_json::Value;

use crate::measure::{self, Bench};
use crate::probe;
use crate::report::{met, Report};

const CONCERTS: usize = 200;
const PAYMENTS: usize = 5_000;
/// Payments that fill each slot of a group past a listpack's 128 entries.
const AT_SCALE: usize = 300_000;

/// A 36-character UUID-shaped payment id, different for every `(run, i)`.
fn payment_id(run: usize, i: usize) -> String {
    let n = (run as u64) << 40 | i as u64;
    let mixed = n.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        mixed >> 32,
        (mixed >> 16) & 0xffff,
        mixed & 0xfff,
        (n >> 8) & 0xfff,
        n & 0xffff_ffff_ffff
    )
}

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Exactly-once memory: bytes a payment leaves in Redis");
    let two: &[&str] = &["rock", "pop"];
    let runs: [(&str, &[&str], usize); 4] = [
        ("0 genres", &[], PAYMENTS),
        ("2 genres", two, PAYMENTS),
        (
            "5 genres",
            &["rock", "pop", "jazz", "k-pop", "indie"],
            PAYMENTS,
        ),
        (
            "2 genres, 300 000 payments (about 1 200 records a hash)",
            two,
            AT_SCALE,
        ),
    ];
    let mut worst: f64 = 0.0;
    for (run, (what, genres, payments)) in runs.into_iter().enumerate() {
        let per_payment = bytes_per_payment(bench, run, genres, payments).await;
        if genres.len() == 2 {
            worst = worst.max(per_payment);
        }
        report.row(
            &format!(
                "bytes per payment, {what} (used_memory delta ÷ {payments}, boards populated)"
            ),
            &format!("{per_payment:.1} B"),
            &format!(
                "goal ≤ 160 B with 2 genres; 30 days at 1 000 000 a day: {:.1} GB",
                per_payment * 30_000_000.0 / 1e9
            ),
        );
    }
    report.row(
        "goal: ≤ 160 B per payment, 2 genres",
        met(worst <= 160.0),
        &format!("{worst:.1} B at most"),
    );
    batch_time(bench, report).await;
    free_time(bench, report).await;
}

/// Fills the boards of `CONCERTS` concerts with one payment each in `genres`, then returns the
/// growth of `used_memory` per payment over `payments` more, once all are folded.
async fn bytes_per_payment(bench: &Bench, run: usize, genres: &[&str], payments: usize) -> f64 {
    let an_hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let concerts: Vec<String> = (0..CONCERTS).map(|i| format!("dd{run}-{i}")).collect();
    let details: Vec<Value> = concerts
        .iter()
        .map(|c| bench.concert(c, 20_000, &an_hour_ago))
        .collect();
    bench.apply(&details).await;
    let fill: Vec<Value> = concerts
        .iter()
        .enumerate()
        .map(|(i, c)| bench.payment(&payment_id(run + 10, i), c, genres))
        .collect();
    bench.apply(&fill).await;
    bench.settle().await;
    let before = bench.used_memory().await;
    for start in (0..payments).step_by(100) {
        let batch: Vec<Value> = (start..payments.min(start + 100))
            .map(|i| bench.payment(&payment_id(run, i), &concerts[i * 7 % CONCERTS], genres))
            .collect();
        bench.apply(&batch).await;
    }
    bench.settle().await;
    let after = bench.used_memory().await;
    (after - before) as f64 / payments as f64
}

/// Redis main-thread CPU per SQS batch of 10 payments (10 concerts, 2 genres each), with the
/// record groups a steady window leaves live: 4 redeployments with other
/// `RANKING_DEDUPE_DAYS` each write 1 000 payments, so a lookup reads five groups.
async fn batch_time(bench: &Bench, report: &mut Report) {
    const BATCHES: usize = 100;
    let an_hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let concerts: Vec<String> = (0..100).map(|i| format!("db-{i}")).collect();
    let details: Vec<Value> = concerts
        .iter()
        .map(|c| bench.concert(c, 20_000, &an_hour_ago))
        .collect();
    bench.apply(&details).await;
    for (n, days) in ["31", "27", "23", "19"].into_iter().enumerate() {
        let stack = bench.app.redeployed(&[("RANKING_DEDUPE_DAYS", days)]).await;
        for start in (0..1_000).step_by(100) {
            let batch: Vec<Value> = (start..start + 100)
                .map(|i| {
                    bench.payment(&payment_id(20 + n, i), &concerts[i % 100], &["rock", "pop"])
                })
                .collect();
            event_applier::apply_events(&batch, &stack.event_applier).await;
        }
    }
    bench.settle().await;
    let index = format!("{}:{{rk}}:records", bench.app.config.key_prefix);
    let groups: u64 = redis::cmd("ZCARD")
        .arg(&index)
        .query_async(&mut bench.app.inspect.clone())
        .await
        .expect("ZCARD");
    let cpu_before = probe::main_thread_cpu_us(bench).await;
    let stats_before = bench.commandstats().await;
    for round in 0..BATCHES {
        let batch = (0..10)
            .map(|i| {
                bench.payment(
                    &payment_id(100 + round, i),
                    &concerts[(round * 10 + i) * 7 % concerts.len()],
                    &["rock", "pop"],
                )
            })
            .collect();
        bench.sqs_batch(batch).await;
    }
    let cpu = probe::main_thread_cpu_us(bench).await - cpu_before;
    let stats_after = bench.commandstats().await;
    let evalsha = measure::usec_per_call(&stats_before, &stats_after, "evalsha");
    let mut by_command: Vec<(u64, u64, &String)> = stats_after
        .iter()
        .map(|(name, (calls, usec))| {
            let (c0, u0) = stats_before.get(name).copied().unwrap_or_default();
            (usec - u0, calls - c0, name)
        })
        .filter(|(usec, _, _)| *usec > 0)
        .collect();
    by_command.sort();
    let hget = by_command
        .iter()
        .find(|(_, _, name)| name.as_str() == "hget")
        .map_or(0, |(_, calls, _)| *calls);
    bench.settle().await;
    report.row(
        &format!("Redis time per SQS batch of 10 payments (10 concerts, 2 genres; {groups} record groups live; the call folds within its budget)"),
        &format!("{:.3} ms main-thread CPU", cpu / BATCHES as f64 / 1000.0),
        &format!(
            "goal < 1 ms; EVALSHA {:.3} ms per call; {:.1} HGETs per payment",
            evalsha / 1000.0,
            hget as f64 / (BATCHES * 10) as f64
        ),
    );
}

/// What Redis spends freeing one hash of a group when it ends, at 1 000 000 payments a day:
/// 34 000 records of 12-byte fields and 40-byte values, a hash table, deleted with DEL (as an
/// expiry frees it without lazy freeing). Built by a script, not by payments.
async fn free_time(bench: &Bench, report: &mut Report) {
    let key = format!("{}:free-probe", bench.app.config.key_prefix);
    let mut conn = bench.app.inspect.clone();
    let () = redis::cmd("EVAL")
        .arg(
            "for i = 1, tonumber(ARGV[1]) do \
               redis.call('HSET', KEYS[1], struct.pack('>I4I4I4', i, i * 7, i * 13), string.rep('r', 40)) \
             end",
        )
        .arg(1)
        .arg(&key)
        .arg(34_000)
        .query_async(&mut conn)
        .await
        .expect("the probe hash");
    let before = bench.commandstats().await;
    let () = redis::cmd("DEL")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .map(|_: u64| ())
        .expect("DEL");
    let after = bench.commandstats().await;
    report.row(
        "Redis time to free one hash of a group at 1 000 000 payments a day (34 000 records)",
        &format!(
            "{:.3} ms",
            measure::usec_per_call(&before, &after, "del") / 1000.0
        ),
        "DEL, as an expiry frees it without lazyfree-lazy-expire; the tick unlinks it first",
    );
}
