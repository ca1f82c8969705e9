//! Concert details and capacities: the latest version wins in any order, and the rate boards
//! follow them.

use super::{hours_ago, now, refunded, results, send, todays_boards};
use chrono::{Duration as Days, Utc};
use lineup::ranking::Outcome;
use lineup_tests::rankings::{details, envelope, items, paid, rate_board, read, scheduled};
use lineup_tests::TestApp;
use serde_json::json;

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
