//! `lineup-bench line-opening`'s prices: each request kind's Redis CPU measured alone on the
//! replay's own servers, beside PINGs and GETs sent the same way (each container on its own
//! connection, one request in flight), spread over every node and dense on one, and what a
//! second's admissions add to a tick.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use lineup::config::RedisSettings;
use lineup::line::{Joined, Lease, Stripe, StripeKeys};

use crate::line_replay::{
    lines_of, queue, shape, spread, user, Nodes, Servers, CONTAINERS, HOLD_SECONDS,
};

/// Each request kind's Redis CPU as measured one way (µs), beside a PING and a GET sent the
/// same way: join, poll, check, leave, and what a second's admissions add to a tick on one
/// stripe.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Prices {
    pub(crate) ping: f64,
    pub(crate) get: f64,
    pub(crate) per_kind: [f64; 5],
}

/// The prices on `servers`, measured two ways: `spread`, the requests over every stripe (so
/// over every node), summed over every node; and `dense`, every request on the stripes of one
/// primary, read from that primary alone, so that it meets the 16 containers' requests at
/// once, as the busiest primary of the whole scale meets thousands of containers'. On one
/// server the two are one measure. `capacity`: the live sessions the booking system takes at
/// the whole scale.
pub(crate) struct Calibrated {
    pub(crate) spread: Prices,
    pub(crate) dense: Prices,
}

pub(crate) async fn calibrate(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    stripes: u16,
    fraction: u64,
    capacity: f64,
) -> Calibrated {
    let shape = shape(stripes, 1);
    let spread = measure(settings, servers, nodes, shape, "calibrate", None).await;
    let tick = tick_price(settings, servers, nodes, shape, fraction, capacity).await;
    let priced = |(ping, get, [join, poll, check, leave]): (f64, f64, [f64; 4])| Prices {
        ping,
        get,
        per_kind: [join, poll, check, leave, tick],
    };
    let spread = priced(spread);
    let dense = if nodes.0.len() > 1 {
        priced(measure(settings, servers, nodes, shape, "calibrate-dense", Some(0)).await)
    } else {
        spread
    };
    Calibrated { spread, dense }
}

