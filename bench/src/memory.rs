//! Redis memory per waiting buyer at a million waiters, and what presence (one deadline per
//! place of the span) adds to it. Polling again rewrites a deadline in place: the figure is
//! the most presence holds.
//!
//! # Method
//!
//! - The bench fills a queue whose idle period is a day, so nobody is dropped while it fills.
//!   Presence is one deadline per place of the span, rewritten in place by each poll, so the
//!   filled queue holds the most presence can. Rate limits are off.
//! - The figure is Redis's `used_memory` grown by the fill, per waiter; presence is its key's
//!   `MEMORY USAGE`. The replaced design (`baseline::memory_per_buyer`, a token record per buyer)
//!   is measured at 100 000 buyers, per buyer.
//! - The figures are Redis's, so a debug build measures the same.
//!
//! # What limits the figures
//!
//! - A waiter is a sorted-set entry (user id and ticket) plus its presence.
//! - Presence is 4 bytes at each place of the presence span (docs/waiting-room.md, "Presence"):
//!   the span is a power of two, at most four times the line. Polls rewrite a deadline in
//!   place, and a waiter told to poll late holds no more.
//! - Presence does not grow with the tickets a queue has issued. `presence::presence_memory…`
//!   keeps four waiters at ticket 50 million in at most the smallest span (128 places).
//! - Shorter user ids move it.
//! - The rate-limit counters add a hash field per buyer, for at most two minutes, while limits
//!   are on.

use lineup::ids::QueueId;
use serde_json::json;

use crate::baseline;
use crate::measure::Bench;
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    const WAITERS: usize = 1_000_000;
    report.section("Memory: one queue with 1M waiting");
    let queue = "memory";
    // The longest idle period: nobody is dropped while the queue fills.
    bench
        .configure(queue, json!({"capacity": 1, "waitingIdleSeconds": 86_400}))
        .await;
    bench.issue(queue, "holder").await;
    let before = bench.used_memory().await;
    bench.fill(queue, 0, WAITERS).await;
    let filled = bench.used_memory().await - before;
    let keys = lineup::queue::keys::QueueKeys::new(
        &bench.app.config.key_prefix,
        &QueueId::parse(queue).unwrap(),
    );
    let mut inspect = bench.app.inspect.clone();
    let presence: i64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys.presence)
        .arg("SAMPLES")
        .arg(0)
        .query_async::<Option<i64>>(&mut inspect)
        .await
        .expect("memory usage")
        .unwrap_or(0);
    let per = |bytes: i64| bytes as f64 / WAITERS as f64;
    let baseline = baseline::memory_per_buyer(bench, 100_000).await;
    report.row(
        "Redis bytes per waiting buyer (1M, each seen once)",
        &format!("{:.1} B", per(filled)),
        &format!(
            "of which presence {:.1} B; goal ≤ 150 B; baseline design {baseline:.1} B ({:.2} ×)",
            per(presence),
            per(filled) / baseline
        ),
    );
}
