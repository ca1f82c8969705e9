//! Each payment, refund and cancellation counts once, however it arrives: concurrent
//! redeliveries, refunds before their payment, conflicting contents, implausible times.

use super::{
    hours_ago, now, ranking_metric, refunded, results, send, todays_boards, LONG_RETENTION,
};
use chrono::{Duration as Days, Utc};
use futures::future::join_all;
use lambda_runtime::{Context, LambdaEvent};
use lineup::ranking::Outcome;
use lineup_tests::rankings::{envelope, items, paid, rate_board, read, scheduled};
use lineup_tests::TestApp;
use serde_json::{json, Value};

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
