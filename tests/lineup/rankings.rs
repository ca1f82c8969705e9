//! Rankings: payment events through the event applier, boards through the ranking API.

use chrono::{Duration as Days, Utc};
use futures::future::join_all;
use lambda_runtime::{Context, LambdaEvent};
use lineup::ids::Genre;
use lineup::ranking::Outcome;
use lineup::ranking::{Board, Period};
use lineup_tests::rankings::{details, envelope, items, paid, rate_board, read, scheduled};
use lineup_tests::TestApp;
use serde_json::{json, Value};

/// Boards and dedupe records that last ten years, so dated events stay plausible.
const LONG_RETENTION: [(&str, &str); 4] = [
    ("RANKING_DAILY_RETENTION_DAYS", "3650"),
    ("RANKING_WEEKLY_RETENTION_WEEKS", "520"),
    ("RANKING_MONTHLY_RETENTION_MONTHS", "120"),
    ("RANKING_DEDUPE_DAYS", "3660"),
];

fn refunded(payment: &str, refund: Option<&str>, concert: &str, seats: u32, at: &str) -> Value {
    let mut detail = json!({"paymentId": payment, "concertId": concert, "seats": seats, "genres": ["rock"], "completedAt": at});
    if let Some(refund) = refund {
        detail["refundId"] = json!(refund);
    }
    envelope("PaymentRefunded", detail)
}

fn now() -> String {
    Utc::now().to_rfc3339()
}

/// Applies `events`, then folds what the apply calls left: they are on the boards after.
async fn send(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    lineup_tests::rankings::pay(app, events).await
}

/// Applies `events` alone, as the event applier does: one round trip, the fold's leftovers left.
async fn apply(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    event_applier::apply_events(events, &app.stack.event_applier).await
}

#[tokio::test]
async fn a_payment_counts_once_however_often_and_concurrently_it_arrives() {
    let app = TestApp::spawn(&[]).await;
    let event = paid("pay-1", "concert-a", 3, &["rock", "indie"], &now());
    let verdicts = join_all((0..12).map(|_| send(&app, std::slice::from_ref(&event)))).await;
    let verdicts: Vec<Outcome> = verdicts.into_iter().flatten().collect();
    assert_eq!(
        verdicts.iter().filter(|v| **v == Outcome::Applied).count(),
        1
    );
    assert_eq!(
        verdicts
            .iter()
            .filter(|v| **v == Outcome::Duplicate)
            .count(),
        11
    );
    // The same event twice within one batch also counts once.
    assert_eq!(
        send(&app, &[event.clone(), event]).await,
        [Outcome::Duplicate, Outcome::Duplicate]
    );
    for period in ["daily", "weekly", "monthly", "all-time"] {
        for genre in ["", "&genre=rock", "&genre=indie"] {
            let board = read(&app, &format!("/rankings/{period}?limit=5{genre}")).await;
            assert_eq!(
                items(&board),
                [("concert-a".into(), 3, 1)],
                "{period}{genre}"
            );
            assert_eq!(board.body["total"], 1);
        }
    }
    let other_genre = read(&app, "/rankings/daily?genre=jazz").await;
    assert_eq!(other_genre.body["total"], 0);
}

#[tokio::test]
async fn refunds_subtract_once_partially_and_never_below_zero() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    send(
        &app,
        &[
            paid("p1", "c1", 4, &["rock"], &at),
            paid("p2", "c1", 1, &["rock"], &at),
        ],
    )
    .await;
    let partial = refunded("p1", Some("r1"), "c1", 1, &at);
    assert_eq!(
        send(&app, std::slice::from_ref(&partial)).await,
        [Outcome::Applied]
    );
    assert_eq!(send(&app, &[partial]).await, [Outcome::Duplicate]);
    assert_eq!(
        items(&read(&app, "/rankings/daily").await),
        [("c1".into(), 4, 1)]
    );
    // A second partial refund with its own id, asking for more than is left: clamps to 3.
    assert_eq!(
        send(&app, &[refunded("p1", Some("r2"), "c1", 10, &at)]).await,
        [Outcome::Applied]
    );
    assert_eq!(
        items(&read(&app, "/rankings/weekly?genre=rock").await),
        [("c1".into(), 1, 1)]
    );
    // A refund without a refundId is deduplicated on the paymentId.
    let whole = refunded("p2", None, "c1", 1, &at);
    assert_eq!(
        send(&app, &[whole.clone(), whole]).await,
        [Outcome::Applied, Outcome::Duplicate]
    );
    // Score reached zero: the concert leaves every board.
    for path in ["/rankings/daily", "/rankings/all-time?genre=rock"] {
        assert_eq!(read(&app, path).await.body["total"], 0, "{path}");
    }
    read(&app, "/rankings/daily/concerts/c1")
        .await
        .assert_problem(404);
}

