//! Concurrency under load: thousands of token requests at once across two queues while two
//! promoters and a reaper run, with every invariant sampled as it happens. Prints a
//! `RELIABILITY:` line with the figures that RELIABILITY.md records.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use lambda_runtime::{Context, LambdaEvent};
use lineup::queue::keys::QueueKeys;
use lineup_tests::{api_request_from, TestApp};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::json;

const USERS: usize = 1000;
const QUEUES: [&str; 2] = ["onsale-a", "onsale-b"];
const CAPACITY: u64 = 150;

/// What the sampler saw in one queue at one instant, read atomically (MULTI).
struct Sample {
    active: u64,
    admitted_through: u64,
    first_waiting_ticket: Option<u64>,
    both_waiting_and_active: u64,
}

async fn sample(app: &TestApp, queue: &str) -> Sample {
    let keys = QueueKeys::new(
        &app.config.key_prefix,
        &lineup::ids::QueueId::parse(queue).unwrap(),
    );
    let (active, through, head, both): (u64, Option<u64>, Vec<(String, u64)>, u64) = redis::pipe()
        .atomic()
        .zcard(&keys.active)
        .hget(&keys.meta, "admitted-through")
        .cmd("ZRANGE")
        .arg(&keys.waiting)
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .cmd("ZINTERCARD")
        .arg(2)
        .arg(&keys.waiting)
        .arg(&keys.active)
        .query_async(&mut app.inspect.clone())
        .await
        .expect("sample");
    Sample {
        active,
        admitted_through: through.unwrap_or(0),
        first_waiting_ticket: head.first().map(|(_, ticket)| *ticket),
        both_waiting_and_active: both,
    }
}

