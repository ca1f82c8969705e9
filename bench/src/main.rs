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
mod cold_start;
mod measure;
mod per_request;
mod probe;
mod report;
mod spike;
mod spike_replay;
mod spike_report;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use lineup::bench_support;
use lineup::ids::{ConcertId, QueueId, UserId};
use lineup::queue::keys::QueueKeys;
use lineup::ranking::{Board, Order, Period};
use lineup::token::TokenClaims;
use measure::{percentile, Bench};
use report::Report;
use serde_json::json;

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
            ranking_writes(&bench, &mut report).await;
            true
        }
        Some("boards") => {
            boards(&bench, &mut report).await;
            true
        }
        Some("memory") => {
            memory(&bench, &mut report).await;
            true
        }
        Some("redis-time") => {
            redis_time(&bench, &mut report).await;
            true
        }
        Some("reads") => {
            board_reads(&bench, &mut report).await;
            true
        }
        Some("coupons") => {
            coupons(&bench, &mut report).await;
            true
        }
        Some("opening") => {
            opening(&bench, &mut report).await;
            true
        }
        Some("capacity") => {
            capacity(&bench, &mut report).await;
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
    round_trips(&bench, &mut report).await;
    throughput(&bench, &mut report).await;
    if std::env::args().nth(1).as_deref() == Some("throughput") {
        report.print();
        return Ok(());
    }
    scale(&bench, &mut report).await;
    memory(&bench, &mut report).await;
    redis_time(&bench, &mut report).await;
    per_request::per_request(&bench, &mut report).await;
    capacity(&bench, &mut report).await;
    board_reads(&bench, &mut report).await;
    ranking_writes(&bench, &mut report).await;
    boards(&bench, &mut report).await;
    ingest(&bench, &mut report).await;
    coupons(&bench, &mut report).await;
    opening(&bench, &mut report).await;
    report.print();
    Ok(())
}

