//! The gatekeeper (`queue-authorizer`) and the release of a session after payment.

use std::time::{Duration, Instant};

use chrono::Utc;
use lineup_tests::queue::{join, leave, promote, status};
use lineup_tests::rankings::{pay, payment};
use lineup_tests::{authorizer_request, sleep, TestApp};
use serde_json::json;

async fn gate(app: &TestApp, token: &str, queue: &str) -> bool {
    app.authorize(authorizer_request(Some(token), Some(queue), None))
        .await
        .0
}

#[tokio::test]
async fn only_an_active_token_of_the_named_queue_passes() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let active = join(&app, "show", "alice").await.token();
    let waiting = join(&app, "show", "bob").await.token();
    let elsewhere = join(&app, "other", "carol").await.token();

    let (allowed, context) = app
        .authorize(authorizer_request(Some(&active), Some("show"), None))
        .await;
    assert!(allowed);
    assert_eq!(context["userId"], "alice");
    assert_eq!(context["queueId"], "show");
    assert!(context["activeUntil"].as_str().unwrap().ends_with('Z'));
    assert!(
        !context.to_string().contains(&active),
        "the context never carries the token"
    );

    // The queue may come from the path instead of the header, but never disagree with it.
    assert!(
        app.authorize(authorizer_request(Some(&active), None, Some("show")))
            .await
            .0
    );
    assert!(
        !app.authorize(authorizer_request(
            Some(&active),
            Some("show"),
            Some("other")
        ))
        .await
        .0
    );

    assert!(
        !gate(&app, &waiting, "show").await,
        "a waiter is not admitted"
    );
    assert!(
        !gate(&app, &elsewhere, "show").await,
        "another queue's token"
    );
    assert!(
        !gate(&app, &active, "other").await,
        "the right token for the wrong queue"
    );
    for garbage in [
        "",
        "x",
        "AAAA",
        &format!("{active}A"),
        &"A".repeat(5000),
        "ø∆˚",
    ] {
        assert!(!gate(&app, garbage, "show").await, "{garbage:?}");
    }
    assert!(
        !app.authorize(authorizer_request(None, Some("show"), None))
            .await
            .0
    );
    assert!(
        !app.authorize(authorizer_request(Some(&active), None, None))
            .await
            .0
    );
    assert!(
        !app.authorize(authorizer_request(Some(&active), Some("a{b}"), None))
            .await
            .0
    );
    assert!(
        !app.authorize(json!({"not": "an authorizer request"}))
            .await
            .0
    );
}

#[tokio::test]
async fn revocation_is_immediate_after_leaving_expiry_or_payment() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "3"), ("SESSION_SECONDS", "1")]).await;
    let leaver = join(&app, "show", "leaver").await.token();
    let payer = join(&app, "show", "payer").await.token();
    let idler = join(&app, "show", "idler").await.token();
    for token in [&leaver, &payer, &idler] {
        assert!(gate(&app, token, "show").await);
    }

    assert_eq!(leave(&app, "show", &leaver).await.status, 204);
    assert!(!gate(&app, &leaver, "show").await, "left");

    pay(&app, &[payment("pay-1", "show", "payer")]).await;
    assert!(!gate(&app, &payer, "show").await, "released by payment");

    sleep(Duration::from_millis(1100)).await;
    assert!(
        !gate(&app, &idler, "show").await,
        "expired, with no reaper run"
    );
}

/// What one check sends, by command name; it must arrive in one read and write nothing.
/// Another client's read (a connection's health check) may land inside the window and spoil
/// the count: such a measurement is taken again, three times at most.
async fn sent_by_one_check(app: &TestApp, token: &str) -> Vec<(String, u64)> {
    let mut counted = Vec::new();
    for _ in 0..3 {
        let (reads, sent) = measure_one_check(app, token).await;
        if reads == 1 {
            return sent;
        }
        counted.push(reads);
    }
    panic!("the check never arrived in one read: {counted:?}");
}

