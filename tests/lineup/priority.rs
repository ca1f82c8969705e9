//! The priority lane: those on the operator's list wait in a lane of their own, admitted
//! before the main line, first come, first served among themselves, within capacity. Nobody's
//! place in the main line goes up. The list is bounded, and takes only valid user ids.

use std::time::Duration;

use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::queue::PRIORITY_MAX;
use lineup_tests::queue::{assert_kind, join, leave, promote, put_settings, status, summary};
use lineup_tests::{api_request, sleep, Reply, TestApp};
use serde_json::json;

/// `PUT /queues/{queue}/priority/{user}`.
async fn put_priority(app: &TestApp, queue: &str, user: &str) -> Reply {
    app.queue_api(api_request(
        "PUT",
        &format!("/queues/{queue}/priority/{user}"),
        None,
    ))
    .await
}

/// `DELETE /queues/{queue}/priority/{user}`.
async fn delete_priority(app: &TestApp, queue: &str, user: &str) -> Reply {
    app.queue_api(api_request(
        "DELETE",
        &format!("/queues/{queue}/priority/{user}"),
        None,
    ))
    .await
}

/// The main line's waiters' positions, in the order given.
async fn positions(app: &TestApp, tokens: &[String]) -> Vec<u64> {
    let mut out = Vec::new();
    for token in tokens {
        let reply = status(app, "show", token).await;
        assert_eq!(reply.body["status"], "waiting", "{}", reply.body);
        out.push(reply.body["position"].as_u64().unwrap());
    }
    out
}

/// Capacity 1. Bob and Carl wait in the main line; then Vera and Vic, on the list, join in that
/// order (Vic was put on the list first): each place that frees goes to Vera, then Vic, then
/// Bob. Never more than one active; Bob's and Carl's positions never go up, and the lane
/// members' status shows their place in the lane.
#[tokio::test]
async fn the_lane_is_admitted_first_first_come_first_served_and_main_line_places_never_rise() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    for user in ["vic", "vera"] {
        let reply = put_priority(&app, "show", user).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
    }
    assert_eq!(put_priority(&app, "show", "vic").await.body["size"], 2);
    let ana = join(&app, "show", "ana").await;
    assert_eq!(ana.body["status"], "active");
    let mut main = Vec::new();
    for user in ["bob", "carl"] {
        main.push(join(&app, "show", user).await.token());
    }
    let mut seen = vec![positions(&app, &main).await];
    assert_eq!(seen[0], [1, 2]);
    let vera = join(&app, "show", "vera").await;
    assert_eq!(vera.status, 201);
    assert_eq!(vera.body["status"], "waiting");
    assert_eq!(vera.body["position"], 1, "first in the lane");
    let vic = join(&app, "show", "vic").await;
    assert_eq!(vic.body["position"], 2, "second in the lane");
    seen.push(positions(&app, &main).await);
    // Re-issue keeps the lane place.
    assert_eq!(join(&app, "show", "vera").await.body["position"], 1);

    // Each leave frees the one place; the lane goes first, in its own order.
    let mut holder = ana.token();
    for (next, token) in [("vera", vera.token()), ("vic", vic.token())] {
        assert_eq!(leave(&app, "show", &holder).await.status, 204);
        let reply = status(&app, "show", &token).await;
        assert_eq!(reply.body["status"], "active", "{next}: {}", reply.body);
        assert_eq!(summary(&app, "show").await.body["active"], 1);
        seen.push(positions(&app, &main).await);
        holder = token;
    }
    assert_eq!(leave(&app, "show", &holder).await.status, 204);
    assert_eq!(
        status(&app, "show", &main[0]).await.body["status"],
        "active"
    );
    assert_eq!(positions(&app, &main[1..]).await, [1]);
    for pair in seen.windows(2) {
        for (before, after) in pair[0].iter().zip(&pair[1]) {
            assert!(after <= before, "a main-line place went up: {seen:?}");
        }
    }
}

/// The promoter admits the lane first too, within capacity: with one place freed by a session
/// running out, Vera (lane) is admitted and Bob (main line, earlier ticket) stays first in
/// line.
#[tokio::test]
async fn the_promoter_admits_the_lane_first_within_capacity() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("SESSION_SECONDS", "1")]).await;
    assert_eq!(put_priority(&app, "show", "vera").await.status, 200);
    assert_eq!(join(&app, "show", "ana").await.body["status"], "active");
    let bob = join(&app, "show", "bob").await.token();
    let vera = join(&app, "show", "vera").await.token();
    sleep(Duration::from_millis(1_100)).await;
    assert_eq!(promote(&app).await.admitted, 1);
    assert_eq!(status(&app, "show", &vera).await.body["status"], "active");
    let bob = status(&app, "show", &bob).await;
    assert_eq!(bob.body["status"], "waiting");
    assert_eq!(bob.body["position"], 1);
    assert_eq!(summary(&app, "show").await.body["active"], 1);
}

/// Off the list, the next place taken is in the main line; a lane member the queue turns away
/// is told so as anyone: a closed queue refuses them.
#[tokio::test]
async fn off_the_list_one_joins_the_main_line_and_a_closed_queue_refuses_the_list_too() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    assert_eq!(put_priority(&app, "show", "vera").await.status, 200);
    assert_eq!(join(&app, "show", "ana").await.body["status"], "active");
    assert_eq!(join(&app, "show", "bob").await.body["position"], 1);
    let removed = delete_priority(&app, "show", "vera").await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_eq!(removed.body["size"], 0);
    assert_eq!(join(&app, "show", "vera").await.body["position"], 2);

    assert_eq!(put_priority(&app, "show", "vic").await.status, 200);
    let closed = put_settings(&app, "show", &json!({"mode": "closed"})).await;
    assert_eq!(closed.status, 200, "{}", closed.body);
    assert_kind(&join(&app, "show", "vic").await, 409, "queue-closed");
}

