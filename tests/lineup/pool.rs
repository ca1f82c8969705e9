//! Capacity pools: queues on different shards share one capacity. Each admits only within the
//! allotment its pool's ledger granted; the promoter's ticks move places to where people wait.
//! The active buyers of a pool's queues never exceed its capacity, with two promoters at once
//! and arrivals and leaves racing the rebalancing. (This suite also runs on the local cluster,
//! tests/cluster-suites, where the two queues sit on different shards.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use lineup_tests::queue::{join, leave, put_settings, summary};
use lineup_tests::{api_request, TestApp};
use redis::cluster_routing::Slot;
use serde_json::{json, Value};

/// Two queue ids whose keys sit in different thirds of the slot space, so on a three-shard
/// cluster they are on different shards.
fn two_queues_on_two_shards() -> (String, String) {
    let third = |id: &str| {
        let slot: u16 = format!("{:?}", Slot::for_key(format!("x:{{q:{id}}}")))
            .trim_start_matches("Slot(")
            .trim_end_matches(')')
            .parse()
            .unwrap();
        slot / 5462
    };
    let ids: Vec<String> = (0..100).map(|i| format!("sale-{i}")).collect();
    let first = ids[0].clone();
    let other = ids
        .iter()
        .find(|id| third(id) != third(&first))
        .unwrap()
        .clone();
    (first, other)
}

async fn pool(app: &TestApp, method: &str, id: &str, body: Option<&Value>) -> lineup_tests::Reply {
    let text = body.map(Value::to_string);
    app.queue_api(api_request(
        method,
        &format!("/pools/{id}"),
        text.as_deref(),
    ))
    .await
}

async fn tick(stack: &lineup_local::Stack) -> u64 {
    queue_promoter::tick(&stack.promoter)
        .await
        .expect("tick")
        .admitted()
}

async fn active(app: &TestApp, queue: &str) -> u64 {
    summary(app, queue).await.body["active"].as_u64().unwrap()
}

#[tokio::test]
async fn a_pool_is_checked_shown_and_deleted() {
    let app = TestApp::spawn(&[]).await;
    for bad in [
        json!({}),
        json!({"capacity": 0}),
        json!({"capacity": 10, "weights": {"a b": 1}}),
        json!({"capacity": 10, "weights": {"a": 0}}),
        json!({"capacity": 10, "extra": 1}),
    ] {
        pool(&app, "PUT", "main", Some(&bad))
            .await
            .assert_problem(400);
    }
    pool(&app, "PUT", "a b", Some(&json!({"capacity": 1})))
        .await
        .assert_problem(400);
    pool(&app, "GET", "main", None).await.assert_problem(404);
    let set = pool(
        &app,
        "PUT",
        "main",
        Some(&json!({"capacity": 10, "weights": {"north": 3, "south": 1}})),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(
        set.body,
        json!({"poolId": "main", "capacity": 10, "weights": {"north": 3, "south": 1},
            "allotments": {}, "allotted": 0})
    );
    let again = pool(&app, "PUT", "main", Some(&json!({"capacity": 12}))).await;
    assert_eq!(
        again.body["weights"],
        json!({}),
        "weights are replaced whole"
    );
    assert_eq!(pool(&app, "GET", "main", None).await.body["capacity"], 12);
    // A queue names its pool in its settings.
    let queue = put_settings(&app, "north", &json!({"pool": "main"})).await;
    assert_eq!(queue.body["pool"], "main");
    put_settings(&app, "north", &json!({"pool": "a b"}))
        .await
        .assert_problem(400);
    assert_eq!(pool(&app, "DELETE", "main", None).await.status, 204);
    pool(&app, "GET", "main", None).await.assert_problem(404);
    // The pool's hash ends: it has a TTL.
    pool(&app, "PUT", "main", Some(&json!({"capacity": 3}))).await;
    let keys: Vec<(String, i64)> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.contains("{p:"))
        .collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert!(keys[0].1 > 0, "{keys:?}");
}

