//! The priority lane: those on the operator's list wait in a lane of their own, admitted
//! before the main line, first come, first served among themselves, within capacity. Nobody's
//! place in the main line goes up. The list is bounded, and takes only valid user ids.

use std::time::Duration;

use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::queue::PRIORITY_MAX;
use lineup_tests::queue::{assert_kind, join, leave, promote, put_settings, status, summary};
use lineup_tests::{api_request, authorizer_request, sleep, Reply, TestApp};
use serde_json::json;

/// `seconds` from now, to the millisecond (as the settings keep times).
fn in_seconds(seconds: i64) -> chrono::DateTime<chrono::Utc> {
    let at = chrono::Utc::now() + chrono::Duration::seconds(seconds);
    chrono::DateTime::from_timestamp_millis(at.timestamp_millis()).unwrap()
}

fn rfc(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Sleeps until `at`.
async fn until(at: chrono::DateTime<chrono::Utc>) {
    let left = (at - chrono::Utc::now()).num_milliseconds();
    if left > 0 {
        sleep(Duration::from_millis(left as u64)).await;
    }
}

/// Whether the gatekeeper lets `token` into `queue`, and its reason when not.
async fn gate(app: &TestApp, queue: &str, token: &str) -> (bool, serde_json::Value) {
    let (allowed, context) = app
        .authorize(authorizer_request(Some(token), Some(queue), None))
        .await;
    (allowed, context["reason"].clone())
}

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

/// With `laneBeforeOpening` the lane is the only way in before a scheduled opening: someone
/// on the list is admitted while a place is free, the next waits in the lane with a lane
/// position (not `prequeue`), and a promoter tick admits the lane, never the pre-queue. After
/// the opening the pre-queue is admitted as usual.
#[tokio::test]
async fn with_lane_before_opening_only_the_lane_is_admitted_before_the_opening() {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", "1"),
        ("SESSION_SECONDS", "1"),
        ("WAITING_IDLE_SECONDS", "30"),
    ])
    .await;
    let opens = chrono::Utc::now() + chrono::Duration::seconds(4);
    let opens_at = opens.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let set = put_settings(
        &app,
        "gig",
        &json!({ "opensAt": opens_at, "laneBeforeOpening": true }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["laneBeforeOpening"], true, "{}", set.body);
    assert_kind(
        &put_settings(&app, "gig", &json!({ "laneBeforeOpening": "yes" })).await,
        400,
        "invalid-request",
    );
    for user in ["vic", "vera"] {
        assert_eq!(put_priority(&app, "gig", user).await.status, 200);
    }
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "prequeue", "{}", ana.body);
    let vic = join(&app, "gig", "vic").await;
    assert_eq!(vic.body["status"], "active", "{}", vic.body);
    assert!(gate(&app, "gig", &vic.token()).await.0);
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

/// The schedule's gates hold for the lane too. From `closesAt` a lane member's new place is
/// refused (409 `queue-closed`) and nothing is written, while one who already holds a place
/// gets it back.
#[tokio::test]
async fn after_closes_at_the_lane_gets_no_new_place() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "5"), ("WAITING_IDLE_SECONDS", "30")]).await;
    let opens = in_seconds(1);
    let closes = opens + chrono::Duration::seconds(1);
    let set = put_settings(
        &app,
        "gig",
        &json!({ "opensAt": rfc(opens), "closesAt": rfc(closes) }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    for user in ["vic", "vera"] {
        assert_eq!(put_priority(&app, "gig", user).await.status, 200);
    }
    until(opens).await;
    let vic = join(&app, "gig", "vic").await;
    assert_eq!(vic.body["status"], "active", "{}", vic.body);

    until(closes + chrono::Duration::milliseconds(50)).await;
    let refused = join(&app, "gig", "vera").await;
    assert_kind(&refused, 409, "queue-closed");
    let again = join(&app, "gig", "vic").await;
    assert_eq!((again.status, again.token()), (200, vic.token()));
    let after = summary(&app, "gig").await;
    assert_eq!(after.body["active"], 1, "{}", after.body);
    assert_eq!(after.body["waiting"], 0, "{}", after.body);
}

/// Before `prequeueOpensAt` a lane member is refused like anyone (409 `queue-not-open`, with
/// `Retry-After` the seconds until it opens), whatever `laneBeforeOpening` says, and nothing
/// is written.
#[tokio::test]
async fn before_the_prequeue_opens_the_lane_is_refused_too() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "5")]).await;
    let prequeue_opens = in_seconds(1800);
    let opens = in_seconds(3600);
    for lane_before_opening in [false, true] {
        let mut change = json!({ "opensAt": rfc(opens), "prequeueOpensAt": rfc(prequeue_opens) });
        if lane_before_opening {
            change["laneBeforeOpening"] = json!(true);
        }
        let set = put_settings(&app, "gig", &change).await;
        assert_eq!(set.status, 200, "{}", set.body);
        assert_eq!(put_priority(&app, "gig", "vera").await.status, 200);
        let refused = join(&app, "gig", "vera").await;
        assert_kind(&refused, 409, "queue-not-open");
        let retry: u64 = refused.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1790..=1800).contains(&retry), "{retry}");
        let after = summary(&app, "gig").await;
        assert_eq!(
            (&after.body["active"], &after.body["waiting"]),
            (&json!(0), &json!(0)),
            "{}",
            after.body
        );
    }
}

