//! `lineup-bench line-opening`'s prices: each request kind's Redis CPU measured alone on the
//! replay's own servers, summed over every node, beside PINGs and GETs sent the same way (each
//! container on its own connection, one request in flight), and what a second's admissions add
//! to a tick.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use lineup::config::RedisSettings;
use lineup::line::{Joined, Lease, Stripe, StripeKeys};

use crate::line_replay::{
    lines_of, queue, shape, spread, user, Nodes, Servers, CONTAINERS, HOLD_SECONDS,
};

/// Redis CPU per request of each kind on `servers`, summed over every node, in µs, beside a
/// PING and a GET sent the same way: (PING, GET, per kind). `capacity`: the live sessions
/// the booking system takes at the whole scale.
pub(crate) async fn calibrate(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    stripes: u16,
    fraction: u64,
    capacity: f64,
) -> (f64, f64, [f64; 5]) {
    let shape = shape(stripes, 1);
    let lines = lines_of(settings, servers, "calibrate", shape, None).await;
    let scores: Vec<AtomicI64> = (0..6_400).map(|_| AtomicI64::new(0)).collect();
    let scores = &scores;
    let count: u32 = 6_400;
    let now = chrono::Utc::now().timestamp_millis();
    // PINGs and GETs go as the line's requests do: each container on its own connection, one
    // request in flight, spread over the stripes' keys (so over every node).
    let lanes: Vec<lineup::store::Conn> = (0..CONTAINERS)
        .map(|_| lineup::store::connect(settings, &servers.url()).expect("connect"))
        .collect();
    let lanes = &lanes;
    let keys: Vec<StripeKeys> = (0..shape.stripes)
        .map(|k| StripeKeys::new("lineup", &queue("calibrate"), Stripe(k), shape.stripes))
        .collect();
    let keys = &keys;
    let ping = per_call(nodes, count, |lane, i| {
        let key = &keys[i as usize % keys.len()].sealed;
        async move {
            let _: String = lanes[lane]
                .query(key, redis::cmd("PING"))
                .await
                .expect("PING");
        }
    })
    .await;
    let join = per_call(nodes, count, |lane, i| {
        let line = &lines[lane];
        async move {
            if let Joined::New { score, .. } = line.join(&user(i), now).await.expect("join") {
                scores[i as usize].store(score, Ordering::Relaxed);
            }
        }
    })
    .await;
    let sealed = now + 2_000;
    let Ok(Lease::Granted(fence)) = lines[0].lease("calibrate", Duration::from_secs(60)).await
    else {
        panic!("the calibration's lease");
    };
    let get = per_call(nodes, count, |lane, i| {
        let key = &keys[i as usize % keys.len()].sealed;
        async move {
            let _: Option<String> = lanes[lane]
                .query(key, redis::cmd("GET").arg(key).clone())
                .await
                .expect("GET");
        }
    })
    .await;
    // Each container reads each stripe's published state once, then holds it: the clock
    // the polls pass stands still.
    for line in &lines {
        for k in 0..shape.stripes {
            if let Some(i) = (0..count).find(|i| line.stripe_of(&user(*i)) == Stripe(k)) {
                let score = scores[i as usize].load(Ordering::Relaxed);
                line.poll(&user(i), score, sealed).await.expect("poll");
            }
        }
    }
    let poll = per_call(nodes, count, |lane, i| {
        let line = &lines[lane];
        async move {
            let score = scores[i as usize].load(Ordering::Relaxed);
            line.poll(&user(i), score, sealed).await.expect("poll");
        }
    })
    .await;
    lines[0]
        .tick(fence, &(sealed + 1), u64::from(count))
        .await
        .expect("tick");
    let check = per_call(nodes, count, |lane, i| {
        let line = &lines[lane];
        async move {
            line.check(&user(i), sealed + 2).await.expect("check");
        }
    })
    .await;
    let leave = per_call(nodes, count, |lane, i| {
        let line = &lines[lane];
        async move {
            line.leave(&user(i)).await.expect("leave");
        }
    })
    .await;

    // What a second's admissions add to a tick: one tick with room for the whole scale's
    // second of admissions less one with room for this scale's, each over a line of waiters.
    let ticking = lines_of(settings, servers, "calibrate-tick", shape, None).await;
    let waiters = (4.0 * (capacity / HOLD_SECONDS)).max(4.0) as u32;
    spread(waiters, |lane, i| {
        let line = &ticking[lane];
        async move {
            line.join(&user(i), now).await.expect("join");
        }
    })
    .await;
    let Ok(Lease::Granted(fence)) = ticking[0].lease("calibrate", Duration::from_secs(60)).await
    else {
        panic!("the calibration's lease");
    };
    let tick_with = |capacity: u64, admits: u64, at: i64| {
        let ticking = &ticking;
        async move {
            let before = nodes.cpu_us().await;
            let ticked = ticking[0].tick(fence, &at, capacity).await.expect("tick");
            assert_eq!(ticked.admitted.len() as u64, admits);
            cost(&before, &nodes.cpu_us().await, u32::from(shape.stripes))
        }
    };
    let second = ((capacity / HOLD_SECONDS) as u64).max(1);
    let here = (second / fraction).max(1);
    let scaled = tick_with(here, here, sealed).await;
    let whole = tick_with(here + second, second, sealed + 1).await;
    (ping, get, [join, poll, check, leave, whole - scaled])
}

/// The CPU the nodes spent between `before` and `after`, per each of `calls` calls (µs).
fn cost(before: &[f64], after: &[f64], calls: u32) -> f64 {
    before.iter().zip(after).map(|(b, a)| a - b).sum::<f64>() / f64::from(calls)
}

/// The nodes' CPU per call while `count` calls of `run` go over the containers (µs).
async fn per_call<F, Fut>(nodes: &Nodes, count: u32, run: F) -> f64
where
    F: Fn(usize, u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = nodes.cpu_us().await;
    spread(count, run).await;
    cost(&before, &nodes.cpu_us().await, count)
}
