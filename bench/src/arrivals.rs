//! `lineup-bench arrivals`: issue 36's arrivals goal. With 1 000 000 already in line, one
//! shard takes 25 000 new buyers a second for 10 s at ≤ 70 % of a core, with no call over
//! 1 ms. The bench sends issues for 10 s as fast as [`CONTAINERS`] containers can, each its own
//! connection with one request in flight, every one a new buyer from a new address; the
//! promoter ticks once in those 10 s, as its Lambda does. The figure is Redis's main-thread
//! CPU (`INFO cpu`) per issue, and what 25 000 a second of them make of a core.
//!
//! Each burst runs with the rate limits at their deployed defaults (60 a minute per buyer,
//! 600 per address: each issue counts both) and again with them off, as the other sections
//! run; and once into a line that starts empty, to show that the cost does not grow with the
//! line.
//!
//! # Method
//!
//! - A queue of capacity 1 is filled to 1 000 000 waiters (512 issues in flight) before the
//!   bursts (`LINEUP_BENCH_ARRIVALS_LINE` for another size).
//! - The figure is Redis's main-thread CPU per issue beyond its idle share, and that times 25 000
//!   a second. SLOWLOG keeps every call over 1 ms, the goal's bound; it times a call by the wall
//!   clock, so it counts Redis's preemptions in.
//!
//! # What limits the figures
//!
//! - The bench sends as fast as its containers go, not at 25 000 a second: 32 containers reach
//!   3 000–5 000 issues a second, with Redis at 42–59 % of a core; the rest is the machine.
//! - An issue costs no more into a line of 1 000 000 than into one that starts empty (118 and
//!   132 µs in the same run).
//! - The rate limits' cost is within the spread between runs here (on / off: 118 / 120 µs at
//!   1 000 000; 113 / 92 µs in a run at 10 000).
//! - The µs per issue move with the machine's load: under other builds' load (PING 9–20 µs)
//!   they run high.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lineup::cold_start::{Publishing, Started};
use lineup::config::{QueueConfig, RateLimits};
use lineup::ids::QueueId;
use lineup::queue::WaitingRoom;
use serde_json::json;

use crate::measure::Bench;
use crate::probe::{idle_share, main_thread_cpu_us, ping_us, plain_connections, Probe, Slowest};
use crate::report::{met, thousands, Report};

/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 32;
/// Already in line (`LINEUP_BENCH_ARRIVALS_LINE` for another size).
const IN_LINE: usize = 1_000_000;
const RUN: Duration = Duration::from_secs(10);
/// The goal: new buyers a second, and the share of a core they may take.
const GOAL_RATE: f64 = 25_000.0;
const CPU_GOAL: f64 = 0.70;
/// SLOWLOG keeps every call slower than this, µs: the goal's bound. (Keeping faster calls
/// too would fill it with thousands of entries a second on a loaded machine, and reading
/// them back would load Redis.)
const SLOW_US: u64 = 1_000;

/// A container as deployed: the bench's settings, with the rate limits at their defaults
/// (`RATE_LIMIT_USER_PER_MINUTE`, `RATE_LIMIT_IP_PER_MINUTE`) when `limits`.
async fn container(bench: &Bench, limits: bool) -> WaitingRoom {
    let config = bench.app.config.clone();
    let url = config.redis.url.clone().expect("REDIS_URL is set");
    let started = Started::connect(config, &url, Publishing::Nothing)
        .await
        .expect("connect");
    let env = &started.config.env;
    let read = "the bench's queue settings";
    let mut settings = QueueConfig {
        creation: env.queue_creation().expect(read),
        max_queues: env.max_queues().expect(read),
        rate_limits: env.rate_limits().expect(read),
        ..QueueConfig::new(env.waiting_room().expect(read))
    };
    if limits {
        settings.rate_limits = RateLimits::DEFAULT;
    }
    started.room_with(settings)
}

/// One 10 s burst of new buyers.
struct Burst {
    issues: u64,
    seconds: f64,
    /// Redis main-thread CPU over the burst, share of a core.
    cpu: f64,
    slow: Slowest,
}

impl Burst {
    /// Redis CPU per issue, µs, beyond Redis's idle share.
    fn per_issue_us(&self, idle: f64) -> f64 {
        (self.cpu - idle).max(0.0) * self.seconds * 1e6 / self.issues.max(1) as f64
    }

    /// The share of a core 25 000 issues a second take.
    fn at_goal(&self, idle: f64) -> f64 {
        idle + self.per_issue_us(idle) * GOAL_RATE / 1e6
    }
}

