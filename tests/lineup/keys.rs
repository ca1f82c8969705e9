//! Every key ends: each key lineup writes has a TTL or an owner that deletes it, except the
//! documented few. Who may create a queue, and how many one deployment holds.

use std::time::Duration;

use lambda_runtime::{Context, LambdaEvent};
use lineup_tests::queue::{join, leave, promote, put_settings, status};
use lineup_tests::rankings::{envelope, paid, scheduled};
use lineup_tests::{authorizer_request, sleep, TestApp};
use serde_json::json;

/// The deployed default: only an operator creates a queue.
const OPERATOR_CREATES: (&str, &str) = ("QUEUE_CREATION", "operator");

async fn reap(app: &TestApp) {
    queue_reaper::handle(
        LambdaEvent::new(json!({}), Context::default()),
        &app.stack.reaper,
    )
    .await
    .expect("reaper");
}

/// The keys of `queue`.
async fn queue_keys(app: &TestApp, queue: &str) -> Vec<String> {
    let tag = format!("{{q:{queue}}}");
    app.keys_with_ttl()
        .await
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains(&tag))
        .collect()
}

/// Under `QUEUE_CREATION=operator`, a token request for a queue no operator created is 404 "no such
/// queue" and writes no key. Once an operator gives it settings, buyers are served, also after a
/// settings change back to every default.
#[tokio::test]
async fn a_token_request_for_a_queue_no_operator_created_is_404_and_writes_nothing() {
    let app = TestApp::spawn(&[OPERATOR_CREATES]).await;
    let reply = join(&app, "invented", "mallory").await;
    reply.assert_problem(404);
    assert!(
        reply.body["detail"]
            .as_str()
            .unwrap()
            .contains("no such queue"),
        "{}",
        reply.body
    );
    assert_eq!(app.keys_with_ttl().await, [], "nothing was written");

    let created = put_settings(&app, "onsale", &json!({"capacity": 1})).await;
    assert_eq!(created.status, 200, "{}", created.body);
    assert_eq!(join(&app, "onsale", "ana").await.status, 201);
    // Even a settings change back to every default keeps the queue.
    let reset = put_settings(&app, "onsale", &json!({"capacity": null})).await;
    assert_eq!(reset.status, 200, "{}", reset.body);
    assert_eq!(join(&app, "onsale", "ben").await.status, 201);
}

/// Under `MAX_QUEUES=2`, a token request that would make a third queue live is 409 and writes no
/// key. The live queues still take buyers. Once the reaper retires an idle queue, the third is
/// served.
#[tokio::test]
async fn a_deployment_holds_at_most_max_queues_live_queues() {
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("MAX_QUEUES", "2"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
        ("SESSION_SECONDS", "1"),
    ])
    .await;
    assert_eq!(join(&app, "q1", "ana").await.status, 201);
    assert_eq!(join(&app, "q2", "ana").await.status, 201);
    let full = join(&app, "q3", "ana").await;
    full.assert_problem(409);
    assert_eq!(queue_keys(&app, "q3").await, Vec::<String>::new());
    // Existing queues still take buyers.
    assert_eq!(join(&app, "q1", "ben").await.status, 201);

    // Once the reaper retires the idle ones, there is room again.
    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    assert_eq!(join(&app, "q3", "ana").await.status, 201);
}

/// A queue whose settings name health alarms or a pool enters the registry with them, so the
/// promoter watches it before its first buyer: within `MAX_QUEUES` (a change that would make
/// one more live is 409 and writes nothing). The reaper does not retire it while it names
/// them; named no more, it retires as any idle queue.
#[tokio::test]
async fn a_queue_that_names_alarms_or_a_pool_is_registered_until_it_names_neither() {
    let app = TestApp::spawn(&[
        OPERATOR_CREATES,
        ("MAX_QUEUES", "2"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
    ])
    .await;
    let registered = || async {
        let mut queues: Vec<String> = app
            .room()
            .registered_queues()
            .await
            .unwrap()
            .iter()
            .map(|queue| queue.as_str().to_owned())
            .collect();
        queues.sort();
        queues
    };
    let put = |queue: &'static str, settings: serde_json::Value| {
        let app = &app;
        async move {
            let reply = put_settings(app, queue, &settings).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
        }
    };
    put("plain", json!({"capacity": 5})).await;
    assert_eq!(registered().await, Vec::<String>::new(), "plain settings");
    put("watched", json!({"healthAlarms": ["booking-5xx"]})).await;
    put("pooled", json!({"pool": "main"})).await;
    assert_eq!(registered().await, ["pooled", "watched"]);

    // A third would pass MAX_QUEUES.
    let full = put_settings(&app, "plain", &json!({"healthAlarms": ["booking-5xx"]})).await;
    lineup_tests::queue::assert_kind(&full, 409, "too-many-queues");
    let plain = lineup_tests::queue::summary(&app, "plain").await;
    assert_eq!(plain.body["settings"]["healthAlarms"], json!([]));
    assert_eq!(registered().await, ["pooled", "watched"]);

    // Idle past the retirement delay, they stay while they name alarms or a pool.
    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    assert_eq!(registered().await, ["pooled", "watched"]);
    put("watched", json!({"healthAlarms": null})).await;
    put("pooled", json!({"pool": null})).await;
    reap(&app).await;
    assert_eq!(registered().await, Vec::<String>::new());
}

