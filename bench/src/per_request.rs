//! `lineup-bench per-request`: Redis main-thread CPU per request, from `INFO cpu`, with the
//! load sent as AWS sends it: many containers, each on its own connection with one request in
//! flight, beside a PING sent the same way in the same run. `INFO cpu` counts what a request
//! costs Redis whole: reading it, running it and writing its reply. commandstats counts only
//! the running, so it is reported beside it as a diagnostic.
//!
//! # Method
//!
//! - Each request goes as AWS sends it: 16 containers (the functions' own connections, as cold
//!   start opens them), each with one request in flight, 4 000 distinct buyers per row. PING is
//!   sent the same way in the same run.
//! - Each row goes in five rounds, each right after as many PINGs. The ratio shown is the median
//!   of the rounds' ratios, with their range, so a burst of load from elsewhere on the machine
//!   skews one round, not the figure.
//! - The figure is the Redis main thread's CPU (`INFO cpu`, user + sys) over the row, divided by
//!   its requests. commandstats' script time is shown beside it.
//! - The machine's speed moves from run to run (PING 5.5–10.5 µs), so compare ratios.
//! - The same run sends the least status script (`bench/src/least/status.lua`: the clock, two
//!   settings fields, the ticket's `ZSCORE`, its `ZRANK` and one presence write) to the same
//!   waiters, first with status's 15 keys and 8 arguments (2.2–2.4× PING), then with only the
//!   3 keys and 2 arguments it reads (2.0–2.3×). That is the floor of a status script that
//!   writes presence, with no wait estimate and no bookkeeping.
//! - The on-sale rows follow the model of docs/deploy.md ("Cost"), from the row figures of one
//!   run.
//!
//! # What limits the figures
//!
//! - A first poll and a next poll do the same work: each reads and writes one presence deadline.
//!   The pre-queue member's first poll after the opening runs inside the opening's presence
//!   grace.
//! - The gatekeeper's check is one pipeline of six plain commands, no script (the primary guard
//!   goes in once a second per container). As a script, the same check costs 2.4–3.3× PING.
//! - The same run sends the least issue script (`bench/src/least/issue.lua`) to new buyers, with
//!   issue's keys and arguments: the floor of an issue script that keeps issue's refusals,
//!   rate limits and idempotency, with no bookkeeping.
//! - What the least a status could send costs, sent the same way by a small Python client (16
//!   connections, one request in flight each, against a `redis-server` pinned to one core,
//!   200 000 in line, five rounds each beside PING at 8–9 µs):
//!
//! | sent | ÷ PING, median (range) |
//! |---|---|
//! | `ZRANK` alone | 1.32 (1.21–1.42) |
//! | `HMGET` of 15 settings fields alone | 2.03 (1.93–2.23) |
//! | pipeline: `ZRANK`, `BITFIELD SET u32` (a presence write) | 1.51 (1.26–1.60) |
//! | pipeline: `ZRANK`, `GET` of a 60-byte state, `BITFIELD` | 1.66 (1.50–1.76) |
//! | pipeline: `ZSCORE`, `ZRANK`, `GET`, `BITFIELD` | 1.87 (1.69–2.31) |
//! | the same in `MULTI`/`EXEC`, with an `HMGET` of 4 fields for the `GET` | 2.32 (1.92–2.56) |
//! | script: `ZSCORE`, `ZRANK`, `GET`, `BITFIELD` | 1.94 (1.87–2.25) |
//! | script: `ZSCORE`, `ZRANK`, `HMGET` of 15 fields, `BITFIELD` | 2.41 (2.09–2.55) |
//! | an empty script with 3 keys | 1.24 (1.04–1.55) |
//!
//! So a status within 2× PING has room for four small commands and no more: the ticket's check,
//! its rank, the queue's state in one small value, and one presence write. A reply field costs
//! about half a microsecond; the 15-field settings read alone is a PING's worth.

use std::time::Duration;

use futures::future::join_all;
use lineup::ids::QueueId;
use lineup::queue::WaitingRoom;
use lineup::token::TokenClaims;
use serde_json::json;

use crate::measure::Bench;
use crate::probe::{main_thread_cpu_us, paired, plain_connections, Cost};
use crate::report::Report;

/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 16;

/// Requests per measured kind: each a distinct buyer.
const BUYERS: usize = 4_000;

/// Rounds each measured kind is sent in, each right after as many PINGs, so that a burst of
/// load from elsewhere on the machine skews one round's ratio, not the figure.
const ROUNDS: usize = 5;

