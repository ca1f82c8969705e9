//! How events and reads reach the rankings: bad parameters, ignored invocations, SQS batches,
//! round trips and the fold queue.

use super::{apply, now, refunded, script_calls, send};
use chrono::Utc;
use lambda_runtime::{Context, LambdaEvent};
use lineup::ranking::Outcome;
use lineup_tests::rankings::{envelope, items, paid, read};
use lineup_tests::TestApp;
use serde_json::{json, Value};

#[tokio::test]
async fn ranking_reads_reject_bad_parameters_with_problem_json() {
    let app = TestApp::spawn(&[]).await;
    for path in [
        "/rankings/yearly",
        "/rankings/daily?date=2026-02-30",
        "/rankings/daily?date=yesterday",
        "/rankings/daily?limit=0",
        "/rankings/daily?limit=101",
        "/rankings/daily?offset=-1",
        "/rankings/daily?genre=a%7Bb%7D",
        "/rankings/daily?limit=1&limit=2",
        "/rankings/daily/concerts/bad%20id",
    ] {
        read(&app, path).await.assert_problem(400);
    }
    read(&app, "/rankings/daily/concerts/nobody")
        .await
        .assert_problem(404);
    // `/rankings` itself is the rankings page; a path no route has is 404.
    read(&app, "/rankings/daily/extra")
        .await
        .assert_problem(404);
}

