//! `lineup-bench line-opening`: issue 56's openings on the striped line (`lineup::line`),
//! replayed in real time at fractions f of their scale, on fresh servers:
//!
//! - **A cluster of 8 primaries**, 128 stripes, 32 ranges of draw values each: a pre-queue of
//!   10 000 000 opens while 62 000 new buyers a second join for the first 30 s.
//! - **One primary's share** of that cluster, on one server: the same 128 stripes, an eighth of
//!   the sale and of its room, so near the whole scale's rate one primary meets.
//! - **One server**, one stripe: a pre-queue of 2 000 000 opens while 2 000 new buyers a second
//!   join, from 10 s before the opening to 180 s after.
//!
//! `LINEUP_BENCH_LINE_LAYOUTS=cluster,share,server` runs only those layouts.
//! Each runs at its own fractions f (the cluster 1/100 and 1/400, the share 1/1 and 1/2, one
//! server 1/2, 1/100 and 1/400; `LINEUP_BENCH_LINE_FRACTIONS=100,400` sets them for all):
//! f × every count, in real time. Redis's CPU is read from each primary's `INFO cpu` every 5 s, from 10 s before
//! the opening to 180 s after, and extrapolated to the whole scale: the primary's idle share,
//! plus its ticks at the whole scale's pace (a cost a second, measured alone: a full head window
//! on every stripe and a second's admissions), plus the rest ÷ f (the rest: the window's CPU
//! less idle and less its ticks as they cost at this scale, measured alone after the run).
//!
//! What the buyers do, as a waiting-room page following its replies would:
//!
//! - The pre-queue joins before the measured run (not measured). A member's first poll comes
//!   once the draw has positions (`Line::placed_by`, 3.5 s after the opening) plus its share
//!   of `FIRST_POLLS` (`Line::first_poll_share`): each stripe's front first, every stripe at
//!   once.
//! - A new buyer polls first when its place has a position (`Line::placed_by`, 2.5 to 3.5 s after
//!   its join), as does a waiter told it has none yet.
//! - A waiter polls again after a quarter of its wait (`POLL_AFTER_WAIT_PART`; its wait:
//!   its position ÷ the admission rate), from 1 s to `MAX_INTERVAL`.
//! - An admitted buyer learns it at its next poll, passes `CHECKS` gatekeeper checks a
//!   second apart and leaves a second later. Room: f × the layout's sessions (5 000; 625 for
//!   the share).
//! - A promoter takes the lease and ticks every second.
//! - Every request goes as AWS sends it: `CONTAINERS` containers, each a `Line` over its own
//!   connection with one request in flight; a free container takes the next request due.
//!
//! Per slot: the bench counts each stripe's requests of each kind in each 5 s window and
//! prices them with the kind's Redis CPU measured alone on the same servers (`INFO cpu` ÷
//! calls, beside PINGs and GETs sent the same way), three ways:
//!
//! - **dense**: every request on one primary's stripes, back to back, so that it meets the 16
//!   containers' requests at once, as the busiest primary of the whole scale meets thousands
//!   of containers'. These prices give the whole scale: the busiest primary and the hottest
//!   slot.
//! - **spread**: the requests over every primary, back to back, two containers' worth each.
//!   They give a bound above the whole scale, and the per-request ratios summed over every
//!   primary.
//! - **at the run's pace**, after the run: each primary's requests at the rate its average
//!   request met in the run (each 5 s window's rate, weighted by its requests), due at
//!   random, on the run's own line, less each primary's idle CPU. A request
//!   then meets as few others in Redis as in the run and wakes it as often. These prices give
//!   the run's own load on each primary, set beside its `INFO cpu` above idle (the
//!   cross-check: it shows the tally holds every request a primary served).
//!
//! A slot's load is given in GET-equivalents a second at the whole scale. After the cluster's
//! runs, the hottest slot of the smaller scale's run gets a primary of its own, added as a
//! ninth, in one more run at that scale: that primary's `INFO cpu` is set beside the slot's
//! requests at the prices of its own pace.
//!
//! This file drives the runs; `line_replay.rs` holds the replay, `line_calibrate.rs` the
//! prices and `line_figures.rs` the figures and their rows.