/// Redis commands a client sends per operation, from `INFO commandstats` deltas.
async fn round_trips(bench: &Bench, report: &mut Report) {
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

/// Operations per second through the real handler code, against `redis-benchmark` running
/// the same script (and ZADD) on the same server.
async fn throughput(bench: &Bench, report: &mut Report) {
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

/// Status and issue latency with 10k, 100k and 1M buyers waiting in one queue,
/// against the global-queue design whose status fetches the whole line.
async fn scale(bench: &Bench, report: &mut Report) {
    report.section("Scale: one queue with N waiting");
    let queue = "scale";
    bench.configure(queue, json!({"capacity": 1})).await;
    bench.issue(queue, "holder").await;
    let mut filled = 0usize;
    for target in [10_000usize, 100_000, 1_000_000] {
        let started = Instant::now();
        bench.fill(queue, filled, target).await;
        let fill_rate = (target - filled) as f64 / started.elapsed().as_secs_f64();
        filled = target;
        let tokens = bench.tokens_for(queue, 2000).await;
        let mut samples = Vec::new();
        for token in &tokens {
            let t = Instant::now();
            bench.status(queue, token).await;
            samples.push(t.elapsed());
        }
        samples.sort();
        let (p50, p99) = (percentile(&samples, 50.0), percentile(&samples, 99.0));
        let baseline = baseline::global_status_latency(bench, target).await;
        report.row(
            &format!("status p50 / p99 at {target}"),
            &format!("{:.3} / {:.3} ms", ms(p50), ms(p99)),
            &format!(
                "baseline ZRANGE 0 -1: {:.1} / {:.1} ms; lineup ÷ baseline {:.4} (p50)",
                ms(baseline.0),
                ms(baseline.1),
                ms(p50) / ms(baseline.0)
            ),
        );
        let issue = baseline::issue_latency(bench, queue, target).await;
        report.row(
            &format!("token issue p50 at {target}, one caller"),
            &format!("{:.3} ms", ms(issue.0)),
            &format!(
                "baseline 7 separate commands {:.3} ms; lineup ÷ baseline {:.2}",
                ms(issue.1),
                ms(issue.0) / ms(issue.1)
            ),
        );
        report.row(
            &format!("fill to {target}"),
            &format!("{fill_rate:.0} issues/s"),
            "512 in flight",
        );
    }
}

/// Redis memory per waiting buyer at a million waiters, and what presence (one deadline per
/// place of the span) adds to it. Polling again rewrites a deadline in place: the figure is
/// the most presence holds.
async fn memory(bench: &Bench, report: &mut Report) {
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

/// Redis time per call of every buyer-facing script, beside its floor, the least script that
/// keeps the call's behaviour (`least/`) and the bare commands a minimal design would send.
/// Each window: `CONFIG RESETSTAT`, then prepared calls sent one after another from one client
/// (nothing else runs), then `INFO commandstats`. The floor of a call is `EVALSHA` of a script
/// that only returns, with the same keys and arguments.
async fn redis_time(bench: &Bench, report: &mut Report) {
    const WAITERS: usize = 20_000;
    const CALLS: usize = 2_000;
    const ROUNDS: usize = 5;
    report.section(&format!(
        "Redis time per call, {WAITERS} waiting (usec_per_call from INFO commandstats; one client sends prepared calls, nothing else runs; median of {ROUNDS} windows of {} calls; floor: EVALSHA of a script that only returns, same keys and arguments)",
        CALLS / ROUNDS
    ));
    let queue = "time";
    let id = QueueId::parse(queue).unwrap();
    let room = &bench.app.stack.queue_api.room;
    let mut conn = bench.app.inspect.clone();
    // One ended session, so that a waiter's status carries a wait estimate.
    bench.configure(queue, json!({"capacity": 2})).await;
    let holder = bench.issue(queue, "holder").await;
    let leaver = bench.issue(queue, "leaver").await;
    bench.fill(queue, 0, WAITERS).await;
    bench.leave(queue, &leaver).await;
    bench.status(queue, &holder).await;
    let holder = TokenClaims::verify(&holder, &bench.app.config.token_key).expect("a token");
    room.check(&holder)
        .await
        .unwrap()
        .expect("the holder is active");
    room.summary(&id).await.unwrap();
    let floor: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let keys = QueueKeys::new(&bench.app.config.key_prefix, &id);
    let scratch_seen = format!("{}:bare-seen", keys.meta);
    let scratch_line = format!("{}:bare-waiting", keys.meta);
    let config = room.config();
    let (user_limit, ip_limit) = (
        config.rate_limit_user_per_minute.max(10).to_string(),
        config.rate_limit_ip_per_minute.max(100).to_string(),
    );
    let creation = config.creation.as_str();
    let waiters = bench.random_waiters(queue, 2 * CALLS).await;
    let (polled, leaving) = waiters.split_at(CALLS);
    // Each polled waiter has polled once since the wait estimate appeared, as a waiter who
    // polls as told has: the measured poll is its next one, in the heartbeat windows it was
    // told for.
    for (user, ticket) in polled {
        let claims = TokenClaims {
            queue: id.clone(),
            user: crate::user(user),
            ticket: *ticket,
        };
        room.status(&claims).await.unwrap();
    }

    let mut rows: Vec<TimeRow> = Vec::new();
    rows.push((
        "status (a waiter's poll)",
        polled
            .iter()
            .map(|(user, ticket)| {
                bench_support::status_command(room, &id, &[user, &ticket.to_string()])
            })
            .collect(),
        polled
            .iter()
            .flat_map(|(user, ticket)| {
                [
                    line(&["ZRANK", &keys.waiting, user]),
                    line(&[
                        "BITFIELD",
                        &scratch_seen,
                        "SET",
                        "u32",
                        &format!("#{}", ticket % 128),
                        "1",
                    ]),
                ]
            })
            .collect(),
        "2.5×",
        Some(include_str!("least/status.lua")),
    ));
    rows.push((
        "issue (a new buyer, rate limits on)",
        (0..CALLS)
            .map(|i| {
                bench_support::issue_command(
                    room,
                    &id,
                    &[
                        &format!("new-{i}"),
                        &format!("10.0.{}.{}", i / 256, i % 256),
                        &user_limit,
                        &ip_limit,
                        creation,
                        "0",
                    ],
                )
            })
            .collect(),
        (0..CALLS)
            .flat_map(|i| {
                let user = format!("new-{i}");
                [
                    line(&["HINCRBY", &keys.meta, "bare-seq", "1"]),
                    line(&["ZADD", &scratch_line, &(i + 1).to_string(), &user]),
                    line(&[
                        "BITFIELD",
                        &scratch_seen,
                        "SET",
                        "u32",
                        &format!("#{}", (i + 1) % 128),
                        "1",
                    ]),
                ]
            })
            .collect(),
        "2.5×",
        Some(include_str!("least/issue.lua")),
    ));
    rows.push((
        "leave (a waiter)",
        leaving
            .iter()
            .map(|(user, ticket)| {
                bench_support::leave_command(room, &id, &[user, &ticket.to_string()])
            })
            .collect(),
        (0..CALLS)
            .map(|i| line(&["ZREM", &scratch_line, &format!("new-{i}")]))
            .collect(),
        "3×",
        Some(include_str!("least/leave.lua")),
    ));
    rows.push((
        "summary",
        (0..CALLS)
            .map(|_| bench_support::summary_command(room, &id))
            .collect(),
        (0..CALLS)
            .flat_map(|_| {
                [
                    line(&["ZCARD", &keys.waiting]),
                    line(&["ZCOUNT", &keys.active, "0", "+inf"]),
                ]
            })
            .collect(),
        "3×",
        Some(include_str!("least/summary.lua")),
    ));
    let rankings = &bench.app.stack.ranking_api.rankings;
    let board = Board::on(Period::Daily, rankings.today(), None);
    bench.seed_board(rankings, &board, 10_000).await;
    bench.top("daily").await;
    let board_key = rankings.board_key(&board);
    let top: Vec<String> = redis::cmd("ZRANGE")
        .arg(&board_key)
        .arg(0)
        .arg(9)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut details = vec!["HMGET".to_owned(), rankings.details_key()];
    details.extend(top);
    let details: Vec<&str> = details.iter().map(String::as_str).collect();
    let top = bench_support::top_command(rankings, &board, Order::Seats, 10);
    rows.push((
        "top-10 read (10 000 concerts)",
        (0..CALLS).map(|_| top.clone()).collect(),
        (0..CALLS)
            .flat_map(|_| [line(&["ZRANGE", &board_key, "0", "9"]), line(&details)])
            .collect(),
        "3×",
        None,
    ));
    // The same read finding no page kept, as the first read after a board write does: each
    // call names a page cache of its own (same hash tag), so each renders and keeps its page.
    let cache = rankings.page_cache_key();
    rows.push((
        "top-10 read, page cache miss (10 000 concerts)",
        (0..CALLS)
            .map(|i| {
                let mut call = top.clone();
                for part in call.iter_mut().filter(|part| **part == cache.as_bytes()) {
                    *part = format!("{cache}:miss-{i}").into_bytes();
                }
                call
            })
            .collect(),
        (0..CALLS)
            .flat_map(|_| [line(&["ZRANGE", &board_key, "0", "9"]), line(&details)])
            .collect(),
        "3× on the read as served (the row above; a miss follows a board write)",
        None,
    ));

    if let Ok(dir) = std::env::var("LINEUP_BENCH_DUMP") {
        dump(bench, &dir, &rows).await;
    }
    // The least leave script removes waiters from a copy of the line.
    redis::cmd("COPY")
        .arg(&keys.waiting)
        .arg(format!("{}:least-waiting", keys.meta))
        .arg("REPLACE")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    for (name, calls, bare, goal, least) in rows {
        let floors = with_script(&calls, &floor);
        let least = match least {
            Some(text) => {
                let hash: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(text)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                with_script(&calls, &hash)
            }
            None => Vec::new(),
        };
        let (keys, args) = shape(&calls[0]);
        // Rounds of the call, its floor and the bare commands in turn; the median round of
        // each, so that a burst from another process on the machine skews one round at most.
        let per_round = CALLS / ROUNDS;
        let bare_per_round = bare.len() / ROUNDS;
        let (mut usecs, mut floor_usecs, mut bare_usecs) = (Vec::new(), Vec::new(), Vec::new());
        let mut least_usecs = Vec::new();
        let mut measured = HashMap::new();
        for round in 0..ROUNDS {
            let part = round * per_round..(round + 1) * per_round;
            let stats = window(bench, &calls[part.clone()]).await;
            usecs.push(measure::usec_per_call(&HashMap::new(), &stats, "evalsha"));
            let floor = window(bench, &floors[part.clone()]).await;
            floor_usecs.push(measure::usec_per_call(&HashMap::new(), &floor, "evalsha"));
            if !least.is_empty() {
                let stats = window(bench, &least[part]).await;
                least_usecs.push(measure::usec_per_call(&HashMap::new(), &stats, "evalsha"));
            }
            let bare = window(
                bench,
                &bare[round * bare_per_round..(round + 1) * bare_per_round],
            )
            .await;
            bare_usecs.push(
                bare.iter()
                    .filter(|(name, _)| !matches!(name.as_str(), "info" | "config|resetstat"))
                    .map(|(_, (_, usec))| *usec)
                    .sum::<u64>() as f64
                    / per_round as f64,
            );
            if round == ROUNDS / 2 {
                measured = stats;
            }
        }
        let (usec, floor_usec, bare_usec) = (
            median(&mut usecs),
            median(&mut floor_usecs),
            median(&mut bare_usecs),
        );
        let least = if least_usecs.is_empty() {
            String::new()
        } else {
            let least_usec = median(&mut least_usecs);
            format!(
                "; least script {least_usec:.1} µs: {:.1}× the floor",
                least_usec / floor_usec
            )
        };
        report.row(
            name,
            &format!("{usec:.1} µs"),
            &format!(
                "floor {floor_usec:.1} µs ({keys} keys, {args} args): {:.1}× the floor, goal ≤ {goal}{least}; bare commands {bare_usec:.1} µs; inside per call: {}",
                usec / floor_usec,
                inner(&measured, per_round)
            ),
        );
    }

    // A promotion slice and a reaping chunk, through the promoter's and reaper's own calls.
    let queue = "tick1000";
    bench
        .configure(
            queue,
            json!({"capacity": 1000, "admitPerTick": 1000, "paused": true}),
        )
        .await;
    bench.fill(queue, 0, 1000).await;
    bench.configure(queue, json!({"paused": false})).await;
    reset(bench).await;
    let tick = bench
        .room()
        .promote(&[QueueId::parse(queue).unwrap()])
        .await
        .unwrap();
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&HashMap::new(), &after, "evalsha");
    report.row(
        &format!("promotion slice (a tick admitting {})", tick.admitted()),
        &format!("{usec:.1} µs"),
        "goal ≤ 1 ms per slice",
    );

    let queue = "reap";
    bench
        .configure(queue, json!({"capacity": WAITERS, "sessionSeconds": 1}))
        .await;
    bench.fill(queue, 0, WAITERS).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    reset(bench).await;
    let reaped = bench
        .room()
        .reap(&QueueId::parse(queue).unwrap())
        .await
        .unwrap();
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&HashMap::new(), &after, "evalsha");
    report.row(
        &format!("reaping chunk ({} expired pending)", reaped.expired),
        &format!("{usec:.1} µs"),
        &format!(
            "goal ≤ 1 ms per chunk; {} chunks of {}",
            reaped.script_calls,
            bench_support::REAP_CHUNK
        ),
    );
}

/// A command line, its parts as bytes.
type Line = Vec<Vec<u8>>;

/// One row of the redis-time table: its name, its calls, the bare commands, the goal, and the
/// least script (bench/src/least/): what any one-script design of the call must run.
type TimeRow<'a> = (&'a str, Vec<Line>, Vec<Line>, &'a str, Option<&'static str>);