#[tokio::test]
async fn a_refund_naming_another_concert_than_its_payment_changes_nothing() {
    let app = TestApp::spawn(&[]).await;
    send(&app, &[paid("seen", "c1", 2, &[], &now())]).await;
    let wrong = send(&app, &[refunded("seen", Some("r10"), "c9", 1, &now())]).await;
    assert!(matches!(&wrong[0], Outcome::Ignored(_)), "{wrong:?}");
    let board = read(&app, "/rankings/all-time").await;
    assert_eq!(items(&board), [("c1".into(), 2, 1)]);
}

#[tokio::test]
async fn a_cancelled_concert_leaves_every_board_and_stays_off() {
    let app = TestApp::spawn(&LONG_RETENTION).await;
    send(
        &app,
        &[
            paid("p1", "doomed", 5, &["rock"], "2026-01-10T10:00:00Z"),
            paid("p2", "doomed", 5, &["pop"], &now()),
            paid("p3", "fine", 1, &["rock"], &now()),
        ],
    )
    .await;
    let cancel = envelope("ConcertCancelled", json!({"concertId": "doomed"}));
    assert_eq!(
        send(&app, std::slice::from_ref(&cancel)).await,
        [Outcome::Applied]
    );
    assert_eq!(send(&app, &[cancel]).await, [Outcome::Duplicate]);
    for path in [
        "/rankings/daily?date=2026-01-10",
        "/rankings/monthly?date=2026-01-10&genre=rock",
        "/rankings/all-time",
        "/rankings/daily?genre=pop",
    ] {
        let board = read(&app, path).await;
        assert!(
            items(&board).iter().all(|(c, _, _)| c != "doomed"),
            "{path}"
        );
    }
    // A late payment for the cancelled concert does not bring it back.
    let late = send(&app, &[paid("p4", "doomed", 1, &[], &now())]).await;
    assert!(matches!(&late[0], Outcome::Ignored(_)));
    assert_eq!(
        items(&read(&app, "/rankings/all-time").await),
        [("fine".into(), 1, 1)]
    );
}

#[tokio::test]
async fn iso_weeks_follow_the_week_based_year_across_new_year() {
    let app = TestApp::spawn(&LONG_RETENTION).await;
    let days = [
        "2020-12-28",
        "2020-12-29",
        "2020-12-30",
        "2020-12-31",
        "2021-01-01",
        "2021-01-02",
        "2021-01-03",
        "2021-01-04",
    ];
    let events: Vec<Value> = days
        .iter()
        .enumerate()
        .map(|(i, d)| paid(&format!("p{i}"), "nye", 1, &[], &format!("{d}T12:00:00Z")))
        .collect();
    assert!(send(&app, &events)
        .await
        .iter()
        .all(|v| *v == Outcome::Applied));
    let w53 = read(&app, "/rankings/weekly?date=2021-01-01").await;
    assert_eq!(w53.body["bucket"], "2020-W53");
    assert_eq!(items(&w53), [("nye".into(), 7, 1)]);
    let w01 = read(&app, "/rankings/weekly?date=2021-01-04").await;
    assert_eq!(w01.body["bucket"], "2021-W01");
    assert_eq!(items(&w01)[0].1, 1);
    assert_eq!(
        items(&read(&app, "/rankings/monthly?date=2020-12-15").await)[0].1,
        4
    );
    assert_eq!(
        items(&read(&app, "/rankings/monthly?date=2021-01-31").await)[0].1,
        4
    );
    let day = read(&app, "/rankings/daily?date=2021-01-01").await;
    assert_eq!(
        (day.body["bucket"].as_str(), items(&day)[0].1),
        (Some("2021-01-01"), 1)
    );
}

#[tokio::test]
async fn buckets_come_from_the_payment_time_in_the_ranking_zone() {
    let mut vars = LONG_RETENTION.to_vec();
    vars.push(("RANKING_TIME_ZONE", "Asia/Seoul"));
    let app = TestApp::spawn(&vars).await;
    send(&app, &[paid("p1", "seoul", 2, &[], "2025-11-29T16:30:00Z")]).await;
    let day = read(&app, "/rankings/daily?date=2025-11-30").await;
    assert_eq!(items(&day), [("seoul".into(), 2, 1)]);
    assert_eq!(
        read(&app, "/rankings/daily?date=2025-11-29").await.body["total"],
        0
    );
    // 2025-11-30 is a Sunday: still ISO week 48, and November.
    assert_eq!(
        read(&app, "/rankings/weekly?date=2025-11-30").await.body["bucket"],
        "2025-W48"
    );
    assert_eq!(
        items(&read(&app, "/rankings/monthly?date=2025-11-01").await)[0].1,
        2
    );
    // Without completedAt, the envelope's time is the payment's time.
    let mut no_time = paid("p2", "seoul", 1, &[], "");
    no_time["detail"]
        .as_object_mut()
        .unwrap()
        .remove("completedAt");
    no_time["time"] = json!("2025-11-29T15:00:00Z"); // 2025-11-30 00:00 in Seoul
    assert_eq!(send(&app, &[no_time]).await, [Outcome::Applied]);
    assert_eq!(
        items(&read(&app, "/rankings/daily?date=2025-11-30").await)[0].1,
        3
    );
}

