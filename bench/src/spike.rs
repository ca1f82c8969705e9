//! `lineup-bench opening-spike`: issue 36's opening, replayed whole at a fraction f of its
//! scale. The goal: 2 000 000 pre-queue members and 2 000 new buyers a second, one queue, one
//! Redis. This machine cannot send 2 000 000 members' polls in real time, so the bench runs
//! the same schedule with f × every count, in real time, and extrapolates Redis's CPU to the
//! whole scale by CPU per call × the calls at the whole scale. It runs at two scales (by
//! default f = 1/40 and 1/160; `LINEUP_BENCH_SPIKE_MEMBERS=100000,25000` names the
//! pre-queue sizes) to show that CPU per call does not rise with scale.
//!
//! What runs, in real time, on a fresh Redis per scale:
//!
//! - The queue: a scheduled opening (so a pre-queue and a draw), capacity f × 5 000, which
//!   admits up to f × 500 buyers a second at the promoter's 10 s ticks.
//! - The pre-queue fills through the issue call, [`JOIN_RATE`] joins a second, ending 20 s
//!   before the opening. Each member then follows its replies: it polls when its last
//!   reply's `pollAfterSeconds` says, up to 20 % sooner, as the waiting-room page does
//!   (`LINEUP_BENCH_SPIKE_EXACT=1`: exactly when told).
//! - From 10 s before the opening to 180 s after, f × 2 000 new buyers a second join and poll
//!   as told too.
//! - The promoter ticks every `PROMOTE_TICK_SECONDS`, as the queue-promoter Lambda does
//!   (`queue_promoter::tick`, its own container); the reaper runs each minute.
//! - An admitted buyer learns it at its next poll, passes [`CHECKS`] gatekeeper checks a
//!   second apart and leaves (or pays) a second later.
//!
//! Every request goes as AWS sends it: [`CONTAINERS`] containers
//! (`LINEUP_BENCH_SPIKE_CONTAINERS`), each its own connection
//! with one request in flight; a free container takes the next request that falls due.
//! Redis's main-thread CPU (`INFO cpu`) is read every 5 s. The report says how late the bench
//! sent requests against their schedule: if it could not keep up, the figures understate.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lineup::error::Departure;
use lineup::ids::QueueId;
use lineup::queue::{Standing, TokenState, WaitingRoom};
use lineup::token::TokenClaims;
use lineup::Error;
use serde_json::json;
use tokio::sync::{mpsc, Mutex as Mutex2};
use tokio::time::Instant;

use crate::measure::Bench;
use crate::probe::{idle_share, load_average, ping_us, plain_connections, Probe, Slowest};
use crate::report::{met, thousands, Report};

/// The goal's scale.
const FULL_MEMBERS: f64 = 2_000_000.0;
const FULL_ARRIVALS_PER_SECOND: f64 = 2_000.0;
/// Active buyers at once at the whole scale. Buyers leave seconds after their admission, so
/// each 10 s tick admits about this many: 500 a second.
const FULL_CAPACITY: f64 = 5_000.0;
/// The scales run by default: pre-queue members.
const DEFAULT_MEMBERS: [usize; 2] = [50_000, 12_500];
/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 64;
/// Pre-queue joins a second while it fills (all done 20 s before the opening).
const JOIN_RATE: f64 = 5_000.0;
/// The measured stretch: from 10 s before the opening to 180 s after, in 5 s windows.
const BEFORE: Duration = Duration::from_secs(10);
const AFTER: Duration = Duration::from_secs(180);
const WINDOW: Duration = Duration::from_secs(5);
/// Gatekeeper checks an admitted buyer passes, a second apart, before leaving.
const CHECKS: u8 = 3;
/// Buckets of told poll intervals: up to each bound, s.
const TOLD: [u64; 6] = [1, 4, 9, 39, 40, u64::MAX];
/// SLOWLOG keeps every call slower than this, µs: the goal's bound. (Keeping faster calls
/// too would fill it with thousands of entries a second on a loaded machine, and reading
/// them back would load Redis.)
const SLOW_US: u64 = 1_000;
/// The goals.
const CPU_GOAL: f64 = 0.70;
const FIRST_POLL_GOAL_S: f64 = 60.0;
const BYTES_GOAL: f64 = 150.0;
/// The bench keeps up when it sends 99 % of requests within this of when they fall due.
const KEPT_UP_MS: f64 = 1_000.0;

/// What the containers and the promoter did, counted as they do it.
#[derive(Default)]
struct Counts([AtomicU64; KINDS]);

