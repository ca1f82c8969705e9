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
//! - An admitted buyer learns it at its next poll, passes [`CHECKS`](crate::spike_plan::CHECKS) gatekeeper checks a
//!   second apart and leaves (or pays) a second later.
//!
//! Every request goes as AWS sends it: [`CONTAINERS`] containers
//! (`LINEUP_BENCH_SPIKE_CONTAINERS`), each its own connection
//! with one request in flight; a free container takes the next request that falls due.
//! Redis's main-thread CPU (`INFO cpu`) is read every 5 s. The report says how late the bench
//! sent requests against their schedule: if it could not keep up, the figures understate.
//!
//! This file drives a run; `spike_replay.rs` holds the buyers, the scheduler and the
//! containers; `spike_report.rs` holds a scale's figures and their report.
//!
//! # Method
//!
//! - Rate limits are off.
//! - Every 5 s the bench also reads SLOWLOG (every call over 1 ms; its own readings left out).
//! - A window's share of a core at the whole scale is Redis's idle share plus the rest ÷ f: the
//!   window's CPU per call times the calls the whole scale sends.
//! - Past 1 s of lateness (p99) the report says the bench fell behind: it then sent fewer
//!   requests than the schedule.
//! - Bytes per member are the queue's keys (`MEMORY USAGE`, every element) ÷ members, after the
//!   joins and again at +180 s, by key.
//!
//! # What limits the figures
//!
//! - SLOWLOG times a call by the wall clock, so it counts Redis's preemptions in. In the run the
//!   figures come from, Redis was preempted 104 053 and 35 680 times in the 190 s at 1/40 and
//!   1/160 (PING 5.5–5.8 µs).
//! - The opening's load, at the whole scale (calls ÷ f from the run at 1/40):
//!   - the first polls after the opening, spread over 40 s by draw value: 50 000 a second;
//!   - the front of the line, told to poll every second: a third of all waiting replies. The
//!     line moves at capacity ÷ session: buyers leave about 5 s after their admission, so
//!     capacity 5 000 admits about 1 000 a second, and everyone within 20 s of the front polls
//!     each second;
//!   - after the first polls, the rest came back after a tenth of the low end of their wait in
//!     these runs, up to 320 s: a member 10 minutes from its turn every minute. The rule
//!     tells a quarter (`POLL_AFTER_WAIT_PART`); these figures are not rerun at it.
//! - Calls per member hold with the scale: calls ÷ f are 17.9 million at 1/40 and 17.7 million
//!   at 1/160. Both runs tell the same shares of waiting replies each interval (31–32 % 1 s,
//!   15 % 2–4 s, 10 % 5–9 s, 19 % 10–39 s, 24 % longer).
//! - The load this schedule sends has a floor, whatever a call costs. At 1 000 admissions a
//!   second the line's polls alone are about 60 000 a second (the poll-rate table in
//!   `capacity.rs`), and in the first minute the pre-queue's first polls add 33 000 to 50 000.
//!   At 95 000 requests a second, 70 % of a core leaves 7.4 µs a request: 1.3× this machine's
//!   PING. The least status script measures 2.0–2.4× PING (`per_request.rs`). So on this machine
//!   no status script meets the opening's goal at this schedule; it takes fewer polls per
//!   admitted buyer or a slower line.
//! - Redis CPU per call falls as the scale grows, as in the capacity rows: a busier Redis finds
//!   warmer caches. With the calls, this makes the extrapolation an upper bound.
//! - At 1/20 (100 000 members) the bench falls behind on this machine: p99 lateness over 2 s,
//!   with Redis at up to 63 % of a core and preempted 1 100 times a second. It sends fewer
//!   requests than the schedule (calls ÷ f 10.6 million). `LINEUP_BENCH_SPIKE_MEMBERS=100000,25000`
//!   runs it there.
//! - Every member's first poll comes within 40.2 s of the opening in every run: the spread over
//!   a third of the idle period (`pollAfterSeconds`), less up to 20 % at the page. No buyer loses
//!   its place.
//! - Memory after the opening: a drawn member's ticket ends in its arrival counter, so the
//!   pre-queue's presence deadlines are as dense as a plain line's: 4.8–8.4 B a buyer at 180 s.

use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use lineup::ids::QueueId;
use serde_json::json;
use tokio::sync::{mpsc, Mutex as Mutex2};
use tokio::time::Instant;

use crate::measure::Bench;
use crate::probe::{idle_share, load_average, ping_us, plain_connections, Probe};
use crate::report::{thousands, Report};
use crate::spike_plan::{FULL_ARRIVALS_PER_SECOND, FULL_CAPACITY, SLOW_US, WINDOW};
use crate::spike_replay::{
    container, scheduler, Buyer, Counts, Due, Kind, Run, Step, NOT_PREQUEUE, NOT_YET,
};
use crate::spike_report::{by_kind, percent, report_scale, worst, Scale, Window};

/// The goal's scale.
const FULL_MEMBERS: f64 = 2_000_000.0;
/// The scales run by default: pre-queue members.
const DEFAULT_MEMBERS: [usize; 2] = [50_000, 12_500];
/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 64;
/// Pre-queue joins a second while it fills (all done 20 s before the opening).
const JOIN_RATE: f64 = 5_000.0;
/// The measured stretch: from 10 s before the opening to 180 s after, in 5 s windows.
const BEFORE: Duration = Duration::from_secs(10);
const AFTER: Duration = Duration::from_secs(180);

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
        let every = deps.room.config().room.promote_tick;
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