#[tokio::test]
async fn a_pool_shares_its_capacity_by_the_lines_and_moves_places_to_where_people_wait() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "shared", Some(&json!({"capacity": 10}))).await;
    for queue in [&a, &b] {
        let set = put_settings(
            &app,
            queue,
            &json!({"pool": "shared", "capacity": 100, "admitPerTick": 100, "sessionSeconds": 600}),
        )
        .await;
        assert_eq!(set.status, 200, "{}", set.body);
    }
    // Until the ledger grants a queue places, it admits nobody: arrivals wait.
    let mut tokens_a = Vec::new();
    for i in 0..15 {
        let reply = join(&app, &a, &format!("a{i}")).await;
        assert_eq!(reply.body["status"], "waiting");
        tokens_a.push(reply.token());
    }
    for i in 0..12 {
        join(&app, &b, &format!("b{i}")).await;
    }
    // Report, grant, apply: a few ticks fill the pool, never past it.
    for _ in 0..5 {
        tick(&app.stack).await;
        assert!(active(&app, &a).await + active(&app, &b).await <= 10);
    }
    let (in_a, in_b) = (active(&app, &a).await, active(&app, &b).await);
    assert_eq!(in_a + in_b, 10, "the whole capacity in use");
    assert!(
        in_a >= 5 && in_b >= 3,
        "shared by the lines: {in_a} and {in_b}"
    );
    let seen = summary(&app, &a).await.body;
    assert_eq!(seen["pace"]["limitedBy"], "pool");
    assert_eq!(seen["pace"]["capacity"], in_a);
    assert_eq!(seen["settings"]["pool"], "shared");
    let shown = pool(&app, "GET", "shared", None).await.body;
    assert!(shown["allotted"].as_u64().unwrap() <= 10, "{shown}");

    // Everyone in the first queue leaves: its places go to the second, within the pool.
    for token in &tokens_a {
        leave(&app, &a, token).await;
    }
    for _ in 0..6 {
        tick(&app.stack).await;
        assert!(active(&app, &a).await + active(&app, &b).await <= 10);
    }
    assert_eq!(active(&app, &a).await, 0);
    assert_eq!(active(&app, &b).await, 10);
    let shown = pool(&app, "GET", "shared", None).await.body;
    assert_eq!(shown["allotments"][&b], 10, "{shown}");

    // A deleted pool grants nothing more: its queues keep their sessions, admit no one new.
    pool(&app, "DELETE", "shared", None).await;
    join(&app, &a, "late").await;
    for _ in 0..3 {
        tick(&app.stack).await;
    }
    assert_eq!(active(&app, &a).await, 0);
    assert_eq!(active(&app, &b).await, 10);
}

