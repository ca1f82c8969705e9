//! Per-queue settings at runtime: `PUT /queues/{queueId}/settings`, read by every script.

use std::time::Duration;

use lineup_tests::queue::{join, promote, put_settings, served_for, status, summary};
use lineup_tests::{api_request, sleep, TestApp};
use serde_json::json;

#[tokio::test]
async fn settings_take_effect_on_the_next_operation_and_show_in_the_summary() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    assert_eq!(join(&app, "show", "u1").await.body["status"], "active");
    assert_eq!(join(&app, "show", "u2").await.body["status"], "waiting");

    let reply = put_settings(&app, "show", &json!({"capacity": 3, "sessionSeconds": 90})).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["capacity"], 3);
    assert_eq!(reply.body["sessionSeconds"], 90);
    assert_eq!(
        reply.body["waitingIdleSeconds"], 120,
        "untouched fields keep the default"
    );

    let shown = summary(&app, "show").await.body;
    assert_eq!(shown["settings"], reply.body);
    // u2 still waits behind nobody but the tick; the next tick uses the new capacity.
    assert_eq!(promote(&app).await.admitted, 1);
    let u3 = join(&app, "show", "u3").await;
    assert_eq!(
        u3.body["status"], "active",
        "capacity 3 leaves a place free"
    );
    let until =
        chrono::DateTime::parse_from_rfc3339(u3.body["activeUntil"].as_str().unwrap()).unwrap();
    let session = until
        .signed_duration_since(chrono::Utc::now())
        .num_seconds();
    assert!(
        (85..=90).contains(&session),
        "new sessions last 90 s, got {session}"
    );

    // Another queue is untouched, and null returns a field to the default.
    assert_eq!(summary(&app, "other").await.body["settings"]["capacity"], 1);
    let reset = put_settings(&app, "show", &json!({"capacity": null})).await;
    assert_eq!(reset.body["capacity"], 1);
    assert_eq!(reset.body["sessionSeconds"], 90);
}

#[tokio::test]
async fn a_paused_queue_keeps_forming_and_admits_nobody_until_resumed() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "5")]).await;
    assert_eq!(
        put_settings(&app, "show", &json!({"paused": true}))
            .await
            .body["paused"],
        true
    );

    let first = join(&app, "show", "u1").await;
    assert_eq!(
        first.body["status"], "waiting",
        "no instant admission while paused"
    );
    assert_eq!(first.body["paused"], true);
    let second = join(&app, "show", "u2").await;
    assert_eq!(second.body["position"], 2);
    assert!(
        second.body["estimatedWaitSeconds"].is_null(),
        "no honest estimate while paused"
    );
    assert_eq!(promote(&app).await.admitted, 0);
    assert_eq!(
        status(&app, "show", &second.token()).await.body["position"],
        2
    );

    assert_eq!(
        put_settings(&app, "show", &json!({"paused": false}))
            .await
            .body["paused"],
        false
    );
    assert_eq!(promote(&app).await.admitted, 2);
    let now = status(&app, "show", &first.token()).await;
    assert_eq!(now.body["status"], "active");
    assert_eq!(now.body["paused"], false);
}

#[tokio::test]
async fn admit_per_tick_limits_each_tick() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "10")]).await;
    put_settings(&app, "show", &json!({"paused": true, "admitPerTick": 2})).await;
    for i in 0..5 {
        join(&app, "show", &format!("u{i}")).await;
    }
    put_settings(&app, "show", &json!({"paused": false})).await;
    assert_eq!(promote(&app).await.admitted, 2);
    assert_eq!(promote(&app).await.admitted, 2);
    assert_eq!(promote(&app).await.admitted, 1);
}

#[tokio::test]
async fn changing_the_idle_period_gives_every_waiter_a_fresh_period_to_poll() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    join(&app, "show", "holder").await;
    let waiter = join(&app, "show", "waiter").await.token();
    put_settings(&app, "show", &json!({"waitingIdleSeconds": 6})).await;
    // Past the old idle period (and its tenth), within the new one: still in line.
    sleep(Duration::from_millis(5700)).await;
    assert_eq!(
        status(&app, "show", &waiter).await.body["status"],
        "waiting"
    );
    // poll_after follows the queue's own idle period.
    let polled = status(&app, "show", &waiter).await;
    assert!(polled.body["pollAfterSeconds"].as_u64().unwrap() <= 2);
    // Unseen for longer than the new period and its tenth: gone, and the reaper reports it.
    served_for(&app, "show", Duration::from_millis(6800)).await;
    let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(reaped.abandoned(), 1);
    assert_eq!(status(&app, "show", &waiter).await.status, 410);
}

