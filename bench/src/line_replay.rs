//! The parts of `lineup-bench line-opening`'s replay: its pace (the constants), the kinds of
//! request it counts, the servers and their nodes' readings, the per-stripe tally, and the
//! replay itself: the due requests, the containers that send them, and the promoter.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::future::join_all;
use lineup::clock::SystemClock;
use lineup::config::RedisSettings;
use lineup::ids::{QueueId, UserId};
use lineup::line::{Joined, Lease, Line, LineShape, Opening, Standing, Stripe, StripeKeys};
use lineup::queue::POLL_AFTER_WAIT_PART;
use lineup_local::embedded_redis::EmbeddedRedis;
use lineup_tests::{slot_ranges, EmbeddedCluster};

use crate::probe::{info_field, main_thread_cpu_of};

/// Containers sending at once, each one connection with one request in flight.
pub(crate) const CONTAINERS: usize = 16;
/// How often each primary's CPU is read.
pub(crate) const WINDOW: Duration = Duration::from_secs(5);
/// The measured run: from this long before the opening…
pub(crate) const BEFORE: Duration = Duration::from_secs(10);
/// …to this long after it (`LINEUP_BENCH_LINE_AFTER_SECONDS`, for a short trial).
pub(crate) fn after() -> Duration {
    std::env::var("LINEUP_BENCH_LINE_AFTER_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(Duration::from_secs(180), Duration::from_secs)
}
/// The live sessions the booking system takes, at the whole scale of a sale.
pub(crate) const CAPACITY: f64 = 5_000.0;
/// How long an admitted buyer holds its session here: it learns at its next poll, checks
/// three times a second apart and leaves a second later.
pub(crate) const HOLD_SECONDS: f64 = 5.0;
/// The pre-queue's first polls spread over this long, from when the draw has positions (3.5 s
/// after the opening), by draw value: the last is in by 57.5 s.
pub(crate) const FIRST_POLLS: Duration = Duration::from_secs(54);
/// The longest a waiter is told to wait before its next poll: the waiting room's rule, a
/// quarter of the wait ([`POLL_AFTER_WAIT_PART`]) up to 320 s.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_secs(320);
/// Gatekeeper checks an admitted buyer passes before it leaves.
pub(crate) const CHECKS: u32 = 3;

/// The kinds of request, as counted per stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Kind {
    Join = 0,
    Poll = 1,
    Check = 2,
    Leave = 3,
    /// One tick's work on one stripe.
    Tick = 4,
}

pub(crate) const KINDS: [Kind; 5] = [Kind::Join, Kind::Poll, Kind::Check, Kind::Leave, Kind::Tick];

/// What falls due for a buyer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Task {
    Join(u32),
    Poll(u32),
    Check(u32, u32),
    Leave(u32),
}

pub(crate) fn user(i: u32) -> UserId {
    UserId::parse(&format!("b{i}")).expect("user id")
}

/// The servers of one replay.
pub(crate) enum Servers {
    One(EmbeddedRedis),
    Cluster(EmbeddedCluster),
}

impl Servers {
    pub(crate) async fn start(primaries: usize) -> Servers {
        if primaries <= 1 {
            Servers::One(EmbeddedRedis::start().await.expect("redis-server"))
        } else {
            Servers::Cluster(EmbeddedCluster::start_primaries(primaries).await)
        }
    }

    /// Gives the slot of `key` a primary of its own, added to the cluster (on one server,
    /// nothing to do).
    pub(crate) async fn isolate(&mut self, key: &str) {
        if let Servers::Cluster(cluster) = self {
            let client = redis::Client::open(cluster.url()).expect("node url");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("node");
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(key)
                .query_async(&mut conn)
                .await
                .expect("CLUSTER KEYSLOT");
            cluster.add_primary_for_slot(slot).await;
        }
    }

    pub(crate) fn url(&self) -> String {
        match self {
            Servers::One(server) => server.url(),
            Servers::Cluster(cluster) => cluster.url(),
        }
    }

    pub(crate) fn node_urls(&self) -> Vec<String> {
        match self {
            Servers::One(server) => vec![server.url()],
            Servers::Cluster(cluster) => cluster.nodes.iter().map(|n| n.url()).collect(),
        }
    }
}

/// Plain connections to each node, for `INFO`, PING and `CLUSTER` reads.
pub(crate) struct Nodes(pub(crate) Vec<redis::aio::MultiplexedConnection>);