#[tokio::test]
async fn two_promoters_arrivals_and_leaves_never_take_a_pool_past_its_capacity() {
    const CAPACITY: u64 = 8;
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(
        &app,
        "PUT",
        "race",
        Some(&json!({"capacity": CAPACITY, "weights": {a.clone(): 1, b.clone(): 2}})),
    )
    .await;
    for queue in [&a, &b] {
        put_settings(
            &app,
            queue,
            &json!({"pool": "race", "capacity": 100, "admitPerTick": 100, "sessionSeconds": 600}),
        )
        .await;
    }
    // Lines in both queues from the start, so both can fill whatever they are granted.
    let mut held: Vec<(String, String)> = Vec::new();
    for i in 0..12 {
        for queue in [&a, &b] {
            let reply = join(&app, queue, &format!("early{i}")).await;
            held.push((queue.clone(), reply.token()));
        }
    }
    let other = app.another_container().await;
    let running = Arc::new(AtomicBool::new(true));
    // Two promoters, each ticking as fast as it can.
    let promoters: Vec<_> = [app.stack.clone(), other]
        .into_iter()
        .map(|stack| {
            let running = running.clone();
            tokio::spawn(async move {
                let mut ticks = 0u64;
                while running.load(Ordering::SeqCst) {
                    let _ = queue_promoter::tick(&stack.promoter).await;
                    ticks += 1;
                }
                ticks
            })
        })
        .collect();
    // Arrivals and leaves in both queues, racing the rebalancing; the pool is checked
    // between each step: both queues read at once, each on its own shard.
    let mut most = 0;
    for round in 0..120u32 {
        let queue = if round % 3 == 0 { &a } else { &b };
        let user = format!("u{round}");
        let reply = join(&app, queue, &user).await;
        held.push((queue.clone(), reply.token()));
        if round % 4 == 3 {
            // Someone leaves: a waiter or an active buyer, from either queue.
            let (queue, token) = held.remove((round as usize * 7) % held.len());
            leave(&app, &queue, &token).await;
        }
        let (sa, sb) = tokio::join!(summary(&app, &a), summary(&app, &b));
        let (in_a, in_b) = (
            sa.body["active"].as_u64().unwrap(),
            sb.body["active"].as_u64().unwrap(),
        );
        assert!(
            in_a + in_b <= CAPACITY,
            "round {round}: {in_a} + {in_b} active"
        );
        // Each queue within its allotment, exactly (one script reads both).
        assert!(in_a <= sa.body["pace"]["capacity"].as_u64().unwrap());
        assert!(in_b <= sb.body["pace"]["capacity"].as_u64().unwrap());
        most = most.max(in_a + in_b);
        lineup_tests::sleep(std::time::Duration::from_millis(5)).await;
    }
    running.store(false, Ordering::SeqCst);
    for promoter in promoters {
        assert!(promoter.await.unwrap() > 10, "each promoter ticked");
    }
    assert_eq!(most, CAPACITY, "the pool was used to its capacity");
    let shown = pool(&app, "GET", "race", None).await.body;
    assert!(shown["allotted"].as_u64().unwrap() <= CAPACITY, "{shown}");
    assert!(active(&app, &a).await + active(&app, &b).await <= CAPACITY);
}

#[tokio::test]
async fn a_booking_health_level_for_a_pool_reaches_each_of_its_queues() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "paced", Some(&json!({"capacity": 10}))).await;
    for queue in [&a, &b] {
        put_settings(
            &app,
            queue,
            &json!({"pool": "paced", "healthRecoverySeconds": 0, "admitPerTick": 10}),
        )
        .await;
        join(&app, queue, "first").await;
    }
    // The promoter's first tick learns which queues report to the pool.
    tick(&app.stack).await;
    let event = |pool: &str, level: f64| {
        json!({"version": "0", "id": "h", "detail-type": "BookingHealth",
            "source": "lineup.payments", "account": "123456789012",
            "time": chrono::Utc::now().to_rfc3339(), "region": "us-east-1", "resources": [],
            "detail": {"pool": pool, "level": level}})
    };
    let verdicts = ranking_updater::apply_events(
        &[event("paced", 0.0), event("nowhere", 0.0)],
        &app.stack.ranking_updater,
    )
    .await;
    assert_eq!(verdicts[0], lineup::ranking::Outcome::Applied);
    assert!(
        matches!(verdicts[1], lineup::ranking::Outcome::Ignored(_)),
        "{verdicts:?}"
    );
    // The ledger hands the level on at the next tick, and the queues take it the one after.
    for _ in 0..2 {
        tick(&app.stack).await;
    }
    for queue in [&a, &b] {
        assert_eq!(
            summary(&app, queue).await.body["pace"]["health"],
            json!({"level": 0.0, "reason": "booking"}),
            "{queue}"
        );
    }
}