/// The reads one check took, and what it sent by command name.
async fn measure_one_check(app: &TestApp, token: &str) -> (i64, Vec<(String, u64)>) {
    let reads = || app.info_number("stats", "total_reads_processed");
    let changes = || app.info_number("persistence", "rdb_changes_since_last_save");
    let changed = changes().await;
    // Reading the count costs reads of its own: measured once, then left out.
    let (first, second) = (reads().await, reads().await);
    let before = app.command_calls().await;
    let counted = reads().await;
    assert!(gate(app, token, "show").await);
    let gate_reads = reads().await - counted - (second - first);
    let after = app.command_calls().await;
    assert_eq!(changes().await, changed, "the check wrote something");
    let mut sent: Vec<(String, u64)> = after
        .iter()
        .map(|(name, calls)| (name.clone(), calls - before.get(name).copied().unwrap_or(0)))
        .filter(|(name, delta)| *delta > 0 && name != "info")
        .collect();
    sent.sort();
    (gate_reads, sent)
}

/// The check is plain commands in one pipeline, no script: two `ZSCORE`s (the lines), an
/// `HGET` of the session entry, an `HMGET` of two settings and two `HGET`s (the departure
/// records), arriving in one socket read. It changes nothing in Redis. The primary guard
/// (`UNLINK` of a key nothing writes) goes first in a container's first check, and then in
/// at most one check a second.
#[tokio::test]
async fn the_gate_check_is_one_read_only_round_trip() {
    let app = TestApp::spawn(&[]).await;
    let token = join(&app, "show", "alice").await.token();
    let reads: Vec<(String, u64)> = [("hget", 3), ("hmget", 1), ("zscore", 2)]
        .map(|(name, calls)| (name.to_owned(), calls))
        .into();
    let guarded: Vec<(String, u64)> = [("hget", 3), ("hmget", 1), ("unlink", 1), ("zscore", 2)]
        .map(|(name, calls)| (name.to_owned(), calls))
        .into();
    assert_eq!(
        sent_by_one_check(&app, &token).await,
        guarded,
        "the first check"
    );
    let started = Instant::now();
    let mut guards = 0;
    while started.elapsed() < Duration::from_millis(2_500) {
        let sent = sent_by_one_check(&app, &token).await;
        if sent == guarded {
            guards += 1;
        } else {
            assert_eq!(sent, reads);
        }
    }
    // The guard went first, just before the loop, then goes at most once a second: in the
    // loop's time (2.5 s and the last check's own), at least once and at most once for each
    // whole second, give or take the first check's few ms.
    let took = started.elapsed() + Duration::from_millis(50);
    assert!(
        guards >= 1 && guards as u64 <= took.as_secs(),
        "{guards} guards in {took:?}"
    );
}

#[tokio::test]
async fn payment_releases_the_session_and_the_next_waiter_is_admitted_on_the_next_tick() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let buyer = join(&app, "show", "buyer").await.token();
    let next = join(&app, "show", "next").await.token();
    assert_eq!(status(&app, "show", &next).await.body["status"], "waiting");

    // Delivered twice, as EventBridge may: the second changes nothing.
    let verdicts = pay(
        &app,
        &[
            payment("pay-1", "show", "buyer"),
            payment("pay-1", "show", "buyer"),
        ],
    )
    .await;
    assert_eq!(verdicts[0], lineup::ranking::Outcome::Applied);
    assert_eq!(verdicts[1], lineup::ranking::Outcome::Duplicate);
    assert_eq!(status(&app, "show", &buyer).await.status, 410);
    assert_eq!(
        status(&app, "show", &next).await.body["status"],
        "waiting",
        "not before the tick"
    );

    let tick = promote(&app).await;
    assert_eq!(tick.admitted, 1);
    assert_eq!(status(&app, "show", &next).await.body["status"], "active");
    assert!(gate(&app, &next, "show").await);
}

#[tokio::test]
async fn a_replayed_payment_never_ends_a_later_session_of_the_same_buyer() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "buyer").await.token();
    let old_payment = payment("pay-old", "show", "buyer");
    pay(&app, std::slice::from_ref(&old_payment)).await;
    assert_eq!(status(&app, "show", &first).await.status, 410);

    // A redelivery stamped ten seconds before the buyer's next session (beyond the clock
    // slack) arrives while that session is live...
    let mut late = old_payment.clone();
    late["detail"]["paymentId"] = json!("pay-old-redelivered");
    late["detail"]["completedAt"] =
        json!((Utc::now() - chrono::Duration::seconds(10)).to_rfc3339());
    let second = join(&app, "show", "buyer").await.token();
    assert!(gate(&app, &second, "show").await);
    // ...and a payment from before that session does not end it.
    pay(&app, &[late]).await;
    assert!(gate(&app, &second, "show").await);
}

