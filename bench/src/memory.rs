//! Redis memory per waiting buyer at a million waiters, and what presence (one deadline per
//! place of the span) adds to it. Polling again rewrites a deadline in place: the figure is
//! the most presence holds.

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