#[tokio::test]
async fn late_events_past_retention_do_not_recreate_boards_but_count_on_open_ones() {
    let app = TestApp::spawn(&[]).await; // daily 8 days, weekly 5 weeks, monthly 13 months
    let ten_days_ago = Utc::now() - Days::days(10);
    let date = ten_days_ago.format("%Y-%m-%d").to_string();
    send(
        &app,
        &[paid("late", "old-show", 2, &[], &ten_days_ago.to_rfc3339())],
    )
    .await;
    assert_eq!(
        read(&app, &format!("/rankings/daily?date={date}"))
            .await
            .body["total"],
        0
    );
    let exists: bool = redis::cmd("EXISTS")
        .arg(format!(
            "{}:{{rk}}:board:daily:{date}",
            app.config.key_prefix
        ))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(!exists, "the expired daily board was not recreated");
    for period in ["weekly", "monthly", "all-time"] {
        let board = read(&app, &format!("/rankings/{period}?date={date}")).await;
        assert_eq!(items(&board), [("old-show".into(), 2, 1)], "{period}");
    }
    // Written boards carry their expiry.
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!(
            "{}:{{rk}}:board:weekly:{}",
            app.config.key_prefix,
            read(&app, &format!("/rankings/weekly?date={date}"))
                .await
                .body["bucket"]
                .as_str()
                .unwrap()
        ))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(ttl > 0 && ttl <= 35 * 86_400, "{ttl}");
}

#[tokio::test]
async fn ties_share_a_rank_and_pages_follow_concert_id_order() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    let sales = [("e", 1), ("d", 3), ("b", 3), ("a", 5), ("c", 3)];
    let events: Vec<Value> = sales
        .iter()
        .map(|(c, s)| paid(&format!("pay-{c}"), c, *s, &[], &at))
        .collect();
    send(&app, &events).await;
    let all = items(&read(&app, "/rankings/daily?limit=100").await);
    let expected = [
        ("a", 5, 1),
        ("b", 3, 2),
        ("c", 3, 2),
        ("d", 3, 2),
        ("e", 1, 5),
    ];
    let expected: Vec<(String, u64, u64)> = expected
        .iter()
        .map(|(c, s, r)| (c.to_string(), *s, *r))
        .collect();
    assert_eq!(all, expected);
    let mut pages = Vec::new();
    for offset in [0, 2, 4] {
        pages.extend(items(
            &read(&app, &format!("/rankings/daily?limit=2&offset={offset}")).await,
        ));
    }
    assert_eq!(pages, expected, "pages join up to the full list");
    for (concert, score, rank) in &expected {
        let one = read(&app, &format!("/rankings/daily/concerts/{concert}")).await;
        assert_eq!(one.status, 200);
        assert_eq!(
            (
                one.body["rank"].as_u64().unwrap(),
                one.body["score"].as_u64().unwrap()
            ),
            (*rank, *score)
        );
        assert_eq!(one.body["concertId"], concert.as_str());
        assert!(one.body["genre"].is_null());
    }
    let page = read(&app, "/rankings/daily?limit=2&offset=1").await;
    assert_eq!(page.body["total"], 5);
    assert_eq!(page.body["period"], "daily");
}

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

/// Script calls a client sent. (The ranking script itself runs SADD, so only script calls
/// are client round trips here.)
fn script_calls(calls: &std::collections::HashMap<&str, u64>) -> u64 {
    assert!(!calls.contains_key("smembers"), "{calls:?}");
    ["evalsha", "eval", "script|load"]
        .iter()
        .map(|name| calls.get(name).copied().unwrap_or(0))
        .sum()
}

/// The result name a verdict is reported with (`applied`, `pending`, `conflict`, …).
pub(crate) fn result(verdict: &Outcome) -> String {
    serde_json::to_value(verdict).unwrap()["result"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn results(verdicts: &[Outcome]) -> Vec<String> {
    verdicts.iter().map(result).collect()
}

/// The counts of the event applier's EMF records so far, summed per metric.
fn ranking_metric(app: &TestApp, name: &str) -> u64 {
    app.metrics
        .lines()
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["service"] == "rankings")
        .map(|record| record[name].as_u64().unwrap_or(0))
        .sum()
}

/// Refunds delivered before their payment: a partial one, redelivered, and a whole one. When the
/// payment lands, the boards show it minus its refunds. The fully refunded payment is on no board.
/// The redelivered refund is a duplicate.
#[tokio::test]
async fn a_refund_that_arrives_before_its_payment_takes_effect_when_the_payment_lands() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    // A partial refund with its own id, and a whole refund without one, each before its
    // payment; the first is redelivered before the payment too.
    let early = refunded("p1", Some("r1"), "c1", 1, &at);
    let whole = refunded("p2", None, "c2", 2, &at);
    assert_eq!(
        results(&send(&app, &[early.clone(), whole.clone()]).await),
        ["pending", "pending"]
    );
    assert_eq!(results(&send(&app, &[early]).await), ["duplicate"]);
    assert_eq!(read(&app, "/rankings/daily").await.body["total"], 0);

    assert_eq!(
        send(
            &app,
            &[
                paid("p1", "c1", 3, &["rock"], &at),
                paid("p2", "c2", 2, &["rock"], &at),
                paid("p3", "c3", 1, &["rock"], &at),
            ]
        )
        .await,
        [Outcome::Applied, Outcome::Applied, Outcome::Applied]
    );
    // The boards show each payment minus its refunds; the fully refunded one is on none.
    for path in [
        "/rankings/daily",
        "/rankings/weekly?genre=rock",
        "/rankings/all-time",
    ] {
        assert_eq!(
            items(&read(&app, path).await),
            [("c1".into(), 2, 1), ("c3".into(), 1, 2)],
            "{path}"
        );
    }
    // The refunds are done: redelivered, they change nothing; a later refund of the rest
    // still applies to what is left.
    assert_eq!(results(&send(&app, &[whole]).await), ["duplicate"]);
    assert_eq!(
        send(&app, &[refunded("p1", Some("r2"), "c1", 5, &at)]).await,
        [Outcome::Applied]
    );
    assert_eq!(
        items(&read(&app, "/rankings/all-time").await),
        [("c3".into(), 1, 1)]
    );
    assert_eq!(ranking_metric(&app, "eventsPending"), 2);
}

