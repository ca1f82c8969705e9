//! Redis commands a client sends per operation, from `INFO commandstats` deltas. Commands in one
//! pipeline share a round trip. Every script runs once before the counts, so each operation is
//! counted on a server that has its script cached.
//!
//! A promotion tick is one round trip: a pipeline of the registry read and one script per queue.
//! It costs further round trips on a container's first tick, on a tick that discovers new queues,
//! and for a queue admitting more than 32 in a tick.

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section("Round trips per operation (client commands from INFO commandstats; commands in one pipeline share a round trip)");
    let queue = "rt";
    let holder = bench.issue(queue, "holder").await;
    let waiter = bench.issue(queue, "waiter").await;
    // Warm every script once.
    let warm = bench.issue("rt-warm", "warm").await;
    bench.leave("rt-warm", &warm).await;
    bench.status(queue, &waiter).await;
    bench.promote_tick().await;
    bench.promote_tick().await;
    bench.reap_queue(queue).await;
    bench.apply(&[bench.payment("warm", "c0", &[])]).await;
    bench.top("daily").await;
    bench.concert_rank("daily", "c0").await;
    let ops: Vec<(&str, futures::future::BoxFuture<'_, ()>)> = vec![
        (
            "token issue",
            Box::pin(async {
                bench.issue(queue, "newcomer").await;
            }),
        ),
        (
            "status",
            Box::pin(async {
                bench.status(queue, &waiter).await;
            }),
        ),
        (
            "leave",
            Box::pin(async {
                bench.leave(queue, &holder).await;
            }),
        ),
        (
            "promotion tick",
            Box::pin(async {
                bench.promote_tick().await;
            }),
        ),
        (
            "reaping chunk",
            Box::pin(async {
                bench.reap_queue(queue).await;
            }),
        ),
        (
            "ranking event",
            Box::pin(async {
                bench.apply(&[bench.payment("one", "c1", &["rock"])]).await;
            }),
        ),
        (
            "SQS batch of 10",
            Box::pin(async {
                bench
                    .sqs_batch(
                        (0..10)
                            .map(|i| bench.payment(&format!("b{i}"), "c2", &[]))
                            .collect(),
                    )
                    .await;
            }),
        ),
        (
            "top-N read",
            Box::pin(async {
                bench.top("daily").await;
            }),
        ),
        (
            "single-rank read",
            Box::pin(async {
                bench.concert_rank("daily", "c1").await;
            }),
        ),
    ];
    for (name, op) in ops {
        let before = bench.commandstats().await;
        op.await;
        let after = bench.commandstats().await;
        let commands = measure::client_commands(&before, &after);
        let note = match name {
            "promotion tick" => {
                "target 1: the registry read and every queue's script in one pipeline"
            }
            _ => "target 1",
        };
        report.row(name, &format!("{commands}"), note);
    }
}
