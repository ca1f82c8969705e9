//! `lineup-bench line-opening`'s prices: each request kind's Redis CPU measured alone on the
//! replay's own servers, beside PINGs and GETs sent the same way (each container on its own
//! connection, one request in flight), spread over every node and dense on one, and what a
//! second's admissions add to a tick; and, after a run, the same spread at the run's own pace.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use futures::future::join_all;

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
    let spread = measure(settings, servers, nodes, shape, "calibrate", Way::Spread).await;
    let tick = tick_price(settings, servers, nodes, shape, fraction, capacity).await;
    let spread = spread.prices(tick);
    let dense = if nodes.0.len() > 1 {
        measure(
            settings,
            servers,
            nodes,
            shape,
            "calibrate-dense",
            Way::Dense(0),
        )
        .await
        .prices(tick)
    } else {
        spread
    };
    Calibrated { spread, dense }
}

/// The prices at a run's own pace: each node's requests sent at the rate its requests met in
/// the run, so that a request meets as few others in Redis as in the run, and wakes it as
/// often. Measured on the run's own line (so on every node it used, a slot of its own
/// included), with buyers of their own, on the servers as the run left them; each node's idle
/// CPU, read for [`IDLE`] first, is taken off.
pub(crate) struct Paced {
    /// The requests a second over every node.
    pub(crate) per_second: f64,
    /// Each node's prices at its own pace.
    pub(crate) each: Vec<Prices>,
    /// Every node's CPU over every node's requests.
    pub(crate) all: Prices,
}

/// [`Paced`] prices on the line `name`, `per_node` the requests a second to send each node;
/// `tick`, the tick's price to carry over.
pub(crate) async fn paced(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    (name, stripes): (&str, u16),
    per_node: Vec<f64>,
    tick: f64,
) -> Paced {
    let idle_us = {
        let before = nodes.cpu_us().await;
        tokio::time::sleep(IDLE).await;
        let after = nodes.cpu_us().await;
        before
            .iter()
            .zip(&after)
            .map(|(b, a)| (a - b) / IDLE.as_secs_f64())
            .collect()
    };
    let per_second = per_node.iter().sum();
    let way = Way::Paced { per_node, idle_us };
    let measured = measure(settings, servers, nodes, shape(stripes, 1), name, way).await;
    Paced {
        per_second,
        each: (0..nodes.0.len())
            .map(|n| measured.node(n).prices(tick))
            .collect(),
        all: measured.prices(tick),
    }
}

/// How long a run, and the prices at its pace, read the nodes' idle CPU.
pub(crate) const IDLE: Duration = Duration::from_secs(20);

/// How long each kind's calls take at a run's pace.
const PACED_FOR: Duration = Duration::from_secs(8);

/// The paced calibration's first buyer, past any a run made.
const PACED_USERS_FROM: u32 = 1 << 28;

/// How a calibration sends its calls and whose CPU it reads.
enum Way {
    /// 6 400 calls over every stripe, back to back, read from every node.
    Spread,
    /// 6 400 calls over that node's stripes, back to back, read from it alone.
    Dense(usize),
    /// Each node's calls at its rate (a second) on average, at random, for [`PACED_FOR`];
    /// each node's idle CPU (µs a second) taken off.
    Paced {
        per_node: Vec<f64>,
        idle_us: Vec<f64>,
    },
}

/// What one calibration's calls cost: for each kind (PING, GET, join, poll, check, leave),
/// each node's CPU (µs) and calls.
struct Measured {
    spent: [Vec<f64>; 6],
    calls: Vec<u32>,
    /// The node read alone, if any.
    focus: Option<usize>,
}

impl Measured {
    /// The same, for `node` alone.
    fn node(&self, node: usize) -> Measured {
        Measured {
            spent: self.spent.clone(),
            calls: self.calls.clone(),
            focus: Some(node),
        }
    }

    /// The prices: the CPU of the nodes read over their calls, with `tick`.
    fn prices(&self, tick: f64) -> Prices {
        let read = |values: &[f64]| -> f64 {
            match self.focus {
                Some(node) => values[node],
                None => values.iter().sum(),
            }
        };
        let calls: Vec<f64> = self.calls.iter().map(|c| f64::from(*c)).collect();
        let calls = read(&calls).max(1.0);
        let each = |k: usize| read(&self.spent[k]) / calls;
        Prices {
            ping: each(0),
            get: each(1),
            per_kind: [each(2), each(3), each(4), each(5), tick],
        }
    }
}

