//! The boards' buckets: the ranking zone, ISO weeks across new year, retention, ties and
//! the concert index.

use super::{now, send, LONG_RETENTION};
use chrono::{Duration as Days, Utc};
use lineup::ranking::Outcome;
use lineup_tests::rankings::{envelope, items, paid, read};
use lineup_tests::TestApp;
use serde_json::{json, Value};

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