/// Six redeliveries of a payment or refund id with another concert, seat count, genres or payment,
/// also inside an SQS batch and as a direct invocation. Each is answered `conflict`, counted in
/// `eventsConflict`, reported as the SQS batch item failure, and fails the direct invocation.
/// Nothing on the boards moves.
#[tokio::test]
async fn a_redelivery_with_other_contents_is_a_conflict_not_a_duplicate() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    assert_eq!(
        send(&app, &[paid("p1", "c1", 2, &["rock"], &at)]).await,
        [Outcome::Applied]
    );
    let others = [
        paid("p1", "c2", 2, &["rock"], &at),
        paid("p1", "c1", 3, &["rock"], &at),
        paid("p1", "c1", 2, &["pop"], &at),
        paid("p1", "c1", 2, &[], &at),
    ];
    for other in &others {
        assert_eq!(
            results(&send(&app, std::slice::from_ref(other)).await),
            ["conflict"],
            "{other}"
        );
    }
    // Identical redeliveries (genres in any order or repeated) stay duplicates.
    assert_eq!(
        send(&app, &[paid("p1", "c1", 2, &["rock", "rock"], &at)]).await,
        [Outcome::Duplicate]
    );
    let refund = refunded("p1", Some("r1"), "c1", 1, &at);
    assert_eq!(send(&app, &[refund]).await, [Outcome::Applied]);
    for other in [
        refunded("p1", Some("r1"), "c1", 2, &at),
        refunded("p9", Some("r1"), "c1", 1, &at),
    ] {
        assert_eq!(
            results(&send(&app, std::slice::from_ref(&other)).await),
            ["conflict"],
            "{other}"
        );
    }
    assert_eq!(
        items(&read(&app, "/rankings/all-time?genre=rock").await),
        [("c1".into(), 1, 1)]
    );
    assert_eq!(
        read(&app, "/rankings/all-time?genre=pop").await.body["total"],
        0
    );
    assert_eq!(ranking_metric(&app, "eventsConflict"), 6);

    // On SQS a conflict is a batch item failure, so it lands in the dead-letter queue.
    let record = |id: &str, body: &Value| json!({"messageId": id, "receiptHandle": "h", "body": body.to_string(), "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs"});
    let batch = json!({"Records": [
        record("m1", &paid("p1", "c1", 2, &["rock"], &at)),
        record("m2", &others[0]),
        record("m3", &paid("p2", "c2", 1, &[], &at)),
    ]});
    let response = event_applier::handle(
        LambdaEvent::new(batch, Context::default()),
        &app.stack.event_applier,
    )
    .await
    .unwrap();
    assert_eq!(
        response["batchItemFailures"],
        json!([{"itemIdentifier": "m2"}])
    );
    // A direct EventBridge invocation fails, so EventBridge retries it into its DLQ.
    let err = event_applier::handle(
        LambdaEvent::new(others[1].clone(), Context::default()),
        &app.stack.event_applier,
    )
    .await
    .unwrap_err();
    assert!(err.to_string().contains("conflict"), "{err}");
}

