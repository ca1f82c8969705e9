//! `cargo run --release --bin lineup-bench`: lineup against raw Redis and against the designs
//! it replaces, in one run on one machine. Starts its own `redis-server`. Prints a Markdown
//! report; BENCHMARKS.md holds the last one. Speeds are reported, never asserted.
//!
//! For the cold-start section, build the function binaries first:
//! `cargo build --release --bins`. `lineup-bench cold-start` runs that section alone;
//! `lineup-bench throughput` stops after the throughput section; `lineup-bench memory` runs
//! the memory section alone; `lineup-bench reads` runs the board-read section alone;
//! `lineup-bench ranking-writes` runs the ranking writes section alone; `lineup-bench boards`
//! the rolling and trending boards at 10 000 concerts alone; `lineup-bench coupons` the
//! coupon claims against seed 002's design alone; `lineup-bench redis-time` the Redis time
//! per call of every script beside its floor and its least script (`least/`) alone;
//! `lineup-bench per-request` the Redis CPU per request (`INFO cpu`) beside PING alone.
//! Two sections run only alone: `lineup-bench opening-spike`, a scheduled opening replayed
//! whole at a fraction of 2 000 000 members (`spike.rs`), and `lineup-bench arrivals`, new
//! buyers joining a line of 1 000 000 (`arrivals.rs`).

mod arrivals;
mod baseline;
mod boards;
mod capacity;
mod cold_start;
mod coupons;
mod ingest;
mod measure;
mod memory;
mod opening;
mod per_request;
mod probe;
mod ranking_writes;
mod reads;
mod redis_time;
mod report;
mod round_trips;
mod scale;
mod spike;
mod spike_replay;
mod spike_report;
mod throughput;
mod util;

use measure::Bench;
use report::Report;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut report = Report::new();
    let bench = Bench::start().await?;
    report.heading(&format!(
        "lineup-bench, {} ({} cores, {}), Redis {}",
        chrono::Utc::now().format("%Y-%m-%d"),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        std::env::consts::ARCH,
        bench.redis_version().await
    ));

    // The sections that run alone.
    let alone = match std::env::args().nth(1).as_deref() {
        Some("ranking-writes") => {
            ranking_writes::run(&bench, &mut report).await;
            true
        }
        Some("boards") => {
            boards::run(&bench, &mut report).await;
            true
        }
        Some("memory") => {
            memory::run(&bench, &mut report).await;
            true
        }
        Some("redis-time") => {
            redis_time::run(&bench, &mut report).await;
            true
        }
        Some("reads") => {
            reads::run(&bench, &mut report).await;
            true
        }
        Some("coupons") => {
            coupons::run(&bench, &mut report).await;
            true
        }
        Some("opening") => {
            opening::run(&bench, &mut report).await;
            true
        }
        Some("capacity") => {
            capacity::run(&bench, &mut report).await;
            true
        }
        Some("per-request") => {
            per_request::per_request(&bench, &mut report).await;
            true
        }
        Some("opening-spike") => {
            spike::opening_spike(&bench, &mut report).await;
            true
        }
        Some("arrivals") => {
            arrivals::arrivals(&bench, &mut report).await;
            true
        }
        _ => false,
    };
    if alone {
        report.print();
        return Ok(());
    }
    // First, while the server is still empty and quiet: it only has to accept connections.
    cold_start::run(&bench, &mut report).await;
    if std::env::args().nth(1).as_deref() == Some("cold-start") {
        report.print();
        return Ok(());
    }
    round_trips::run(&bench, &mut report).await;
    throughput::run(&bench, &mut report).await;
    if std::env::args().nth(1).as_deref() == Some("throughput") {
        report.print();
        return Ok(());
    }
    scale::run(&bench, &mut report).await;
    memory::run(&bench, &mut report).await;
    redis_time::run(&bench, &mut report).await;
    per_request::per_request(&bench, &mut report).await;
    capacity::run(&bench, &mut report).await;
    reads::run(&bench, &mut report).await;
    ranking_writes::run(&bench, &mut report).await;
    boards::run(&bench, &mut report).await;
    ingest::run(&bench, &mut report).await;
    coupons::run(&bench, &mut report).await;
    opening::run(&bench, &mut report).await;
    report.print();
    Ok(())
}
