//! `lineup-bench per-request`: Redis main-thread CPU per request, from `INFO cpu`, with the
//! load sent as AWS sends it: many containers, each on its own connection with one request in
//! flight, beside a PING sent the same way in the same run. `INFO cpu` counts what a request
//! costs Redis whole: reading it, running it and writing its reply. commandstats counts only
//! the running, so it is reported beside it as a diagnostic.

use std::time::Duration;

use futures::future::join_all;
use lineup::ids::QueueId;
use lineup::queue::WaitingRoom;
use lineup::token::TokenClaims;
use serde_json::json;

use crate::measure::{Bench, Report};

/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 16;

/// Requests per measured kind: each a distinct buyer.
const BUYERS: usize = 4_000;

/// Main-thread CPU (user + sys) of the bench's Redis, in µs.
async fn main_thread_cpu_us(bench: &Bench) -> f64 {
    let info: String = redis::cmd("INFO")
        .arg("cpu")
        .query_async(&mut bench.app.inspect.clone())
        .await
        .expect("INFO cpu");
    let field = |name: &str| {
        info.lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (field("used_cpu_user_main_thread:") + field("used_cpu_sys_main_thread:")) * 1e6
}

/// EVALSHA's calls and µs from commandstats.
async fn evalsha(bench: &Bench) -> (u64, u64) {
    bench
        .commandstats()
        .await
        .get("evalsha")
        .copied()
        .unwrap_or((0, 0))
}

/// One measured kind: Redis main-thread µs per request, and the µs commandstats gives each
/// script run (0 without scripts).
struct Cost {
    per_request_us: f64,
    script_us: f64,
}

/// Runs `requests` over [`CONTAINERS`] tasks, each taking the next request when its last has
/// answered; returns the Redis CPU they cost.
async fn measure<T, F, Fut>(bench: &Bench, requests: Vec<T>, run: F) -> Cost
where
    T: Send,
    F: Fn(usize, T) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let count = requests.len().max(1) as f64;
    let mut lanes: Vec<Vec<T>> = (0..CONTAINERS).map(|_| Vec::new()).collect();
    for (i, request) in requests.into_iter().enumerate() {
        lanes[i % CONTAINERS].push(request);
    }
    let run = &run;
    let (calls_before, usec_before) = evalsha(bench).await;
    let before = main_thread_cpu_us(bench).await;
    join_all(
        lanes
            .into_iter()
            .enumerate()
            .map(|(lane, requests)| async move {
                for request in requests {
                    run(lane, request).await;
                }
            }),
    )
    .await;
    let after = main_thread_cpu_us(bench).await;
    let (calls_after, usec_after) = evalsha(bench).await;
    let calls = calls_after.saturating_sub(calls_before);
    Cost {
        per_request_us: (after - before) / count,
        script_us: if calls == 0 {
            0.0
        } else {
            usec_after.saturating_sub(usec_before) as f64 / calls as f64
        },
    }
}

/// Tokens of `users` in `queue`, as the issue call made them.
async fn join(room: &WaitingRoom, queue: &QueueId, users: &[String]) -> Vec<TokenClaims> {
    let mut claims = Vec::new();
    for chunk in users.chunks(256) {
        let issued = join_all(
            chunk
                .iter()
                .map(|u| async move { room.issue(queue, &crate::user(u), None).await }),
        )
        .await;
        claims.extend(issued.into_iter().map(|i| i.expect("issue").claims));
    }
    claims
}

fn users(prefix: &str) -> Vec<String> {
    (0..BUYERS).map(|i| format!("{prefix}{i:05}")).collect()
}