/// Payments stamped in year 9999, in year 1, 36 days late, and 2 minutes ahead of the server clock
/// are `implausible` and write no key. Payments 10 s ahead and 34 days late count (the dedupe
/// window is 35 days).
#[tokio::test]
async fn event_times_outside_the_window_around_the_server_clock_are_refused() {
    let app = TestApp::spawn(&[]).await; // dedupe 35 days
    let ago = |days: i64| (Utc::now() - Days::days(days)).to_rfc3339();
    let ahead = |seconds: i64| (Utc::now() + Days::seconds(seconds)).to_rfc3339();
    let verdicts = send(
        &app,
        &[
            paid("far-future", "c1", 5, &["rock"], "9999-12-31T00:00:00Z"),
            paid("year-one", "c1", 5, &["rock"], "0001-01-01T00:00:00Z"),
            paid("replayed-36-days-late", "c1", 5, &[], &ago(36)),
            paid("two-minutes-ahead", "c1", 5, &[], &ahead(120)),
            paid("ten-seconds-ahead", "c2", 1, &[], &ahead(10)),
            paid("34-days-late", "c3", 1, &[], &ago(34)),
        ],
    )
    .await;
    assert_eq!(
        results(&verdicts),
        [
            "implausible",
            "implausible",
            "implausible",
            "implausible",
            "applied",
            "applied"
        ],
        "{verdicts:?}"
    );
    assert_eq!(
        items(&read(&app, "/rankings/all-time").await),
        [("c2".into(), 1, 1), ("c3".into(), 1, 1)]
    );
    // Nothing was written for the refused events: no board, no payment record.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:*", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(
        keys.iter()
            .all(|k| !k.contains("9999") && !k.contains("0001") && !k.contains("far-future")),
        "{keys:?}"
    );
    assert_eq!(ranking_metric(&app, "eventsImplausible"), 4);
}

/// A payment for a concert cancelled longer ago than the dedupe window: the concert stays off every
/// board.
#[tokio::test]
async fn a_cancellation_outlives_the_dedupe_window() {
    let app = TestApp::spawn(&[("RANKING_DEDUPE_DAYS", "1")]).await;
    let cancel = envelope("ConcertCancelled", json!({"concertId": "doomed"}));
    assert_eq!(send(&app, &[cancel]).await, [Outcome::Applied]);
    // A day passes: every key that lives for the dedupe window goes, as time would take it.
    let mut inspect = app.inspect.clone();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:*", app.config.key_prefix))
        .query_async(&mut inspect)
        .await
        .unwrap();
    for key in keys {
        let ttl: i64 = redis::cmd("TTL")
            .arg(&key)
            .query_async(&mut inspect)
            .await
            .unwrap();
        if ttl > 0 && ttl <= 86_400 {
            redis::cmd("DEL")
                .arg(&key)
                .query_async::<()>(&mut inspect)
                .await
                .unwrap();
        }
    }
    let late = send(&app, &[paid("p-late", "doomed", 3, &["rock"], &now())]).await;
    assert!(matches!(&late[0], Outcome::Ignored(_)), "{late:?}");
    for path in ["/rankings/daily", "/rankings/all-time?genre=rock"] {
        assert_eq!(read(&app, path).await.body["total"], 0, "{path}");
    }
}

#[tokio::test]
async fn the_concert_index_keeps_live_boards_only_and_ends_with_them() {
    let app = TestApp::spawn(&[]).await;
    let prefix = &app.config.key_prefix;
    let index = format!("{prefix}:{{rk}}:concert:c1:boards");
    let mut inspect = app.inspect.clone();
    // The index is scored by each board's expiry; a board that expired an hour ago is
    // still listed, as after a quiet hour.
    let expired_board = format!("{prefix}:{{rk}}:board:daily:2026-01-01");
    let an_hour_ago = Utc::now().timestamp() - 3600;
    redis::cmd("ZADD")
        .arg(&index)
        .arg(an_hour_ago)
        .arg(&expired_board)
        .query_async::<()>(&mut inspect)
        .await
        .unwrap();
    assert_eq!(
        send(&app, &[paid("p1", "c1", 1, &["rock"], &now())]).await,
        [Outcome::Applied]
    );
    let listed = lineup_tests::rankings::concert_index(&app, &index).await;
    assert_eq!(
        listed.len(),
        16,
        "(4 calendar periods, 2 windows, 2 trending generations) × (overall, rock): {listed:?}"
    );
    for (board, expires) in &listed {
        let expire_time: i64 = redis::cmd("EXPIRETIME")
            .arg(board)
            .query_async(&mut inspect)
            .await
            .unwrap();
        if board.contains(":all-time:") {
            assert_eq!(expire_time, -1, "{board}");
            assert!(expires.is_infinite(), "{board}");
        } else if board.contains(":last-") || board.contains(":trending:") {
            // Each payment pushes a rolling board's expiry back: the index lists it until
            // the next full hour after it, so that its score changes once an hour.
            let listed_until = *expires as i64;
            assert!(
                listed_until % 3600 == 0
                    && (expire_time..expire_time + 3600).contains(&listed_until),
                "{board}: listed until {listed_until}, expires at {expire_time}"
            );
        } else {
            assert_eq!(*expires as i64, expire_time, "{board}");
        }
    }
    // Cancellation still reaches every board the index lists.
    let cancel = envelope("ConcertCancelled", json!({"concertId": "c1"}));
    assert_eq!(send(&app, &[cancel]).await, [Outcome::Applied]);
    assert_eq!(
        read(&app, "/rankings/all-time?genre=rock").await.body["total"],
        0
    );
}

fn hours_ago(hours: i64) -> String {
    (Utc::now() - Days::hours(hours)).to_rfc3339()
}