/// A queue that names a pool is visited by the promoter from its settings on, before its
/// first buyer: a `BookingHealth` level for the pool reaches it as it reaches the others.
#[tokio::test]
async fn a_queue_that_names_a_pool_is_promoted_before_its_first_buyer() {
    let app = TestApp::spawn(&[]).await;
    pool(&app, "PUT", "paced", Some(&json!({"capacity": 10}))).await;
    let set = put_settings(
        &app,
        "hall",
        &json!({"pool": "paced", "healthRecoverySeconds": 0, "admitPerTick": 10}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    // The promoter's first tick learns which queues report to the pool.
    tick(&app.stack).await;
    let event = json!({"version": "0", "id": "h", "detail-type": "BookingHealth",
        "source": "lineup.payments", "account": "123456789012",
        "time": chrono::Utc::now().to_rfc3339(), "region": "us-east-1", "resources": [],
        "detail": {"pool": "paced", "level": 0.0}});
    let verdicts = ranking_updater::apply_events(&[event], &app.stack.ranking_updater).await;
    assert_eq!(verdicts[0], lineup::ranking::Outcome::Applied);
    for _ in 0..2 {
        tick(&app.stack).await;
    }
    assert_eq!(
        summary(&app, "hall").await.body["pace"]["health"],
        json!({"level": 0.0, "reason": "booking"})
    );
    for user in ["ana", "ben"] {
        assert_eq!(join(&app, "hall", user).await.body["status"], "waiting");
    }
    for _ in 0..3 {
        assert_eq!(tick(&app.stack).await, 0, "the level holds the line");
    }
}

#[tokio::test]
async fn a_pool_serves_at_most_its_most_queues_and_grants_the_others_nothing() {
    let most = lineup::queue::pool::POOL_QUEUES_MAX;
    let app = TestApp::spawn(&[]).await;
    pool(&app, "PUT", "crowded", Some(&json!({"capacity": 1000}))).await;
    let queues: Vec<String> = (0..=most).map(|i| format!("hall-{i:02}")).collect();
    for queue in &queues {
        put_settings(&app, queue, &json!({"pool": "crowded", "admitPerTick": 5})).await;
        join(&app, queue, "first").await;
    }
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    let mut served = 0;
    for queue in &queues {
        served += usize::from(active(&app, queue).await == 1);
    }
    assert_eq!(
        served, most,
        "each served queue admitted its buyer; one queue was not served"
    );
    let shown = pool(&app, "GET", "crowded", None).await.body;
    assert_eq!(
        shown["allotments"].as_object().unwrap().len(),
        most,
        "{shown}"
    );
}

/// Ticks it takes an operator's change to reach every queue of the pool: the queue's report
/// (a move), the ledger's answer, the queue taking it.
const WORD_TICKS: usize = 3;

/// Sets `queue` to long sessions, a pace that admits a whole line at a tick, and `pool`
/// (`null`: none).
async fn pooled(app: &TestApp, queue: &str, pool: Value) {
    let set = put_settings(
        app,
        queue,
        &json!({"pool": pool, "capacity": 100, "admitPerTick": 100, "sessionSeconds": 600}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
}

/// `count` buyers named `<prefix><i>` join `queue`: their tokens.
async fn line(app: &TestApp, queue: &str, prefix: &str, count: usize) -> Vec<String> {
    let mut tokens = Vec::new();
    for i in 0..count {
        tokens.push(join(app, queue, &format!("{prefix}{i}")).await.token());
    }
    tokens
}

/// The pool's live sessions, the queues read one after the other between steps (nothing
/// else runs meanwhile).
async fn live(app: &TestApp, queues: &[&str]) -> Vec<u64> {
    let mut counts = Vec::new();
    for queue in queues {
        counts.push(active(app, queue).await);
    }
    counts
}

/// Each queue's waiters, read one after the other between steps.
async fn waiting(app: &TestApp, queues: &[&str]) -> Vec<u64> {
    let mut counts = Vec::new();
    for queue in queues {
        counts.push(summary(app, queue).await.body["waiting"].as_u64().unwrap());
    }
    counts
}

/// Runs `step` (nobody joins in it), then checks what a pool promises across it: nobody is
/// admitted (a waiter gone from a line) but into a place below `capacity` (what the step freed
/// counted), and above it the sum never rises.
async fn holds_across<F: std::future::Future<Output = ()>>(
    app: &TestApp,
    queues: &[&str],
    capacity: u64,
    what: &str,
    step: F,
) {
    let (before, waited) = (live(app, queues).await, waiting(app, queues).await);
    step.await;
    let (after, waits) = (live(app, queues).await, waiting(app, queues).await);
    let (sum_before, sum_after) = (before.iter().sum::<u64>(), after.iter().sum::<u64>());
    if waited != waits {
        assert!(
            sum_after <= capacity,
            "{what}: admitted to {sum_after} live of {capacity} ({before:?} → {after:?})"
        );
    }
    assert!(
        sum_after <= capacity.max(sum_before),
        "{what}: {sum_before} → {sum_after} live in a pool of {capacity}"
    );
}

/// A queue that moves from a full pool of 5 to a full pool of 2 takes nothing of its old
/// allotment along: once the new pool's word has reached it (the third tick), it admits
/// nobody, on any path, until the pool's sessions are below 2, and its leaves hand no place on.
#[tokio::test]
async fn a_queue_that_moves_to_a_smaller_full_pool_takes_no_old_allotment_along() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "big", Some(&json!({"capacity": 5}))).await;
    pool(&app, "PUT", "small", Some(&json!({"capacity": 2}))).await;
    pooled(&app, &a, json!("big")).await;
    pooled(&app, &b, json!("small")).await;
    let tokens_a = line(&app, &a, "a", 8).await;
    line(&app, &b, "b", 4).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [5, 2]);

    pooled(&app, &a, json!("small")).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    let queues = [a.as_str(), b.as_str()];
    let seen = summary(&app, &a).await.body;
    assert!(
        seen["pace"]["capacity"].as_u64().unwrap() < 5,
        "the old pool's allotment stayed: {seen}"
    );
    for (i, token) in tokens_a[..4].iter().enumerate() {
        holds_across(&app, &queues, 2, &format!("leave {i}"), async {
            leave(&app, &a, token).await;
        })
        .await;
        holds_across(&app, &queues, 2, &format!("tick after leave {i}"), async {
            tick(&app.stack).await;
        })
        .await;
    }
    assert_eq!(live(&app, &queues).await, [1, 2], "a's places went back");
}

/// A pool deleted and made again with less, and a pool's capacity lowered below its live
/// sessions: from the third tick on, the queues take the places back as sessions end and
/// admit nobody until the live sessions are below the new capacity.
#[tokio::test]
async fn a_pool_remade_or_lowered_below_its_live_sessions_takes_places_back_as_they_end() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    for (queue, id) in [(&a, "remade"), (&b, "lowered")] {
        pool(&app, "PUT", id, Some(&json!({"capacity": 4}))).await;
        pooled(&app, queue, json!(id)).await;
    }
    let tokens_a = line(&app, &a, "a", 8).await;
    let tokens_b = line(&app, &b, "b", 8).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [4, 4]);

    pool(&app, "DELETE", "remade", None).await;
    pool(&app, "PUT", "remade", Some(&json!({"capacity": 1}))).await;
    pool(&app, "PUT", "lowered", Some(&json!({"capacity": 1}))).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    for (queue, tokens) in [(&a, &tokens_a), (&b, &tokens_b)] {
        for (i, token) in tokens[..4].iter().enumerate() {
            holds_across(&app, &[queue], 1, &format!("{queue}: leave {i}"), async {
                leave(&app, queue, token).await;
            })
            .await;
            holds_across(&app, &[queue], 1, &format!("{queue}: tick {i}"), async {
                tick(&app.stack).await;
            })
            .await;
        }
    }
    // Below the capacity again: the next ticks fill it, and no more.
    for _ in 0..3 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [1, 1]);
}

