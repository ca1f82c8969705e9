//! Queue state events, published through a real EventBridge-compatible endpoint (moto) and
//! read back from the SQS queue a rule routes them to.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use lineup::publish::{Publisher, SOURCE};
use lineup_tests::queue::{join, leave, promote, served_for, status};
use lineup_tests::rankings::envelope;
use lineup_tests::{aws_config_for, sleep, Moto, TestApp, ThrottlingEndpoint};
use serde_json::{json, Value};

/// A bus whose rule sends every `lineup.queue` event to a fresh SQS queue.
pub(crate) async fn bus_to_queue(moto: &Moto) -> (String, String) {
    let bus = moto.bus("lineup-test").await;
    let queue_url = moto
        .route_to_queue(bus, "queue-events", json!({"source": [SOURCE]}))
        .await;
    (bus.to_owned(), queue_url)
}

/// Every event delivered to the queue, waiting until `expected` have arrived.
pub(crate) async fn received(moto: &Moto, queue_url: &str, expected: usize) -> Vec<Value> {
    let sqs = moto.sqs();
    let mut events = Vec::new();
    for _ in 0..50 {
        let batch = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        for message in batch.messages() {
            events
                .push(serde_json::from_str(message.body().unwrap_or("null")).expect("JSON event"));
        }
        if events.len() >= expected {
            break;
        }
        sleep(Duration::from_millis(100)).await;
    }
    events
}

#[tokio::test]
async fn admissions_expiries_abandonments_and_releases_arrive_on_the_bus() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let (bus, queue_url) = bus_to_queue(&moto).await;
    // What arrives is the subject, so a slow moto never times a call out into a resend.
    let publisher =
        Publisher::with_call_timeout(moto.eventbridge(), &bus, std::time::Duration::from_secs(30));
    let app = TestApp::spawn_publishing(
        &[
            ("QUEUE_CAPACITY", "1"),
            ("SESSION_SECONDS", "2"),
            ("WAITING_IDLE_SECONDS", "5"),
        ],
        publisher,
    )
    .await;
    let mut tokens = Vec::new();

    // Issue admits u1 at once; u1 leaves and u2 takes the place in the same step.
    tokens.push(join(&app, "show", "u1").await.token());
    tokens.push(join(&app, "show", "u2").await.token());
    assert_eq!(leave(&app, "show", &tokens[0]).await.status, 204);
    // u3 stops polling, u4 keeps polling while u2's session runs out.
    tokens.push(join(&app, "show", "u3").await.token());
    let u4 = join(&app, "show", "u4").await.token();
    tokens.push(u4.clone());
    for _ in 0..6 {
        sleep(Duration::from_millis(1000)).await;
        status(&app, "show", &u4).await;
    }
    // The tick expires u2, drops u3 and admits u4; u4 then pays and is released.
    let tick = promote(&app).await;
    assert_eq!((tick.expired, tick.abandoned, tick.admitted), (1, 1, 1));
    assert_eq!(tick.unpublished_events, 0);
    // u5 joins behind u4 and walks away; the reaper reports it.
    tokens.push(join(&app, "show", "u5").await.token());
    let paid = envelope(
        "PaymentCompleted",
        json!({"paymentId": "p1", "concertId": "c1", "queueId": "show", "userId": "u4",
               "completedAt": Utc::now().to_rfc3339()}),
    );
    event_applier::apply_events(&[paid], &app.stack.event_applier).await;
    served_for(&app, "show", Duration::from_millis(5800)).await;
    assert_eq!(
        queue_reaper::reap_all(&app.stack.reaper).await.abandoned(),
        1
    );

    let events = received(&moto, &queue_url, 8).await;
    let mut seen: HashMap<(String, String), Value> = HashMap::new();
    for event in &events {
        assert_eq!(event["source"], SOURCE);
        for token in &tokens {
            assert!(
                !event.to_string().contains(token.as_str()),
                "a token in {event}"
            );
        }
        let detail = &event["detail"];
        assert_eq!(detail["queueId"], "show");
        assert!(detail["ticket"].as_u64().unwrap() > 0);
        let key = (
            event["detail-type"].as_str().unwrap().to_owned(),
            detail["userId"].as_str().unwrap().to_owned(),
        );
        // Delivery is at least once (a PutEvents call that timed out is sent again), so a
        // repeat must be the very same event; a second admission would differ in detail. Its
        // id, what a consumer dedupes on, names the queue, the kind and the ticket.
        assert_eq!(
            detail["eventId"],
            format!("show:{}:{}", key.0, detail["ticket"]),
            "{event}"
        );
        if let Some(earlier) = seen.insert(key, detail.clone()) {
            assert_eq!(
                earlier, *detail,
                "a different event for the same buyer: {event}"
            );
        }
    }
    let kinds: Vec<(&str, &str)> = vec![
        ("QueueTokenActivated", "u1"),
        ("QueueTokenReleased", "u1"),
        ("QueueTokenActivated", "u2"),
        ("QueueTokenExpired", "u2"),
        ("QueueWaiterAbandoned", "u3"),
        ("QueueTokenActivated", "u4"),
        ("QueueTokenReleased", "u4"),
        ("QueueWaiterAbandoned", "u5"),
    ];
    for (kind, user) in &kinds {
        assert!(
            seen.contains_key(&(kind.to_string(), user.to_string())),
            "no {kind} for {user} among {:?}",
            seen.keys()
        );
    }
    assert_eq!(seen.len(), kinds.len(), "{:?}", seen.keys());
    let activated = &seen[&("QueueTokenActivated".to_owned(), "u4".to_owned())];
    assert!(
        chrono::DateTime::parse_from_rfc3339(activated["activeUntil"].as_str().unwrap()).is_ok()
    );
    assert_eq!(
        seen[&("QueueTokenReleased".to_owned(), "u4".to_owned())]["reason"],
        "paid"
    );
    assert_eq!(
        seen[&("QueueTokenReleased".to_owned(), "u1".to_owned())]["reason"],
        "left-session"
    );
}