/// Every board a payment made now counts on, overall and for rock.
fn todays_boards(app: &TestApp) -> Vec<Board> {
    let today = app.stack.event_applier.rankings.today();
    let mut boards = Vec::new();
    for genre in [None, Some(Genre::parse("rock").unwrap())] {
        for period in Period::ALL {
            boards.push(Board::on(period, today, genre.clone()));
        }
    }
    boards
}

/// Three versions of a concert's details, delivered in each of the six orders (one concert
/// per order): the one with the latest `updatedAt` is stored every time. An older version
/// after a newer one is ignored; the same version again is a duplicate; the same `updatedAt`
/// with other contents is a conflict naming both; an `updatedAt` a day ahead is implausible.
#[tokio::test]
async fn concert_details_follow_the_latest_updated_at_in_any_arrival_order() {
    let app = TestApp::spawn(&[]).await;
    let versions = [
        ("First title", 100, hours_ago(3)),
        ("Second title", 200, hours_ago(2)),
        ("Third title", 400, hours_ago(1)),
    ];
    let orders = [
        [0, 1, 2],
        [0, 2, 1],
        [1, 0, 2],
        [1, 2, 0],
        [2, 0, 1],
        [2, 1, 0],
    ];
    for (n, order) in orders.iter().enumerate() {
        let concert = format!("order-{n}");
        let mut newest = None;
        for &v in order {
            let (title, capacity, at) = &versions[v];
            let verdict = send(&app, &[scheduled(&concert, title, *capacity, at)]).await;
            if newest.is_some_and(|newest| newest > v) {
                assert_eq!(
                    verdict,
                    [Outcome::Ignored(
                        "an update with a later updatedAt is already applied".into()
                    )],
                    "{order:?}"
                );
            } else {
                assert_eq!(verdict, [Outcome::Applied], "{order:?}");
                newest = Some(v);
            }
        }
        let (at, capacity, json) = details(&app, &concert).await.expect("details");
        assert_eq!(capacity, 400, "{order:?}");
        assert_eq!(
            at,
            chrono::DateTime::parse_from_rfc3339(&versions[2].2)
                .unwrap()
                .timestamp_millis()
        );
        assert_eq!(
            json,
            json!({"title": "Third title", "venue": "Olympic Hall",
                   "startsAt": "2027-03-01T19:00:00+09:00", "capacity": 400, "genres": ["rock"]}),
            "{order:?}"
        );
    }
    let (title, capacity, at) = &versions[2];
    let again = scheduled("order-0", title, *capacity, at);
    let mut updated = again.clone();
    updated["detail-type"] = json!("ConcertUpdated");
    assert_eq!(
        send(&app, &[again, updated]).await,
        [Outcome::Duplicate, Outcome::Duplicate]
    );
    let other = send(&app, &[scheduled("order-0", "Renamed", 400, at)]).await;
    let Outcome::Conflict(reason) = &other[0] else {
        panic!("{other:?}")
    };
    assert!(
        reason.contains("Third title") && reason.contains("Renamed"),
        "{reason}"
    );
    let ahead = (Utc::now() + Days::days(1)).to_rfc3339();
    assert_eq!(
        results(&send(&app, &[scheduled("order-0", "Future", 9, &ahead)]).await),
        ["implausible"]
    );
    assert_eq!(details(&app, "order-0").await.unwrap().1, 400);
}

/// Details before a concert's payments and after them: either way, with a capacity known,
/// the concert is on every rate board with floor(seats × 10⁶ / capacity), expiring with
/// its seat board. A concert without details is on the seat boards only. A new capacity
/// rewrites the rates. Equal rates tie, in concertId order.
#[tokio::test]
async fn rate_boards_follow_details_before_and_after_payments() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    assert_eq!(
        send(&app, &[scheduled("early", "Early", 1000, &hours_ago(1))]).await,
        [Outcome::Applied]
    );
    send(
        &app,
        &[
            paid("p1", "early", 3, &["rock"], &at),
            paid("p2", "late", 7, &["rock"], &at),
            paid("p3", "unknown", 5, &["rock"], &at),
        ],
    )
    .await;
    for board in todays_boards(&app) {
        assert_eq!(
            rate_board(&app, &board).await,
            [("early".into(), 3000)],
            "{board:?}"
        );
    }
    assert_eq!(
        send(&app, &[scheduled("late", "Late", 3, &hours_ago(1))]).await,
        [Outcome::Applied]
    );
    for board in todays_boards(&app) {
        assert_eq!(
            rate_board(&app, &board).await,
            [("late".into(), 2_333_333), ("early".into(), 3000)],
            "{board:?}"
        );
    }
    // A new capacity rewrites the rates; equal millionths tie, in concertId order.
    assert_eq!(
        send(&app, &[scheduled("early", "Early", 6, &hours_ago(0))]).await,
        [Outcome::Applied]
    );
    send(&app, &[paid("p4", "early", 11, &["rock"], &at)]).await;
    for board in todays_boards(&app) {
        assert_eq!(
            rate_board(&app, &board).await,
            [("early".into(), 2_333_333), ("late".into(), 2_333_333)],
            "{board:?}"
        );
    }
    // The seat boards still hold every concert, the one without details too.
    assert_eq!(
        items(&read(&app, "/rankings/daily?genre=rock").await),
        [
            ("early".into(), 14, 1),
            ("late".into(), 7, 2),
            ("unknown".into(), 5, 3)
        ]
    );
    let rankings = &app.stack.event_applier.rankings;
    let mut inspect = app.inspect.clone();
    for board in todays_boards(&app) {
        let expiry = |key: String| {
            let mut inspect = inspect.clone();
            async move {
                redis::cmd("EXPIRETIME")
                    .arg(key)
                    .query_async::<i64>(&mut inspect)
                    .await
                    .unwrap()
            }
        };
        let seat = expiry(rankings.board_key(&board)).await;
        assert_eq!(seat, expiry(rankings.rate_key(&board)).await, "{board:?}");
        assert_ne!(seat, -2, "{board:?}");
    }
    // Redis holds no rate board but today's and the rolling windows' (trending has none).
    let rates: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:rate:*", app.config.key_prefix))
        .query_async(&mut inspect)
        .await
        .unwrap();
    assert_eq!(rates.len(), 12, "8 calendar + 4 rolling: {rates:?}");
    assert!(rates.iter().all(|k| !k.contains(":trending:")), "{rates:?}");
}

