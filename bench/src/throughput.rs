//! Operations per second through the real handler code, against `redis-benchmark` running
//! the same script (and ZADD) on the same server.
//!
//! # Method
//!
//! - 64 concurrent callers share one multiplexed connection, as the requests of one Lambda
//!   container would. `redis-benchmark` runs the same script raw, on 64 connections.
//! - The bench prepares each event's JSON text before it starts the clock, and drops each
//!   response. So it times what an invocation does: deserialize the API Gateway event and handle
//!   it. Status is compared with the status script itself.
//!
//! # What limits the figures
//!
//! - Both sides share two cores with Redis. So the ratio is mostly the handler's own CPU
//!   (deserializing the event, checking the token, building the JSON reply) competing with Redis
//!   for a core. In AWS the handler runs in its own sandbox, and Redis is the only shared part.
//! - Run to run, the ratios move by a quarter or more on this machine, mostly on
//!   `redis-benchmark`'s side.
//! - A ratio above 1 means `redis-benchmark` itself was the limit, not Redis. It has one request
//!   in flight on each of its 64 connections.
//! - Top-N is the lowest ratio in most runs. Its reply (ten concerts with scores and ranks) costs
//!   the most to decode and encode; Redis answers it fastest.
//! - Redis itself is the ceiling. The issue script does about ten commands, so it runs at about a
//!   third of raw ZADD.
//! - More shards (cluster mode) scale it out. Fewer commands per script would move it up.

use std::time::Duration;

use serde_json::json;

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Throughput against raw Redis (64 concurrent callers, one connection)");
    const CALLERS: usize = 64;
    const RUN: Duration = Duration::from_secs(3);
    bench.configure("tp", json!({"capacity": 1})).await;
    bench.issue("tp", "holder").await;
    // Each new buyer's event is the template with its own user id: one string replacement
    // per call, where building the event afresh would cost more than the handler.
    let issue_template = Bench::event("POST", "/queues/tp/tokens", Some(r#"{"userId":"@USER@"}"#));
    let issued = measure::rate(CALLERS, RUN, |n| {
        let event = issue_template.replacen("@USER@", &format!("tp-{n}"), 1);
        async move {
            let status = bench.invoke_queue_api(&event).await;
            assert_eq!(status, 201, "issue");
        }
    })
    .await;
    let tokens: Vec<String> = futures::future::join_all(
        (0..1000).map(|i| async move { bench.issue("tp", &format!("tp-{i}")).await }),
    )
    .await;
    let status_events: Vec<String> = tokens
        .iter()
        .map(|token| Bench::event("GET", &format!("/queues/tp/tokens/{token}"), None))
        .collect();
    let polled = measure::rate(CALLERS, RUN, |n| {
        let event = &status_events[n as usize % status_events.len()];
        async move {
            let status = bench.invoke_queue_api(event).await;
            assert_eq!(status, 200, "status");
        }
    })
    .await;
    for i in 0..100 {
        bench
            .apply(&[bench.payment(&format!("tp-pay-{i}"), &format!("c{i}"), &[])])
            .await;
    }
    let top_event = Bench::event("GET", "/rankings/daily?limit=10", None);
    let read = measure::rate(CALLERS, RUN, |_| async {
        let status = bench.invoke_ranking_api(&top_event).await;
        assert_eq!(status, 200, "top");
    })
    .await;

    let raw_issue = bench.redis_benchmark_issue("tp-raw").await;
    let raw_status = bench.redis_benchmark_status("tp").await;
    let raw_top = bench.redis_benchmark_top().await;
    let raw_zadd = bench.redis_benchmark_zadd().await;
    report.row(
        "token issue (handler)",
        &format!("{issued:.0}/s"),
        &format!(
            "{:.2} × raw EVALSHA issue ({raw_issue:.0}/s)",
            issued / raw_issue
        ),
    );
    report.row(
        "status (handler)",
        &format!("{polled:.0}/s"),
        &format!(
            "{:.2} × raw EVALSHA status ({raw_status:.0}/s)",
            polled / raw_status
        ),
    );
    report.row(
        "top-N read (handler)",
        &format!("{read:.0}/s"),
        &format!("{:.2} × raw EVALSHA top ({raw_top:.0}/s)", read / raw_top),
    );
    report.row(
        "raw ZADD (redis-benchmark)",
        &format!("{raw_zadd:.0}/s"),
        "the server's ceiling for a one-command write",
    );
}