/// The list holds at most PRIORITY_MAX ids: one more is a 409 problem, and changes nothing;
/// an id already on it is still fine. Ids are validated like every user id.
#[tokio::test]
async fn the_list_is_bounded_and_takes_only_valid_user_ids() {
    let app = TestApp::spawn(&[]).await;
    assert_eq!(put_priority(&app, "show", "first").await.status, 200);
    // Fill the list up to one short of the bound directly, as 9 999 calls would.
    let keys = QueueKeys::new(&app.config.key_prefix, &QueueId::parse("show").unwrap());
    let mut fill = redis::cmd("SADD");
    fill.arg(&keys.priority);
    for i in 1..PRIORITY_MAX - 1 {
        fill.arg(format!("user-{i}"));
    }
    let _: u64 = fill.query_async(&mut app.inspect.clone()).await.unwrap();
    let last = put_priority(&app, "show", "last").await;
    assert_eq!(last.body["size"], PRIORITY_MAX, "{}", last.body);
    let over = put_priority(&app, "show", "one-too-many").await;
    assert_kind(&over, 409, "conflict");
    assert!(
        over.body["detail"].as_str().unwrap().contains("10000"),
        "{}",
        over.body
    );
    assert_eq!(put_priority(&app, "show", "first").await.status, 200);
    assert_eq!(
        delete_priority(&app, "show", "one-too-many").await.body["size"],
        PRIORITY_MAX
    );

    for bad in ["bad%20id", "a%7Bb%7D", &"x".repeat(65)] {
        let reply = put_priority(&app, "show", bad).await;
        reply.assert_problem(400);
        assert!(
            reply.body["detail"].as_str().unwrap().contains("userId"),
            "{bad}: {}",
            reply.body
        );
        delete_priority(&app, "show", bad).await.assert_problem(400);
    }
}

/// Sold out, a lane member is told so like any waiter, and the reaper gives the lane back to
/// memory; the token still answers `soldout`.
#[tokio::test]
async fn a_sold_out_queue_gives_its_lane_back() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    assert_eq!(put_priority(&app, "show", "vera").await.status, 200);
    assert_eq!(join(&app, "show", "ana").await.body["status"], "active");
    let vera = join(&app, "show", "vera").await.token();
    let sold = put_settings(&app, "show", &json!({"soldOut": true})).await;
    assert_eq!(sold.status, 200, "{}", sold.body);
    assert_eq!(status(&app, "show", &vera).await.body["status"], "soldout");
    queue_reaper::handle(
        lambda_runtime::LambdaEvent::new(json!({}), lambda_runtime::Context::default()),
        &app.stack.reaper,
    )
    .await
    .expect("reaper");
    let keys = QueueKeys::new(&app.config.key_prefix, &QueueId::parse("show").unwrap());
    let lane: u64 = redis::cmd("ZCARD")
        .arg(&keys.lane)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(lane, 0, "the lane was given back");
    assert_eq!(status(&app, "show", &vera).await.body["status"], "soldout");
}

/// Before a scheduled opening the lane is the only way in: someone on the list is admitted
/// while a place is free, the next waits in the lane with a lane position (not `prequeue`),
/// and a promoter tick admits the lane, never the pre-queue. After the opening the pre-queue
/// is admitted as usual.
#[tokio::test]
async fn before_the_opening_only_the_lane_is_admitted() {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", "1"),
        ("SESSION_SECONDS", "1"),
        ("WAITING_IDLE_SECONDS", "30"),
    ])
    .await;
    let opens = chrono::Utc::now() + chrono::Duration::seconds(4);
    let opens_at = opens.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let set = put_settings(&app, "gig", &json!({ "opensAt": opens_at })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    for user in ["vic", "vera"] {
        assert_eq!(put_priority(&app, "gig", user).await.status, 200);
    }
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "prequeue", "{}", ana.body);
    let vic = join(&app, "gig", "vic").await;
    assert_eq!(vic.body["status"], "active", "{}", vic.body);
    let vera = join(&app, "gig", "vera").await;
    assert_eq!(vera.body["status"], "waiting", "{}", vera.body);
    assert_eq!(vera.body["position"], 1, "first in the lane");
    assert_eq!(status(&app, "gig", &vera.token()).await.body["position"], 1);

    // Vic's session ends before the opening: the tick admits Vera, not Ana.
    sleep(Duration::from_millis(1_100)).await;
    assert!(chrono::Utc::now() < opens, "the test ran too slowly");
    assert_eq!(promote(&app).await.admitted, 1);
    assert_eq!(
        status(&app, "gig", &vera.token()).await.body["status"],
        "active"
    );
    assert_eq!(
        status(&app, "gig", &ana.token()).await.body["status"],
        "prequeue"
    );

    // After the opening the pre-queue comes in.
    let left = (opens - chrono::Utc::now()).num_milliseconds().max(0) as u64;
    sleep(Duration::from_millis(left + 1_100)).await;
    assert_eq!(promote(&app).await.admitted, 1);
    assert_eq!(
        status(&app, "gig", &ana.token()).await.body["status"],
        "active"
    );
}