/// PING, GET, join, poll, check and leave on the line `name`, each sent `way`.
async fn measure(
    settings: &RedisSettings,
    servers: &Servers,
    nodes: &Nodes,
    shape: lineup::line::LineShape,
    name: &str,
    way: Way,
) -> Measured {
    let lines = lines_of(settings, servers, name, shape, None).await;
    let keys: Vec<StripeKeys> = (0..shape.stripes)
        .map(|k| StripeKeys::new("lineup", &queue(name), Stripe(k), shape.stripes))
        .collect();
    let owners = nodes.owners(&keys).await;
    let node_of = |i: u32| owners[usize::from(lines[0].stripe_of(&user(i)).0)];
    // The buyers measured, in the order their calls go (the i-th is `user(users[i])`), when
    // each is due from the start (back to back when none), and the node each lands on.
    let (users, due): (Vec<u32>, Option<Vec<Duration>>) = match &way {
        Way::Spread => ((0..6_400).collect(), None),
        Way::Dense(node) => (
            (0u32..)
                .filter(|i| node_of(*i) == *node)
                .take(6_400)
                .collect(),
            None,
        ),
        Way::Paced { per_node, .. } => {
            // Only the nodes that hold a stripe of the line.
            let mut calls: Vec<(Duration, usize)> = Vec::new();
            for (node, rate) in per_node
                .iter()
                .enumerate()
                .filter(|(node, rate)| **rate > 0.0 && owners.contains(node))
            {
                // Due at random, as independent buyers' requests come: the gaps between
                // them exponential, `rate` a second on average.
                let count = (rate * PACED_FOR.as_secs_f64()).clamp(200.0, 6_400.0) as u32;
                let mut at = 0.0;
                for _ in 0..count {
                    at += -(1.0 - rand::random::<f64>()).ln() / rate;
                    calls.push((Duration::from_secs_f64(at), node));
                }
            }
            calls.sort();
            let mut next = vec![PACED_USERS_FROM; per_node.len()];
            let users = calls
                .iter()
                .map(|(_, node)| {
                    let found = (next[*node]..)
                        .find(|i| node_of(*i) == *node)
                        .expect("a buyer");
                    next[*node] = found + 1;
                    found
                })
                .collect();
            (users, Some(calls.into_iter().map(|(at, _)| at).collect()))
        }
    };
    let mut calls = vec![0u32; nodes.0.len()];
    for i in &users {
        calls[node_of(*i)] += 1;
    }
    let (focus, idle_us) = match &way {
        Way::Spread => (None, None),
        Way::Dense(node) => (Some(*node), None),
        Way::Paced { idle_us, .. } => (None, Some(idle_us.as_slice())),
    };
    let count = users.len() as u32;
    let scores: Vec<AtomicI64> = (0..count).map(|_| AtomicI64::new(0)).collect();
    let scores = &scores;
    let now = chrono::Utc::now().timestamp_millis();
    // PINGs and GETs go as the line's requests do: each container on its own connection, one
    // request in flight, each to the key of the stripe its buyer's request goes to.
    let lanes: Vec<lineup::store::Conn> = (0..CONTAINERS)
        .map(|_| lineup::store::connect(settings, &servers.url()).expect("connect"))
        .collect();
    let lanes = &lanes;
    let key_of = |i: u32| &keys[usize::from(lines[0].stripe_of(&user(users[i as usize])).0)];
    let (users, key_of) = (&users, &key_of);
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
    let send = Send {
        nodes,
        count,
        due: due.as_deref(),
        idle_us,
    };
    let ping = send
        .calls(|lane, i| {
            let key = &key_of(i).sealed;
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
    let join = send
        .calls(|lane, i| {
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
    // The bench's one holder: a run's own line was last ticked under it.
    let Ok(Lease::Granted(fence)) = lines[0].lease("bench", Duration::from_secs(60)).await else {
        panic!("the calibration's lease");
    };
    let get = send
        .calls(|lane, i| {
            let key = &key_of(i).sealed;
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
    let poll = send
        .calls(|lane, i| {
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
    let check = send
        .calls(|lane, i| {
            let line = &lines[lane];
            async move {
                line.check(&user(users[i as usize]), sealed + 2)
                    .await
                    .expect("check");
            }
        })
        .await;
    let leave = send
        .calls(|lane, i| {
            let line = &lines[lane];
            async move {
                line.leave(&user(users[i as usize])).await.expect("leave");
            }
        })
        .await;
    Measured {
        spent: [ping, get, join, poll, check, leave],
        calls,
        focus,
    }
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
            let after = nodes.cpu_us().await;
            let spent: f64 = before.iter().zip(&after).map(|(b, a)| a - b).sum();
            spent / f64::from(shape.stripes)
        }
    };
    let second = ((capacity / HOLD_SECONDS) as u64).max(1);
    let here = (second / fraction).max(1);
    let scaled = tick_with(here, here, sealed).await;
    let whole = tick_with(here + second, second, sealed + 1).await;
    whole - scaled
}

/// How a calibration's calls go out: over the containers, each with one call in flight,
/// back to back or each at its `due` time from the start; each node's CPU read around them,
/// less its idle CPU (µs a second) over that time where `idle_us` is given.
struct Send<'a> {
    nodes: &'a Nodes,
    count: u32,
    due: Option<&'a [Duration]>,
    idle_us: Option<&'a [f64]>,
}

impl Send<'_> {
    /// Each node's CPU (µs) while the calls of `run` go, one for each of the plan's buyers.
    async fn calls<F, Fut>(&self, run: F) -> Vec<f64>
    where
        F: Fn(usize, u32) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        let before = self.nodes.cpu_us().await;
        let start = tokio::time::Instant::now();
        let run = &run;
        match self.due {
            None => spread(self.count, run).await,
            Some(due) => {
                join_all((0..CONTAINERS).map(|lane| async move {
                    for i in (lane..due.len()).step_by(CONTAINERS) {
                        tokio::time::sleep_until(start + due[i]).await;
                        run(lane, i as u32).await;
                    }
                }))
                .await;
            }
        }
        let seconds = start.elapsed().as_secs_f64();
        let after = self.nodes.cpu_us().await;
        before
            .iter()
            .zip(&after)
            .enumerate()
            .map(|(node, (b, a))| {
                let idle = self.idle_us.map_or(0.0, |idle| idle[node] * seconds);
                (a - b - idle).max(0.0)
            })
            .collect()
    }
}