/// Sends `cmd` on `conn` and drops its reply.
fn send(
    cmd: redis::Cmd,
    conn: &redis::aio::MultiplexedConnection,
) -> impl std::future::Future<Output = ()> {
    let mut conn = conn.clone();
    async move {
        let _: redis::Value = cmd.query_async(&mut conn).await.expect("a bench command");
    }
}

/// Loads `script` on the server; its SHA1 hash.
async fn load(conn: &redis::aio::MultiplexedConnection, script: &str) -> String {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script)
        .query_async(&mut conn.clone())
        .await
        .expect("SCRIPT LOAD")
}

/// The queue call `parts` (an `EVALSHA` with its keys and arguments) sent to the script with
/// SHA1 `hash` instead: another script given the same keys and arguments.
fn as_script(hash: &str, parts: &[Vec<u8>]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(hash);
    for part in &parts[2..] {
        cmd.arg(part.as_slice());
    }
    cmd
}

/// Tokens of `users` in `queue`, as the issue call made them.
async fn join(room: &WaitingRoom, queue: &QueueId, users: &[String]) -> Vec<TokenClaims> {
    let mut claims = Vec::new();
    for chunk in users.chunks(256) {
        let issued = join_all(
            chunk
                .iter()
                .map(|u| async move { room.issue(queue, &crate::util::user(u), None).await }),
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
    for _ in 0..CONTAINERS {
        rooms.push(bench.app.another_container().await.queue_api.room);
    }
    let pings = plain_connections(bench, CONTAINERS).await;
    let rooms = &rooms;
    let pings = &pings;
    let mut rows: Vec<(&str, Cost, &str)> = Vec::new();

    let ping_us = crate::probe::ping_us(bench, pings, BUYERS).await;
    let get = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            let _: Option<String> = redis::cmd("GET")
                .arg(format!("per-request-get-{i}"))
                .query_async(&mut pings[lane].clone())
                .await
                .expect("GET");
        },
    )
    .await;
    // ElastiCache Serverless bills a script by its vCPU time against a simple GET's.
    let get_us = get.per_request_us.max(f64::EPSILON);

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
    let first = paired(bench, pings, ROUNDS, waiters.iter().collect(), &status).await;
    rows.push((
        "status, a waiter's first poll 5 s after joining",
        first,
        "goal ≤ 2× PING",
    ));
    let next = paired(bench, pings, ROUNDS, waiters.iter().collect(), &status).await;
    let poll_us = next.per_request_us;
    rows.push(("status, the waiter's next poll", next, "goal ≤ 2× PING"));
    // The least a Lua status can do (least/status.lua: the clock, two settings, the ticket
    // check, the position and the presence write), with status's keys and arguments, sent
    // the same way: what a status script could reach at best on this machine.
    let least_hash = load(&pings[0], include_str!("least/status.lua")).await;
    let least_hash = &least_hash;
    let line_ref = &line;
    let least = paired(
        bench,
        pings,
        ROUNDS,
        waiters.iter().collect(),
        |lane, claims| {
            let ticket = claims.ticket.to_string();
            let parts = lineup::bench_support::status_command(
                &rooms[lane],
                line_ref,
                &[claims.user.as_str(), &ticket],
            );
            send(as_script(least_hash, &parts), &pings[lane])
        },
    )
    .await;
    rows.push((
        "least status script (bench/src/least/status.lua), the same waiters",
        least,
        "what a Lua status reaches at best",
    ));
    // The same least script carrying only the three keys it reads (the line, settings and
    // meta, whose name its scratch key takes) and its two arguments: a small script's request.
    let own = include_str!("least/status.lua")
        .replace("local ARG = 7", "local ARG = 1")
        .replace("KEYS[4]", "KEYS[3]")
        .replace("KEYS[5]", "KEYS[2]");
    let own_hash = load(&pings[0], &own).await;
    let own_hash = &own_hash;
    let least_own = paired(
        bench,
        pings,
        ROUNDS,
        waiters.iter().collect(),
        |lane, claims| {
            let ticket = claims.ticket.to_string();
            let keys = lineup::queue::keys::QueueKeys::new(&bench.app.config.key_prefix, line_ref);
            let mut cmd = redis::cmd("EVALSHA");
            cmd.arg(own_hash.as_str())
                .arg(3)
                .arg(&keys.waiting)
                .arg(&keys.settings)
                .arg(&keys.meta)
                .arg(claims.user.as_str())
                .arg(&ticket);
            send(cmd, &pings[lane])
        },
    )
    .await;
    rows.push((
        "least status script with only its own 3 keys and 2 arguments",
        least_own,
        "what a Lua status reaches at best",
    ));

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
    let opening = paired(bench, pings, ROUNDS, members.iter().collect(), &status).await;
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
    let check = paired(
        bench,
        pings,
        ROUNDS,
        active.iter().collect(),
        |lane, claims| {
            let room = &rooms[lane];
            let claims = claims.clone();
            async move {
                room.check(&claims).await.expect("check").expect("active");
            }
        },
    )
    .await;
    let check_us = check.per_request_us;
    rows.push((
        "gatekeeper check, an active buyer",
        check,
        "goal ≤ 1.5× PING",
    ));
    // The one read that answers an active buyer, alone: the floor of any check.
    let open_keys = lineup::queue::keys::QueueKeys::new(&bench.app.config.key_prefix, &open);
    let entry = paired(
        bench,
        pings,
        ROUNDS,
        active.iter().collect(),
        |lane, claims| {
            send(
                redis::cmd("HGET")
                    .arg(&open_keys.active_tickets)
                    .arg(claims.user.as_str())
                    .clone(),
                &pings[lane],
            )
        },
    )
    .await;
    rows.push((
        "HGET of an active buyer's session entry alone, the same buyers",
        entry,
        "the floor of any check: what answers an active buyer",
    ));

    // New buyers joining a line.
    let arrivals = users("n");
    let issue = paired(
        bench,
        pings,
        ROUNDS,
        arrivals.iter().collect(),
        |lane, user| {
            let room = &rooms[lane];
            let line = &line;
            async move {
                room.issue(line, &crate::util::user(user), None)
                    .await
                    .expect("issue");
            }
        },
    )
    .await;
    let issue_us = issue.per_request_us;
    rows.push((
        "issue, a new buyer joining the line",
        issue,
        "goal ≤ 3.5× PING",
    ));
    // The least a Lua issue can do (least/issue.lua: the clock, four settings, two rate-limit
    // counters, the look for a live entry, the ticket counter, the place and the first
    // presence deadline), with issue's keys and arguments, sent the same way: what an issue
    // script could reach at best on this machine.
    let least_issue_hash = load(&pings[0], include_str!("least/issue.lua")).await;
    let least_issue_hash = &least_issue_hash;
    let least_issue = paired(
        bench,
        pings,
        ROUNDS,
        users("l").iter().collect(),
        |lane, user| {
            let parts = lineup::bench_support::issue_command(
                &rooms[lane],
                line_ref,
                &[user.as_str(), "10.0.0.1", "1000000", "1000000", "open", "0"],
            );
            send(as_script(least_issue_hash, &parts), &pings[lane])
        },
    )
    .await;
    rows.push((
        "least issue script (bench/src/least/issue.lua), new buyers",
        least_issue,
        "what a Lua issue reaches at best",
    ));

    // Admissions: the line's waiters (present: they polled or joined moments ago), admitted
    // by promotion ticks once capacity allows them all; then each leaves its session.
    bench
        .configure(
            line.as_str(),
            json!({"capacity": 1_000_000, "admitPerTick": 1_000_000}),
        )
        .await;
    let before = main_thread_cpu_us(bench).await;
    let mut admitted = 0;
    loop {
        let report = bench
            .room()
            .promote(std::slice::from_ref(&line))
            .await
            .expect("tick");
        if report.admitted() == 0 {
            break;
        }
        admitted += report.admitted();
    }
    let admission = Cost {
        ratios: Vec::new(),
        per_request_us: (main_thread_cpu_us(bench).await - before) / admitted.max(1) as f64,
        script_us: 0.0,
    };
    let leave = paired(
        bench,
        pings,
        ROUNDS,
        waiters.iter().collect(),
        |lane, claims| {
            let room = &rooms[lane];
            let claims = claims.clone();
            async move {
                room.leave(&claims).await.expect("leave");
            }
        },
    )
    .await;

    report.row(
        "PING",
        &format!("{ping_us:.1} µs"),
        "the floor: a request's own I/O",
    );
    report.row(
        "GET",
        &format!("{get_us:.1} µs"),
        "a simple command, ElastiCache Serverless's 1 ECPU",
    );
    let costs = OnSale {
        issue: issue_us,
        poll: poll_us,
        admission: admission.per_request_us,
        check: check_us,
        leave: leave.per_request_us,
        get: get_us,
    };
    for (name, cost, goal) in rows {
        report.row(
            name,
            &cost.against(ping_us),
            &format!(
                "{goal}; the script itself {:.1} µs (commandstats)",
                cost.script_us
            ),
        );
    }
    for (name, cost) in [
        ("a promotion tick, per buyer admitted", &admission),
        ("leave, an active buyer", &leave),
    ] {
        report.row(name, &cost.against(ping_us), "no worse than today");
    }
    costs.report(report);
}