use std::collections::{BTreeMap, BinaryHeap};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use lineup::clock::SystemClock;
use lineup::config::{RedisMode, RedisSettings};
use lineup::ids::UserId;
use lineup::line::{Joined, Lease, Opening, Stripe, StripeKeys};
use lineup::queue::schedule::DrawSeed;

use crate::line_calibrate::{calibrate, paced, IDLE};
use crate::line_figures::{self as figures, Figures, Isolated};
use crate::line_replay::{
    after, lines_of, queue, shape, user, Kind, Nodes, Replay, Servers, Tally, Task, BEFORE,
    CAPACITY, CONTAINERS, FIRST_POLLS, HOLD_SECONDS, KINDS, WINDOW,
};
use crate::measure::Bench;
use crate::report::{thousands, Report};

/// One opening to replay.
struct Layout {
    /// What `LINEUP_BENCH_LINE_LAYOUTS` calls it.
    key: &'static str,
    name: &'static str,
    /// 1: one server.
    primaries: usize,
    stripes: u16,
    /// Ranges of the draw's values a stripe holds: a range holds about 2.5 s of admissions.
    draw_ranges: u16,
    /// The pre-queue at the whole scale.
    members: u64,
    /// New buyers a second at the whole scale, from `joins_from` to `joins_to` (s, from the
    /// opening).
    joins_per_second: u64,
    joins_from: i64,
    joins_to: i64,
    /// The live sessions the booking system takes, at the whole scale.
    capacity: f64,
    /// The fractions of the scale it runs at (`LINEUP_BENCH_LINE_FRACTIONS` overrides).
    fractions: &'static [u64],
}

const LAYOUTS: [Layout; 3] = [
    Layout {
        key: "cluster",
        name: "a cluster of 8 primaries, 128 stripes of 32 draw ranges",
        primaries: 8,
        stripes: 128,
        draw_ranges: 32,
        members: 10_000_000,
        joins_per_second: 62_000,
        joins_from: 0,
        joins_to: 30,
        capacity: CAPACITY,
        fractions: &[100, 400],
    },
    Layout {
        key: "share",
        name: "one primary's share of the cluster of 8, on one server: 128 stripes of 32 draw \
               ranges, an eighth of the sale and of its room",
        primaries: 1,
        stripes: 128,
        draw_ranges: 32,
        members: 1_250_000,
        joins_per_second: 7_750,
        joins_from: 0,
        joins_to: 30,
        capacity: CAPACITY / 8.0,
        fractions: &[1, 2],
    },
    Layout {
        key: "server",
        name: "one server, one stripe",
        primaries: 1,
        stripes: 1,
        draw_ranges: 1,
        members: 2_000_000,
        joins_per_second: 2_000,
        joins_from: -10,
        joins_to: 180,
        capacity: CAPACITY,
        fractions: &[2, 100, 400],
    },
];

