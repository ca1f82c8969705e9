//! Who may join and be admitted: modes, `maxWaiting`, the operator's message and sold out
//! (by settings and by the booking system's `InventorySoldOut`), against a real Redis.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use lineup::publish::{Publisher, SOURCE};
use lineup_tests::queue::{assert_kind, join, leave, promote, put_settings, status, summary};
use lineup_tests::rankings::envelope;
use lineup_tests::{authorizer_request, Moto, TestApp};
use serde_json::{json, Value};

fn retry_after(reply: &lineup_tests::Reply) -> u64 {
    reply.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn passthrough_admits_up_to_capacity_and_closed_refuses_only_new_arrivals() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2")]).await;
    let set = put_settings(&app, "show", &json!({"mode": "passthrough"})).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["mode"], "passthrough");
    assert_eq!(join(&app, "show", "u1").await.body["status"], "active");
    assert_eq!(join(&app, "show", "u2").await.body["status"], "active");
    // No line in passthrough: past capacity the arrival is refused, to retry soon.
    let full = join(&app, "show", "u3").await;
    assert_kind(&full, 429, "queue-full");
    assert!((1..=10).contains(&retry_after(&full)), "{:?}", full.headers);
    assert_eq!(summary(&app, "show").await.body["waiting"], 0);

    // Back to a queue: u3 lines up.
    put_settings(&app, "show", &json!({"mode": "queue"})).await;
    let u3 = join(&app, "show", "u3").await;
    assert_eq!(u3.body["status"], "waiting", "{}", u3.body);
    let u3 = u3.token();

    // Closed: new arrivals are refused, those in line keep their places and are admitted.
    let closed = put_settings(&app, "show", &json!({"mode": "closed"})).await;
    assert_eq!(closed.body["mode"], "closed");
    assert_kind(&join(&app, "show", "u4").await, 409, "queue-closed");
    let again = join(&app, "show", "u3").await;
    assert_eq!(
        (again.status, again.body["position"].clone()),
        (200, json!(1))
    );
    assert_eq!(status(&app, "show", &u3).await.body["position"], 1);
    let u1 = join(&app, "show", "u1").await.token();
    assert_eq!(leave(&app, "show", &u1).await.status, 204);
    assert_eq!(status(&app, "show", &u3).await.body["status"], "active");

    // null returns the mode to the default; a mode that does not exist is refused.
    let reset = put_settings(&app, "show", &json!({"mode": null})).await;
    assert_eq!(reset.body["mode"], "queue");
    assert_eq!(join(&app, "show", "u4").await.status, 201);
    assert_kind(
        &put_settings(&app, "show", &json!({"mode": "lottery"})).await,
        400,
        "invalid-request",
    );
}

#[tokio::test]
async fn past_max_waiting_new_arrivals_are_refused_as_full_with_retry_after() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let set = put_settings(&app, "show", &json!({"maxWaiting": 2})).await;
    assert_eq!(set.body["maxWaiting"], 2, "{}", set.body);
    assert_eq!(join(&app, "show", "u1").await.body["status"], "active");
    let u2 = join(&app, "show", "u2").await.token();
    join(&app, "show", "u3").await;
    let full = join(&app, "show", "u4").await;
    assert_kind(&full, 429, "queue-full");
    assert!(retry_after(&full) >= 1);
    // Those already in line are answered as usual.
    assert_eq!(join(&app, "show", "u3").await.status, 200);
    assert_eq!(summary(&app, "show").await.body["waiting"], 2);
    // A place in line frees: the next arrival fits.
    assert_eq!(leave(&app, "show", &u2).await.status, 204);
    assert_eq!(join(&app, "show", "u4").await.status, 201);

    for bad in [
        json!(0),
        json!(-1),
        json!(1.5),
        json!("3"),
        json!(100_000_001),
    ] {
        let reply = put_settings(&app, "show", &json!({"maxWaiting": bad})).await;
        assert_kind(&reply, 400, "invalid-request");
        assert!(reply.body["detail"]
            .as_str()
            .unwrap()
            .contains("maxWaiting"));
    }
    let unlimited = put_settings(&app, "show", &json!({"maxWaiting": null})).await;
    assert_eq!(unlimited.body["maxWaiting"], Value::Null);
    assert_eq!(join(&app, "show", "u5").await.status, 201);
}