/// What an on-sale costs, from each call's Redis CPU: [`ON_SALE_BUYERS`] buyers join in its
/// first minute and are admitted at [`ADMITTED_PER_SECOND`], so the last waits about half an
/// hour. Each joins, polls exactly as told until admitted, passes ten gatekeeper checks and
/// leaves (or pays). docs/deploy.md gives the rule, with the prices below.
struct OnSale {
    issue: f64,
    poll: f64,
    admission: f64,
    check: f64,
    leave: f64,
    get: f64,
}

const ON_SALE_BUYERS: f64 = 1_000_000.0;
const ADMITTED_PER_SECOND: f64 = 500.0;
/// The default idle period, which sets how long a waiter may be told to wait between polls.
const IDLE_SECONDS: u64 = 120;
const CHECKS: f64 = 10.0;
/// us-east-1 prices: HTTP API per request; Lambda (arm64) per request and per GB-s;
/// ElastiCache Serverless (Redis OSS) per ECPU.
const HTTP_API_PER_REQUEST: f64 = 1.00e-6;
const LAMBDA_PER_REQUEST: f64 = 0.20e-6;
const LAMBDA_PER_GB_SECOND: f64 = 0.000_013_333_4;
const ECPU_PRICE: f64 = 0.0034e-6;
/// template.yaml's MemorySize, and the duration a request is billed (1 ms granularity): a
/// handler's work and its one round trip to Redis.
const LAMBDA_GB: f64 = 0.25;
const LAMBDA_BILLED_SECONDS: f64 = 0.002;