/// PING, GET, join, poll, check and leave on the line `name`, each 6 400 times over the
/// containers: over every stripe, or only over those `focus` holds (read from it alone).
async fn measure(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    shape: lineup::line::LineShape,
    name: &str,
    focus: Option<usize>,
) -> (f64, f64, [f64; 4]) {
    let lines = lines_of(settings, servers, name, shape, None).await;
    let count: u32 = 6_400;
    let scores: Vec<AtomicI64> = (0..count).map(|_| AtomicI64::new(0)).collect();
    let scores = &scores;
    let now = chrono::Utc::now().timestamp_millis();
    // PINGs and GETs go as the line's requests do: each container on its own connection, one
    // request in flight, spread over the stripes' keys.
    let lanes: Vec<lineup::store::Conn> = (0..CONTAINERS)
        .map(|_| lineup::store::connect(settings, &servers.url()).expect("connect"))
        .collect();
    let lanes = &lanes;
    let all: Vec<StripeKeys> = (0..shape.stripes)
        .map(|k| StripeKeys::new("lineup", &queue(name), Stripe(k), shape.stripes))
        .collect();
    let owners = nodes.owners(&all).await;
    let on = |stripe: Stripe| focus.is_none_or(|node| owners[usize::from(stripe.0)] == node);
    let keys: Vec<StripeKeys> = all
        .into_iter()
        .enumerate()
        .filter(|(k, _)| on(Stripe(*k as u16)))
        .map(|(_, keys)| keys)
        .collect();
    let keys = &keys;
    // The buyers measured: the i-th is `user(users[i])`.
    let users: Vec<u32> = (0u32..)
        .filter(|i| on(lines[0].stripe_of(&user(*i))))
        .take(count as usize)
        .collect();
    let users = &users;
    // A PING names no key, so the cluster's client sends it to any node: on one node, each
    // container PINGs over a connection of its own to that node.
    let mut direct = Vec::new();
    if let Some(node) = focus {
        let client = redis::Client::open(servers.node_urls()[node].as_str()).expect("node url");
        for _ in 0..CONTAINERS {
            direct.push(
                client
                    .get_multiplexed_async_connection()
                    .await
                    .expect("node"),
            );
        }
    }
    let direct = &direct;
    let ping = per_call(nodes, focus, count, |lane, i| {
        let key = &keys[i as usize % keys.len()].sealed;
        async move {
            let _: String = match direct.get(lane) {
                Some(conn) => redis::cmd("PING")
                    .query_async(&mut conn.clone())
                    .await
                    .expect("PING"),
                None => lanes[lane]
                    .query(key, redis::cmd("PING"))
                    .await
                    .expect("PING"),
            };
        }
    })
    .await;
    let join = per_call(nodes, focus, count, |lane, i| {
        let line = &lines[lane];
        async move {
            let joined = line.join(&user(users[i as usize]), now).await;
            if let Joined::New { score, .. } = joined.expect("join") {
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
    let get = per_call(nodes, focus, count, |lane, i| {
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
            if let Some(i) =
                (0..count).find(|i| line.stripe_of(&user(users[*i as usize])) == Stripe(k))
            {
                let score = scores[i as usize].load(Ordering::Relaxed);
                line.poll(&user(users[i as usize]), score, sealed)
                    .await
                    .expect("poll");
            }
        }
    }
    let poll = per_call(nodes, focus, count, |lane, i| {
        let line = &lines[lane];
        async move {
            let score = scores[i as usize].load(Ordering::Relaxed);
            line.poll(&user(users[i as usize]), score, sealed)
                .await
                .expect("poll");
        }
    })
    .await;
    lines[0]
        .tick(fence, &(sealed + 1), u64::from(count))
        .await
        .expect("tick");
    let check = per_call(nodes, focus, count, |lane, i| {
        let line = &lines[lane];
        async move {
            line.check(&user(users[i as usize]), sealed + 2)
                .await
                .expect("check");
        }
    })
    .await;
    let leave = per_call(nodes, focus, count, |lane, i| {
        let line = &lines[lane];
        async move {
            line.leave(&user(users[i as usize])).await.expect("leave");
        }
    })
    .await;
    (ping, get, [join, poll, check, leave])
}

/// What a second's admissions at the whole scale add to a tick, per stripe (µs): one tick
/// with room for the whole scale's second of admissions less one with room for this scale's,
/// each over a line of waiters.
async fn tick_price(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    shape: lineup::line::LineShape,
    fraction: u64,
    capacity: f64,
) -> f64 {
    let now = chrono::Utc::now().timestamp_millis();
    let sealed = now + 2_000;
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
            cost(
                &before,
                &nodes.cpu_us().await,
                None,
                u32::from(shape.stripes),
            )
        }
    };
    let second = ((capacity / HOLD_SECONDS) as u64).max(1);
    let here = (second / fraction).max(1);
    let scaled = tick_with(here, here, sealed).await;
    let whole = tick_with(here + second, second, sealed + 1).await;
    whole - scaled
}

/// The CPU the nodes spent between `before` and `after` (or `focus` alone), per each of
/// `calls` calls (µs).
fn cost(before: &[f64], after: &[f64], focus: Option<usize>, calls: u32) -> f64 {
    let spent: f64 = match focus {
        Some(node) => after[node] - before[node],
        None => before.iter().zip(after).map(|(b, a)| a - b).sum(),
    };
    spent / f64::from(calls)
}

/// The nodes' (or `focus`'s) CPU per call while `count` calls of `run` go over the
/// containers (µs).
async fn per_call<F, Fut>(nodes: &Nodes, focus: Option<usize>, count: u32, run: F) -> f64
where
    F: Fn(usize, u32) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let before = nodes.cpu_us().await;
    spread(count, run).await;
    cost(&before, &nodes.cpu_us().await, focus, count)
}