/// Keys without a TTL that docs/waiting-room.md and docs/rankings.md document as owned on
/// purpose: `(what, matches)`.
fn documented_exception(key: &str) -> Option<&'static str> {
    if key.contains("{q:operated}") && key.ends_with(":settings") {
        return Some("settings an operator created");
    }
    if key.contains("{q:operated}") && key.ends_with(":priority") {
        return Some("the operator's priority list");
    }
    if key.contains(":{rk}:board:all-time:") {
        return Some("all-time board");
    }
    if key.contains(":{rk}:rate:all-time:") {
        return Some("all-time rate board");
    }
    // One field per concert, like the all-time board; a cancellation deletes its field.
    if key.ends_with(":{rk}:concert-details") {
        return Some("concert details");
    }
    let concert = key.split(":{rk}:concert:").nth(1)?;
    if concert.ends_with(":cancelled") {
        return Some("cancellation marker");
    }
    // Needed by cancellation, pruned of expired boards, and without a TTL only while it lists
    // an all-time board (checked below).
    if concert.ends_with(":boards") {
        return Some("concert index");
    }
    None
}

/// 25 queues (24 made by buyers under `QUEUE_CREATION=open`, 1 by an operator), each with 4 buyers:
/// issues, status polls, a leave from the line and one from a session, promotion ticks, 1 s
/// sessions running out, and reaper runs retiring every queue after 1 s without arrivals. Then a
/// promoter visits the retired queues from its last list. Payments run beside them (one two days
/// late, its day's board past a one-day retention), with a refund and a cancellation. Then every
/// key is scanned. The only keys without a TTL may be the documented ones: the operator's
/// `settings` and priority list, the all-time boards and rate boards, the concert details hash, the cancelled
/// concert's marker (its details gone), and the concerts' board
/// indexes, each listing an all-time board and only live boards. Every queue's `meta` goes with its
/// retirement.
#[tokio::test]
async fn after_a_long_life_only_the_documented_keys_have_no_ttl() {
    const QUEUES: usize = 24;
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("QUEUE_CAPACITY", "2"),
        ("SESSION_SECONDS", "1"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
        ("RANKING_DAILY_RETENTION_DAYS", "1"),
        ("RANKING_WEEKLY_RETENTION_WEEKS", "1"),
        ("RANKING_MONTHLY_RETENTION_MONTHS", "1"),
        ("RANKING_DEDUPE_DAYS", "3"),
    ])
    .await;
    // An operator's queue beside the buyers' own.
    let queues: Vec<String> = (0..QUEUES)
        .map(|i| format!("q{i}"))
        .chain(["operated".to_owned()])
        .collect();
    assert_eq!(
        put_settings(&app, "operated", &json!({"capacity": 2}))
            .await
            .status,
        200
    );
    // Its priority list: its last buyer waits in the priority lane.
    let listed = app.http("PUT", "/queues/operated/priority/u4", None).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    for queue in &queues {
        let tokens: Vec<String> = join_all(&app, queue, &["u1", "u2", "u3", "u4"]).await;
        for token in &tokens[2..] {
            assert_eq!(status(&app, queue, token).await.status, 200);
        }
        // One active and one waiter leave; the freed place goes to the other waiter.
        assert_eq!(leave(&app, queue, &tokens[0]).await.status, 204);
        assert_eq!(leave(&app, queue, &tokens[3]).await.status, 204);
    }
    promote(&app).await;
    let today = chrono::Utc::now().to_rfc3339();
    // Late, but within the dedupe window: its day's board is past its one-day retention.
    let two_days_ago = (chrono::Utc::now() - chrono::Duration::days(2)).to_rfc3339();
    let events = [
        scheduled("kept", "Kept", 100, &two_days_ago),
        scheduled("doomed", "Doomed", 100, &two_days_ago),
        paid("pay-0", "late", 1, &["pop"], &two_days_ago),
        paid("pay-1", "kept", 2, &["rock"], &today),
        paid("pay-2", "doomed", 1, &["jazz"], &today),
        envelope(
            "PaymentRefunded",
            json!({"paymentId": "pay-1", "refundId": "ref-1", "concertId": "kept", "seats": 1,
                   "genres": ["rock"], "completedAt": today}),
        ),
        envelope("ConcertCancelled", json!({"concertId": "doomed"})),
    ];
    let verdicts = event_applier::apply_events(&events, &app.stack.event_applier).await;
    assert!(
        verdicts.iter().all(|v| matches!(
            v,
            lineup::ranking::Outcome::Applied | lineup::ranking::Outcome::Pending
        )),
        "{verdicts:?}"
    );

    // The schedule's tick folds what the apply call left onto the boards; the fold queue,
    // which has no TTL, is then deleted.
    lineup_tests::rankings::tick(&app).await;

    // Every session ends; the queues go idle and the reaper retires them.
    sleep(Duration::from_millis(1_200)).await;
    promote(&app).await;
    reap(&app).await;
    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    // A promoter still holding the last tick's list of queues visits the retired ones.
    for _ in 0..2 {
        assert_eq!(promote(&app).await.failed_ticks, 0);
    }

    let keys = app.keys_with_ttl().await;
    let without_ttl: Vec<&str> = keys
        .iter()
        .filter(|(_, ttl)| *ttl == -1)
        .map(|(key, _)| key.as_str())
        .collect();
    let undocumented: Vec<&str> = without_ttl
        .iter()
        .copied()
        .filter(|key| documented_exception(key).is_none())
        .collect();
    assert_eq!(
        undocumented,
        Vec::<&str>::new(),
        "keys without a TTL that no one owns ({} keys in all)",
        keys.len()
    );
    // The cancelled concert's marker is permanent; each concert index left without a TTL
    // lists an all-time board, and only live boards.
    for key in without_ttl.iter().filter(|key| key.ends_with(":boards")) {
        let listed = lineup_tests::rankings::concert_index(&app, key).await;
        assert!(
            listed
                .iter()
                .any(|(board, score)| board.contains(":board:all-time:") && score.is_infinite()),
            "{key}: {listed:?}"
        );
        for (board, _) in &listed {
            assert!(
                keys.iter().any(|(k, _)| k == board),
                "{key} lists {board}, gone"
            );
        }
    }
    assert!(
        without_ttl
            .iter()
            .any(|key| key.ends_with(":{rk}:concert:doomed:cancelled")),
        "{without_ttl:?}"
    );
    // The cancelled concert left no details.
    assert!(lineup_tests::rankings::details(&app, "doomed")
        .await
        .is_none());
    assert!(lineup_tests::rankings::details(&app, "kept")
        .await
        .is_some());
    // The operator's settings and priority list are the queue keys left without a TTL.
    for kept in [":settings", ":priority"] {
        assert!(
            without_ttl
                .iter()
                .any(|key| key.contains("{q:operated}") && key.ends_with(kept)),
            "{without_ttl:?}"
        );
    }
    println!(
        "RELIABILITY: every key ends: {} queues created, used and retired, 6 ranking events; \
         {} keys left, {} without a TTL, all documented: {without_ttl:?}",
        queues.len(),
        keys.len(),
        without_ttl.len()
    );
}