/// For profiling by hand: each row's calls as JSON lines in `dir/<row>.jsonl` and the data
/// set as `dir/dump.rdb`, so that a server started on that file (under callgrind, say)
/// can replay them.
async fn dump(bench: &Bench, dir: &str, rows: &[TimeRow<'_>]) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, (_, calls, _, _, _)) in rows.iter().enumerate() {
        let text: String = calls
            .iter()
            .map(|call| {
                let parts: Vec<String> = call
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                serde_json::to_string(&parts).unwrap() + "\n"
            })
            .collect();
        std::fs::write(format!("{dir}/{i}.jsonl"), text).unwrap();
        let hash = String::from_utf8_lossy(&calls[0][1]).into_owned();
        if let Some(source) = bench_support::script_source(&hash) {
            std::fs::write(format!("{dir}/{i}.lua"), source).unwrap();
        }
    }
    let mut conn = bench.app.inspect.clone();
    let (_, saved): (String, String) = redis::cmd("CONFIG")
        .arg("GET")
        .arg("dir")
        .query_async(&mut conn)
        .await
        .unwrap();
    redis::cmd("SAVE")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    std::fs::copy(format!("{saved}/dump.rdb"), format!("{dir}/dump.rdb")).unwrap();
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `calls` with the script they run replaced by the one `hash` names.
fn with_script(calls: &[Line], hash: &str) -> Vec<Line> {
    calls
        .iter()
        .map(|call| {
            let mut call = call.clone();
            call[1] = hash.as_bytes().to_vec();
            call
        })
        .collect()
}

/// A command line from text parts.
fn line(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.as_bytes().to_vec()).collect()
}