#[tokio::test]
async fn a_payment_with_a_buyer_costs_two_scripts_in_one_pipeline() {
    let app = TestApp::spawn(&[]).await;
    join(&app, "show", "warm").await;
    pay(&app, &[payment("warm", "show", "warm")]).await; // loads both scripts
    join(&app, "show", "buyer").await;
    let (verdicts, calls) = app
        .client_commands_during(event_applier::apply_events(
            &[payment("pay-1", "show", "buyer")],
            &app.stack.event_applier,
        ))
        .await;
    assert_eq!(verdicts[0], lineup::ranking::Outcome::Applied);
    // (SADD also runs inside the ranking script, so it is not a client command here.)
    assert_eq!(
        calls.get("evalsha"),
        Some(&2),
        "the release and the ranking script"
    );
    assert!(!calls.contains_key("eval") && !calls.contains_key("script|load"));
}

/// A buyer's payment stamped 30 s ahead, redelivered once the buyer's next session began: the
/// redelivery is a duplicate, and the next session lives on.
#[tokio::test]
async fn a_redelivered_future_dated_payment_never_ends_the_next_session() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "buyer").await.token();
    // The producer's clock runs 30 s ahead: within the skew the rankings accept.
    let mut ahead = payment("pay-ahead", "show", "buyer");
    ahead["detail"]["completedAt"] =
        json!((Utc::now() + chrono::Duration::seconds(30)).to_rfc3339());
    assert_eq!(
        pay(&app, std::slice::from_ref(&ahead)).await,
        [lineup::ranking::Outcome::Applied]
    );
    assert!(!gate(&app, &first, "show").await, "the paid session ended");
    let second = join(&app, "show", "buyer").await.token();
    assert!(gate(&app, &second, "show").await);
    // The same payment delivered again releases nothing.
    assert_eq!(
        pay(&app, &[ahead]).await,
        [lineup::ranking::Outcome::Duplicate]
    );
    assert!(
        gate(&app, &second, "show").await,
        "the next session lives on"
    );
}

/// A payment naming the ticket of the buyer's earlier session, delivered during the next one, ends
/// no session. One naming the live ticket, stamped an hour early, ends it.
#[tokio::test]
async fn a_payment_pinned_to_a_ticket_releases_that_session_only() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "buyer").await;
    let first_ticket = first.body["ticket"].as_u64().unwrap();
    assert_eq!(leave(&app, "show", &first.token()).await.status, 204);
    let second = join(&app, "show", "buyer").await;
    let second_ticket = second.body["ticket"].as_u64().unwrap();
    assert_ne!(first_ticket, second_ticket);
    assert!(gate(&app, &second.token(), "show").await);

    // A payment made in the first session, delivered now, names that session's ticket.
    let mut old = payment("pay-first", "show", "buyer");
    old["detail"]["ticket"] = json!(first_ticket);
    assert_eq!(pay(&app, &[old]).await, [lineup::ranking::Outcome::Applied]);
    assert!(gate(&app, &second.token(), "show").await);

    // The ticket decides, not the producer's clock: a payment stamped an hour early but
    // naming the live ticket ends that session.
    let mut pinned = payment("pay-second", "show", "buyer");
    pinned["detail"]["ticket"] = json!(second_ticket);
    pinned["detail"]["completedAt"] = json!((Utc::now() - chrono::Duration::hours(1)).to_rfc3339());
    assert_eq!(
        pay(&app, &[pinned]).await,
        [lineup::ranking::Outcome::Applied]
    );
    assert!(!gate(&app, &second.token(), "show").await);

    // A ticket must come with the buyer it belongs to, and be a ticket number.
    for bad in [json!(0), json!(-1), json!("7")] {
        let mut event = payment("pay-bad", "show", "buyer");
        event["detail"]["ticket"] = bad.clone();
        let verdicts = pay(&app, &[event]).await;
        assert!(
            matches!(&verdicts[0], lineup::ranking::Outcome::Rejected(r) if r.contains("ticket")),
            "{bad}: {verdicts:?}"
        );
    }
    let mut anonymous = payment("pay-anon", "show", "buyer");
    anonymous["detail"]
        .as_object_mut()
        .unwrap()
        .remove("userId");
    anonymous["detail"]["ticket"] = json!(second_ticket);
    let verdicts = pay(&app, &[anonymous]).await;
    assert!(
        matches!(&verdicts[0], lineup::ranking::Outcome::Rejected(r) if r.contains("ticket")),
        "{verdicts:?}"
    );
}