/// Tokens for `users` in `queue`, in order.
async fn join_all(app: &TestApp, queue: &str, users: &[&str]) -> Vec<String> {
    let mut tokens = Vec::new();
    for user in users {
        let reply = join(app, queue, user).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        tokens.push(reply.token());
    }
    tokens
}

/// A queue whose registration was lost (say, a crash between its first issue and the registry).
/// Session, idle period and retirement delay after its last call (7 s), plus a margin, its keys are
/// gone but for the record that its buyer left, which has a TTL and ends on its own.
#[tokio::test]
async fn a_queue_the_reaper_never_visits_still_ends() {
    // Its registration lost, say: a crash between the queue's first issue and the registry.
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("SESSION_SECONDS", "1"),
        ("WAITING_IDLE_SECONDS", "5"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
        // No rate-limit counters, which live their own two minutes.
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    let token = join(&app, "forgotten", "ana").await.token();
    assert_eq!(leave(&app, "forgotten", &token).await.status, 204);
    assert_ne!(queue_keys(&app, "forgotten").await, Vec::<String>::new());
    // Session, idle period and retirement delay after the last activity, and a margin. What
    // is left then is the record that Ana left, which ends by itself (it tells her so for a
    // while).
    sleep(Duration::from_millis(7_500)).await;
    let left: Vec<_> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.contains("{q:forgotten}"))
        .collect();
    assert!(
        left.iter()
            .all(|(key, ttl)| *ttl > 0 && key.contains(":gone:")),
        "{left:?}"
    );
}