/// 5 000 token requests in flight at once, from 1 000 users. Each user asks 1–4 times per queue,
/// from its own address, across 2 queues. Two promoters and a reaper loop beside them. Atomic
/// samples (MULTI) taken during the load must show: active never above capacity (150), nobody both
/// waiting and active, and no ticket admitted while an earlier one waited. At the end every user
/// holds exactly one token per queue, tickets are 1…1000 per queue, and exactly tickets 1…150 are
/// active. Nothing may be lost. The `RELIABILITY:` line gives the ticks, reaper runs, samples and
/// the highest active count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_concurrent_requests_keep_every_invariant() {
    // Its thousands of requests take both cores: the real-clock on-sales wait their turn.
    let _turn = lineup_tests::CPU_HEAVY.write().await;
    let capacity = CAPACITY.to_string();
    let app = Arc::new(
        TestApp::spawn(&[
            ("QUEUE_CAPACITY", &capacity),
            ("ADMIT_PER_TICK", "7"),
            // All requests share this process's one connection (a Lambda container has one
            // request at a time): the last in the pipeline waits for all before it, and none
            // is shed. This suite is about atomicity; overload.rs is about shedding.
            ("REDIS_RESPONSE_TIMEOUT_MS", "30000"),
            ("REDIS_MAX_IN_FLIGHT", "10000"),
        ])
        .await,
    );

    // Every user asks in both queues, 1 to 4 times each, from their own address.
    let mut requests: Vec<(usize, &str)> = Vec::new();
    for user in 0..USERS {
        for queue in QUEUES {
            for _ in 0..=(user % 4) {
                requests.push((user, queue));
            }
        }
    }
    requests.shuffle(&mut StdRng::seed_from_u64(7));
    let total_requests = requests.len();
    assert!(total_requests >= 5000);

    let done = Arc::new(AtomicBool::new(false));
    let background = |work: fn(Arc<TestApp>) -> futures::future::BoxFuture<'static, u64>| {
        let app = app.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut runs = 0u64;
            while !done.load(Ordering::Relaxed) {
                runs += work(app.clone()).await;
                lineup_tests::sleep(Duration::from_millis(3)).await;
            }
            runs
        })
    };
    let promoters = [0, 1].map(|_| {
        background(|app| {
            Box::pin(async move {
                let out = queue_promoter::handle(
                    LambdaEvent::new(json!({}), Context::default()),
                    &app.stack.promoter,
                )
                .await
                .expect("promoter");
                assert_eq!(out.failed_ticks, 0);
                1
            })
        })
    });
    let reaper = background(|app| {
        Box::pin(async move {
            queue_reaper::reap_all(&app.stack.reaper).await;
            1
        })
    });
    let sampler = {
        let app = app.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut samples = 0u64;
            let mut max_active = 0u64;
            while !done.load(Ordering::Relaxed) {
                for queue in QUEUES {
                    let s = sample(&app, queue).await;
                    assert!(s.active <= CAPACITY, "{queue}: {} active", s.active);
                    assert_eq!(
                        s.both_waiting_and_active, 0,
                        "{queue}: someone waits and is active"
                    );
                    if let Some(first) = s.first_waiting_ticket {
                        assert!(
                            s.admitted_through < first,
                            "{queue}: ticket {} admitted while {first} still waits",
                            s.admitted_through
                        );
                    }
                    max_active = max_active.max(s.active);
                    samples += 1;
                }
            }
            (samples, max_active)
        })
    };

    let started = Instant::now();
    let replies = join_all(requests.iter().map(|(user, queue)| {
        let app = app.clone();
        async move {
            let body = json!({ "userId": format!("user-{user:04}") }).to_string();
            let ip = format!("10.0.{}.{}", user / 250, user % 250 + 1);
            let reply = app
                .queue_api(api_request_from(
                    "POST",
                    &format!("/queues/{queue}/tokens"),
                    Some(&body),
                    &ip,
                ))
                .await;
            (*user, *queue, reply)
        }
    }))
    .await;
    let load_time = started.elapsed();
    // A few more ticks after the load, then stop everything and check the end state.
    lineup_tests::sleep(Duration::from_millis(300)).await;
    done.store(true, Ordering::Relaxed);
    let ticks: u64 = join_all(promoters)
        .await
        .into_iter()
        .map(|r| r.unwrap())
        .sum();
    let reaps = reaper.await.unwrap();
    let (samples, max_active) = sampler.await.unwrap();
    assert!(
        samples >= 20 && ticks >= 4 && reaps >= 2,
        "{samples} samples, {ticks} ticks, {reaps} reaps"
    );

    // Every user ends with exactly one token per queue, however often they asked.
    let mut tokens: HashMap<(usize, &str), BTreeSet<String>> = HashMap::new();
    let mut tickets: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for (user, queue, reply) in &replies {
        assert!(
            reply.status == 200 || reply.status == 201,
            "{}: {}",
            reply.status,
            reply.body
        );
        tokens
            .entry((*user, *queue))
            .or_default()
            .insert(reply.token());
        tickets
            .entry(*queue)
            .or_default()
            .insert(reply.body["ticket"].as_u64().unwrap());
    }
    assert_eq!(tokens.len(), USERS * QUEUES.len());
    assert!(
        tokens.values().all(|t| t.len() == 1),
        "a user got two tokens"
    );
    for queue in QUEUES {
        let issued = &tickets[queue];
        assert_eq!(issued.len(), USERS, "{queue}: one ticket per user");
        assert_eq!(
            issued.iter().copied().collect::<Vec<_>>(),
            (1..=USERS as u64).collect::<Vec<_>>()
        );
        // Admission followed arrival: exactly the first CAPACITY tickets are active.
        let keys = QueueKeys::new(
            &app.config.key_prefix,
            &lineup::ids::QueueId::parse(queue).unwrap(),
        );
        let held: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&keys.active_tickets)
            .query_async(&mut app.inspect.clone())
            .await
            .unwrap();
        let mut active: Vec<u64> = held
            .values()
            .map(|v| v.split(':').next().unwrap().parse().unwrap())
            .collect();
        active.sort();
        assert_eq!(active, (1..=CAPACITY).collect::<Vec<_>>(), "{queue}");
        let end = sample(&app, queue).await;
        assert_eq!(end.active, CAPACITY);
        assert_eq!(end.first_waiting_ticket, Some(CAPACITY + 1));
    }
    println!(
        "RELIABILITY: load: {total_requests} token requests in flight at once from {USERS} users \
         across {} queues in {load_time:?}; {ticks} promotion ticks from 2 promoters and {reaps} \
         reaper runs alongside; {samples} atomic samples; max active {max_active} of {CAPACITY}; \
         0 violations",
        QUEUES.len()
    );
}
