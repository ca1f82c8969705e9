//! The poll schedule's cost at a tenth of the issue's scale: 100 000 waiters polling as told and
//! 200 arrivals per second, the line admitting one buyer a second (capacity 300, sessions of 5
//! minutes on average), so every waiter's told interval is what it would be at 1 000 000 waiters,
//! 2 000 arrivals and 10 admissions per second. Redis's own CPU (`INFO cpu`) over the run is the
//! figure; `INFO commandstats` gives the calls and their cost. The mean session and the live
//! sessions' starts (spread over one mean session, as while a sale runs) are written in directly.
//! Then the same schedule at 1 000 000 waiters, computed from the rule and the measured costs.
//! `LINEUP_BENCH_CAPACITY_SCALE=10` runs the whole issue's scale instead of a tenth of it.
//!
//! # Method
//!
//! - The mean session is written as the expected length and as the range's low end, as once
//!   sessions have ended.
//! - Each waiter polls as told, through `WaitingRoom::status`, its first poll at a fixed random
//!   point of its told interval. The new buyers arrive at a steady pace and then poll as told.
//! - The figure is Redis's own CPU (`INFO cpu`, user + system) over 30 s, divided by the wall
//!   time.
//! - The computed row sums the same rule over 1 000 000 positions and costs it at the run's mean
//!   Redis time per script call (polls and issues come in the same proportion at both scales).
//!
//! # What limits the figures
//!
//! - A waiter is told to poll after a quarter of the low end of its estimated wait, at least 1 s
//!   and at most 320 s (a third of eight default idle periods). Past 40 s, its poll keeps it
//!   present three times what it is told. See docs/waiting-room.md, "Far from the front".
//! - The poll rate this gives grows with the admission rate A, because waiters near the front
//!   poll often, and with the line's length over 320 s. Summed over 1 000 000 positions, where
//!   position p waits p / A:
//!
//! | admissions per second | status polls per second, this schedule | with every waiter at ≤ 40 s |
//! |---|---|---|
//! | 10 | 3 369 | 25 160 |
//! | 30 | 3 856 | 25 481 |
//! | 100 | 5 563 | 26 604 |
//! | 500 | 15 315 | 33 020 |
//! | 1 000 | 27 391 | 41 039 |
//!
//! At 1 000 admissions a second, the waiters within 8 s of the front (told 1 s) send about 30 %
//! of the polls. At a tenth of the wait instead of a quarter the rule gives 3 749 polls a second
//! at 10 admissions and 60 784 at 1 000.
//!
//! - Measured at the goal's whole scale (`LINEUP_BENCH_CAPACITY_SCALE=10 cargo run --release
//!   --bin lineup-bench capacity`): 1 000 000 waiters, 2 000 arrivals and 10 admissions a second,
//!   every waiter polling as told. Redis used 30.2 % of a core (`INFO cpu`). It ran 5 878 script
//!   calls a second, 3 878 of them status polls (the schedule predicts 3 786; waiters' first
//!   polls bunch a little), at 46.9 µs each: scripts 27.6 % of a core, network and event loop
//!   the rest. Goal ≤ 35 %: met.
//! - Computed from the rule and that run's cost per call: (3 369 polls + 2 000 issues) × 46.9 µs
//!   = 25.2 % of a core a second. At 100 admissions a second the rule gives 5 563 polls:
//!   (5 563 + 2 000) × 46.9 µs = 35 %, at the goal. Only a cheaper status call helps there.
//! - At a tenth of the scale (the default run, release build): 5.2 % of a core for 563 calls a
//!   second at 70 µs each. A call costs more there: Redis idles between calls, so each finds
//!   colder caches. Ten times that run overstates the whole scale; the whole-scale run is the
//!   figure.
//! - Promotion adds little: 10 admissions a second is a third of a 32-admission slice, about
//!   0.1 ms a second.

use std::time::{Duration, Instant};

use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::token::TokenClaims;
use serde_json::json;

use crate::measure::Bench;
use crate::report::Report;
use crate::util::{told_interval, user};

pub async fn run(bench: &Bench, report: &mut Report) {
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
        let until = since + 600_000;
        redis::pipe()
            .hset(
                &keys.active_tickets,
                user,
                format!("{ticket}:{since}:{until}"),
            )
            .zadd(&keys.active, user, until)
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

    bench.reset_commandstats().await;
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