/// Issues from `rooms` into `queue` for [`RUN`], each a new buyer (`prefix…`) from its own
/// address; the promoter ticks half way through.
async fn burst(
    bench: &Bench,
    probe: &Probe,
    rooms: &[WaitingRoom],
    queue: &str,
    prefix: &str,
) -> Burst {
    let queue = QueueId::parse(queue).expect("queue id");
    let promoter = bench.app.stack.promoter.clone();
    let issued = AtomicU64::new(0);
    probe.slowlog_start(SLOW_US, 10_000).await;
    let before = main_thread_cpu_us(bench).await;
    let started = Instant::now();
    let deadline = started + RUN;
    let tick = async {
        tokio::time::sleep(RUN / 2).await;
        queue_promoter::tick(&promoter).await.expect("tick");
    };
    let senders = futures::future::join_all(rooms.iter().enumerate().map(|(lane, room)| {
        let (queue, issued) = (&queue, &issued);
        async move {
            let mut n: u32 = 0;
            while Instant::now() < deadline {
                let user = crate::util::user(&format!("{prefix}{lane:03}-{n:07}"));
                // A new address per buyer: 10.x.y.z.
                let ip = IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | ((lane as u32) << 18) | n));
                room.issue(queue, &user, Some(ip)).await.expect("issue");
                issued.fetch_add(1, Ordering::Relaxed);
                n += 1;
            }
        }
    }));
    futures::future::join(senders, tick).await;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = (main_thread_cpu_us(bench).await - before) / 1e6 / seconds;
    let slow = probe.slowlog_take().await;
    probe.slowlog_stop().await;
    Burst {
        issues: issued.load(Ordering::Relaxed),
        seconds,
        cpu,
        slow,
    }
}

pub async fn arrivals(bench: &Bench, report: &mut Report) {
    let in_line = std::env::var("LINEUP_BENCH_ARRIVALS_LINE")
        .ok()
        .and_then(|n| n.replace('_', "").parse().ok())
        .unwrap_or(IN_LINE);
    let containers = std::env::var("LINEUP_BENCH_ARRIVALS_CONTAINERS")
        .ok()
        .and_then(|n| n.parse().ok())
        .filter(|&n: &usize| n > 0)
        .unwrap_or(CONTAINERS);
    report.section(&format!(
        "Arrivals: new buyers joining a line of {}, {containers} containers with one request \
         in flight each, for {} s; Redis main-thread CPU (INFO cpu)",
        thousands(in_line as u64),
        RUN.as_secs()
    ));
    let probe = Probe::open(bench).await;
    let mut limited = Vec::new();
    let mut open = Vec::new();
    for _ in 0..containers {
        limited.push(container(bench, true).await);
        open.push(container(bench, false).await);
    }
    let pings = plain_connections(bench, containers).await;
    let idle = idle_share(bench, Duration::from_secs(5)).await;
    let ping = ping_us(bench, &pings, 4_000).await;

    // A line that starts empty, then the same queue's twin filled to `in_line`.
    for queue in ["arrivals-new", "arrivals"] {
        bench.configure(queue, json!({"capacity": 1})).await;
        bench.issue(queue, "holder").await;
    }
    let new_line = burst(bench, &probe, &limited, "arrivals-new", "e").await;
    let started = Instant::now();
    bench.fill("arrivals", 0, in_line).await;
    let fill_s = started.elapsed().as_secs_f64();
    let with_limits = burst(bench, &probe, &limited, "arrivals", "n").await;
    let without = burst(bench, &probe, &open, "arrivals", "o").await;

    let row = |report: &mut Report, name: &str, burst: &Burst, goal: bool| {
        let per_issue = burst.per_issue_us(idle);
        let at_goal = burst.at_goal(idle);
        report.row(
            name,
            &format!(
                "{per_issue:.1} µs per issue ({:.1}× PING): {:.0} % of a core at 25 000 a second",
                per_issue / ping,
                at_goal * 100.0
            ),
            &format!(
                "{} issues at {} a second, Redis at {:.0} % of a core{}",
                thousands(burst.issues),
                thousands((burst.issues as f64 / burst.seconds) as u64),
                burst.cpu * 100.0,
                if goal {
                    format!("; goal ≤ 70 %: {}", met(at_goal <= CPU_GOAL))
                } else {
                    String::new()
                }
            ),
        );
    };
    row(
        report,
        &format!(
            "{} in line, rate limits on (deployed defaults)",
            thousands(in_line as u64)
        ),
        &with_limits,
        true,
    );
    row(
        report,
        &format!("{} in line, rate limits off", thousands(in_line as u64)),
        &without,
        false,
    );
    row(
        report,
        "a line empty at the start, rate limits on",
        &new_line,
        false,
    );
    report.row(
        "PING, sent the same way in the same run",
        &format!("{ping:.1} µs"),
        &format!("the floor: a request's own I/O; Redis idle {:.2} % of a core (left out of each figure)", idle * 100.0),
    );
    let mut slow = with_limits.slow.clone();
    slow.add(&without.slow);
    report.row(
        &format!(
            "slowest call of the bursts into the line of {}",
            thousands(in_line as u64)
        ),
        &slow.figure(SLOW_US),
        &format!(
            "SLOWLOG, the promoter's tick too; goal no call over 1 ms: {}",
            met(slow.over_1ms == 0)
        ),
    );
    report.row(
        "filling the line (issue, 512 in flight on one connection)",
        &format!("{:.0} s", fill_s),
        &format!(
            "{} issues a second",
            thousands((in_line as f64 / fill_s) as u64)
        ),
    );
}