/// The keys and arguments an `EVALSHA` line carries.
fn shape(call: &[Vec<u8>]) -> (usize, usize) {
    let keys: usize = std::str::from_utf8(&call[2])
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (keys, call.len() - 3 - keys)
}

async fn reset(bench: &Bench) {
    redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query_async::<()>(&mut bench.app.inspect.clone())
        .await
        .unwrap();
}

/// `INFO commandstats` after sending `lines` one by one from one client, stats reset first.
async fn window(bench: &Bench, lines: &[Vec<Vec<u8>>]) -> HashMap<String, (u64, u64)> {
    let mut conn = bench.app.inspect.clone();
    let commands: Vec<redis::Cmd> = lines
        .iter()
        .map(|parts| {
            let mut cmd = redis::cmd(std::str::from_utf8(&parts[0]).unwrap());
            for part in &parts[1..] {
                cmd.arg(part.as_slice());
            }
            cmd
        })
        .collect();
    reset(bench).await;
    for cmd in &commands {
        let reply: redis::Value = cmd.query_async(&mut conn).await.unwrap();
        assert!(!matches!(reply, redis::Value::ServerError(_)), "{reply:?}");
    }
    bench.commandstats().await
}

/// The commands a script ran per call, most time first: `name×calls usec`.
fn inner(stats: &HashMap<String, (u64, u64)>, calls: usize) -> String {
    let mut inside: Vec<(&String, &(u64, u64))> = stats
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "info" | "evalsha" | "config|resetstat"))
        .collect();
    inside.sort_by_key(|(_, (_, usec))| std::cmp::Reverse(*usec));
    inside
        .iter()
        .map(|(name, (n, usec))| {
            format!(
                "{name}×{:.1} {:.1} µs",
                *n as f64 / calls as f64,
                *usec as f64 / calls as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Redis time of board reads at 10 000 concerts, through the read the handler makes
/// (`Rankings::page`, `Rankings::around`): a seat board, its rate board and 10 000 concerts'
/// details, written straight into Redis in the format the updater writes.
async fn board_reads(bench: &Bench, report: &mut Report) {
    const CONCERTS: u64 = 10_000;
    const CALLS: u64 = 1_000;
    report.section(&format!(
        "Board reads at 10 000 concerts, Redis time per call (INFO commandstats usec of evalsha, mean of {CALLS})"
    ));
    let rankings = &bench.app.stack.ranking_api.rankings;
    let board = Board::on(Period::Daily, rankings.today(), None);
    bench.seed_board(rankings, &board, CONCERTS).await;
    for order in [Order::Seats, Order::Rate] {
        // The concert halfway down the board.
        let middle = rankings
            .page(&board, order, CONCERTS / 2, 1)
            .await
            .unwrap()
            .items[0]
            .concert_id
            .clone();
        let middle = &ConcertId::parse(&middle).unwrap();
        let reads: [(&str, Read); 3] = [
            ("top-10 read", Read::Page(0)),
            ("page of 10 at offset 5 000", Read::Page(5_000)),
            ("around-me, 10 either side", Read::Around),
        ];
        for (name, read) in reads {
            let run = || async {
                match read {
                    Read::Page(offset) => {
                        let page = rankings.page(&board, order, offset, 10).await.unwrap();
                        assert_eq!(page.total, CONCERTS);
                        assert_eq!(page.items.len(), 10);
                    }
                    Read::Around => {
                        let around = rankings.around(&board, order, middle, 10).await.unwrap();
                        assert!(around.is_some_and(|a| a.above.len() + a.below.len() == 20));
                    }
                }
            };
            run().await;
            let before = bench.commandstats().await;
            for _ in 0..CALLS {
                run().await;
            }
            let after = bench.commandstats().await;
            let usec = measure::usec_per_call(&before, &after, "evalsha");
            report.row(
                &format!("{name} at 10 000 concerts, by {}", order.as_str()),
                &format!("{:.3} ms", usec / 1000.0),
                "goal < 1 ms; rows, ranks, seats and details in one script",
            );
        }
    }
}

#[derive(Clone, Copy)]
enum Read {
    Page(u64),
    Around,
}

/// Redis time and commands of ranking writes on boards holding 10 000 concerts, each with
/// its details (capacity known, so rate boards are written too): a batch of 10 payments, and
/// a details update; bytes of details per concert.
async fn ranking_writes(bench: &Bench, report: &mut Report) {
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
    let (mut usec, mut commands, mut writes) = (0.0, 0, 0);
    for round in 0..ROUNDS {
        let batch: Vec<_> = (0..10)
            .map(|i| {
                let concert = &concerts[(round * 10 + i) * 37 % CONCERTS];
                bench.payment(&format!("rw-{round}-{i}"), concert, &["rock", "pop"])
            })
            .collect();
        let before = bench.commandstats().await;
        bench.sqs_batch(batch).await;
        let after = bench.commandstats().await;
        usec += measure::usec_per_call(&before, &after, "evalsha");
        let (all, written) = measure::commands_run(&before, &after);
        commands += all;
        writes += written;
    }
    let payments = (ROUNDS * 10) as f64;
    report.row(
        "batch of 10 payments, 2 genres each (recorded, then folded within the call's budget)",
        &format!("{:.3} ms", usec / ROUNDS as f64 / 1000.0),
        &format!(
            "goal < 1 ms; {:.1} redis.calls per payment, of which {:.1} writes",
            commands as f64 / payments,
            writes as f64 / payments
        ),
    );
    fold_rows(bench, report, "10 concerts a batch").await;
    // An on-sale: every payment of the batch for the one concert.
    let (mut usec, mut commands, mut writes) = (0.0, 0, 0);
    for round in 0..ROUNDS {
        let concert = &concerts[round * 53 % CONCERTS];
        let batch: Vec<_> = (0..10)
            .map(|i| bench.payment(&format!("hot-{round}-{i}"), concert, &["rock", "pop"]))
            .collect();
        let before = bench.commandstats().await;
        bench.sqs_batch(batch).await;
        let after = bench.commandstats().await;
        usec += measure::usec_per_call(&before, &after, "evalsha");
        let (all, written) = measure::commands_run(&before, &after);
        commands += all;
        writes += written;
    }
    report.row(
        "batch of 10 payments for one concert, 2 genres each",
        &format!("{:.3} ms", usec / ROUNDS as f64 / 1000.0),
        &format!(
            "goal < 1 ms; {:.1} redis.calls per payment, of which {:.1} writes",
            commands as f64 / payments,
            writes as f64 / payments
        ),
    );
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

/// Redis time of the board kinds at 10 000 concerts (each on every board, two genres each):
/// a top-10 read of each, a batch of 10 payments writing every board, and a tick call taking
/// a full chunk of bucket fields off the rolling boards.
async fn boards(bench: &Bench, report: &mut Report) {
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
    let rankings = &bench.app.stack.ranking_updater.rankings;
    rankings.tick().await.expect("tick");
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
    let (processed, _more): (u64, u64) = call.query_async(&mut inspect).await.unwrap();
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&before, &after, "evalsha");
    report.row(
        &format!("tick call taking {processed} bucket fields off 3 boards each"),
        &format!("{usec:.0} µs"),
        "goal ≤ 1 ms",
    );
}

/// Ranking events per second through the updater, batched and one by one, against updates
/// sent command by command.
async fn ingest(bench: &Bench, report: &mut Report) {
    report.section("Ingest: ranking events per second (16 concurrent callers)");
    const CALLERS: usize = 16;
    const RUN: Duration = Duration::from_secs(3);
    let genres = ["rock"];
    let single = measure::rate(CALLERS, RUN, |n| async move {
        bench
            .apply(&[bench.payment(&format!("s-{n}"), &format!("c{}", n % 50), &genres)])
            .await;
    })
    .await;
    let batched = 10.0
        * measure::rate(CALLERS, RUN, |n| async move {
            let events = (0..10)
                .map(|i| bench.payment(&format!("b-{n}-{i}"), &format!("c{}", i * 5), &genres))
                .collect();
            bench.sqs_batch(events).await;
        })
        .await;
    let unbatched = baseline::ranking_events_per_second(bench, CALLERS, RUN).await;
    report.row(
        "one event per invocation",
        &format!("{single:.0} events/s"),
        &format!(
            "baseline command by command {unbatched:.0} events/s ({:.2} ×)",
            single / unbatched
        ),
    );
    report.row(
        "SQS batches of 10",
        &format!("{batched:.0} events/s"),
        &format!("{:.2} × one at a time", batched / single),
    );
}

/// A scheduled opening with N in the pre-queue (`LINEUP_BENCH_PREQUEUE`, default 1M): Redis
/// bytes per member; the longest single Redis call of the opening (SLOWLOG, every call over
/// 200 µs kept, from advancing the opening through the first ticks and 2000 status polls,
/// sent one at a time: the joins' own cost is the issue row of "Redis time per call"); and the
/// status latency of drawn members just after the opening.
async fn opening(bench: &Bench, report: &mut Report) {
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
    let tokens = bench.tokens_for(queue, 2000).await;
    let mut samples = Vec::new();
    for token in &tokens {
        let t = Instant::now();
        bench.status(queue, token).await;
        samples.push(t.elapsed());
    }
    samples.sort();
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

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Ids used across sections.
pub fn user(name: &str) -> UserId {
    UserId::parse(name).expect("a valid bench user id")
}

/// Coupon claims through `coupon-api`'s handler against seed 002's command-by-command design
/// (`baseline::seed_coupon_issue`), on the same server: Redis time per claim and per sold-out
/// answer (every command's `INFO commandstats` usec, scripts' inner commands counted once,
/// inside their `EVALSHA`), round trips per claim, and claims per second.
async fn coupons(bench: &Bench, report: &mut Report) {
    const QUANTITY: u64 = 10_000;
    const SOLD_OUT_CALLS: u64 = 2_000;
    report.section(&format!(
        "Coupon claims, {QUANTITY} coupons (Redis time: INFO commandstats usec of every command, per answer)"
    ));
    let put = |coupon: &'static str| async move {
        let body = json!({"quantity": QUANTITY}).to_string();
        let status = bench
            .invoke_coupon_api(&Bench::event(
                "PUT",
                &format!("/coupons/{coupon}"),
                Some(&body),
            ))
            .await;
        assert_eq!(status, 201);
    };
    let claim = |coupon: &'static str, user: String| async move {
        let body = json!({"userId": user}).to_string();
        bench
            .invoke_coupon_api(&Bench::event(
                "POST",
                &format!("/coupons/{coupon}/claims"),
                Some(&body),
            ))
            .await
    };
    // lineup: one EVALSHA per answer.
    put("bench-coupon").await;
    assert_eq!(claim("bench-coupon", "warm".into()).await, 201);
    let before = bench.commandstats().await;
    for i in 1..QUANTITY {
        assert_eq!(claim("bench-coupon", format!("u{i}")).await, 201);
    }
    let after = bench.commandstats().await;
    let claimed_usec = usec(&before, &after, LINEUP) / (QUANTITY - 1) as f64;
    let claimed_trips = calls(&before, &after, LINEUP) as f64 / (QUANTITY - 1) as f64;
    let before = bench.commandstats().await;
    for i in 0..SOLD_OUT_CALLS {
        assert_eq!(claim("bench-coupon", format!("late{i}")).await, 410);
    }
    let after = bench.commandstats().await;
    let sold_out_usec = usec(&before, &after, LINEUP) / SOLD_OUT_CALLS as f64;
    let sold_out_trips = calls(&before, &after, LINEUP) as f64 / SOLD_OUT_CALLS as f64;

    // Seed 002: up to six commands, each a round trip.
    let mut conn = redis::Client::open(bench.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let before = bench.commandstats().await;
    for i in 0..QUANTITY {
        assert!(baseline::seed_coupon_issue(&mut conn, "c", &format!("u{i}"), QUANTITY).await);
    }
    let after = bench.commandstats().await;
    let seed_usec = usec(&before, &after, SEED) / QUANTITY as f64;
    let seed_trips = calls(&before, &after, SEED) as f64 / QUANTITY as f64;
    // The first late buyer runs the rollback and sets the flag; the rest meet the flag.
    let before = bench.commandstats().await;
    for i in 0..SOLD_OUT_CALLS {
        assert!(!baseline::seed_coupon_issue(&mut conn, "c", &format!("late{i}"), QUANTITY).await);
    }
    let after = bench.commandstats().await;
    let seed_sold_out_usec = usec(&before, &after, SEED) / SOLD_OUT_CALLS as f64;
    let seed_sold_out_trips = calls(&before, &after, SEED) as f64 / SOLD_OUT_CALLS as f64;

    report.row(
        "claim, Redis time",
        &format!("{claimed_usec:.2} µs"),
        &format!("seed 002: {seed_usec:.2} µs; lineup's also writes the claim's outbox entry"),
    );
    report.row(
        "claim, round trips",
        &format!("{claimed_trips:.2}"),
        &format!("seed 002: {seed_trips:.2}"),
    );
    report.row(
        "sold-out answer, Redis time",
        &format!("{sold_out_usec:.2} µs"),
        &format!("seed 002: {seed_sold_out_usec:.2} µs (one EXISTS of its flag)"),
    );
    report.row(
        "sold-out answer, round trips",
        &format!("{sold_out_trips:.2}"),
        &format!("seed 002: {seed_sold_out_trips:.2}"),
    );

    // Claims per second through the handler, 32 callers, and seed 002's over one connection,
    // both against a quantity no run sells out.
    let body = json!({"quantity": 10_000_000}).to_string();
    let status = bench
        .invoke_coupon_api(&Bench::event("PUT", "/coupons/bench-rate", Some(&body)))
        .await;
    assert_eq!(status, 201);
    let handler_rate = measure::rate(32, Duration::from_secs(3), |i| async move {
        let status = claim("bench-rate", format!("r{i}")).await;
        assert!(status == 201 || status == 410);
    })
    .await;
    let seed_rate = measure::rate(32, Duration::from_secs(3), |i| {
        let mut conn = conn.clone();
        async move {
            assert!(
                baseline::seed_coupon_issue(&mut conn, "rate", &format!("r{i}"), 10_000_000).await
            );
        }
    })
    .await;
    // The claim script alone, through the library call the handler makes (no event to parse,
    // no response to build).
    let coupons = &bench.app.stack.coupon_api.coupons;
    let coupon = lineup::ids::CouponId::parse("bench-rate").unwrap();
    let raw_rate = measure::rate(32, Duration::from_secs(3), |i| {
        let coupon = &coupon;
        async move {
            let user = UserId::parse(&format!("raw{i}")).unwrap();
            let reply = coupons.claim(coupon, &user, None, None).await.unwrap();
            assert!(matches!(reply, lineup::coupon::ClaimReply::Claimed(_)));
        }
    })
    .await;
    report.row(
        "claims per second, 32 callers",
        &format!("{handler_rate:.0}"),
        &format!(
            "through the handler; the script through the library alone: {raw_rate:.0}; seed \
             002's commands from the same process: {seed_rate:.0}"
        ),
    );
}

/// The commands lineup's claims send: one script call each (its inner commands are in its
/// time).
const LINEUP: &[&str] = &["evalsha"];
/// The commands seed 002's issue sends, each from the client.
const SEED: &[&str] = &["exists", "sadd", "incr", "srem", "decr", "set", "zadd"];

type Stats = std::collections::HashMap<String, (u64, u64)>;

/// Redis time (usec) of `names` between two readings.
fn usec(before: &Stats, after: &Stats, names: &[&str]) -> f64 {
    names
        .iter()
        .map(|name| {
            (after.get(*name).map_or(0, |a| a.1) - before.get(*name).map_or(0, |b| b.1)) as f64
        })
        .sum()
}

/// Calls of `names` between two readings.
fn calls(before: &Stats, after: &Stats, names: &[&str]) -> u64 {
    names
        .iter()
        .map(|name| after.get(*name).map_or(0, |a| a.0) - before.get(*name).map_or(0, |b| b.0))
        .sum()
}

/// The poll schedule's cost at a tenth of the issue's scale: 100 000 waiters polling as told and
/// 200 arrivals per second, the line admitting one buyer a second (capacity 300, sessions of 5
/// minutes on average), so every waiter's told interval is what it would be at 1 000 000 waiters,
/// 2 000 arrivals and 10 admissions per second. Redis's own CPU (`INFO cpu`) over the run is the
/// figure; `INFO commandstats` gives the calls and their cost. The mean session and the live
/// sessions' starts (spread over one mean session, as while a sale runs) are written in directly.
/// Then the same schedule at 1 000 000 waiters, computed from the rule and the measured costs.
/// `LINEUP_BENCH_CAPACITY_SCALE=10` runs the whole issue's scale instead of a tenth of it.
async fn capacity(bench: &Bench, report: &mut Report) {
    // At scale 10: 1 000 000 waiters, 2 000 arrivals and 10 admissions a second (a release
    // build keeps up; a few minutes).
    let scale: usize = std::env::var("LINEUP_BENCH_CAPACITY_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    const WAITERS: usize = 100_000;
    const CAPACITY: usize = 300;
    let waiters = WAITERS * scale;
    let capacity = CAPACITY * scale;
    const MEAN_MS: u64 = 300_000;
    let arrivals_per_second: usize = 200 * scale;
    const RUN: Duration = Duration::from_secs(30);
    const IDLE_S: u64 = 120;
    report.section(&format!(
        "Capacity: the poll schedule at {waiters} waiters, {arrivals_per_second} arrivals/s, {} admissions/s (Redis CPU from INFO cpu over {} s)",
        capacity as u64 * 1000 / MEAN_MS,
        RUN.as_secs()
    ));
    let queue = "capacity";
    let id = QueueId::parse(queue).unwrap();
    let room = bench.room().clone();
    let mut conn = bench.app.inspect.clone();
    bench.configure(queue, json!({"capacity": capacity})).await;
    bench.fill(queue, 0, capacity).await;
    let keys = QueueKeys::new(&bench.app.config.key_prefix, &id);
    // The live sessions started one after another over a mean session, as while a sale runs.
    let held: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(&keys.active_tickets)
        .query_async(&mut conn)
        .await
        .unwrap();
    let now_ms = chrono::Utc::now().timestamp_millis() as u64;
    for (k, (user, entry)) in held.iter().enumerate() {
        let ticket = entry.split(':').next().unwrap();
        let since = now_ms - (k as u64 + 1) * MEAN_MS / capacity as u64;
        redis::pipe()
            .hset(&keys.active_tickets, user, format!("{ticket}:{since}"))
            .zadd(&keys.active, user, since + 600_000)
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
    }
    // Sessions are known to last the mean: as the expected length, and as the low end of the
    // range (`session-low`: ms, no growth, since now), as once sessions have ended. Without
    // it the low end would be the first session's age, which depends on how long the fill
    // took, and so would every interval told.
    redis::cmd("HSET")
        .arg(&keys.meta)
        .arg("session-mean-ms")
        .arg(MEAN_MS)
        .arg("session-low")
        .arg(format!("{MEAN_MS}:0:{now_ms}"))
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    bench.fill(queue, capacity, capacity + waiters).await;
    let mut line: Vec<(String, u64)> = Vec::new();
    for from in (0..waiters).step_by(5_000) {
        let part: Vec<(String, u64)> = redis::cmd("ZRANGE")
            .arg(&keys.waiting)
            .arg(from)
            .arg(from + 4_999)
            .arg("WITHSCORES")
            .query_async(&mut conn)
            .await
            .unwrap();
        line.extend(part);
    }
    let claims: Vec<TokenClaims> = line
        .into_iter()
        .map(|(name, ticket)| TokenClaims {
            queue: id.clone(),
            user: user(&name),
            ticket,
        })
        .collect();
    // Each waiter's first poll gives its told interval.
    use futures::StreamExt;
    let told: Vec<u64> = futures::stream::iter(claims.iter())
        .map(|claims| {
            let room = room.clone();
            async move {
                room.status(claims)
                    .await
                    .unwrap()
                    .poll_after_seconds(chrono::Utc::now())
            }
        })
        .buffered(256)
        .collect()
        .await;
    let predicted: f64 = told.iter().map(|&s| 1.0 / s as f64).sum();
    let stretched = told.iter().filter(|&&s| s > IDLE_S / 3).count();

    let cpu = async || {
        let mut used = 0.0;
        for field in ["used_cpu_sys", "used_cpu_user"] {
            let info: String = redis::cmd("INFO")
                .arg("cpu")
                .query_async(&mut bench.app.inspect.clone())
                .await
                .unwrap();
            used += info
                .lines()
                .find_map(|l| l.strip_prefix(&format!("{field}:")))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0);
        }
        used
    };
    // Redis's own use with nothing sent (its timers), for comparison.
    let (idle_cpu, idle_start) = (cpu().await, Instant::now());
    tokio::time::sleep(Duration::from_secs(5)).await;
    let quiet = (cpu().await - idle_cpu) / idle_start.elapsed().as_secs_f64();

    reset(bench).await;
    let (cpu_start, start) = (cpu().await, Instant::now());
    let end = start + RUN;
    // Every waiter polls as told, its first poll at a random point of its interval.
    let poller = |claims: TokenClaims, first: Duration| {
        let room = room.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until((Instant::now() + first).into()).await;
            while Instant::now() < end {
                let state = room.status(&claims).await.unwrap();
                let next = Duration::from_secs(state.poll_after_seconds(chrono::Utc::now()));
                tokio::time::sleep(next).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for (i, (claims, &told)) in claims.into_iter().zip(&told).enumerate() {
        // A fixed scatter of phases (Knuth's multiplicative hash), the same every run.
        let phase = (i as u64).wrapping_mul(2_654_435_761) % 1_000_000;
        tasks.push(poller(claims, Duration::from_micros(told * phase)));
    }
    // Arrivals at a steady pace; each then polls as told.
    let mut arrivals = 0usize;
    while Instant::now() < end {
        let due = start + Duration::from_secs_f64(arrivals as f64 / arrivals_per_second as f64);
        tokio::time::sleep_until(due.into()).await;
        let room = room.clone();
        let id = id.clone();
        let user = user(&format!("n{arrivals:07}"));
        tasks.push(tokio::spawn(async move {
            let issued = room.issue(&id, &user, None).await.unwrap();
            let next = Duration::from_secs(issued.state.poll_after_seconds(chrono::Utc::now()));
            tokio::time::sleep(next).await;
            while Instant::now() < end {
                let state = room.status(&issued.claims).await.unwrap();
                let next = Duration::from_secs(state.poll_after_seconds(chrono::Utc::now()));
                tokio::time::sleep(next).await;
            }
        }));
        arrivals += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let used = (cpu().await - cpu_start) / elapsed;
    let stats = bench.commandstats().await;
    for task in tasks {
        task.abort();
    }
    let (calls, usec) = stats.get("evalsha").copied().unwrap_or((0, 0));
    let scripts = usec as f64 / elapsed / 1e6;
    let per_call = usec as f64 / calls.max(1) as f64;
    report.row(
        &format!("Redis CPU, the schedule at {waiters} waiters"),
        &format!("{:.1} % of a core", used * 100.0),
        &format!(
            "{:.0} script calls/s ({arrivals} issues, the rest status polls; the schedule predicts {predicted:.0} polls/s, {stretched} waiters told past a third of the idle period) at {per_call:.1} µs each: scripts {:.1} % of a core; Redis idle {:.1} %",
            calls as f64 / elapsed,
            scripts * 100.0,
            quiet * 100.0
        ),
    );

    // The same rule at the whole scale (ten times the default run's): position p waits
    // p × mean / capacity.
    let admissions = 10.0 * CAPACITY as f64 * 1000.0 / MEAN_MS as f64;
    let polls: f64 = (1..=10 * WAITERS as u64)
        .map(|p| 1.0 / told_interval(p as f64 / admissions, IDLE_S) as f64)
        .sum();
    // Polls and issues come in the same proportion as in the run, so its mean cost holds.
    let share = (polls + 2_000.0) * per_call / 1e6;
    report.row(
        "Redis time, the schedule at 1 000 000 waiters (computed)",
        &format!("{:.1} % of a core", share * 100.0),
        &format!(
            "{polls:.0} polls/s and 2 000 issues/s at {admissions:.0} admissions/s, at the run's {per_call:.1} µs per script call; goal ≤ 35 %"
        ),
    );
}

/// The `pollAfterSeconds` a waiter `wait_s` seconds from its turn is told, with the default
/// idle period `idle_s` (`TokenState::poll_after_seconds` and `presence_for`): a tenth of its
/// wait, at least 1 s, at most a third of eight idle periods (its poll keeps it present for
/// three times what it is told).
fn told_interval(wait_s: f64, idle_s: u64) -> u64 {
    let wanted = (wait_s.ceil() as u64) / 10;
    wanted.clamp(1, 8 * idle_s / 3)
}

#[cfg(test)]
mod tests {
    /// The `local ARG = N` line of a Lua source: where a script's own arguments start.
    fn arg_line(source: &str) -> &str {
        source
            .lines()
            .find(|line| line.starts_with("local ARG = "))
            .expect("a `local ARG = N` line")
    }

    /// The least scripts read their own arguments where the prelude puts them, so they run
    /// on the same calls as the product's scripts.
    #[test]
    fn least_scripts_find_their_arguments_where_the_prelude_does() {
        let prelude = arg_line(include_str!("../../shared/src/queue/common.lua"));
        for least in [
            include_str!("least/status.lua"),
            include_str!("least/issue.lua"),
            include_str!("least/leave.lua"),
        ] {
            assert_eq!(arg_line(least), prelude);
        }
    }
}
