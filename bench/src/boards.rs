//! Redis time of the board kinds at 10 000 concerts (each on every board, two genres each):
//! a top-10 read of each, a batch of 10 payments writing every board, and a tick call taking
//! a full chunk of bucket fields off the rolling boards.
//!
//! # What limits the figures
//!
//! - A top-10 read costs the same on every board kind: the boards are kept current by the
//!   writes and the tick, so a read never combines buckets. Each read here is served from the
//!   page cache (docs/rankings.md, "Caching"), since it is the same read many times with no
//!   write in between.
//! - A tick call's cost is linear in its fields: 50 fields of two genres is about half a
//!   millisecond. A tick makes up to 16 calls.
//! - What a batch of payments writes on every board kind, and what the tick's fold of it costs:
//!   `ranking_writes.rs`.

use serde_json::json;

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Boards at 10 000 concerts (Redis time, INFO commandstats usec)");
    const CONCERTS: usize = 10_000;
    let now = chrono::Utc::now().to_rfc3339();
    for chunk in (0..CONCERTS).collect::<Vec<_>>().chunks(100) {
        let events: Vec<_> = chunk
            .iter()
            .map(|i| {
                json!({"version": "0", "id": format!("fill-{i}"), "detail-type": "PaymentCompleted",
                       "source": "lineup.payments", "account": "1", "time": now, "region": "us-east-1",
                       "resources": [], "detail": {"paymentId": format!("fill-{i}"), "concertId": format!("k{i}"),
                       "seats": 1 + i % 97, "genres": ["rock", "pop"], "completedAt": now}})
            })
            .collect();
        bench.apply(&events).await;
    }
    bench.settle().await;
    const READS: usize = 200;
    for period in ["daily", "last-24h", "last-7d", "trending"] {
        bench.top(period).await;
        let before = bench.commandstats().await;
        for _ in 0..READS {
            bench.top(period).await;
        }
        let after = bench.commandstats().await;
        let usec = measure::usec_per_call(&before, &after, "evalsha");
        report.row(
            &format!("top-10 read, {period}"),
            &format!("{usec:.1} µs"),
            "goal < 1 ms",
        );
    }

    // A tick call with a full chunk: a bucket that left the last 24 hours, holding
    // TICK_FIELDS concerts of two genres each.
    let rankings = &bench.app.stack.event_applier.rankings;
    rankings
        .tick(&lineup::clock::SystemClock)
        .await
        .expect("tick");
    let templates = lineup::bench_support::window_templates(rankings);
    let day = &templates["windows"][0];
    let (hash, board) = (
        day["hash"].as_str().unwrap(),
        day["board"].as_str().unwrap(),
    );
    let state = templates["state"].as_str().unwrap();
    let mut inspect = bench.app.inspect.clone();
    let (secs, _): (i64, i64) = redis::cmd("TIME").query_async(&mut inspect).await.unwrap();
    let bucket = secs * 1000 / 300_000 - 300;
    let fields = lineup::bench_support::TICK_FIELDS;
    let mut pipe = redis::pipe();
    for i in 0..fields {
        let concert = format!("k{i}");
        pipe.cmd("HSET")
            .arg(format!("{hash}{bucket}"))
            .arg(format!("{concert} pop,rock"))
            .arg(1);
        for key in [
            board.to_owned(),
            format!("{board}:genre:rock"),
            format!("{board}:genre:pop"),
        ] {
            pipe.cmd("ZINCRBY").arg(key).arg(-1).arg(&concert);
        }
    }
    pipe.cmd("HSET").arg(state).arg("24h").arg(bucket - 1);
    pipe.query_async::<()>(&mut inspect).await.unwrap();
    let command = lineup::bench_support::roll_command(rankings);
    let mut call = redis::cmd(std::str::from_utf8(&command[0]).unwrap());
    for arg in &command[1..] {
        call.arg(arg.as_slice());
    }
    let before = bench.commandstats().await;
    let reply: redis::Value = call.query_async(&mut inspect).await.unwrap();
    let processed = lineup::bench_support::roll_fields(reply).expect("a roll reply");
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&before, &after, "evalsha");
    report.row(
        &format!("tick call taking {processed} bucket fields off 3 boards each"),
        &format!("{usec:.0} µs"),
        "goal ≤ 1 ms",
    );
}