#[tokio::test]
async fn closed_and_full_refusals_carry_the_operator_message() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    join(&app, "show", "u1").await;
    join(&app, "show", "u2").await;
    // Without a message, the detail says what happened.
    put_settings(&app, "show", &json!({"maxWaiting": 1})).await;
    let full = join(&app, "show", "u3").await;
    assert_kind(&full, 429, "queue-full");
    assert!(
        full.body["detail"].as_str().unwrap().contains("full"),
        "{}",
        full.body
    );

    // With one, a refused arrival reads the operator's message, as a sold-out one does.
    let text = "The line is long: try the 21:00 show.";
    put_settings(&app, "show", &json!({"message": text})).await;
    let full = join(&app, "show", "u3").await;
    assert_kind(&full, 429, "queue-full");
    assert_eq!(full.body["detail"], text);
    assert!(retry_after(&full) >= 1);

    let text = "Sales for this date have ended.";
    put_settings(&app, "show", &json!({"mode": "closed", "message": text})).await;
    let closed = join(&app, "show", "u3").await;
    assert_kind(&closed, 409, "queue-closed");
    assert_eq!(closed.body["detail"], text);
    put_settings(&app, "show", &json!({"message": null})).await;
    let closed = join(&app, "show", "u3").await;
    assert_kind(&closed, 409, "queue-closed");
    assert_eq!(closed.body["detail"], "this queue takes no new arrivals");
}

#[tokio::test]
async fn the_operator_message_shows_in_status_and_summary_and_is_plain_text() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    join(&app, "show", "u1").await;
    let u2 = join(&app, "show", "u2").await.token();
    assert!(status(&app, "show", &u2)
        .await
        .body
        .get("message")
        .is_none());

    let text = "Doors open at 20:00 — two tickets per buyer.";
    let set = put_settings(&app, "show", &json!({"message": text})).await;
    assert_eq!(set.body["message"], text);
    let polled = status(&app, "show", &u2).await;
    assert_eq!(polled.body["status"], "waiting");
    assert_eq!(polled.body["message"], text);
    assert_eq!(join(&app, "show", "u3").await.body["message"], text);
    assert_eq!(
        summary(&app, "show").await.body["settings"]["message"],
        text
    );

    for bad in [
        json!("x".repeat(281)),
        json!("line\nbreak"),
        json!(""),
        json!(42),
    ] {
        let reply = put_settings(&app, "show", &json!({"message": bad})).await;
        assert_kind(&reply, 400, "invalid-request");
    }
    assert_eq!(
        put_settings(&app, "show", &json!({"message": "é".repeat(280)}))
            .await
            .status,
        200
    );
    put_settings(&app, "show", &json!({"message": null})).await;
    assert!(status(&app, "show", &u2)
        .await
        .body
        .get("message")
        .is_none());
    assert_eq!(
        summary(&app, "show").await.body["settings"]["message"],
        Value::Null
    );
}

#[tokio::test]
async fn sold_out_by_settings_tells_every_waiter_admits_nobody_and_is_reversible() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let u1 = join(&app, "show", "u1").await.token();
    let mut waiters = Vec::new();
    for i in 2..=6 {
        waiters.push(join(&app, "show", &format!("u{i}")).await.token());
    }
    let set = put_settings(
        &app,
        "show",
        &json!({"soldOut": true, "message": "Sold out. Thank you!"}),
    )
    .await;
    assert_eq!(set.body["soldOut"], true);

    // Every waiter's next poll says so, with the message; the active buyer keeps the session.
    for token in &waiters {
        let polled = status(&app, "show", token).await;
        assert_eq!(polled.status, 200, "{}", polled.body);
        assert_eq!(polled.body["status"], "soldout");
        assert_eq!(polled.body["message"], "Sold out. Thank you!");
        assert_eq!(polled.body["position"], Value::Null);
    }
    assert_eq!(status(&app, "show", &u1).await.body["status"], "active");
    // The gatekeeper lets the active buyer through and tells every other why not.
    assert!(
        app.authorize(authorizer_request(Some(&u1), Some("show"), None))
            .await
            .0
    );
    let (allowed, context) = app
        .authorize(authorizer_request(Some(&waiters[0]), Some("show"), None))
        .await;
    assert!(!allowed);
    assert_eq!(context["reason"], "sold-out");
    // A freed place is not filled, by a leave or by a tick.
    assert_eq!(leave(&app, "show", &u1).await.status, 204);
    assert_eq!(promote(&app).await.admitted, 0);
    assert_eq!(summary(&app, "show").await.body["active"], 0);
    // A new arrival is refused with the message; a waiter asking again is told soldout.
    let late = join(&app, "show", "u9").await;
    assert_kind(&late, 410, "sold-out");
    assert_eq!(late.body["detail"], "Sold out. Thank you!");
    let again = join(&app, "show", "u2").await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (200, json!("soldout"))
    );

    // Reversed before the reaper ran: the line is as it was.
    put_settings(&app, "show", &json!({"soldOut": false})).await;
    assert_eq!(status(&app, "show", &waiters[0]).await.body["position"], 1);

    // Sold out again; the reaper gives the line back, in chunks, and the tokens still say so.
    put_settings(&app, "show", &json!({"soldOut": true})).await;
    let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(reaped.given_back(), 5);
    assert_eq!(reaped.abandoned(), 0, "given back, not abandoned");
    assert_eq!(summary(&app, "show").await.body["waiting"], 0);
    assert_eq!(
        status(&app, "show", &waiters[4]).await.body["status"],
        "soldout"
    );
    // Reversed after it: those given back hold no place and say why; newcomers join.
    put_settings(&app, "show", &json!({"soldOut": null})).await;
    assert_kind(&status(&app, "show", &waiters[0]).await, 410, "sold-out");
    assert_eq!(join(&app, "show", "u2").await.status, 201);
}

