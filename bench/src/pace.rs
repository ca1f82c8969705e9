//! `lineup-bench pace`: what admission that follows the booking system costs the promoter's
//! tick in Redis time (docs/operations.md, "Pace"): each queue's promote call with a health
//! level and a pool allotment in force, and each pool's ledger call.
//!
//! # Method
//!
//! - 16 queues (the most a pool serves) in one capacity pool of 1 000 places, each with 200 waiters and a booking
//!   health level of 0.5 (a `BookingHealth` event through event-applier's handler), so each
//!   tick paces, applies the ledger's word and reports back. Ticks go through the promoter's
//!   handler, one after another, 30 of them after 5 that fill the pool.
//! - Each call's execution time comes from SLOWLOG (threshold 0): the promote calls (keys under
//!   `{q:…}`) and the ledger calls (the key `{p:…}`), their median and their longest. The
//!   longest is the one every buyer's poll on the shard may wait behind.
//! - The tick's whole Redis main-thread CPU (`INFO cpu`) over the 30 ticks, per tick and per
//!   queue, is shown beside it.

use std::time::Instant;

use lineup::ids::PoolId;
use lineup::queue::pool::PoolChange;
use redis::Value;
use serde_json::json;

use crate::measure::Bench;
use crate::probe::main_thread_cpu_us;
use crate::report::Report;

const QUEUES: usize = lineup::queue::pool::POOL_QUEUES_MAX;
const WAITERS: usize = 200;
const TICKS: usize = 30;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Pace: a tick with health pacing and a capacity pool");
    let pool = PoolId::parse("bench-pool").expect("an id");
    let change: PoolChange =
        serde_json::from_value(json!({"capacity": 1000})).expect("a pool change");
    bench
        .room()
        .configure_pool(&pool, &change)
        .await
        .expect("the pool");
    let queues: Vec<String> = (0..QUEUES).map(|i| format!("paced-{i:03}")).collect();
    for queue in &queues {
        bench
            .configure(
                queue,
                json!({"pool": "bench-pool", "capacity": 100, "admitPerTick": 10,
                    "sessionSeconds": 3600, "healthRecoverySeconds": 0}),
            )
            .await;
        bench.fill(queue, 0, WAITERS).await;
    }
    let health = json!({"version": "0", "id": "h", "detail-type": "BookingHealth",
        "source": "lineup.payments", "account": "1", "time": chrono::Utc::now().to_rfc3339(),
        "region": "us-east-1", "resources": [],
        "detail": {"queueIds": &queues, "level": 0.5}});
    bench.apply(std::slice::from_ref(&health)).await;
    for _ in 0..5 {
        bench.promote_tick().await;
    }

    let mut probe = bench.app.inspect.clone();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(0)
        .arg("slowlog-max-len")
        .arg(100_000)
        .query_async(&mut probe)
        .await
        .expect("CONFIG SET");
    let _: () = redis::cmd("SLOWLOG")
        .arg("RESET")
        .query_async(&mut probe)
        .await
        .expect("SLOWLOG RESET");
    let cpu_before = main_thread_cpu_us(bench).await;
    let started = Instant::now();
    for _ in 0..TICKS {
        bench.promote_tick().await;
    }
    let wall = started.elapsed();
    let cpu = main_thread_cpu_us(bench).await - cpu_before;
    let log: Vec<Value> = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(-1)
        .query_async(&mut probe)
        .await
        .expect("SLOWLOG GET");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(10_000)
        .query_async(&mut probe)
        .await
        .expect("CONFIG SET");

    let (mut promote, mut ledger) = (Vec::new(), Vec::new());
    for entry in log {
        let Value::Array(fields) = entry else {
            continue;
        };
        let (Some(Value::Int(us)), Some(Value::Array(args))) = (fields.get(2), fields.get(3))
        else {
            continue;
        };
        let text: Vec<String> = args
            .iter()
            .filter_map(|arg| match arg {
                Value::BulkString(bytes) => Some(String::from_utf8_lossy(bytes).into_owned()),
                _ => None,
            })
            .collect();
        if text.first().map(String::as_str) != Some("EVALSHA") {
            continue;
        }
        if text.iter().any(|arg| arg.contains("{p:bench-pool}")) {
            ledger.push(*us);
        } else if text.iter().any(|arg| arg.contains("{q:paced-")) {
            promote.push(*us);
        }
    }
    let describe = |mut times: Vec<i64>| {
        times.sort_unstable();
        match times.as_slice() {
            [] => "none seen".to_owned(),
            all => format!(
                "median {} µs, longest {} µs ({} calls)",
                all[all.len() / 2],
                all[all.len() - 1],
                all.len()
            ),
        }
    };
    report.row(
        "promote call, a queue paced at 0.5 in a pool",
        &describe(promote),
        "SLOWLOG execution time; 16 queues, 200 waiters each",
    );
    report.row(
        "pool ledger call, 16 queues reporting (the most a pool serves)",
        &describe(ledger),
        "SLOWLOG execution time",
    );
    report.row(
        "Redis main-thread CPU a tick",
        &format!(
            "{:.0} µs ({:.1} µs a queue)",
            cpu / TICKS as f64,
            cpu / (TICKS * QUEUES) as f64
        ),
        &format!(
            "INFO cpu over {TICKS} ticks; {:.1} ms a tick on the wall",
            wall.as_secs_f64() * 1e3 / TICKS as f64
        ),
    );
}
