//! Many concerts in one read (issue 58): `GET /rankings/{period}/concerts?ids=…` gives each
//! concert's rank, seats, sell-through, movement and percentile on the board, or that it is
//! not on it; the same answer for the same set of ids in any order.

use chrono::{Duration as Days, Timelike, Utc};
use lineup_tests::rankings::{read, schedule, sell_at};
use lineup_tests::TestApp;
use serde_json::{json, Value};

/// A zone where today has at least an hour on either side, so "yesterday" is a day back.
fn zone() -> &'static str {
    let now = Utc::now();
    if (1..23).contains(&now.hour()) {
        "UTC"
    } else {
        "Asia/Seoul"
    }
}

#[tokio::test]
async fn each_concert_asked_gets_its_standing_or_not_on_the_board_in_any_order() {
    let app = TestApp::spawn(&[("RANKING_TIME_ZONE", zone())]).await;
    let now = Utc::now();
    sell_at(
        &app,
        now - Days::days(1),
        &[("y-a", "a", 5, &[]), ("y-b", "b", 1, &[])],
    )
    .await;
    sell_at(
        &app,
        now,
        &[
            ("t-a", "a", 2, &[]),
            ("t-b", "b", 6, &[]),
            ("t-c", "c", 2, &[]),
        ],
    )
    .await;
    schedule(&app, "b", 12, "B Live", None, "2026-12-24T19:00:00Z").await;

    let many = read(&app, "/rankings/daily/concerts?ids=zz,c,b,a").await;
    assert_eq!(many.status, 200, "{}", many.body);
    assert_eq!(
        many.headers.get("cache-control").unwrap(),
        "public, max-age=5"
    );
    assert_eq!(many.body["total"], 3);
    let concerts = many.body["concerts"].as_array().unwrap();
    let ids: Vec<&str> = concerts
        .iter()
        .map(|c| c["concertId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["a", "b", "c", "zz"]);
    // b 6 (1st, from 2nd), a and c 2 (2nd together; a from 1st, c new).
    assert_eq!(
        concerts[1],
        json!({"concertId": "b", "onBoard": true, "rank": 1, "score": 6, "capacity": 12,
               "rate": 0.5, "previousRank": 2, "movement": {"kind": "up", "by": 1},
               "previousAt": null, "percentile": 100.0})
    );
    assert_eq!(
        (
            &concerts[0]["rank"],
            &concerts[0]["movement"],
            &concerts[0]["percentile"]
        ),
        (&json!(2), &json!({"kind": "down", "by": 1}), &json!(66.67))
    );
    assert_eq!(
        (
            &concerts[2]["rank"],
            &concerts[2]["previousRank"],
            &concerts[2]["movement"]
        ),
        (&json!(2), &Value::Null, &json!({"kind": "new"}))
    );
    assert_eq!(
        concerts[3],
        json!({"concertId": "zz", "onBoard": false, "rank": null, "score": null,
               "capacity": null, "rate": null, "previousRank": null, "movement": null,
               "previousAt": null, "percentile": null})
    );

    // The same set in another order, with a repeat, is answered the same.
    let again = read(&app, "/rankings/daily/concerts?ids=a,zz,b,c,a").await;
    assert_eq!(again.body, many.body);

    // Each standing agrees with the concert's own read.
    for concert in ["a", "b", "c"] {
        let one = read(&app, &format!("/rankings/daily/concerts/{concert}")).await;
        let standing = concerts.iter().find(|c| c["concertId"] == concert).unwrap();
        for field in [
            "rank",
            "score",
            "rate",
            "previousRank",
            "movement",
            "previousAt",
            "percentile",
        ] {
            assert_eq!(one.body[field], standing[field], "{concert} {field}");
        }
    }

    // The rate board: only b has a capacity.
    let by_rate = read(&app, "/rankings/daily/concerts?ids=a,b&by=rate").await;
    assert_eq!(by_rate.body["total"], 1);
    assert_eq!(by_rate.body["concerts"][0]["onBoard"], false);
    assert_eq!(by_rate.body["concerts"][1]["rank"], 1);
    // The all-time board compares with nothing: a and b have 7 seats each there.
    let all_time = read(&app, "/rankings/all-time/concerts?ids=a").await;
    assert_eq!(all_time.body["concerts"][0]["movement"], Value::Null);
    assert_eq!(all_time.body["concerts"][0]["rank"], 1);
}

#[tokio::test]
async fn a_read_of_many_takes_one_to_a_hundred_good_ids() {
    let app = TestApp::spawn(&[]).await;
    sell_at(&app, Utc::now(), &[("t-a", "a", 1, &[])]).await;
    let hundred: Vec<String> = (0..100).map(|n| format!("c{n}")).collect();
    let ok = read(
        &app,
        &format!("/rankings/weekly/concerts?ids={}", hundred.join(",")),
    )
    .await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    assert_eq!(ok.body["concerts"].as_array().unwrap().len(), 100);
    // A hundred and one distinct ids is too many; the same hundred twice is not.
    let twice = read(
        &app,
        &format!(
            "/rankings/weekly/concerts?ids={},{}",
            hundred.join(","),
            hundred.join(",")
        ),
    )
    .await;
    assert_eq!(twice.status, 200, "{}", twice.body);
    for bad in [
        format!("/rankings/weekly/concerts?ids={},c100", hundred.join(",")),
        "/rankings/weekly/concerts".to_owned(),
        "/rankings/weekly/concerts?ids=".to_owned(),
        "/rankings/weekly/concerts?ids=a,,b".to_owned(),
        "/rankings/weekly/concerts?ids=a%20b".to_owned(),
        "/rankings/fortnightly/concerts?ids=a".to_owned(),
        "/rankings/trending/concerts?ids=a&date=2026-11-30".to_owned(),
    ] {
        let refused = read(&app, &bad).await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
        assert_eq!(
            refused.headers.get("cache-control").unwrap(),
            "no-store",
            "{bad}"
        );
    }
}

/// The answer for a set of ids is kept until the next write, yet a read after any write shows
/// it at once: a payment today, a late payment on the day before (movement), a concert's new
/// capacity.
#[tokio::test]
async fn a_read_of_many_after_any_write_shows_it_though_the_answer_is_kept() {
    let app = TestApp::spawn(&[("RANKING_TIME_ZONE", zone())]).await;
    let now = Utc::now();
    sell_at(&app, now - Days::days(1), &[("y-a", "a", 3, &[])]).await;
    sell_at(&app, now, &[("t-a", "a", 2, &[]), ("t-b", "b", 1, &[])]).await;
    let standing = |body: &Value, n: usize, field: &str| body["concerts"][n][field].clone();
    let many = || async { read(&app, "/rankings/daily/concerts?ids=a,b").await.body };
    let first = many().await;
    assert_eq!(standing(&first, 1, "movement"), json!({"kind": "new"}));
    // Kept: the same set in another order is the same answer, from the page cache.
    assert_eq!(
        read(&app, "/rankings/daily/concerts?ids=b,a").await.body,
        first
    );
    let mut inspect = app.inspect.clone();
    let kept: usize = redis::cmd("HLEN")
        .arg(app.stack.ranking_api.rankings.page_cache_key())
        .query_async(&mut inspect)
        .await
        .unwrap();
    assert!(kept >= 1, "the answer is kept");

    sell_at(&app, now, &[("t-b2", "b", 4, &[])]).await;
    let after_sale = many().await;
    assert_eq!(
        (
            standing(&after_sale, 1, "rank"),
            standing(&after_sale, 1, "score")
        ),
        (json!(1), json!(5))
    );
    assert_eq!(
        standing(&after_sale, 0, "movement"),
        json!({"kind": "down", "by": 1})
    );
    // A late payment on the day before puts b there above a: a was 2nd then too, b 1st.
    sell_at(&app, now - Days::days(1), &[("y-b", "b", 9, &[])]).await;
    let after_late = many().await;
    assert_eq!(
        (
            standing(&after_late, 1, "previousRank"),
            standing(&after_late, 1, "movement")
        ),
        (json!(1), json!({"kind": "same"}))
    );
    assert_eq!(
        standing(&after_late, 0, "movement"),
        json!({"kind": "same"})
    );
    schedule(&app, "a", 4, "A Live", None, "2026-12-24T19:00:00Z").await;
    let after_details = many().await;
    assert_eq!(
        (
            standing(&after_details, 0, "capacity"),
            standing(&after_details, 0, "rate")
        ),
        (json!(4), json!(0.5))
    );
}

/// Ids made up by the million fill the page cache only up to its room: past it, each set is
/// answered from the boards and kept no more.
#[tokio::test]
async fn made_up_sets_of_ids_keep_no_more_than_the_room() {
    use lineup::ids::ConcertId;
    use lineup::ranking::{Order, Period, KEPT_SETS};
    let app = TestApp::spawn(&[]).await;
    sell_at(&app, Utc::now(), &[("t-a", "a", 1, &[])]).await;
    let rankings = &app.stack.ranking_api.rankings;
    let board = rankings.board_now(Period::Daily, None);
    let a = ConcertId::parse("a").unwrap();
    for n in 0..KEPT_SETS + 20 {
        let made_up = ConcertId::parse(&format!("made-up-{n}")).unwrap();
        let standings = rankings
            .concerts(&board, None, Order::Seats, &[a.clone(), made_up])
            .await
            .unwrap();
        assert_eq!(standings.concerts[0].rank, Some(1));
        assert!(!standings.concerts[1].on_board);
    }
    let mut inspect = app.inspect.clone();
    let kept: usize = redis::cmd("HLEN")
        .arg(rankings.page_cache_key())
        .query_async(&mut inspect)
        .await
        .unwrap();
    assert_eq!(kept, KEPT_SETS);
}