/// An ignored invocation is answered `{"result": "ignored", "reason": …}` whichever path it
/// took: a payload that is no EventBridge event, a `Records` that is no SQS batch, or an
/// event from another source. `POST /events` reports its events the same way.
#[tokio::test]
async fn ignored_invocations_answer_in_one_shape_on_every_path() {
    let app = TestApp::spawn(&[]).await;
    let mut other_source = paid("p1", "c1", 1, &[], &Utc::now().to_rfc3339());
    other_source["source"] = json!("aws.ec2");
    for payload in [
        json!({"Records": "not a list"}),
        json!({"hello": "world"}),
        other_source,
    ] {
        let answer = event_applier::handle(
            LambdaEvent::new(payload.clone(), Context::default()),
            &app.stack.event_applier,
        )
        .await
        .unwrap();
        let fields: Vec<&str> = answer
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(fields, ["reason", "result"], "{payload}: {answer}");
        assert_eq!(answer["result"], "ignored", "{payload}: {answer}");
        assert!(
            answer["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{payload}: {answer}"
        );
    }
}

#[tokio::test]
async fn an_sqs_batch_reports_only_the_bad_message() {
    let app = TestApp::spawn(&[]).await;
    let record = |id: &str, body: String| json!({"messageId": id, "receiptHandle": "h", "body": body, "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs"});
    let batch = json!({"Records": [
        record("m1", paid("p1", "c1", 2, &[], &now()).to_string()),
        record("m2", envelope("PaymentCompleted", json!({"paymentId": "p2", "seats": 1})).to_string()),
        record("m3", paid("p1", "c1", 2, &[], &now()).to_string()),
        record("m4", "not json".into()),
        record("m5", paid("p5", "c2", 1, &[], &now()).to_string()),
    ]});
    let response = event_applier::handle(
        LambdaEvent::new(batch, Context::default()),
        &app.stack.event_applier,
    )
    .await
    .expect("a batch never fails as a whole");
    let failed: Vec<&str> = response["batchItemFailures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["itemIdentifier"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["m2", "m4"]);
    let board = items(&read(&app, "/rankings/daily").await);
    assert_eq!(board, [("c1".into(), 2, 1), ("c2".into(), 1, 2)]);
    // A malformed direct event names the field, as an invocation error so EventBridge retries
    // it into the dead-letter queue.
    let err = event_applier::handle(
        LambdaEvent::new(
            envelope(
                "PaymentCompleted",
                json!({"paymentId": "p9", "concertId": "c1", "seats": -1}),
            ),
            Context::default(),
        ),
        &app.stack.event_applier,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("seats"), "{err}");
}

#[tokio::test]
async fn an_event_or_a_batch_costs_one_round_trip() {
    let app = TestApp::spawn(&[]).await;
    send(&app, &[paid("warm", "w", 1, &[], &now())]).await; // loads the script once
    let (_, calls) = app
        .client_commands_during(apply(&app, &[paid("one", "c", 1, &["rock"], &now())]))
        .await;
    assert_eq!(script_calls(&calls), 1);
    let batch: Vec<Value> = (0..40)
        .map(|i| paid(&format!("b{i}"), "c", 1, &["rock", "pop"], &now()))
        .collect();
    let (_, calls) = app.client_commands_during(apply(&app, &batch)).await;
    assert_eq!(script_calls(&calls), 1);
    // A very large batch: one script call per 100 events, all in one pipeline.
    let big: Vec<Value> = (0..250)
        .map(|i| paid(&format!("x{i}"), "c", 1, &[], &now()))
        .collect();
    let (verdicts, calls) = app.client_commands_during(apply(&app, &big)).await;
    assert_eq!(script_calls(&calls), 3);
    assert!(verdicts.iter().all(|v| *v == Outcome::Applied));
    read(&app, "/rankings/daily").await; // loads the read script once
    let (_, calls) = app
        .client_commands_during(read(&app, "/rankings/daily"))
        .await;
    assert_eq!(script_calls(&calls), 1);
}

/// A burst beyond one apply call's fold budget: every payment is recorded at once (a
/// redelivery is a duplicate straight away), the call puts what fits on the boards, and the
/// tick the rest. A refund and a cancellation that arrive while their payments still wait
/// for the fold take effect as if the payments had been on the boards; the fold queue is
/// gone once empty.
#[tokio::test]
async fn a_burst_waits_in_the_fold_queue_and_the_tick_puts_it_on_the_boards() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    let burst: Vec<Value> = (0..30)
        .map(|i| {
            paid(
                &format!("burst-{i}"),
                &format!("c{i:02}"),
                3,
                &["rock", "pop"],
                &at,
            )
        })
        .collect();
    assert_eq!(
        apply(&app, &burst).await,
        vec![Outcome::Applied; 30],
        "every payment recorded"
    );
    let fold_key = format!("{}:{{rk}}:fold", app.config.key_prefix);
    let waiting: u64 = redis::cmd("LLEN")
        .arg(&fold_key)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let shown = read(&app, "/rankings/daily?limit=100").await.body["total"]
        .as_u64()
        .unwrap();
    assert!(
        shown >= 1 && waiting >= 1 && shown + waiting == 30,
        "on the boards {shown}, waiting {waiting}"
    );
    // The last payment certainly waits: refund it in part, and cancel the one before it.
    let late_ones = [
        refunded("burst-29", Some("r-29"), "c29", 2, &at),
        envelope("ConcertCancelled", json!({"concertId": "c28"})),
    ];
    assert_eq!(
        apply(&app, &late_ones).await,
        [Outcome::Applied, Outcome::Applied]
    );
    assert_eq!(
        apply(&app, &burst).await,
        vec![Outcome::Duplicate; 30],
        "a redelivery is caught before the fold"
    );
    let tick = lineup_tests::rankings::tick(&app).await;
    assert_eq!(tick["more"], false, "{tick}");
    assert!(tick["folded"].as_u64().unwrap() >= 1, "{tick}");
    let exists: u64 = redis::cmd("EXISTS")
        .arg(&fold_key)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(exists, 0, "the empty fold queue is deleted");
    for path in [
        "/rankings/daily?limit=100",
        "/rankings/all-time?genre=pop&limit=100",
        "/rankings/last-24h?genre=rock&limit=100",
    ] {
        let rows = items(&read(&app, path).await);
        let mut expected: Vec<(String, u64)> = (0..28).map(|i| (format!("c{i:02}"), 3)).collect();
        expected.push(("c29".into(), 1));
        expected.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let got: Vec<(String, u64)> = rows.into_iter().map(|(c, s, _)| (c, s)).collect();
        assert_eq!(got, expected, "{path}");
    }
}

/// An entry in the fold queue that this version cannot read (a mixed deploy could leave one)
/// is set aside with an expiry and reported by the tick; the payments behind it reach their
/// boards, and the apply calls keep answering.
#[tokio::test]
async fn an_unreadable_fold_entry_is_set_aside_and_blocks_nothing() {
    let app = TestApp::spawn(&[]).await;
    let fold_key = format!("{}:{{rk}}:fold", app.config.key_prefix);
    redis::cmd("RPUSH")
        .arg(&fold_key)
        .arg("P 3 not-a-payment")
        .arg("Z 1 from another version")
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(
        apply(&app, &[paid("after", "c1", 2, &["rock"], &now())]).await,
        [Outcome::Applied]
    );
    let tick = lineup_tests::rankings::tick(&app).await;
    assert_eq!(tick["foldRejected"], 2, "{tick}");
    assert_eq!(tick["more"], false, "{tick}");
    assert_eq!(
        items(&read(&app, "/rankings/daily?genre=rock").await),
        [("c1".to_owned(), 2, 1)]
    );
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{fold_key}:rejected"))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(ttl > 0, "{ttl}");
}
