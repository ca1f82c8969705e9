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
pub(crate) fn two_queues_on_two_shards() -> (String, String) {
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

pub(crate) async fn pool(
    app: &TestApp,
    method: &str,
    id: &str,
    body: Option<&Value>,
) -> lineup_tests::Reply {
    let text = body.map(Value::to_string);
    app.queue_api(api_request(
        method,
        &format!("/pools/{id}"),
        text.as_deref(),
    ))
    .await
}

pub(crate) async fn tick(stack: &lineup_local::Stack) -> u64 {
    queue_promoter::tick(&stack.promoter)
        .await
        .expect("tick")
        .admitted()
}

pub(crate) async fn active(app: &TestApp, queue: &str) -> u64 {
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
    let verdicts = event_applier::apply_events(
        &[event("paced", 0.0), event("nowhere", 0.0)],
        &app.stack.event_applier,
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
    let verdicts = event_applier::apply_events(&[event], &app.stack.event_applier).await;
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