#[tokio::test]
async fn invalid_settings_are_rejected_and_nothing_changes() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "4")]).await;
    let cases = [
        (json!({"capacity": 0}), "capacity"),
        (json!({"capacity": 1_000_001}), "capacity"),
        (json!({"capacity": -1}), "capacity"),
        (json!({"capacity": "5"}), "capacity"),
        (json!({"capacity": 2.5}), "capacity"),
        (json!({"capacity": 1e300}), "capacity"),
        (json!({"sessionSeconds": 0}), "sessionSeconds"),
        (json!({"sessionSeconds": 86_401}), "sessionSeconds"),
        (json!({"admitPerTick": 0}), "admitPerTick"),
        (json!({"waitingIdleSeconds": 0}), "waitingIdleSeconds"),
        // Too short for a buyer polling every second to have time for the round trip.
        (json!({"waitingIdleSeconds": 4}), "waitingIdleSeconds"),
        (json!({"paused": "yes"}), "paused"),
        (json!({"capacty": 5}), "capacty"),
        (json!([1, 2]), "body"),
        (json!("capacity"), "body"),
    ];
    for (body, named) in cases {
        let reply = put_settings(&app, "show", &body).await;
        reply.assert_problem(400);
        assert!(
            reply.body["detail"].as_str().unwrap().contains(named),
            "{body}: {}",
            reply.body
        );
    }
    let empty = app
        .queue_api(api_request("PUT", "/queues/show/settings", None))
        .await;
    empty.assert_problem(400);
    let bad_queue = put_settings(&app, "a{b}", &json!({"capacity": 2})).await;
    bad_queue.assert_problem(400);
    let wrong_method = app
        .queue_api(api_request("POST", "/queues/show/settings", Some("{}")))
        .await;
    wrong_method.assert_problem(405);
    assert_eq!(summary(&app, "show").await.body["settings"]["capacity"], 4);
}

#[tokio::test]
async fn a_settings_change_is_one_round_trip() {
    let app = TestApp::spawn(&[]).await;
    put_settings(&app, "show", &json!({"capacity": 2})).await;
    let (reply, calls) = app
        .client_commands_during(put_settings(
            &app,
            "show",
            &json!({"capacity": 3, "paused": true}),
        ))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(calls, [("evalsha", 1)].into());
}

/// A theme's `logoUrl` is an absolute `https` URL with a host, no user, and none of the
/// characters that could leave an HTML attribute, a CSS value or a CSP header. Anything
/// else is 400 naming `logoUrl`, and the page keeps its logo. An accepted URL is stored as
/// the URL parser writes it.
#[tokio::test]
async fn a_logo_url_that_is_not_a_plain_https_url_is_refused_and_changes_nothing() {
    let app = TestApp::spawn(&[]).await;
    let logo = |url: &str| json!({"page": {"theme": {"logoUrl": url}}});
    let shown_logo = || async {
        let page = app
            .queue_api(api_request("GET", "/queues/show/wait", None))
            .await;
        assert_eq!(page.status, 200);
        let html = page.body.as_str().unwrap_or_default().to_owned();
        let start = html.find("<img src=\"").expect("a logo") + "<img src=\"".len();
        let end = start + html[start..].find('"').expect("the attribute ends");
        html[start..end].to_owned()
    };
    let put = put_settings(
        &app,
        "show",
        &logo("https://CDN.Example.com/a/../logo.png?v=1"),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(shown_logo().await, "https://cdn.example.com/logo.png?v=1");

    for bad in [
        "https://cdn.example/l.png'; script-src *",
        "https://cdn.example/l.png\"onerror=\"x",
        "https://cdn.example/l.png`",
        "https://cdn.example/a b.png",
        "https://cdn.example/a\tb.png",
        "https://cdn.example/a\nb.png",
        "https://cdn.example/a\\b.png",
        "https://cdn.example/<b>.png",
        "https://cdn.example/a;b.png",
        "https://user:pass@cdn.example/l.png",
        "https://user@cdn.example/l.png",
        "http://cdn.example/l.png",
        "/l.png",
        "data:image/png;base64,AA",
        "https://",
    ] {
        let refused = put_settings(&app, "show", &logo(bad)).await;
        refused.assert_problem(400);
        assert!(
            refused.body["detail"].as_str().unwrap().contains("logoUrl"),
            "{bad:?}: {}",
            refused.body
        );
        assert_eq!(
            shown_logo().await,
            "https://cdn.example.com/logo.png?v=1",
            "{bad:?} changed the logo"
        );
    }
}