/// The polls a waiter makes, exactly as told, over a wait of `wait_s` (the first when it joins).
fn polls_over(wait_s: f64) -> f64 {
    let (mut left, mut polls) = (wait_s, 1.0);
    while left > 0.0 {
        left -= crate::util::told_interval(left, IDLE_SECONDS) as f64;
        polls += 1.0;
    }
    polls
}

impl OnSale {
    /// ECPUs a request costing `us` of Redis CPU is billed: its vCPU time against a GET's,
    /// at least 1 (each request here moves well under a KB).
    fn ecpus(&self, us: f64) -> f64 {
        (us / self.get).max(1.0)
    }

    fn report(&self, report: &mut Report) {
        // Buyer i of n waits i / rate: the mean of polls over the uniform waits.
        let samples = 1_000;
        let last_wait = ON_SALE_BUYERS / ADMITTED_PER_SECOND;
        let polls = (0..samples)
            .map(|i| polls_over(last_wait * (i as f64 + 0.5) / samples as f64))
            .sum::<f64>()
            / samples as f64;
        let redis_us =
            self.issue + polls * self.poll + self.admission + CHECKS * self.check + self.leave;
        let ecpus = self.ecpus(self.issue)
            + polls * self.ecpus(self.poll)
            + self.ecpus(self.admission)
            + CHECKS * self.ecpus(self.check)
            + self.ecpus(self.leave);
        let requests = 1.0 + polls + CHECKS + 1.0;
        let http = requests * HTTP_API_PER_REQUEST;
        let lambda = requests
            * (LAMBDA_PER_REQUEST + LAMBDA_GB * LAMBDA_BILLED_SECONDS * LAMBDA_PER_GB_SECOND);
        let cache = ecpus * ECPU_PRICE;
        report.row(
            "a buyer over an on-sale: Redis CPU",
            &format!("{redis_us:.0} µs"),
            &format!(
                "issue, {polls:.1} polls as told (1 000 000 buyers admitted at 500/s), \
                 admission, 10 checks, leave"
            ),
        );
        report.row(
            "an on-sale of 1 000 000 buyers: dollars",
            &format!(
                "${:.0}",
                ON_SALE_BUYERS * (http + lambda + cache)
            ),
            &format!(
                "HTTP API ${:.0}, Lambda ${:.0}, ElastiCache Serverless ${:.0} ({ecpus:.0} ECPUs a buyer)",
                ON_SALE_BUYERS * http,
                ON_SALE_BUYERS * lambda,
                ON_SALE_BUYERS * cache
            ),
        );
    }
}