/// Refunds move a concert's rate as they move its seats, and take it off the rate boards
/// at zero; a cancellation takes it off every rate board and deletes its details, and later
/// details for it are ignored and stored nowhere.
#[tokio::test]
async fn rate_boards_follow_refunds_and_cancellations() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    send(
        &app,
        &[
            scheduled("c1", "One", 10, &hours_ago(1)),
            scheduled("c2", "Two", 10, &hours_ago(1)),
            paid("p1", "c1", 4, &["rock"], &at),
            paid("p2", "c1", 2, &["rock"], &at),
            paid("p3", "c2", 1, &["rock"], &at),
        ],
    )
    .await;
    let rates = |c1: Option<i64>| {
        let mut rows: Vec<(String, i64)> = c1.map(|r| ("c1".to_owned(), r)).into_iter().collect();
        rows.push(("c2".into(), 100_000));
        rows.sort_by_key(|(c, r)| (-r, c.clone()));
        rows
    };
    for board in todays_boards(&app) {
        assert_eq!(rate_board(&app, &board).await, rates(Some(600_000)));
    }
    send(&app, &[refunded("p1", Some("r1"), "c1", 1, &at)]).await;
    for board in todays_boards(&app) {
        assert_eq!(rate_board(&app, &board).await, rates(Some(500_000)));
    }
    send(
        &app,
        &[
            refunded("p2", None, "c1", 2, &at),
            refunded("p1", Some("r2"), "c1", 9, &at),
        ],
    )
    .await;
    for board in todays_boards(&app) {
        assert_eq!(rate_board(&app, &board).await, rates(None), "{board:?}");
    }
    let cancel = envelope("ConcertCancelled", json!({"concertId": "c2"}));
    assert_eq!(send(&app, &[cancel]).await, [Outcome::Applied]);
    for board in todays_boards(&app) {
        assert_eq!(rate_board(&app, &board).await, [], "{board:?}");
    }
    assert_eq!(details(&app, "c2").await, None);
    assert!(details(&app, "c1").await.is_some());
    let after = send(&app, &[scheduled("c2", "Two again", 20, &hours_ago(0))]).await;
    assert_eq!(after, [Outcome::Ignored("concert cancelled".into())]);
    assert_eq!(details(&app, "c2").await, None);
}

/// Concert events with a capacity of 0 or below or above 1 000 000, a blank or too long
/// title or venue, no `updatedAt` or a malformed `startsAt` are rejected, naming the field,
/// and store nothing.
#[tokio::test]
async fn bad_concert_events_are_rejected_naming_the_field() {
    let app = TestApp::spawn(&[]).await;
    let at = hours_ago(1);
    let long = "x".repeat(201);
    let mut no_updated_at = scheduled("c1", "Title", 10, &at);
    no_updated_at["detail"]
        .as_object_mut()
        .unwrap()
        .remove("updatedAt");
    let mut long_venue = scheduled("c1", "Title", 10, &at);
    long_venue["detail"]["venue"] = json!(long);
    let mut bad_start = scheduled("c1", "Title", 10, &at);
    bad_start["detail"]["startsAt"] = json!("next spring");
    let cases = [
        (scheduled("c1", "Title", 0, &at), "capacity"),
        (scheduled("c1", "Title", -1, &at), "capacity"),
        (scheduled("c1", "Title", 1_000_001, &at), "capacity"),
        (scheduled("c1", &long, 10, &at), "title"),
        (scheduled("c1", "   ", 10, &at), "title"),
        (no_updated_at, "updatedAt"),
        (long_venue, "venue"),
        (bad_start, "startsAt"),
    ];
    for (event, field) in cases {
        let verdict = send(&app, std::slice::from_ref(&event)).await;
        let [Outcome::Rejected(reason)] = verdict.as_slice() else {
            panic!("{event}: {verdict:?}")
        };
        assert!(reason.contains(field), "{field}: {reason}");
    }
    // 200 characters (not bytes) is within the limit.
    let title = "é".repeat(200);
    assert_eq!(
        send(&app, &[scheduled("c1", &title, 1_000_000, &at)]).await,
        [Outcome::Applied]
    );
    assert_eq!(
        details(&app, "c1").await.unwrap().2["title"],
        title.as_str()
    );
}