impl Nodes {
    pub(crate) async fn open(servers: &Servers) -> Nodes {
        let mut conns = Vec::new();
        for url in servers.node_urls() {
            let client = redis::Client::open(url).expect("node url");
            conns.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .expect("node"),
            );
        }
        Nodes(conns)
    }

    /// Each node's `INFO section`.
    pub(crate) async fn info(&self, section: &str) -> Vec<String> {
        let mut out = Vec::new();
        for conn in &self.0 {
            let info: String = redis::cmd("INFO")
                .arg(section)
                .query_async(&mut conn.clone())
                .await
                .expect("INFO");
            out.push(info);
        }
        out
    }

    /// Each node's main-thread CPU, µs.
    pub(crate) async fn cpu_us(&self) -> Vec<f64> {
        let infos = self.info("cpu").await;
        infos.iter().map(|info| main_thread_cpu_of(info)).collect()
    }

    /// Which node holds each stripe's keys.
    pub(crate) async fn owners(&self, keys: &[StripeKeys]) -> Vec<usize> {
        if self.0.len() == 1 {
            return vec![0; keys.len()];
        }
        let mut conn = self.0[0].clone();
        let nodes: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query_async(&mut conn)
            .await
            .expect("CLUSTER NODES");
        let ports: Vec<u16> = self
            .info("server")
            .await
            .iter()
            .map(|info| info_field(info, "tcp_port") as u16)
            .collect();
        let mut ranges: Vec<(u16, u16, usize)> = Vec::new();
        for line in nodes.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let Some(port) = fields
                .get(1)
                .and_then(|a| a.split(['@', ',']).next())
                .and_then(|a| a.rsplit(':').next())
                .and_then(|p| p.parse::<u16>().ok())
            else {
                continue;
            };
            let Some(node) = ports.iter().position(|p| *p == port) else {
                continue;
            };
            ranges.extend(slot_ranges(line).map(|(start, end)| (start, end, node)));
        }
        let mut owners = Vec::new();
        for stripe in keys {
            let slot: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(&stripe.line)
                .query_async(&mut conn)
                .await
                .expect("CLUSTER KEYSLOT");
            owners.push(
                ranges
                    .iter()
                    .find(|(a, b, _)| (*a..=*b).contains(&slot))
                    .map_or(0, |r| r.2),
            );
        }
        owners
    }
}

/// Counts of requests per stripe and kind.
pub(crate) struct Tally(Vec<[AtomicU64; 5]>);

impl Tally {
    pub(crate) fn new(stripes: u16) -> Tally {
        Tally(
            (0..stripes.max(1))
                .map(|_| std::array::from_fn(|_| AtomicU64::new(0)))
                .collect(),
        )
    }

