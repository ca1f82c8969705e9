//! A scheduled opening with N in the pre-queue (`LINEUP_BENCH_PREQUEUE`, default 1M): Redis
//! bytes per member; the longest single Redis call of the opening (SLOWLOG, every call over
//! 200 µs kept, from advancing the opening through the first ticks and 2000 status polls,
//! sent one at a time: the joins' own cost is the issue row of "Redis time per call"); and the
//! status latency of drawn members just after the opening.
//!
//! # What limits the figures
//!
//! - A pre-queue member is one sorted-set entry whose score is its draw ticket, and a place of
//!   the presence span (written from its first poll after the opening on). Its ticket ends in
//!   its arrival counter, so the span is as dense as a plain line's.
//! - Nothing runs at the opening beyond the usual calls: the draw is already the order of the
//!   sorted set. The first tick adds one `ZCOUNT` (O(log n)) to record the draw's size.
//! - The joins themselves are issue calls; their Redis time is the issue row of `redis_time.rs`.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::measure::{percentile, Bench};
use crate::report::Report;
use crate::util::ms;

pub async fn run(bench: &Bench, report: &mut Report) {
    let members: usize = std::env::var("LINEUP_BENCH_PREQUEUE")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    report.section(&format!(
        "Scheduled opening: one queue with {members} in the pre-queue"
    ));
    let queue = "opening";
    let rfc =
        |at: chrono::DateTime<chrono::Utc>| at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    // Far ahead while the pre-queue fills; advancing a pending opening keeps its seed.
    bench
        .configure(
            queue,
            json!({"capacity": 1000, "waitingIdleSeconds": 86_400,
                "opensAt": rfc(chrono::Utc::now() + chrono::Duration::days(1))}),
        )
        .await;
    let mut conn = bench.app.inspect.clone();
    // SLOWLOG's threshold (µs) and length, set together.
    let slowlog = |slower_than: &'static str, max_len: &'static str| {
        let mut pipe = redis::pipe();
        pipe.cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-log-slower-than")
            .arg(slower_than)
            .ignore()
            .cmd("CONFIG")
            .arg("SET")
            .arg("slowlog-max-len")
            .arg(max_len)
            .ignore();
        pipe
    };
    let before = bench.used_memory().await;
    let started = Instant::now();
    bench.fill(queue, 0, members).await;
    let fill_rate = members as f64 / started.elapsed().as_secs_f64();
    let bytes = bench.used_memory().await - before;
    slowlog("200", "10000")
        .query_async::<()>(&mut conn)
        .await
        .expect("slowlog");
    redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async::<()>(&mut conn)
        .await
        .expect("slowlog");
    let opens = chrono::Utc::now() + chrono::Duration::seconds(2);
    bench.configure(queue, json!({"opensAt": rfc(opens)})).await;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    // The first tick after the opening: records the draw, admits the first slices.
    bench.promote_tick().await;
    let samples = bench.status_latencies(queue, 2000).await;
    bench.promote_tick().await;
    let slow: Vec<redis::Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(10_000)
        .query_async(&mut conn)
        .await
        .expect("slowlog");
    // Each entry: id, timestamp, µs, the command's arguments, …
    let longest = slow
        .iter()
        .filter_map(|entry| match entry {
            redis::Value::Array(fields) => match (fields.get(2), fields.get(3)) {
                (Some(redis::Value::Int(us)), Some(redis::Value::Array(args))) => {
                    let name = match args.first() {
                        Some(redis::Value::BulkString(b)) => {
                            String::from_utf8_lossy(b).into_owned()
                        }
                        _ => String::new(),
                    };
                    // The bench's own reads (ZRANDMEMBER for tokens) are not lineup's calls.
                    (name == "EVALSHA").then_some((*us, name))
                }
                _ => None,
            },
            _ => None,
        })
        .max();
    slowlog("10000", "128")
        .query_async::<()>(&mut conn)
        .await
        .expect("slowlog");
    report.row(
        "pre-queue joins",
        &format!("{fill_rate:.0} /s"),
        "issue through the waiting room, 512 callers",
    );
    report.row(
        "Redis bytes per pre-queue member",
        &format!("{:.1} B", bytes as f64 / members as f64),
        "goal ≤ 150 B (a sorted-set entry; no presence before the opening)",
    );
    let (us, name) = longest.unwrap_or((0, String::from("no script call over 200 µs")));
    report.row(
        "longest single Redis call of the opening (SLOWLOG)",
        &format!("{:.3} ms", us as f64 / 1000.0),
        &format!("{name}; goal ≤ about 1 ms"),
    );
    report.row(
        "status p50 / p99 just after the opening",
        &format!(
            "{:.3} / {:.3} ms",
            ms(percentile(&samples, 50.0)),
            ms(percentile(&samples, 99.0))
        ),
        "2000 random drawn members; compare Scale's status at 1M",
    );
}