/// A concert index written as a plain set by an earlier version is rewritten as a sorted
/// set by the next payment for the concert, and cancellation still reaches its boards.
#[tokio::test]
async fn a_concert_index_of_an_earlier_version_is_upgraded() {
    let app = TestApp::spawn(&[]).await;
    let prefix = &app.config.key_prefix;
    let index = format!("{prefix}:{{rk}}:concert:old:boards");
    let old_board = format!("{prefix}:{{rk}}:board:all-time:all:genre:jazz");
    let mut inspect = app.inspect.clone();
    redis::cmd("ZADD")
        .arg(&old_board)
        .arg(-2)
        .arg("old")
        .query_async::<()>(&mut inspect)
        .await
        .unwrap();
    redis::cmd("SADD")
        .arg(&index)
        .arg(&old_board)
        .query_async::<()>(&mut inspect)
        .await
        .unwrap();
    assert_eq!(
        send(&app, &[paid("p1", "old", 1, &[], &now())]).await,
        [Outcome::Applied]
    );
    let listed = lineup_tests::rankings::concert_index(&app, &index).await;
    assert_eq!(
        listed.len(),
        9,
        "4 calendar, 2 rolling, 2 trending and the old board: {listed:?}"
    );
    assert!(listed.iter().any(|(b, _)| *b == old_board), "{listed:?}");
    let cancel = envelope("ConcertCancelled", json!({"concertId": "old"}));
    assert_eq!(send(&app, &[cancel]).await, [Outcome::Applied]);
    assert_eq!(
        read(&app, "/rankings/all-time?genre=jazz").await.body["total"],
        0
    );
}

/// One script call holding payments for one concert around a refund, details and a
/// cancellation: the sums written per board once equal the events taken one by one.
#[tokio::test]
async fn a_batch_mixing_payments_refunds_details_and_a_cancellation_counts_in_order() {
    let app = TestApp::spawn(&[]).await;
    let at = now();
    let batch = [
        paid("a1", "m", 2, &["rock"], &at),
        paid("a2", "m", 3, &["rock"], &at),
        refunded("a1", Some("r1"), "m", 1, &at),
        scheduled("m", "M", 8, &hours_ago(1)),
        paid("a3", "m", 4, &["rock"], &at),
        paid("b1", "n", 5, &["rock"], &at),
        scheduled("n", "N", 10, &hours_ago(1)),
        envelope("ConcertCancelled", json!({"concertId": "n"})),
        paid("b2", "n", 1, &["rock"], &at),
        paid("a2", "m", 3, &["rock"], &at),
    ];
    assert_eq!(
        results(&send(&app, &batch).await),
        [
            "applied",
            "applied",
            "applied",
            "applied",
            "applied",
            "applied",
            "applied",
            "applied",
            "ignored",
            "duplicate"
        ]
    );
    for board in todays_boards(&app) {
        assert_eq!(
            rate_board(&app, &board).await,
            [("m".into(), 1_000_000)],
            "{board:?}"
        );
    }
    for path in ["/rankings/daily?genre=rock", "/rankings/all-time"] {
        assert_eq!(
            items(&read(&app, path).await),
            [("m".into(), 8, 1)],
            "{path}"
        );
    }
}

/// A trending board in the concert index (helper C's boards score decayed sales) gets no
/// rate board when the concert's capacity becomes known; the calendar boards do.
#[tokio::test]
async fn a_new_capacity_rates_every_indexed_board_but_trending_ones() {
    let app = TestApp::spawn(&[]).await;
    let prefix = &app.config.key_prefix;
    send(&app, &[paid("p1", "t", 2, &["rock"], &now())]).await;
    let index = format!("{prefix}:{{rk}}:concert:t:boards");
    let trending = format!("{prefix}:{{rk}}:board:trending:7");
    let mut inspect = app.inspect.clone();
    for (key, score, member) in [(&trending, "-3.5", "t"), (&index, "inf", trending.as_str())] {
        redis::cmd("ZADD")
            .arg(key)
            .arg(score)
            .arg(member)
            .query_async::<()>(&mut inspect)
            .await
            .unwrap();
    }
    assert_eq!(
        send(&app, &[scheduled("t", "T", 4, &hours_ago(1))]).await,
        [Outcome::Applied]
    );
    for board in todays_boards(&app) {
        assert_eq!(rate_board(&app, &board).await, [("t".into(), 500_000)]);
    }
    let exists: bool = redis::cmd("EXISTS")
        .arg(format!("{prefix}:{{rk}}:rate:trending:7"))
        .query_async(&mut inspect)
        .await
        .unwrap();
    assert!(!exists, "no rate board for a trending board");
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