/// One opening at 1/`fraction`; with `isolate`, that stripe's slot on a primary of its own,
/// added to the layout's.
async fn replay(
    settings: &RedisSettings,
    layout: &Layout,
    fraction: u64,
    isolate: Option<Stripe>,
) -> Figures {
    let mut servers = Servers::start(layout.primaries).await;
    if let Some(stripe) = isolate {
        let keys = StripeKeys::new("lineup", &queue("sale"), stripe, layout.stripes);
        servers.isolate(&keys.line).await;
    }
    let nodes = Nodes::open(&servers).await;
    let prices = calibrate(
        settings,
        &servers,
        &nodes,
        layout.stripes,
        fraction,
        layout.capacity,
    )
    .await;
    let (get_us, per_kind, spread_kind) = (
        prices.dense.get,
        prices.dense.per_kind,
        prices.spread.per_kind,
    );
    let shape = shape(layout.stripes, layout.draw_ranges);
    let members = (layout.members / fraction) as u32;
    let per_second = layout.joins_per_second as f64 / fraction as f64;
    let arrivals = (per_second * (layout.joins_to - layout.joins_from) as f64) as u32;
    let seed = Arc::new(DrawSeed::random());
    let value = {
        let seed = seed.clone();
        move |u: &UserId| (seed.value(u) >> 24) as u32
    };

    // The pre-queue, joined as fast as the containers go, before an opening far off.
    let far = chrono::Utc::now().timestamp_millis() + 3_600_000;
    let prefill = lines_of(
        settings,
        &servers,
        "sale",
        shape,
        Some(Opening {
            at: far,
            value: Arc::new(value.clone()),
        }),
    )
    .await;
    let scores: Vec<AtomicI64> = (0..members + arrivals).map(|_| AtomicI64::new(0)).collect();
    join_all(prefill.iter().enumerate().map(|(lane, line)| {
        let scores = &scores;
        async move {
            let now = chrono::Utc::now().timestamp_millis();
            for i in (lane as u32..members).step_by(CONTAINERS) {
                if let Ok(Joined::New { score, .. }) = line.join(&user(i), now).await {
                    scores[i as usize].store(score, Ordering::Relaxed);
                }
            }
        }
    }))
    .await;
    drop(prefill);

    // Idle CPU, then the run. The idle share is taken off every window of the run, so it is
    // read for long enough that its error stays small beside the run's own CPU.
    let idle_before = nodes.cpu_us().await;
    tokio::time::sleep(IDLE).await;
    let idle: Vec<f64> = nodes
        .cpu_us()
        .await
        .iter()
        .zip(&idle_before)
        .map(|(a, b)| (a - b) / IDLE.as_secs_f64() / 1e6)
        .collect();
    let started = Instant::now();
    let opened = started + BEFORE;
    let opens_at = chrono::Utc::now().timestamp_millis() + BEFORE.as_millis() as i64;
    let line_set = lines_of(
        settings,
        &servers,
        "sale",
        shape,
        Some(Opening {
            at: opens_at,
            value: Arc::new(value.clone()),
        }),
    )
    .await;
    let owners = nodes
        .owners(
            &(0..shape.stripes)
                .map(|k| StripeKeys::new("lineup", &queue("sale"), Stripe(k), shape.stripes))
                .collect::<Vec<_>>(),
        )
        .await;
    let capacity = (layout.capacity / fraction as f64).max(1.0);
    let replay = Replay {
        lines: line_set,
        opens_at,
        end: opened + after(),
        rate: capacity / HOLD_SECONDS,
        scores,
        first_polled: (0..members).map(|_| AtomicI64::new(i64::MAX)).collect(),
        members,
        due: Mutex::new(BinaryHeap::new()),
        tally: Tally::new(shape.stripes),
        late_ms: Mutex::new(Vec::new()),
        dropped: AtomicU64::new(0),
        done: AtomicBool::new(false),
    };
    // The first polls start once the draw has positions, and spread over `FIRST_POLLS`.
    let draw_score = replay
        .scores
        .first()
        .map_or(-1, |s| s.load(Ordering::Relaxed));
    let placed =
        Duration::from_millis((replay.lines[0].placed_by(draw_score) - opens_at).max(0) as u64);
    for i in 0..members {
        let share = replay.lines[0].first_poll_share(&user(i)).unwrap_or(0.0);
        replay.schedule(opened + placed + FIRST_POLLS.mul_f64(share), Task::Poll(i));
    }
    let joins_start = if layout.joins_from < 0 {
        opened - Duration::from_secs(layout.joins_from.unsigned_abs())
    } else {
        opened + Duration::from_secs(layout.joins_from as u64)
    };
    for j in 0..arrivals {
        replay.schedule(
            joins_start + Duration::from_secs_f64(f64::from(j) / per_second),
            Task::Join(members + j),
        );
    }
    let replay = &replay;
    let sampler = async {
        let mut windows: Vec<(Vec<f64>, Vec<[u64; 5]>)> = Vec::new();
        let mut last = (nodes.cpu_us().await, replay.tally.snapshot());
        let mut at = started;
        while at < replay.end {
            at += WINDOW;
            tokio::time::sleep_until(at.into()).await;
            let now = (nodes.cpu_us().await, replay.tally.snapshot());
            let cpu: Vec<f64> = now.0.iter().zip(&last.0).map(|(a, b)| a - b).collect();
            let counts: Vec<[u64; 5]> = now
                .1
                .iter()
                .zip(&last.1)
                .map(|(a, b)| std::array::from_fn(|k| a[k] - b[k]))
                .collect();
            windows.push((cpu, counts));
            last = now;
        }
        replay.done.store(true, Ordering::Relaxed);
        windows
    };
    if std::env::var("LINEUP_BENCH_LINE_STATS").is_ok() {
        for conn in &nodes.0 {
            let _: () = redis::cmd("CONFIG")
                .arg("RESETSTAT")
                .query_async(&mut conn.clone())
                .await
                .expect("RESETSTAT");
        }
    }
    let containers = join_all((0..CONTAINERS).map(|lane| replay.container(lane)));
    let promoter = replay.promoter(capacity as u64, shape.stripes);
    let (windows, _, _) = tokio::join!(sampler, containers, promoter);
    if std::env::var("LINEUP_BENCH_LINE_STATS").is_ok() {
        for info in nodes.info("commandstats").await {
            eprintln!("{info}");
        }
    }
    // What a tick costs at this scale, on the line as the run left it: the run's ticks are a
    // cost a second, not a cost per buyer, so they are not multiplied up.
    let tick_here = {
        let line = &replay.lines[0];
        let Ok(Lease::Granted(fence)) = line.lease("bench", Duration::from_secs(5)).await else {
            panic!("the bench's lease");
        };
        let before = nodes.cpu_us().await;
        for _ in 0..3 {
            line.tick(fence, &SystemClock, capacity as u64)
                .await
                .expect("tick");
        }
        let after = nodes.cpu_us().await;
        after.iter().zip(&before).map(|(a, b)| a - b).sum::<f64>() / 3.0 / f64::from(shape.stripes)
    };
    // At the whole scale a tick admits a second's admissions more (per stripe, µs).
    let tick_whole = tick_here + per_kind[Kind::Tick as usize];
    // The prices at the run's own pace on each node, for the cross-check with `INFO cpu`:
    // the pace its average request met, each window's rate weighted by its requests.
    let at_pace = {
        // Each node's requests, and their squares, summed over the windows.
        let mut sums = vec![(0.0, 0.0); idle.len()];
        for (_, counts) in &windows {
            let mut in_window = vec![0.0; idle.len()];
            for (stripe, kinds) in counts.iter().enumerate() {
                in_window[owners[stripe]] += kinds[..4].iter().sum::<u64>() as f64;
            }
            for (sum, calls) in sums.iter_mut().zip(in_window) {
                sum.0 += calls;
                sum.1 += calls * calls;
            }
        }
        let per_node = sums
            .iter()
            .map(|(calls, squares)| squares / calls.max(1.0) / WINDOW.as_secs_f64())
            .collect();
        paced(
            settings,
            &servers,
            &nodes,
            ("sale", layout.stripes),
            per_node,
            prices.spread.per_kind[Kind::Tick as usize],
        )
        .await
    };

    // The figures.
    let f = fraction as f64;
    let seconds = WINDOW.as_secs_f64();
    let mut busiest_share: f64 = 0.0;
    let mut busiest_at = 0.0;
    let mut busiest_priced: f64 = 0.0;
    let mut busiest_priced_at = 0.0;
    let mut busiest_spread: f64 = 0.0;
    let mut busiest_spread_at = 0.0;
    let mut hottest_slot: f64 = 0.0;
    let mut hottest_stripe = 0u16;
    // Each node's busiest 5 s at the whole scale (µs a second): from `INFO cpu`, and priced.
    let mut node_busiest = vec![(0.0f64, 0.0f64); idle.len()];
    let mut hottest_parts = String::new();
    let mut priced = vec![0.0; idle.len()];
    let mut measured = vec![0.0; idle.len()];
    // The same over the opening's first minute, where the load is: over the whole run at
    // 1/400, the idle CPU taken off a primary is as large as its requests' CPU, and a small
    // error in it moves the ratio.
    let mut priced_minute = vec![0.0; idle.len()];
    let mut measured_minute = vec![0.0; idle.len()];
    let mut calls = 0u64;
    for (w, (cpu, counts)) in windows.iter().enumerate() {
        let ends = (w + 1) as f64 * seconds - BEFORE.as_secs_f64();
        let in_minute = ends > 0.0 && ends <= 60.0;
        // Each node's ticks, at this scale and at the whole scale (µs).
        let mut ticks = vec![(0.0, 0.0); cpu.len()];
        let mut whole_priced = vec![0.0; cpu.len()];
        let mut whole_spread = vec![0.0; cpu.len()];
        for (stripe, kinds) in counts.iter().enumerate() {
            let at = |prices: &[f64; 5]| -> f64 {
                KINDS[..4]
                    .iter()
                    .map(|k| kinds[*k as usize] as f64 * prices[*k as usize])
                    .sum()
            };
            let (buyers, spread) = (at(&per_kind), at(&spread_kind));
            let own = at(&at_pace.each[owners[stripe]].per_kind);
            let n = kinds[Kind::Tick as usize] as f64;
            ticks[owners[stripe]].0 += n * tick_here;
            ticks[owners[stripe]].1 += n * tick_whole;
            // The run's own load, at the prices of its own pace, for the cross-check.
            priced[owners[stripe]] += own + n * tick_here;
            if in_minute {
                priced_minute[owners[stripe]] += own + n * tick_here;
            }
            whole_spread[owners[stripe]] += spread * f + n * tick_whole;
            let whole = buyers * f + n * tick_whole;
            whole_priced[owners[stripe]] += whole;
            if whole / get_us / seconds > hottest_slot {
                hottest_slot = whole / get_us / seconds;
                hottest_stripe = stripe as u16;
                let part = |k: Kind, scale: f64, each: f64| {
                    let load = kinds[k as usize] as f64 * each * scale / get_us / seconds;
                    format!("{k:?} {}", thousands(load as u64))
                };
                hottest_parts = format!(
                    "the 5 s to {:+.0} s: {}",
                    (w + 1) as f64 * seconds - BEFORE.as_secs_f64(),
                    [
                        part(Kind::Join, f, per_kind[Kind::Join as usize]),
                        part(Kind::Poll, f, per_kind[Kind::Poll as usize]),
                        part(Kind::Check, f, per_kind[Kind::Check as usize]),
                        part(Kind::Leave, f, per_kind[Kind::Leave as usize]),
                        part(Kind::Tick, 1.0, tick_whole),
                    ]
                    .join(", ")
                );
            }
            calls += kinds[..4].iter().sum::<u64>();
        }
        for (node, used) in cpu.iter().enumerate() {
            let idle_us = idle[node] * seconds * 1e6;
            let buyers = (used - idle_us - ticks[node].0).max(0.0);
            let whole = idle_us + buyers * f + ticks[node].1;
            let busiest = &mut node_busiest[node];
            busiest.0 = busiest.0.max((whole - idle_us) / seconds);
            busiest.1 = busiest.1.max(whole_priced[node] / seconds);
            if whole / seconds / 1e6 > busiest_share {
                busiest_share = whole / seconds / 1e6;
                busiest_at = (w + 1) as f64 * seconds - BEFORE.as_secs_f64();
            }
            measured[node] += (used - idle_us).max(0.0);
            if in_minute {
                measured_minute[node] += (used - idle_us).max(0.0);
            }
            let priced_share = (idle_us + whole_priced[node]) / seconds / 1e6;
            if priced_share > busiest_priced {
                busiest_priced = priced_share;
                busiest_priced_at = (w + 1) as f64 * seconds - BEFORE.as_secs_f64();
            }
            let spread_share = (idle_us + whole_spread[node]) / seconds / 1e6;
            if spread_share > busiest_spread {
                busiest_spread = spread_share;
                busiest_spread_at = (w + 1) as f64 * seconds - BEFORE.as_secs_f64();
            }
        }
    }
    let range = |priced: &[f64], measured: &[f64]| -> (f64, f64) {
        let ratios: Vec<f64> = priced
            .iter()
            .zip(measured)
            .filter(|(_, m)| **m > 0.0)
            .map(|(p, m)| p / m)
            .collect();
        (
            ratios.iter().copied().fold(f64::INFINITY, f64::min),
            ratios.iter().copied().fold(0.0, f64::max),
        )
    };
    let mut late = replay.late_ms.lock().map(|l| l.clone()).unwrap_or_default();
    late.sort_unstable();
    let firsts: Vec<i64> = replay
        .first_polled
        .iter()
        .map(|a| a.load(Ordering::Relaxed))
        .collect();
    Figures {
        members,
        arrivals,
        busiest_share,
        busiest_at,
        busiest_priced,
        busiest_priced_at,
        busiest_spread,
        busiest_spread_at,
        first_polls_by_60: firsts.iter().filter(|t| **t <= 60_000).count() as u32,
        last_first_poll_ms: firsts
            .iter()
            .copied()
            .filter(|t| *t < i64::MAX)
            .max()
            .unwrap_or(0),
        late_p99_ms: late.get(late.len() * 99 / 100).copied().unwrap_or(0),
        dropped: replay.dropped.load(Ordering::Relaxed),
        calls_per_buyer: calls as f64 / f64::from((members + arrivals).max(1)),
        hottest_slot,
        hottest_parts,
        priced: range(&priced, &measured),
        priced_minute: range(&priced_minute, &measured_minute),
        idle: (
            idle.iter().copied().fold(f64::INFINITY, f64::min),
            idle.iter().copied().fold(0.0, f64::max),
        ),
        prices,
        paced: at_pace,
        hottest_stripe,
        isolated: isolate.map(|stripe| {
            // The primary added last holds the stripe's slot alone.
            let node = idle.len() - 1;
            Isolated {
                stripe: stripe.0,
                measured_us: measured[node],
                priced_us: priced[node],
                busiest_measured: node_busiest[node].0 / get_us,
                busiest_priced: node_busiest[node].1 / get_us,
            }
        }),
    }
}