/// By default (`laneBeforeOpening` false) nobody is admitted before the opening, the lane
/// included: a lane member takes its place in the lane and is told it, but is not admitted
/// at issue, by a leave's freed place or by a promoter tick, and the gatekeeper denies it.
/// At the opening the lane goes first.
#[tokio::test]
async fn by_default_the_lane_waits_for_the_opening_then_goes_first() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2"), ("WAITING_IDLE_SECONDS", "30")]).await;
    // Ana holds a session from before the schedule.
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "active", "{}", ana.body);
    let opens = in_seconds(4);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    for user in ["vic", "vera"] {
        assert_eq!(put_priority(&app, "gig", user).await.status, 200);
    }
    // A place is free, but it is before the opening: Vic waits, first in the lane.
    let vic = join(&app, "gig", "vic").await;
    assert_eq!(vic.status, 201);
    assert_eq!(vic.body["status"], "waiting", "{}", vic.body);
    assert_eq!(vic.body["position"], 1, "{}", vic.body);
    let (allowed, reason) = gate(&app, "gig", &vic.token()).await;
    assert!(!allowed);
    assert_eq!(reason, "waiting");
    let vera = join(&app, "gig", "vera").await;
    assert_eq!(vera.body["position"], 2, "{}", vera.body);
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(bob.body["status"], "prequeue", "{}", bob.body);

    // Ana leaves: her place is not handed on before the opening, nor by a tick.
    assert_eq!(leave(&app, "gig", &ana.token()).await.status, 204);
    assert_eq!(promote(&app).await.admitted, 0);
    assert!(chrono::Utc::now() < opens, "the test ran too slowly");
    for (token, position) in [(vic.token(), 1), (vera.token(), 2)] {
        let polled = status(&app, "gig", &token).await;
        assert_eq!(polled.body["status"], "waiting", "{}", polled.body);
        assert_eq!(polled.body["position"], position, "{}", polled.body);
    }
    assert!(!gate(&app, "gig", &vic.token()).await.0);
    assert_eq!(summary(&app, "gig").await.body["active"], 0);

    // At the opening the lane goes first: both places go to Vic and Vera, Bob waits.
    until(opens + chrono::Duration::milliseconds(50)).await;
    assert_eq!(promote(&app).await.admitted, 2);
    assert!(gate(&app, "gig", &vic.token()).await.0);
    assert_eq!(
        status(&app, "gig", &vera.token()).await.body["status"],
        "active"
    );
    let bob = status(&app, "gig", &bob.token()).await;
    assert_eq!(bob.body["status"], "waiting", "{}", bob.body);
    assert_eq!(bob.body["position"], 1, "{}", bob.body);
    assert_eq!(
        summary(&app, "gig").await.body["settings"]["laneBeforeOpening"],
        false
    );
}

/// Before the opening a lane member is told what is true: its place in the lane, and an
/// estimate that counts from the opening, since nobody is admitted before it.
#[tokio::test]
async fn a_lane_members_estimate_before_the_opening_counts_from_it() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "30")]).await;
    // A session ends and the next is admitted: the session length is measured.
    let ana = join(&app, "gig", "ana").await;
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(leave(&app, "gig", &ana.token()).await.status, 204);
    assert_eq!(
        status(&app, "gig", &bob.token()).await.body["status"],
        "active"
    );
    let opens = in_seconds(20);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(put_priority(&app, "gig", "vic").await.status, 200);
    let vic = join(&app, "gig", "vic").await;
    assert_eq!(vic.body["status"], "waiting", "{}", vic.body);
    assert_eq!(vic.body["position"], 1, "{}", vic.body);
    let wait = vic.body["estimatedWaitSeconds"]
        .as_u64()
        .expect("an estimate");
    let until_opening = (opens - chrono::Utc::now()).num_seconds() as u64;
    assert!(
        wait >= until_opening,
        "{wait} s, the opening in {until_opening} s"
    );
}