    pub(crate) fn add(&self, stripe: Stripe, kind: Kind) {
        self.0[stripe.0 as usize][kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> Vec<[u64; 5]> {
        self.0
            .iter()
            .map(|kinds| std::array::from_fn(|k| kinds[k].load(Ordering::Relaxed)))
            .collect()
    }
}

/// The lines of one replay, one per container, and what they share.
pub(crate) struct Replay {
    pub(crate) lines: Vec<Line>,
    pub(crate) opens_at: i64,
    pub(crate) end: Instant,
    /// Admissions a second, at this scale.
    pub(crate) rate: f64,
    pub(crate) scores: Vec<AtomicI64>,
    pub(crate) first_polled: Vec<AtomicI64>,
    pub(crate) members: u32,
    pub(crate) due: Mutex<BinaryHeap<Reverse<(Instant, Task)>>>,
    pub(crate) tally: Tally,
    pub(crate) late_ms: Mutex<Vec<u64>>,
    pub(crate) dropped: AtomicU64,
    pub(crate) done: AtomicBool,
}

impl Replay {
    pub(crate) fn schedule(&self, at: Instant, task: Task) {
        if at < self.end {
            if let Ok(mut due) = self.due.lock() {
                due.push(Reverse((at, task)));
            }
        }
    }

    /// The next task due, if any is due now.
    pub(crate) fn next(&self) -> Result<Task, Option<Instant>> {
        let mut due = self.due.lock().map_err(|_| None)?;
        match due.peek() {
            Some(Reverse((at, _))) if *at <= Instant::now() => {
                let Some(Reverse((at, task))) = due.pop() else {
                    return Err(None);
                };
                if let Ok(mut late) = self.late_ms.lock() {
                    late.push(at.elapsed().as_millis() as u64);
                }
                Ok(task)
            }
            Some(Reverse((at, _))) => Err(Some(*at)),
            None => Err(None),
        }
    }

    pub(crate) async fn container(&self, lane: usize) {
        let line = &self.lines[lane];
        while !self.done.load(Ordering::Relaxed) {
            let task = match self.next() {
                Ok(task) => task,
                Err(at) => {
                    let wait = at.map_or(Duration::from_millis(5), |at| {
                        at.saturating_duration_since(Instant::now())
                    });
                    tokio::time::sleep(wait.min(Duration::from_millis(5))).await;
                    continue;
                }
            };
            let now = chrono::Utc::now().timestamp_millis();
            let second = Duration::from_secs(1);
            match task {
                Task::Join(i) => {
                    let u = user(i);
                    self.tally.add(line.stripe_of(&u), Kind::Join);
                    if let Ok(Joined::New { score, .. } | Joined::Already { score, .. }) =
                        line.join(&u, now).await
                    {
                        self.scores[i as usize].store(score, Ordering::Relaxed);
                        self.schedule(at_ms(line.placed_by(score), now), Task::Poll(i));
                    }
                }
                Task::Poll(i) => {
                    let u = user(i);
                    if i < self.members {
                        let _ = self.first_polled[i as usize].compare_exchange(
                            i64::MAX,
                            now - self.opens_at,
                            Ordering::Relaxed,
                            Ordering::Relaxed,
                        );
                    }
                    self.tally.add(line.stripe_of(&u), Kind::Poll);
                    let score = self.scores[i as usize].load(Ordering::Relaxed);
                    match line.poll(&u, score, now).await {
                        Ok(Standing::Waiting { position }) => {
                            let wait = position as f64 / self.rate / POLL_AFTER_WAIT_PART as f64;
                            let after = Duration::from_secs_f64(
                                wait.clamp(1.0, MAX_INTERVAL.as_secs_f64()),
                            );
                            self.schedule(Instant::now() + after, Task::Poll(i));
                        }
                        Ok(Standing::Active { .. }) => {
                            self.schedule(Instant::now() + second, Task::Check(i, 0))
                        }
                        Ok(
                            Standing::Dropped
                            | Standing::Left
                            | Standing::Ended
                            | Standing::Paid
                            | Standing::Gone,
                        ) => {
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(Standing::Unplaced { placed_by, .. }) => {
                            self.schedule(at_ms(placed_by, now), Task::Poll(i))
                        }
                        Ok(Standing::Stalled { .. }) | Err(_) => {
                            self.schedule(Instant::now() + second, Task::Poll(i))
                        }
                    }
                }
                Task::Check(i, n) => {
                    let u = user(i);
                    self.tally.add(line.stripe_of(&u), Kind::Check);
                    let _ = line.check(&u, now).await;
                    let next = if n + 1 < CHECKS {
                        Task::Check(i, n + 1)
                    } else {
                        Task::Leave(i)
                    };
                    self.schedule(Instant::now() + second, next);
                }
                Task::Leave(i) => {
                    let u = user(i);
                    self.tally.add(line.stripe_of(&u), Kind::Leave);
                    let _ = line.leave(&u).await;
                }
            }
        }
    }

    pub(crate) async fn promoter(&self, capacity: u64, stripes: u16) {
        let line = &self.lines[0];
        let mut next = Instant::now();
        while !self.done.load(Ordering::Relaxed) {
            tokio::time::sleep_until(next.into()).await;
            next += Duration::from_secs(1);
            if let Ok(Lease::Granted(fence)) = line.lease("bench", Duration::from_secs(5)).await {
                if line.tick(fence, &SystemClock, capacity).await.is_ok() {
                    for k in 0..stripes.max(1) {
                        self.tally.add(Stripe(k), Kind::Tick);
                    }
                }
            }
        }
    }
}

/// The instant `at` (ms on the wall clock) falls at, `now` being the wall clock's ms now: at
/// least a second from now.
fn at_ms(at: i64, now: i64) -> Instant {
    Instant::now() + Duration::from_millis((at - now).max(1000) as u64)
}

/// Runs `run` for each of `count` requests, over the containers, one in flight on each.
pub(crate) async fn spread<F, Fut>(count: u32, run: F)
where
    F: Fn(usize, u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let run = &run;
    join_all((0..CONTAINERS).map(|lane| async move {
        for i in (lane as u32..count).step_by(CONTAINERS) {
            run(lane, i).await;
        }
    }))
    .await;
}

pub(crate) fn shape(stripes: u16, draw_ranges: u16) -> LineShape {
    LineShape {
        stripes,
        draw_ranges,
        presence: 3 * MAX_INTERVAL,
        ..LineShape::default()
    }
}

pub(crate) fn queue(name: &str) -> QueueId {
    QueueId::parse(name).expect("queue id")
}

pub(crate) async fn lines_of(
    settings: &RedisSettings,
    servers: &Servers,
    name: &str,
    shape: LineShape,
    opening: Option<Opening>,
) -> Vec<Line> {
    (0..CONTAINERS)
        .map(|_| {
            let conn = lineup::store::connect(settings, &servers.url()).expect("connect");
            let line = Line::new(conn, "lineup", queue(name), shape);
            match &opening {
                Some(opening) => line.with_opening(opening.clone()),
                None => line,
            }
        })
        .collect()
}