const KINDS: usize = 10;
#[derive(Clone, Copy)]
enum Kind {
    /// A pre-queue member's join (before the measured stretch).
    Join = 0,
    /// A new buyer's issue.
    Arrival,
    Status,
    Check,
    Leave,
    Tick,
    Reap,
    /// A pre-queue member's first poll at or after the opening.
    FirstPoll,
    /// A buyer who lost its place (dropped, or a token not found).
    Lost,
    /// A call that failed (Redis); the buyer tries again a second later, as the page does.
    Failed,
}

impl Counts {
    fn add(&self, kind: Kind) {
        self.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    }

    fn read(&self) -> [u64; KINDS] {
        std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// What a buyer sends next.
#[derive(Debug, Clone, Copy)]
enum Step {
    Join,
    Poll,
    /// A gatekeeper check, and how many are left after it.
    Check(u8),
    Leave,
}

/// A buyer, carried by its next request: it has one at a time.
struct Buyer {
    /// Its row in the run's tables.
    id: u32,
    /// A pre-queue member (`m…`) or a new buyer (`n…`), and its number.
    arrival: bool,
    number: u32,
    claims: Option<TokenClaims>,
    prequeue: bool,
    polls: u32,
}

/// A request and when it falls due; the scheduler's heap gives the earliest first.
struct Due {
    at: Instant,
    seq: u64,
    step: Step,
    buyer: Buyer,
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Due {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A first-poll row of a buyer that did not join the pre-queue, and of a pre-queue buyer
/// that has not polled since the opening.
const NOT_PREQUEUE: u32 = u32::MAX - 1;
const NOT_YET: u32 = u32::MAX;

/// What one scale's run shares with its containers.
struct Run {
    queue: QueueId,
    /// When the joins start (the zero of `last_join_ms`), the opening, and the measured
    /// stretch.
    epoch: Instant,
    opening: Instant,
    start: Instant,
    end: Instant,
    exact: bool,
    counts: Counts,
    seq: AtomicU64,
    /// Per buyer: its first poll at or after the opening, ms after it, or [`NOT_YET`], or
    /// [`NOT_PREQUEUE`].
    first_poll_ms: Vec<AtomicU32>,
    /// When the last pre-queue join answered, ms after `epoch`, + 1.
    last_join_ms: AtomicU64,
    /// The `pollAfterSeconds` of waiting replies after the opening, by [`TOLD`] bucket.
    told: [AtomicU64; TOLD.len()],
    lost: Mutex<Vec<String>>,
}

impl Run {
    fn lost(&self, buyer: &Buyer, err: &Error) {
        // A departure the buyer chose is no loss.
        if matches!(err, Error::Gone(Departure::Left | Departure::Paid)) {
            return;
        }
        self.counts.add(Kind::Lost);
        let mut lost = self.lost.lock().unwrap_or_else(PoisonError::into_inner);
        if lost.len() < 5 {
            lost.push(format!("{}: {err}", buyer.user()));
        }
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Buyer {
    fn user(&self) -> String {
        let kind = if self.arrival { 'n' } else { 'm' };
        format!("{kind}{:07}", self.number)
    }

    /// When to send the next poll after a reply telling `seconds`: as the waiting-room page
    /// does, up to 20 % sooner, never later (a fixed draw per buyer and poll).
    fn after(&mut self, seconds: u64, exact: bool) -> Duration {
        let told = seconds.max(1) as f64;
        self.polls += 1;
        let key = (u64::from(self.id) << 24) | u64::from(self.polls);
        let share = if exact {
            1.0
        } else {
            0.8 + 0.2 * (splitmix(key) >> 11) as f64 / (1u64 << 53) as f64
        };
        Duration::from_secs_f64(told * share)
    }
}

/// Hands each request to the containers when it falls due, and takes back each buyer's next
/// one, until the end of the stretch.
async fn scheduler(
    mut heap: BinaryHeap<Due>,
    mut back: mpsc::UnboundedReceiver<Due>,
    work: mpsc::UnboundedSender<Due>,
    end: Instant,
) {
    loop {
        let now = Instant::now();
        if now >= end {
            return;
        }
        while heap.peek().is_some_and(|due| due.at <= now) {
            if let Some(due) = heap.pop() {
                if work.send(due).is_err() {
                    return;
                }
            }
        }
        let next = heap.peek().map_or(end, |due| due.at.min(end));
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            Some(due) = back.recv() => heap.push(due),
        }
    }
}

/// One container: takes the next request that fell due, sends it, and gives the buyer's next
/// back to the scheduler. Returns how late it sent each request of the stretch, µs, with the
/// window it was sent in.
async fn container(
    room: WaitingRoom,
    work: Arc<Mutex2<mpsc::UnboundedReceiver<Due>>>,
    back: mpsc::UnboundedSender<Due>,
    run: Arc<Run>,
) -> Vec<(u16, u32)> {
    let mut late = Vec::new();
    loop {
        let next = work.lock().await.recv().await;
        let Some(Due {
            at,
            step,
            mut buyer,
            ..
        }) = next
        else {
            return late;
        };
        let sent = Instant::now();
        if sent >= run.start {
            let window = ((sent - run.start).as_secs_f64() / WINDOW.as_secs_f64()) as u16;
            late.push((
                window,
                (sent - at).as_micros().min(u128::from(u32::MAX)) as u32,
            ));
        }
        if let Some((after, step)) = serve(&room, &run, step, &mut buyer, sent).await {
            let due = Due {
                at: Instant::now() + after,
                seq: run.seq.fetch_add(1, Ordering::Relaxed),
                step,
                buyer,
            };
            if back.send(due).is_err() {
                return late;
            }
        }
    }
}

/// Sends `buyer`'s `step`; returns its next, and after how long.
async fn serve(
    room: &WaitingRoom,
    run: &Run,
    step: Step,
    buyer: &mut Buyer,
    sent: Instant,
) -> Option<(Duration, Step)> {
    let counts = &run.counts;
    let second = Duration::from_secs(1);
    let reply = match step {
        Step::Join => {
            counts.add(if buyer.arrival {
                Kind::Arrival
            } else {
                Kind::Join
            });
            let user = crate::user(&buyer.user());
            room.issue(&run.queue, &user, None).await.map(|issued| {
                buyer.prequeue = matches!(issued.state.standing, Standing::Prequeue { .. });
                if buyer.prequeue {
                    run.first_poll_ms[buyer.id as usize].store(NOT_YET, Ordering::Relaxed);
                }
                buyer.claims = Some(issued.claims);
                if !buyer.arrival {
                    let ms = (Instant::now() - run.epoch).as_millis() as u64 + 1;
                    run.last_join_ms.fetch_max(ms, Ordering::Relaxed);
                }
                issued.state
            })
        }
        Step::Poll => {
            if buyer.prequeue && sent >= run.opening {
                let ms = (sent - run.opening)
                    .as_millis()
                    .min(u128::from(NOT_PREQUEUE - 1)) as u32;
                let row = &run.first_poll_ms[buyer.id as usize];
                if row
                    .compare_exchange(NOT_YET, ms, Ordering::Relaxed, Ordering::Relaxed)
                    .is_ok()
                {
                    counts.add(Kind::FirstPoll);
                }
            }
            counts.add(Kind::Status);
            room.status(buyer.claims.as_ref()?).await
        }
        Step::Check(left) => {
            counts.add(Kind::Check);
            let next = match room.check(buyer.claims.as_ref()?).await {
                Ok(_) if left > 1 => Step::Check(left - 1),
                Ok(_) => Step::Leave,
                Err(_) => {
                    counts.add(Kind::Failed);
                    step
                }
            };
            return Some((second, next));
        }
        Step::Leave => {
            counts.add(Kind::Leave);
            return match room.leave(buyer.claims.as_ref()?).await {
                Ok(_) => None,
                Err(err @ (Error::Gone(_) | Error::NotFound(_))) => {
                    run.lost(buyer, &err);
                    None
                }
                Err(_) => {
                    counts.add(Kind::Failed);
                    Some((second, step))
                }
            };
        }
    };
    match reply {
        Ok(TokenState {
            standing: Standing::Active { .. },
            ..
        }) => Some((second, Step::Check(CHECKS))),
        Ok(state) => {
            let told = state.poll_after_seconds(chrono::Utc::now());
            if matches!(state.standing, Standing::Waiting { .. }) && sent >= run.opening {
                let bucket = TOLD.iter().position(|&b| told <= b).unwrap_or(0);
                run.told[bucket].fetch_add(1, Ordering::Relaxed);
            }
            Some((buyer.after(told, run.exact), Step::Poll))
        }
        Err(err @ (Error::Gone(_) | Error::NotFound(_))) => {
            run.lost(buyer, &err);
            None
        }
        Err(_) => {
            // Redis failed the call: the page tries again a second later.
            counts.add(Kind::Failed);
            Some((second, step))
        }
    }
}

/// One 5 s window of the measured stretch.
struct Window {
    /// Its start, s from the opening.
    from_s: f64,
    /// Its length as read, s, and Redis main-thread CPU over it, share of a core.
    seconds: f64,
    cpu: f64,
    counts: [u64; KINDS],
    slow: Slowest,
}

/// One scale's figures.
struct Scale {
    members: usize,
    f: f64,
    ping_us: f64,
    idle: f64,
    windows: Vec<Window>,
    /// used_memory's growth over the joins, per member.
    bytes_per_member: f64,
    first_polls: Vec<Option<u32>>,
    /// How late the bench sent each request, µs, by window.
    late_us: Vec<(u16, u32)>,
    joined_before_opening_s: f64,
    lost: Vec<String>,
    admitted: u64,
    told: [u64; TOLD.len()],
    /// The queue's keys at the start of the stretch (after the joins) and at its end, bytes,
    /// and the buyers holding a place at its end.
    key_bytes_joined: i64,
    key_bytes_end: Vec<(String, i64)>,
    holding_end: u64,
    /// Redis preempted (nonvoluntary context switches) over the stretch; the load average at
    /// its start and end.
    preempted: u64,
    load: (f64, f64),
}

impl Scale {
    /// A window's share of a core at the whole scale: Redis's idle share, plus what the
    /// calls cost over it times the calls at the whole scale (1 / f times as many).
    fn full(&self, window: &Window) -> f64 {
        self.idle + (window.cpu - self.idle).max(0.0) / self.f
    }

    fn total(&self, kinds: &[Kind]) -> u64 {
        self.windows
            .iter()
            .map(|w| kinds.iter().map(|k| w.counts[*k as usize]).sum::<u64>())
            .sum()
    }

    /// Requests the stretch sent: issues, polls, checks and leaves.
    fn calls(&self) -> u64 {
        self.total(&[
            Kind::Join,
            Kind::Arrival,
            Kind::Status,
            Kind::Check,
            Kind::Leave,
        ])
    }

    /// Redis CPU per request over the stretch, µs, beyond its idle share (the promoter's
    /// and reaper's calls counted in, not as requests).
    fn per_call_us(&self) -> f64 {
        let busy: f64 = self
            .windows
            .iter()
            .map(|w| (w.cpu - self.idle) * w.seconds * 1e6)
            .sum();
        busy / self.calls().max(1) as f64
    }
}

/// Scales to run: `LINEUP_BENCH_SPIKE_MEMBERS`, a comma list of pre-queue sizes.
fn scales() -> Vec<usize> {
    std::env::var("LINEUP_BENCH_SPIKE_MEMBERS")
        .ok()
        .map(|list| {
            list.split(',')
                .filter_map(|n| n.trim().replace('_', "").parse().ok())
                .filter(|&n: &usize| n > 0)
                .collect::<Vec<_>>()
        })
        .filter(|list| !list.is_empty())
        .unwrap_or_else(|| DEFAULT_MEMBERS.to_vec())
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

pub async fn opening_spike(first: &Bench, report: &mut Report) {
    let containers = env_usize("LINEUP_BENCH_SPIKE_CONTAINERS", CONTAINERS);
    let exact = std::env::var("LINEUP_BENCH_SPIKE_EXACT").as_deref() == Ok("1");
    let mut results = Vec::new();
    for (i, members) in scales().into_iter().enumerate() {
        // Each scale on a fresh Redis.
        let fresh;
        let bench = if i == 0 {
            first
        } else {
            fresh = Bench::start().await.expect("a second Redis");
            &fresh
        };
        let scale = run_scale(bench, members, containers, exact).await;
        report_scale(report, &scale, containers, exact);
        results.push(scale);
    }
    if results.len() > 1 {
        report.section("The opening spike: Redis CPU per request at each scale");
        for scale in &results {
            report.row(
                &format!(
                    "f = 1/{:.0} ({} members)",
                    1.0 / scale.f,
                    thousands(scale.members as u64)
                ),
                &format!(
                    "{:.1} µs ({:.1}× PING)",
                    scale.per_call_us(),
                    scale.per_call_us() / scale.ping_us
                ),
                &format!(
                    "{} requests, {} ÷ f; worst window {} % at the whole scale",
                    thousands(scale.calls()),
                    thousands((scale.calls() as f64 / scale.f) as u64),
                    percent(worst(scale).1)
                ),
            );
        }
        let (big, small) = (&results[0], &results[results.len() - 1]);
        report.row(
            "CPU per request, the larger scale ÷ the smaller",
            &format!("{:.2}", big.per_call_us() / small.per_call_us()),
            "≤ 1: CPU per call does not rise with scale, so extrapolating by 1/f does not understate",
        );
    }
}

/// The window with the most CPU at the whole scale, and that share.
fn worst(scale: &Scale) -> (&Window, f64) {
    scale
        .windows
        .iter()
        .map(|w| (w, scale.full(w)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("windows")
}

async fn run_scale(bench: &Bench, members: usize, containers: usize, exact: bool) -> Scale {
    let f = members as f64 / FULL_MEMBERS;
    let arrival_rate = FULL_ARRIVALS_PER_SECOND * f;
    let capacity = (FULL_CAPACITY * f).round().max(1.0) as u64;
    eprintln!(
        "… opening spike at f = {f}: {members} members, {arrival_rate} arrivals/s, capacity {capacity}"
    );
    let probe = Probe::open(bench).await;
    let mut rooms = Vec::new();
    for _ in 0..containers {
        rooms.push(bench.app.another_container().await.queue_api.room);
    }
    let functions = bench.app.another_container().await;
    let pings = plain_connections(bench, containers).await;
    let ping = ping_us(bench, &pings, 4_000).await;
    // After the PINGs, so that Redis has given back their buffers before used_memory is read.
    let idle = idle_share(bench, Duration::from_secs(5)).await;

    // The schedule, from when the joins start.
    let join_time = Duration::from_secs_f64(members as f64 / JOIN_RATE);
    let joins_from = Instant::now() + Duration::from_secs(1);
    let opening = joins_from + join_time + Duration::from_secs(20);
    let opens_at = chrono::Utc::now()
        + chrono::Duration::from_std(opening - Instant::now()).expect("a near opening");
    let start = opening - BEFORE;
    let end = opening + AFTER;
    let queue = QueueId::parse("spike").expect("queue id");
    bench
        .configure(
            queue.as_str(),
            json!({"capacity": capacity, "admitPerTick": capacity,
                   "opensAt": opens_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)}),
        )
        .await;
    let memory_before = probe.cpu_and_memory().await.1;

    // Every buyer's first request: members' joins, then new buyers' arrivals from 10 s before
    // the opening.
    let arrivals = (arrival_rate * (BEFORE + AFTER).as_secs_f64()) as usize;
    let people = (0..members)
        .map(|m| {
            (
                false,
                m,
                joins_from + Duration::from_secs_f64(m as f64 / JOIN_RATE),
            )
        })
        .chain((0..arrivals).map(|a| {
            (
                true,
                a,
                start + Duration::from_secs_f64((a as f64 + 0.5) / arrival_rate),
            )
        }));
    let mut heap = BinaryHeap::new();
    for (id, (arrival, number, at)) in people.enumerate() {
        heap.push(Due {
            at,
            seq: id as u64,
            step: Step::Join,
            buyer: Buyer {
                id: id as u32,
                arrival,
                number: number as u32,
                claims: None,
                prequeue: false,
                polls: 0,
            },
        });
    }
    let run = Arc::new(Run {
        queue: queue.clone(),
        epoch: joins_from,
        opening,
        start,
        end,
        exact,
        counts: Counts::default(),
        seq: AtomicU64::new(heap.len() as u64),
        first_poll_ms: (0..heap.len())
            .map(|_| AtomicU32::new(NOT_PREQUEUE))
            .collect(),
        last_join_ms: AtomicU64::new(0),
        told: Default::default(),
        lost: Mutex::new(Vec::new()),
    });
    let (work_in, work_out) = mpsc::unbounded_channel();
    let (back_in, back_out) = mpsc::unbounded_channel();
    let scheduler = tokio::spawn(scheduler(heap, back_out, work_in, end));
    let work_out = Arc::new(Mutex2::new(work_out));
    let lanes: Vec<_> = rooms
        .into_iter()
        .map(|room| {
            tokio::spawn(container(
                room,
                work_out.clone(),
                back_in.clone(),
                run.clone(),
            ))
        })
        .collect();
    drop(back_in);

    // The promoter ticks as its Lambda does, from 7 s before the opening; the reaper each
    // minute.
    let promoter = {
        let (run, deps) = (run.clone(), functions.promoter.clone());
        let every = deps.room.config().promote_tick;
        tokio::spawn(async move {
            let mut admitted = 0;
            let mut next = run.start + Duration::from_secs(3);
            while next < run.end {
                tokio::time::sleep_until(next).await;
                run.counts.add(Kind::Tick);
                if let Ok(tick) = queue_promoter::tick(&deps).await {
                    admitted += tick.admitted();
                    queue_promoter::publish_and_measure(&tick, &deps).await;
                }
                next += every;
            }
            admitted
        })
    };
    let reaper = {
        let (run, deps) = (run.clone(), functions.reaper.clone());
        tokio::spawn(async move {
            let mut next = run.start + Duration::from_secs(30);
            while next < run.end {
                tokio::time::sleep_until(next).await;
                run.counts.add(Kind::Reap);
                queue_reaper::reap_all(&deps).await;
                next += Duration::from_secs(60);
            }
        })
    };

    // The readings: at the start of the stretch, then every 5 s.
    tokio::time::sleep_until(start).await;
    let keys = format!("{}:{{q:{}}}*", bench.app.config.key_prefix, queue);
    let key_bytes_joined = probe.key_bytes(&keys).await.iter().map(|k| k.1).sum();
    let (preempted, load) = (probe.preempted().await, load_average());
    probe.slowlog_start(SLOW_US, 10_000).await;
    let (mut cpu, memory_joined) = probe.cpu_and_memory().await;
    let mut counts = run.counts.read();
    let mut read_at = Instant::now();
    let mut windows = Vec::new();
    let mut next = start;
    while next < end {
        next += WINDOW;
        tokio::time::sleep_until(next).await;
        let (cpu_now, _) = probe.cpu_and_memory().await;
        let counts_now = run.counts.read();
        let now = Instant::now();
        let slow = probe.slowlog_take().await;
        windows.push(Window {
            from_s: (next - WINDOW - start).as_secs_f64() - BEFORE.as_secs_f64(),
            seconds: (now - read_at).as_secs_f64(),
            cpu: (cpu_now - cpu) / 1e6 / (now - read_at).as_secs_f64(),
            counts: std::array::from_fn(|i| counts_now[i] - counts[i]),
            slow,
        });
        (cpu, counts, read_at) = (cpu_now, counts_now, now);
    }
    probe.slowlog_stop().await;
    let preempted = probe.preempted().await - preempted;
    let load = (load, load_average());

    scheduler.await.expect("scheduler");
    let mut late_us = Vec::new();
    for lane in lanes {
        late_us.extend(lane.await.expect("container"));
    }
    let admitted = promoter.await.expect("promoter");
    reaper.await.expect("reaper");
    let first_polls: Vec<Option<u32>> = run
        .first_poll_ms
        .iter()
        .map(|ms| ms.load(Ordering::Relaxed))
        .filter(|&ms| ms != NOT_PREQUEUE)
        .map(|ms| (ms != NOT_YET).then_some(ms))
        .collect();
    let told = std::array::from_fn(|i| run.told[i].load(Ordering::Relaxed));
    let joined_ms = run.last_join_ms.load(Ordering::Relaxed);
    let counts = run.counts.read();
    let key_bytes_end = by_kind(probe.key_bytes(&keys).await);
    let holding_end = (counts[Kind::Join as usize] + counts[Kind::Arrival as usize])
        .saturating_sub(counts[Kind::Leave as usize] + counts[Kind::Lost as usize]);
    let mut lost = run
        .lost
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if counts[Kind::Lost as usize] > lost.len() as u64 {
        lost.push(format!("… {} in all", counts[Kind::Lost as usize]));
    }
    Scale {
        members,
        f,
        ping_us: ping,
        idle,
        windows,
        bytes_per_member: (memory_joined - memory_before) as f64 / members as f64,
        first_polls,
        late_us,
        joined_before_opening_s: (opening - joins_from).as_secs_f64()
            - joined_ms.saturating_sub(1) as f64 / 1000.0,
        lost,
        admitted,
        told,
        key_bytes_joined,
        key_bytes_end,
        holding_end,
        preempted,
        load,
    }
}

fn report_scale(report: &mut Report, scale: &Scale, containers: usize, exact: bool) {
    let f = scale.f;
    let members = scale.members as u64;
    report.section(&format!(
        "The opening spike at f = 1/{:.0}: {} pre-queue members, {:.0} new buyers a second, \
         capacity {:.0}; {containers} containers with one request in flight each, rate limits \
         off; Redis main-thread CPU (INFO cpu) per 5 s window",
        1.0 / f,
        thousands(members),
        FULL_ARRIVALS_PER_SECOND * f,
        (FULL_CAPACITY * f).round().max(1.0),
    ));
    let (peak, peak_full) = worst(scale);
    report.row(
        "worst 5 s window, Redis CPU",
        &format!(
            "{} % of a core at the whole scale ({:.1} % at this scale)",
            percent(peak_full),
            peak.cpu * 100.0
        ),
        &format!(
            "the window from {:+.0} s; goal ≤ 70 % in every window from −10 s to +180 s: {}",
            peak.from_s,
            met(peak_full <= CPU_GOAL)
        ),
    );
    let over = scale
        .windows
        .iter()
        .filter(|w| scale.full(w) > CPU_GOAL)
        .count();
    report.row(
        "windows over 70 % at the whole scale",
        &format!("{over} of {}", scale.windows.len()),
        "the whole scale: Redis idle + (window − idle) ÷ f, i.e. CPU per call × the calls at 2 000 000",
    );
    let per_call = scale.per_call_us();
    report.row(
        "Redis CPU per request over the stretch",
        &format!("{per_call:.1} µs ({:.1}× PING)", per_call / scale.ping_us),
        &format!(
            "{} requests: {} issues, {} polls, {} checks, {} leaves; {} promotion ticks and {} \
             reaper runs counted in; Redis idle {:.2} % of a core left out",
            thousands(scale.calls()),
            thousands(scale.total(&[Kind::Arrival, Kind::Join])),
            thousands(scale.total(&[Kind::Status])),
            thousands(scale.total(&[Kind::Check])),
            thousands(scale.total(&[Kind::Leave])),
            scale.total(&[Kind::Tick]),
            scale.total(&[Kind::Reap]),
            scale.idle * 100.0
        ),
    );
    report.row(
        "PING, sent the same way in the same run",
        &format!("{:.1} µs", scale.ping_us),
        "the floor: a request's own I/O",
    );
    let peak_calls = scale
        .windows
        .iter()
        .map(|w| {
            [
                Kind::Join,
                Kind::Arrival,
                Kind::Status,
                Kind::Check,
                Kind::Leave,
            ]
            .iter()
            .map(|k| w.counts[*k as usize])
            .sum::<u64>()
        })
        .max()
        .unwrap_or(0);
    report.row(
        "requests a second at the whole scale, busiest window",
        &thousands((peak_calls as f64 / WINDOW.as_secs_f64() / f) as u64),
        &format!(
            "{} a second at this scale, ÷ f",
            thousands(peak_calls / WINDOW.as_secs())
        ),
    );
    let mut firsts: Vec<u32> = scale.first_polls.iter().flatten().copied().collect();
    firsts.sort_unstable();
    let missing = scale.first_polls.len() - firsts.len();
    let at = |p: f64| {
        firsts
            .get(((firsts.len().max(1) - 1) as f64 * p).round() as usize)
            .map_or(f64::NAN, |ms| *ms as f64 / 1000.0)
    };
    let last = at(1.0);
    report.row(
        "first poll after the opening, p50 / p90 / p99 / max",
        &format!(
            "{:.1} / {:.1} / {:.1} / {last:.1} s",
            at(0.5),
            at(0.9),
            at(0.99)
        ),
        &format!(
            "{} pre-queue buyers (members and new buyers before the opening), {missing} without \
             one by +180 s; polls {}; goal ≤ 60 s: {}",
            thousands(scale.first_polls.len() as u64),
            if exact {
                "exactly when told"
            } else {
                "as the page does: up to 20 % sooner than told"
            },
            met(missing == 0 && last <= FIRST_POLL_GOAL_S)
        ),
    );
    let slow = scale.windows.iter().fold(Slowest::default(), |mut all, w| {
        all.add(&w.slow);
        all
    });
    report.row(
        "slowest call of the stretch (SLOWLOG)",
        &slow.figure(SLOW_US),
        &format!(
            "every call, the promoter's and reaper's too; goal ≤ 1 ms: {}",
            met(slow.over_1ms == 0)
        ),
    );
    let per_member = scale.key_bytes_joined as f64 / members as f64;
    report.row(
        "Redis bytes per pre-queue member, after the joins",
        &format!("{per_member:.1} B"),
        &format!(
            "the queue's keys (MEMORY USAGE) ÷ members; used_memory grew {:.1} B a member over \
             the joins; goal ≤ 150 B: {}",
            scale.bytes_per_member,
            met(per_member <= BYTES_GOAL)
        ),
    );
    let holding = scale.holding_end.max(1) as f64;
    let end_bytes: i64 = scale.key_bytes_end.iter().map(|k| k.1).sum();
    report.row(
        "Redis bytes per buyer holding a place at +180 s",
        &format!("{:.1} B", end_bytes as f64 / holding),
        &format!(
            "the queue's keys ÷ {} buyers in line or active; by key: {}",
            thousands(scale.holding_end),
            scale
                .key_bytes_end
                .iter()
                .filter(|k| k.1 as f64 / holding >= 0.5)
                .map(|(kind, bytes)| format!("{kind} {:.1} B", *bytes as f64 / holding))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let replies = scale.told.iter().sum::<u64>().max(1) as f64;
    let share = |i: usize| scale.told[i] as f64 * 100.0 / replies;
    report.row(
        "pollAfterSeconds of waiting replies after the opening",
        &format!(
            "1 s {:.0} %, 2–4 s {:.0} %, 5–9 s {:.0} %, 10–39 s {:.0} %, 40 s {:.0} %, over 40 s {:.0} %",
            share(0), share(1), share(2), share(3), share(4), share(5)
        ),
        &format!("{} replies", thousands(replies as u64)),
    );
    let mut late: Vec<u32> = scale.late_us.iter().map(|l| l.1).collect();
    late.sort_unstable();
    let kept_up = percentile_ms(&late, 0.99) <= KEPT_UP_MS;
    report.row(
        "the bench's lateness against the schedule, p50 / p99 / max",
        &format!(
            "{:.1} / {:.1} / {:.1} ms",
            percentile_ms(&late, 0.5),
            percentile_ms(&late, 0.99),
            percentile_ms(&late, 1.0)
        ),
        &format!(
            "{}; when each request was sent against when it fell due; the pre-queue joins finished \
             {:.0} s before the opening; Redis preempted {} times over the stretch, load \
             average {:.1} at its start and {:.1} at its end (SLOWLOG's durations are wall time)",
            if kept_up {
                "the bench kept up (p99 ≤ 1 s)"
            } else {
                "**the bench fell behind** (p99 over 1 s): it sent fewer requests than the \
                 schedule, so the CPU figures understate"
            },
            scale.joined_before_opening_s,
            thousands(scale.preempted),
            scale.load.0,
            scale.load.1
        ),
    );
    report.row(
        "buyers who lost their place",
        &format!("{}", scale.total(&[Kind::Lost])),
        &if scale.lost.is_empty() {
            format!(
                "{} admitted by the promoter; {} calls failed and were retried",
                thousands(scale.admitted),
                scale.total(&[Kind::Failed])
            )
        } else {
            scale.lost.join("; ")
        },
    );
    for (i, w) in scale.windows.iter().enumerate() {
        let c = |k: Kind| thousands(w.counts[k as usize]);
        let mut late: Vec<u32> = scale
            .late_us
            .iter()
            .filter(|l| usize::from(l.0) == i)
            .map(|l| l.1)
            .collect();
        late.sort_unstable();
        report.row(
            &format!("{:+.0} s to {:+.0} s", w.from_s, w.from_s + w.seconds.round()),
            &format!("{:.1} % ({} % whole scale)", w.cpu * 100.0, percent(scale.full(w))),
            &format!(
                "{} polls ({} first after the opening), {} issues, {} checks, {} leaves, {} ticks; slowest {}; sent late p99 {:.0} ms",
                c(Kind::Status),
                c(Kind::FirstPoll),
                thousands(w.counts[Kind::Join as usize] + w.counts[Kind::Arrival as usize]),
                c(Kind::Check),
                c(Kind::Leave),
                c(Kind::Tick),
                if w.slow.logged == 0 {
                    format!("none over {SLOW_US} µs")
                } else {
                    format!("{} µs", w.slow.max_us)
                },
                percentile_ms(&late, 0.99)
            ),
        );
    }
}

/// The `p` quantile of sorted µs figures, in ms.
fn percentile_ms(sorted: &[u32], p: f64) -> f64 {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * p).round() as usize)
        .map_or(0.0, |us| f64::from(*us) / 1000.0)
}

/// Bytes by kind of key: a key's name after the queue's hash tag, without a slot number
/// (`gone:0` and `gone:1` are both `gone`), most first.
fn by_kind(keys: Vec<(String, i64)>) -> Vec<(String, i64)> {
    let mut kinds: Vec<(String, i64)> = Vec::new();
    for (key, bytes) in keys {
        let name = key.rsplit_once("}:").map_or(key.as_str(), |(_, name)| name);
        let kind = name
            .trim_end_matches(|c: char| c.is_ascii_digit())
            .trim_end_matches(':')
            .to_owned();
        match kinds.iter_mut().find(|k| k.0 == kind) {
            Some(k) => k.1 += bytes,
            None => kinds.push((kind, bytes)),
        }
    }
    kinds.sort_by_key(|k| std::cmp::Reverse(k.1));
    kinds
}

/// A share of a core in whole percent, with a space between thousands.
fn percent(share: f64) -> String {
    thousands((share * 100.0).round().max(0.0) as u64)
}
