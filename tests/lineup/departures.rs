//! What a buyer is told once a token no longer holds a place: session ended (expired or
//! paid), dropped for absence, left, or unknown; and the gatekeeper's deny says the same.

use std::time::Duration;

use lineup::ids::{QueueId, UserId};
use lineup::token::TokenClaims;
use lineup_tests::queue::{assert_kind, join, leave, promote, status};
use lineup_tests::rankings::{pay, payment};
use lineup_tests::{authorizer_request, sleep, TestApp};

/// Asserts a 410 problem of the given type, on status and on leave, and that the
/// gatekeeper denies the token for the same reason.
async fn assert_gone(app: &TestApp, token: &str, kind: &str) {
    for reply in [
        status(app, "show", token).await,
        leave(app, "show", token).await,
    ] {
        assert_kind(&reply, 410, kind);
    }
    assert_denied(app, token, kind).await;
}

async fn assert_denied(app: &TestApp, token: &str, reason: &str) {
    let (allowed, context) = app
        .authorize(authorizer_request(Some(token), Some("show"), None))
        .await;
    assert!(!allowed);
    assert_eq!(context["reason"], reason, "{context}");
}

#[tokio::test]
async fn an_expired_session_is_gone_before_and_after_the_promoter_removes_it() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("SESSION_SECONDS", "1")]).await;
    let buyer = join(&app, "show", "buyer").await.token();
    sleep(Duration::from_millis(1100)).await;
    assert_gone(&app, &buyer, "session-ended").await;
    promote(&app).await; // removes the expired session
    assert_gone(&app, &buyer, "session-ended").await;
    let detail = status(&app, "show", &buyer).await.body["detail"].to_string();
    assert!(detail.contains("ended"), "{detail}");
}

#[tokio::test]
async fn an_expired_session_replaced_by_joining_again_is_still_told_ended() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("SESSION_SECONDS", "1")]).await;
    let old = join(&app, "show", "buyer").await.token();
    sleep(Duration::from_millis(1100)).await;
    // No promoter ran: joining again replaces the lapsed session with a new one.
    let again = join(&app, "show", "buyer").await;
    assert_eq!(again.body["status"], "active");
    assert_gone(&app, &old, "session-ended").await;
}

#[tokio::test]
async fn a_session_released_after_payment_has_ended() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let buyer = join(&app, "show", "buyer").await.token();
    pay(&app, &[payment("pay-1", "show", "buyer")]).await;
    assert_gone(&app, &buyer, "session-ended").await;
}

#[tokio::test]
async fn a_waiter_dropped_for_absence_is_told_so_and_that_joining_again_goes_to_the_back() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    let holder = join(&app, "show", "holder").await.token();
    let absent = join(&app, "show", "absent").await.token();
    let later = join(&app, "show", "later").await.token();
    // 1.1 idle periods and a margin.
    for _ in 0..12 {
        sleep(Duration::from_millis(500)).await;
        assert_eq!(status(&app, "show", &later).await.status, 200);
    }
    // Not yet removed: still answered as dropped.
    let reply = status(&app, "show", &absent).await;
    assert_kind(&reply, 410, "dropped-for-absence");
    let detail = reply.body["detail"].as_str().unwrap();
    assert!(detail.contains("back of the line"), "{detail}");
    // The gatekeeper only reads: it tells a waiter not yet removed from the line as waiting.
    assert_denied(&app, &absent, "waiting").await;
    // The head of the line is skipped and removed when the place frees.
    assert_eq!(leave(&app, "show", &holder).await.status, 204);
    assert_eq!(status(&app, "show", &later).await.body["status"], "active");
    assert_gone(&app, &absent, "dropped-for-absence").await;
    // Joining again is a new place at the back.
    let again = join(&app, "show", "absent").await;
    assert_eq!(again.status, 201);
    assert_ne!(again.token(), absent);
}

#[tokio::test]
async fn a_waiter_reaped_for_absence_is_told_so() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    join(&app, "show", "holder").await;
    let absent = join(&app, "show", "absent").await.token();
    // Served meanwhile, as the promoter keeps it, so the quiet is not taken for an outage.
    lineup_tests::queue::served_for(&app, "show", Duration::from_millis(5_800)).await;
    let report = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(report.abandoned(), 1, "{report:?}");
    assert_gone(&app, &absent, "dropped-for-absence").await;
}

#[tokio::test]
async fn a_buyer_who_left_the_line_or_the_session_is_told_so() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let active = join(&app, "show", "active").await.token();
    let waiting = join(&app, "show", "waiting").await.token();
    let behind = join(&app, "show", "behind").await.token();
    assert_eq!(leave(&app, "show", &waiting).await.status, 204);
    assert_gone(&app, &waiting, "left").await;
    assert_eq!(leave(&app, "show", &active).await.status, 204);
    assert_gone(&app, &active, "left").await;
    assert_eq!(status(&app, "show", &behind).await.body["status"], "active");
    assert_denied(&app, &waiting, "left").await;
}

#[tokio::test]
async fn unknown_forged_and_other_queues_tokens_stay_not_found() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let elsewhere = join(&app, "other", "buyer").await.token();
    join(&app, "show", "buyer").await;
    // Genuinely signed, but for a ticket this queue never issued.
    let never = TokenClaims {
        queue: QueueId::parse("show").unwrap(),
        user: UserId::parse("buyer").unwrap(),
        ticket: 99,
    }
    .sign(&app.config.token_key);
    for token in [never.as_str(), elsewhere.as_str(), "not-a-token"] {
        for reply in [
            status(&app, "show", token).await,
            leave(&app, "show", token).await,
        ] {
            assert_kind(&reply, 404, "not-found");
        }
    }
    assert_denied(&app, &never, "not-found").await;
}