/// A queue with two live sessions joins a full pool of 3: from the third tick on, the other
/// queue's three leaves let in one buyer at most (the pool's live sessions never rise while
/// above its capacity, nor pass it).
#[tokio::test]
async fn a_queue_that_joins_a_full_pool_with_live_sessions_is_counted_before_anyone_is_let_in() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "full", Some(&json!({"capacity": 3}))).await;
    pooled(&app, &b, json!("full")).await;
    let tokens_b = line(&app, &b, "b", 6).await;
    pooled(&app, &a, Value::Null).await;
    put_settings(&app, &a, &json!({"capacity": 2})).await;
    line(&app, &a, "a", 4).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [2, 3]);

    put_settings(&app, &a, &json!({"pool": "full", "capacity": 100})).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    let queues = [a.as_str(), b.as_str()];
    for (i, token) in tokens_b[..3].iter().enumerate() {
        holds_across(&app, &queues, 3, &format!("leave {i}"), async {
            leave(&app, &b, token).await;
        })
        .await;
        holds_across(&app, &queues, 3, &format!("tick {i}"), async {
            tick(&app.stack).await;
        })
        .await;
    }
    let now = live(&app, &queues).await;
    assert!(now.iter().sum::<u64>() <= 3, "{now:?}");
}

/// Mode passthrough admits at once, outside any allotment, so it and `pool` exclude each
/// other as it and `opensAt` do: either added to a queue that has the other, or both in one
/// change, is 400 naming the field changed, and writes nothing.
#[tokio::test]
async fn passthrough_and_a_pool_exclude_each_other() {
    let app = TestApp::spawn(&[]).await;
    pool(&app, "PUT", "shared", Some(&json!({"capacity": 10}))).await;
    let refused_naming = |reply: &lineup_tests::Reply, field: &str| {
        lineup_tests::queue::assert_kind(reply, 400, "invalid-request");
        let detail = reply.body["detail"].as_str().unwrap();
        assert!(
            detail.starts_with(&format!("invalid {field}: ")),
            "{}",
            reply.body
        );
    };

    // A pooled queue is not put in passthrough.
    assert_eq!(
        put_settings(&app, "pooled", &json!({"pool": "shared"}))
            .await
            .status,
        200
    );
    let refused = put_settings(&app, "pooled", &json!({"mode": "passthrough"})).await;
    refused_naming(&refused, "mode");
    let seen = summary(&app, "pooled").await;
    assert_eq!(seen.body["settings"]["mode"], "queue");
    assert_eq!(seen.body["settings"]["pool"], "shared");

    // A queue in passthrough joins no pool.
    assert_eq!(
        put_settings(&app, "open", &json!({"mode": "passthrough"}))
            .await
            .status,
        200
    );
    let refused = put_settings(&app, "open", &json!({"pool": "shared"})).await;
    refused_naming(&refused, "pool");
    let seen = summary(&app, "open").await;
    assert_eq!(seen.body["settings"]["mode"], "passthrough");
    assert!(seen.body["settings"]["pool"].is_null(), "{}", seen.body);

    // Both in one change: the mode is named.
    let refused = put_settings(
        &app,
        "both",
        &json!({"mode": "passthrough", "pool": "shared"}),
    )
    .await;
    refused_naming(&refused, "mode");

    // Leaving the pool, or passthrough, in the same change as the other is fine.
    let set = put_settings(
        &app,
        "pooled",
        &json!({"mode": "passthrough", "pool": null}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let set = put_settings(&app, "open", &json!({"mode": "queue", "pool": "shared"})).await;
    assert_eq!(set.status, 200, "{}", set.body);
}

/// What the property test knows of one queue: the pool its settings name, and its buyers'
/// tokens in join order.
struct Modelled {
    id: String,
    pool: Option<&'static str>,
    tokens: Vec<String>,
}

/// A seeded scheduler races an operator's changes (moving a queue between two pools and out,
/// lowering and raising a capacity, deleting and remaking a pool, asking for passthrough)
/// against arrivals, leaves and ticks, on two queues on two shards, and reads every queue's
/// live sessions and waiters between steps. Once WORD_TICKS ticks have passed since the last
/// change: nobody is admitted but into a place below the pool's capacity, and above it the
/// pool's live sessions never rise. Passthrough with a pool is refused (400).
#[tokio::test]
async fn a_seeded_race_of_operator_changes_arrivals_leaves_and_ticks_keeps_every_pool_within_its_capacity(
) {
    use rand::{Rng, SeedableRng};
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    let pools = ["north", "south"];
    for seed in 0..3u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut capacity = [3u64, 2u64];
        let mut made = [true, true];
        for (i, id) in pools.iter().enumerate() {
            pool(&app, "PUT", id, Some(&json!({"capacity": capacity[i]}))).await;
        }
        let mut queues = [
            Modelled {
                id: format!("{a}-{seed}"),
                pool: Some("north"),
                tokens: Vec::new(),
            },
            Modelled {
                id: format!("{b}-{seed}"),
                pool: Some("south"),
                tokens: Vec::new(),
            },
        ];
        for q in &queues {
            pooled(&app, &q.id, json!(q.pool)).await;
        }
        let mut since_change = 0usize;
        let mut joined = 0usize;
        for step in 0..150 {
            let ids: Vec<String> = queues.iter().map(|q| q.id.clone()).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let (before, _) = (live(&app, &ids).await, ());
            let mut left = [0u64; 2];
            let what;
            match rng.random_range(0..100) {
                0..30 => {
                    let q = rng.random_range(0..2);
                    joined += 1;
                    let reply = join(&app, &queues[q].id, &format!("u{joined}")).await;
                    assert!(matches!(reply.status, 200 | 201), "{}", reply.body);
                    queues[q].tokens.push(reply.token());
                    what = format!("{} joins", queues[q].id);
                }
                30..50 => {
                    let q = rng.random_range(0..2);
                    let mut gone = None;
                    for (k, token) in queues[q].tokens.iter().enumerate() {
                        if lineup_tests::queue::status(&app, &queues[q].id, token)
                            .await
                            .body["status"]
                            == "active"
                        {
                            gone = Some(k);
                            break;
                        }
                    }
                    if let Some(k) = gone {
                        let token = queues[q].tokens.remove(k);
                        assert_eq!(leave(&app, &queues[q].id, &token).await.status, 204);
                        left[q] = 1;
                    }
                    what = format!("{} leaves", queues[q].id);
                }
                50..80 => {
                    tick(&app.stack).await;
                    since_change += 1;
                    what = "tick".to_owned();
                }
                80..88 => {
                    let q = rng.random_range(0..2);
                    let to = [Some("north"), Some("south"), None][rng.random_range(0..3)];
                    pooled(&app, &queues[q].id, json!(to)).await;
                    queues[q].pool = to;
                    since_change = 0;
                    what = format!("{} moves to {to:?}", queues[q].id);
                }
                88..94 => {
                    let p = rng.random_range(0..2);
                    capacity[p] = rng.random_range(1..=5);
                    pool(
                        &app,
                        "PUT",
                        pools[p],
                        Some(&json!({"capacity": capacity[p]})),
                    )
                    .await;
                    made[p] = true;
                    since_change = 0;
                    what = format!("{} to capacity {}", pools[p], capacity[p]);
                }
                94..97 => {
                    let p = rng.random_range(0..2);
                    pool(&app, "DELETE", pools[p], None).await;
                    made[p] = false;
                    since_change = 0;
                    what = format!("{} deleted", pools[p]);
                }
                _ => {
                    let q = rng.random_range(0..2);
                    let reply =
                        put_settings(&app, &queues[q].id, &json!({"mode": "passthrough"})).await;
                    if queues[q].pool.is_some() {
                        reply.assert_problem(400);
                    } else {
                        assert_eq!(reply.status, 200, "{}", reply.body);
                        put_settings(&app, &queues[q].id, &json!({"mode": "queue"})).await;
                    }
                    what = format!("{} asks for passthrough", queues[q].id);
                }
            }
            let after = live(&app, &ids).await;
            if since_change < WORD_TICKS {
                continue;
            }
            for (p, id) in pools.iter().enumerate() {
                let members: Vec<usize> = (0..2).filter(|&q| queues[q].pool == Some(*id)).collect();
                if members.is_empty() {
                    continue;
                }
                let cap = if made[p] { capacity[p] } else { 0 };
                let sum_before: u64 = members.iter().map(|&q| before[q]).sum();
                let sum_after: u64 = members.iter().map(|&q| after[q]).sum();
                let admitted: u64 = members
                    .iter()
                    .map(|&q| (after[q] + left[q]).saturating_sub(before[q]))
                    .sum();
                let context = format!(
                    "seed {seed} step {step} ({what}): pool {id} of {cap}, live {before:?} → {after:?}"
                );
                if admitted > 0 {
                    assert!(sum_after <= cap, "admitted past the capacity: {context}");
                }
                assert!(
                    sum_after <= sum_before.max(cap),
                    "the sum rose above the capacity: {context}"
                );
            }
        }
    }
}