#[tokio::test]
async fn sold_out_by_event_stops_admissions_even_with_promoter_ticks_racing_it() {
    let app = Arc::new(
        TestApp::spawn(&[
            ("QUEUE_CAPACITY", "1000"),
            ("ADMIT_PER_TICK", "1"),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        ])
        .await,
    );
    put_settings(&app, "show", &json!({"paused": true})).await;
    // A line far longer than the ticks can drain before the event, however fast they run.
    const WAITERS: u64 = 1_000;
    let mut tokens = Vec::new();
    for i in 0..WAITERS {
        tokens.push(join(&app, "show", &format!("u{i}")).await.token());
    }
    put_settings(&app, "show", &json!({"paused": false})).await;

    // Ticks keep admitting, one at a time, while the event arrives.
    let racing = Arc::new(AtomicBool::new(true));
    let ticker = {
        let (app, racing) = (app.clone(), racing.clone());
        tokio::spawn(async move {
            let mut ticks = 0u32;
            while racing.load(Ordering::SeqCst) {
                promote(&app).await;
                ticks += 1;
            }
            ticks
        })
    };
    // The event once the ticks have admitted a few.
    while summary(&app, "show").await.body["active"].as_u64().unwrap() < 3 {
        lineup_tests::sleep(std::time::Duration::from_millis(1)).await;
    }
    let event = envelope(
        "InventorySoldOut",
        json!({"queueId": "show", "message": "All tickets are sold."}),
    );
    let verdicts =
        event_applier::apply_events(std::slice::from_ref(&event), &app.stack.event_applier).await;
    assert_eq!(verdicts, [lineup::ranking::Outcome::Applied]);
    let active_at_event = summary(&app, "show").await.body["active"].as_u64().unwrap();
    // More ticks after the event, still racing, then some of our own.
    lineup_tests::sleep(std::time::Duration::from_millis(100)).await;
    racing.store(false, Ordering::SeqCst);
    assert!(ticker.await.unwrap() > 0);
    for _ in 0..3 {
        assert_eq!(promote(&app).await.admitted, 0);
    }
    let shown = summary(&app, "show").await.body;
    assert_eq!(
        shown["active"], active_at_event,
        "nobody admitted after the event"
    );
    assert_eq!(shown["settings"]["soldOut"], true);
    assert!(
        active_at_event < WAITERS,
        "the event came before the line drained"
    );

    // Every token is either one admitted before the event or told soldout, with the message.
    let (mut active, mut sold_out) = (0, 0);
    for token in &tokens {
        let polled = status(&app, "show", token).await.body;
        match polled["status"]
            .as_str()
            .unwrap_or_else(|| panic!("a poll's answer: {polled}"))
        {
            "active" => active += 1,
            "soldout" => {
                assert_eq!(polled["message"], "All tickets are sold.");
                sold_out += 1
            }
            other => panic!("status {other}: {polled}"),
        }
    }
    assert_eq!((active, active + sold_out), (active_at_event, WAITERS));

    // A redelivery changes nothing; an event for a queue that does not exist writes nothing.
    let verdicts = event_applier::apply_events(&[event], &app.stack.event_applier).await;
    assert_eq!(verdicts, [lineup::ranking::Outcome::Duplicate]);
    let nowhere = envelope("InventorySoldOut", json!({"queueId": "nowhere"}));
    let verdicts = event_applier::apply_events(&[nowhere], &app.stack.event_applier).await;
    assert!(
        matches!(verdicts[0], lineup::ranking::Outcome::Ignored(_)),
        "{verdicts:?}"
    );
    assert!(
        app.keys_with_ttl()
            .await
            .iter()
            .all(|(key, _)| !key.contains("{q:nowhere}")),
        "no key for an unknown queue"
    );
    let bad = envelope("InventorySoldOut", json!({"queueId": "a b"}));
    let verdicts = event_applier::apply_events(&[bad], &app.stack.event_applier).await;
    assert!(
        matches!(verdicts[0], lineup::ranking::Outcome::Rejected(_)),
        "{verdicts:?}"
    );
}