/// With the bus unreachable, admissions stand and the failed entries are counted.
#[tokio::test]
async fn an_unreachable_bus_never_blocks_or_undoes_an_admission() {
    // Nothing listens on this port: every PutEvents fails.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let config = aws_config_for(&endpoint);
    let publisher = Publisher::new(aws_sdk_eventbridge::Client::new(&config), "nowhere");
    let app = TestApp::spawn_publishing(&[("QUEUE_CAPACITY", "1")], publisher).await;
    lineup_tests::queue::put_settings(&app, "show", &json!({"paused": true})).await;
    let first = join(&app, "show", "u1").await.token();
    join(&app, "show", "u2").await;
    lineup_tests::queue::put_settings(&app, "show", &json!({"paused": false})).await;
    let tick = promote(&app).await;
    assert_eq!(tick.admitted, 1);
    assert_eq!(tick.unpublished_events, 1, "counted, after bounded retries");
    assert_eq!(status(&app, "show", &first).await.body["status"], "active");
}

/// EventBridge over its PutEvents quota refuses some entries of a call and takes the rest.
/// The refused ones are sent again, alone, so every admission reaches the bus exactly once:
/// none lost, none doubled by resending the whole call.
///
/// The endpoint in front of moto refuses every other entry of the first two PutEvents calls with
/// `ThrottlingException`, while a tick admits 20 buyers. Each of the 20 admissions must reach the
/// bus exactly once. Resending the whole call instead fails this test (doubles).
#[tokio::test]
async fn throttled_entries_are_sent_again_and_arrive_once() {
    const BUYERS: usize = 20;
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let bus = moto.bus("lineup-throttled").await;
    // The first two calls (the tick's two calls of ten) each lose every other entry.
    let throttling = ThrottlingEndpoint::start(moto.eventbridge(), 2).await;
    let config = aws_config_for(&throttling.endpoint);
    let publisher = Publisher::new(aws_sdk_eventbridge::Client::new(&config), bus);
    let app = TestApp::spawn_publishing(
        &[
            ("QUEUE_CAPACITY", &BUYERS.to_string()),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        ],
        publisher,
    )
    .await;
    lineup_tests::queue::put_settings(&app, "show", &json!({"paused": true})).await;
    for i in 0..BUYERS {
        assert_eq!(join(&app, "show", &format!("u{i}")).await.status, 201);
    }
    lineup_tests::queue::put_settings(&app, "show", &json!({"paused": false})).await;
    let tick = promote(&app).await;
    assert_eq!(tick.admitted, BUYERS as u64);
    assert_eq!(tick.unpublished_events, 0);
    assert_eq!(throttling.refused(), BUYERS as u64 / 2);

    let mut users: Vec<String> = throttling
        .taken()
        .iter()
        .map(|detail| detail["userId"].as_str().expect("userId").to_owned())
        .collect();
    users.sort();
    let mut expected: Vec<String> = (0..BUYERS).map(|i| format!("u{i}")).collect();
    expected.sort();
    assert_eq!(users, expected, "each admission once");
}