/// After a retirement, tickets start again at 1. The old ticket-1 token finds no place: it is 404,
/// and the gatekeeper denies it.
#[tokio::test]
async fn after_retirement_tickets_restart_and_an_old_token_takes_no_one_s_place() {
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("SESSION_SECONDS", "1"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
    ])
    .await;
    let old = join(&app, "onsale", "ana").await;
    assert_eq!(old.body["ticket"], 1);
    let old = old.token();
    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    assert_eq!(
        app.keys_with_ttl()
            .await
            .iter()
            .filter(|(key, _)| key.ends_with(":meta"))
            .count(),
        0,
        "the reaper retired the queue and its counter"
    );

    let ben = join(&app, "onsale", "ben").await;
    assert_eq!(ben.body["ticket"], 1, "the counter restarted");
    // Ana's old token names ticket 1 too, but it binds Ana: it finds no place.
    status(&app, "onsale", &old).await.assert_problem(404);
    let (allowed, _) = app
        .authorize(authorizer_request(Some(&old), Some("onsale"), None))
        .await;
    assert!(!allowed, "the gatekeeper lets no old token through");
    leave(&app, "onsale", &old).await.assert_problem(404);
    let ben = status(&app, "onsale", &ben.token()).await;
    assert_eq!(ben.body["status"], "active", "{}", ben.body);
}

/// An old token whose ticket number was reused after the queue retired is 404. It is never told
/// what became of the new buyer holding that number.
#[tokio::test]
async fn an_old_token_is_not_told_what_became_of_the_buyer_who_took_its_ticket_number() {
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("SESSION_SECONDS", "1"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
    ])
    .await;
    let old = join(&app, "onsale", "ana").await.token();
    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    // The counter restarted: Ben holds ticket 1 now, and leaves.
    let ben = join(&app, "onsale", "ben").await;
    assert_eq!(ben.body["ticket"], 1, "the counter restarted");
    assert_eq!(leave(&app, "onsale", &ben.token()).await.status, 204);
    status(&app, "onsale", &ben.token())
        .await
        .assert_problem(410);
    // Ana's old token names ticket 1 as well; what Ben did is not hers to be told.
    status(&app, "onsale", &old).await.assert_problem(404);
    let (allowed, context) = app
        .authorize(authorizer_request(Some(&old), Some("onsale"), None))
        .await;
    assert!(!allowed);
    assert_eq!(context["reason"], "not-found", "{context}");
}

#[tokio::test]
async fn an_operator_closes_an_empty_queue_and_then_none_of_its_keys_is_left() {
    let app = TestApp::spawn(&[
        OPERATOR_CREATES,
        ("SESSION_SECONDS", "1"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "1"),
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    let close = || {
        app.queue_api(lineup_tests::api_request(
            "DELETE",
            "/queues/onsale/settings",
            None,
        ))
    };
    assert_eq!(
        put_settings(&app, "onsale", &json!({"capacity": 1}))
            .await
            .status,
        200
    );
    let ana = join(&app, "onsale", "ana").await.token();
    let ben = join(&app, "onsale", "ben").await.token();
    // Not while anyone holds a place: pause it and let it drain first.
    close().await.assert_problem(409);
    assert_eq!(leave(&app, "onsale", &ben).await.status, 204);
    assert_eq!(leave(&app, "onsale", &ana).await.status, 204);
    assert_eq!(close().await.status, 204);
    join(&app, "onsale", "carl").await.assert_problem(404);
    // Closing a queue that does not exist is done already.
    assert_eq!(close().await.status, 204);

    sleep(Duration::from_millis(1_200)).await;
    reap(&app).await;
    let left: Vec<(String, i64)> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(_, ttl)| *ttl == -1)
        .collect();
    assert_eq!(left, []);
}

/// A queue's only arrival still leaves rate-limit counters that end: the call that opens a
/// minute's counter hash gives it its TTL.
#[tokio::test]
async fn the_rate_limit_counters_of_a_single_arrival_end() {
    let app = TestApp::spawn(&[
        ("QUEUE_CREATION", "open"),
        ("RATE_LIMIT_USER_PER_MINUTE", "10"),
        ("RATE_LIMIT_IP_PER_MINUTE", "100"),
    ])
    .await;
    join(&app, "once", "ana").await.token();
    let counters: Vec<_> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.contains("{q:once}:rate:"))
        .collect();
    assert_eq!(counters.len(), 1, "{counters:?}");
    assert!(counters.iter().all(|(_, ttl)| *ttl > 0), "{counters:?}");
}