fn fractions(layout: &Layout) -> Vec<u64> {
    std::env::var("LINEUP_BENCH_LINE_FRACTIONS")
        .ok()
        .map(|v| v.split(',').filter_map(|f| f.trim().parse().ok()).collect())
        .filter(|v: &Vec<u64>| !v.is_empty())
        .unwrap_or_else(|| layout.fractions.to_vec())
}

pub async fn run(bench: &Bench, report: &mut Report) {
    let mut settings = bench.app.config.redis.clone();
    settings.mode = RedisMode::Auto;
    // `LINEUP_BENCH_LINE_LAYOUTS=share,server` runs only those layouts.
    let only: Option<Vec<String>> = std::env::var("LINEUP_BENCH_LINE_LAYOUTS")
        .ok()
        .map(|v| v.split(',').map(|k| k.trim().to_string()).collect());
    for layout in LAYOUTS.iter().filter(|l| {
        only.as_ref()
            .is_none_or(|keys| keys.iter().any(|k| k == l.key))
    }) {
        report.section(&format!(
            "The striped line's opening on {}: {} pre-queue members, {} joins a second",
            layout.name,
            thousands(layout.members),
            thousands(layout.joins_per_second)
        ));
        let mut by_scale: BTreeMap<u64, Figures> = BTreeMap::new();
        for fraction in fractions(layout) {
            by_scale.insert(fraction, replay(&settings, layout, fraction, None).await);
        }
        figures::scales(report, layout.primaries, &by_scale);
        // The hottest slot of the smaller scale's run, on a primary of its own, in a run of
        // its own at that scale (the draw differs, so the slot is one of the hottest).
        if layout.primaries > 1 {
            if let Some((fraction, figures)) = by_scale.iter().next_back() {
                let stripe = Stripe(figures.hottest_stripe);
                let run = replay(&settings, layout, *fraction, Some(stripe)).await;
                if let Some(alone) = run.isolated {
                    figures::isolated(report, *fraction, &alone);
                }
            }
        }
        figures::growth(report, &by_scale);
    }
}