#[tokio::test]
async fn selling_out_and_closing_are_announced_on_the_bus() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let (bus, queue_url) = crate::queue_events::bus_to_queue(&moto).await;
    // What arrives is the subject, so a slow moto never times a call out into a resend.
    let publisher = Publisher::with_call_timeout(moto.eventbridge(), &bus, Duration::from_secs(30));
    let app = TestApp::spawn_publishing(&[("QUEUE_CAPACITY", "1")], publisher).await;
    join(&app, "show", "u1").await;
    join(&app, "show", "u2").await;
    put_settings(&app, "show", &json!({"mode": "closed"})).await;
    put_settings(&app, "show", &json!({"mode": "queue"})).await;
    let event = envelope(
        "InventorySoldOut",
        json!({"queueId": "show", "message": "Gone!"}),
    );
    event_applier::apply_events(std::slice::from_ref(&event), &app.stack.event_applier).await;
    event_applier::apply_events(&[event], &app.stack.event_applier).await;
    // Already sold out: setting it again announces nothing more.
    put_settings(&app, "show", &json!({"soldOut": true})).await;

    let events = crate::queue_events::received(&moto, &queue_url, 4).await;
    let mut queue_level: Vec<(String, Value)> = events
        .iter()
        .filter(|e| e["source"] == SOURCE && e["detail"].get("userId").is_none())
        .map(|e| {
            let kind = e["detail-type"].as_str().unwrap().to_owned();
            let mut detail = e["detail"].clone();
            // A queue's own event is named by its queue, its kind and the ms lineup saw it.
            let id = detail
                .as_object_mut()
                .and_then(|d| d.remove("eventId"))
                .expect("an eventId");
            let seen = id
                .as_str()
                .and_then(|id| id.strip_prefix(&format!("show:{kind}:")))
                .map(|ms| ms.parse::<i64>().is_ok());
            assert_eq!(seen, Some(true), "{id}");
            (kind, detail)
        })
        .collect();
    queue_level.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        queue_level,
        [
            ("QueueClosed".to_owned(), json!({"queueId": "show"})),
            ("QueueOpened".to_owned(), json!({"queueId": "show"})),
            (
                "QueueSoldOut".to_owned(),
                json!({"queueId": "show", "message": "Gone!"})
            ),
        ]
    );
}

#[tokio::test]
async fn a_dropped_waiter_admitted_in_passthrough_leaves_the_line() {
    // An idle period of 12 s: the queue counts as served (no outage grace) while calls come
    // within 4 s of each other, which a loaded machine keeps.
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2"), ("WAITING_IDLE_SECONDS", "12")]).await;
    join(&app, "show", "u1").await;
    put_settings(&app, "show", &json!({"paused": true})).await;
    assert_eq!(join(&app, "show", "u2").await.body["status"], "waiting");
    // u2 stops polling and is past the idle period, but nothing has removed it yet.
    lineup_tests::queue::served_for(&app, "show", std::time::Duration::from_millis(13_000)).await;
    put_settings(
        &app,
        "show",
        &json!({"paused": false, "mode": "passthrough"}),
    )
    .await;
    let again = join(&app, "show", "u2").await;
    assert_eq!(
        (again.status, again.body["status"].clone()),
        (201, json!("active"))
    );
    let shown = summary(&app, "show").await.body;
    assert_eq!(
        (shown["waiting"].clone(), shown["active"].clone()),
        (json!(0), json!(2)),
        "{shown}"
    );
    assert_eq!(
        status(&app, "show", &again.token()).await.body["status"],
        "active"
    );
}

/// A queue its first buyer created (open creation) has no operator to own settings: the
/// settings a sold-out event writes for it end with an expiry, until an operator configures
/// the queue, who then owns them for good.
#[tokio::test]
async fn a_sold_out_mark_on_a_queue_no_operator_configured_ends() {
    let app = TestApp::spawn(&[]).await;
    join(&app, "walk-in", "ann").await;
    let event = envelope("InventorySoldOut", json!({"queueId": "walk-in"}));
    let verdicts = event_applier::apply_events(&[event], &app.stack.event_applier).await;
    assert_eq!(verdicts, [lineup::ranking::Outcome::Applied]);
    let settings = format!("{}:{{q:walk-in}}:settings", app.config.key_prefix);
    let ttl_of = |key: String| {
        let mut inspect = app.inspect.clone();
        async move {
            redis::cmd("TTL")
                .arg(key)
                .query_async::<i64>(&mut inspect)
                .await
                .unwrap()
        }
    };
    let ttl = ttl_of(settings.clone()).await;
    assert!(ttl > 0 && ttl <= 7 * 86_400, "{ttl}");
    put_settings(&app, "walk-in", &json!({"soldOut": false})).await;
    assert_eq!(ttl_of(settings).await, -1, "the operator's settings stay");
}