pub async fn per_request(bench: &Bench, report: &mut Report) {
    report.section(&format!(
        "Redis CPU per request (INFO cpu, main thread), {CONTAINERS} containers with one \
         request in flight each, {BUYERS} distinct buyers per row"
    ));
    let mut rooms = Vec::new();
    let mut pings = Vec::new();
    for _ in 0..CONTAINERS {
        rooms.push(bench.app.another_container().await.queue_api.room);
        let client = redis::Client::open(bench.url()).expect("redis url");
        pings.push(
            client
                .get_multiplexed_async_connection()
                .await
                .expect("connect"),
        );
    }
    let rooms = &rooms;
    let pings = &pings;
    let mut rows: Vec<(&str, Cost, &str)> = Vec::new();

    let ping = measure(bench, (0..BUYERS).collect(), |lane, _| async move {
        let _: String = redis::cmd("PING")
            .query_async(&mut pings[lane].clone())
            .await
            .expect("PING");
    })
    .await;
    let ping_us = ping.per_request_us.max(f64::EPSILON);

    // Waiters of a queue that admits nobody more: their first poll a few heartbeat windows
    // after joining (the presence check reads back to the window of the join), then at once
    // their next poll (found in the newest window).
    let line = QueueId::parse("per-request-line").expect("queue id");
    bench
        .configure(
            line.as_str(),
            json!({"capacity": 1, "waitingIdleSeconds": 20}),
        )
        .await;
    let waiters = join(bench.room(), &line, &users("w")).await;
    // Windows are a tenth of the idle period: 2 s.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let status = |lane: usize, claims: &TokenClaims| {
        let room = &rooms[lane];
        let claims = claims.clone();
        async move {
            room.status(&claims).await.expect("status");
        }
    };
    let first = measure(bench, waiters.iter().collect(), &status).await;
    rows.push((
        "status, a waiter's first poll 5 s after joining",
        first,
        "goal ≤ 2× PING",
    ));
    let next = measure(bench, waiters.iter().collect(), &status).await;
    rows.push(("status, the waiter's next poll", next, "goal ≤ 2× PING"));

    // Pre-queue members' first poll after the opening: none has a heartbeat.
    let gig = QueueId::parse("per-request-opening").expect("queue id");
    let opens = chrono::Utc::now() + chrono::Duration::seconds(3);
    bench
        .configure(
            gig.as_str(),
            json!({"capacity": 1, "waitingIdleSeconds": 120,
                "opensAt": opens.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
        )
        .await;
    let members = join(bench.room(), &gig, &users("m")).await;
    let left = (opens - chrono::Utc::now()).num_milliseconds().max(0) as u64;
    tokio::time::sleep(Duration::from_millis(left + 100)).await;
    let opening = measure(bench, members.iter().collect(), &status).await;
    rows.push((
        "status, a pre-queue member's first poll after the opening",
        opening,
        "goal ≤ 2× PING",
    ));

    // Active buyers at the gatekeeper.
    let open = QueueId::parse("per-request-active").expect("queue id");
    bench
        .configure(open.as_str(), json!({"capacity": 1_000_000}))
        .await;
    let active = join(bench.room(), &open, &users("a")).await;
    let check = measure(bench, active.iter().collect(), |lane, claims| {
        let room = &rooms[lane];
        let claims = claims.clone();
        async move {
            room.check(&claims).await.expect("check").expect("active");
        }
    })
    .await;
    rows.push((
        "gatekeeper check, an active buyer",
        check,
        "goal ≤ 1.5× PING",
    ));

    // New buyers joining a line.
    let arrivals = users("n");
    let issue = measure(bench, arrivals.iter().collect(), |lane, user| {
        let room = &rooms[lane];
        let line = &line;
        async move {
            room.issue(line, &crate::user(user), None)
                .await
                .expect("issue");
        }
    })
    .await;
    rows.push((
        "issue, a new buyer joining the line",
        issue,
        "goal ≤ 3.5× PING",
    ));

    report.row(
        "PING",
        &format!("{ping_us:.1} µs"),
        "the floor: a request's own I/O",
    );
    for (name, cost, goal) in rows {
        report.row(
            name,
            &format!(
                "{:.1} µs ({:.1}× PING)",
                cost.per_request_us,
                cost.per_request_us / ping_us
            ),
            &format!(
                "{goal}; the script itself {:.1} µs (commandstats)",
                cost.script_us
            ),
        );
    }
}
