//! Board reads (issue 23): seats and details in one call, rate boards, around-me, the
//! morning fallback and caching. Boards and details come from payment and concert events
//! through `event-applier`.

use chrono::{Datelike, Duration as Days, Timelike, Utc, Weekday};
use lineup::ranking::Outcome;
use lineup_tests::rankings::{envelope, items, paid, pay, read, schedule};
use lineup_tests::{Reply, TestApp};
use serde_json::{json, Value};

/// Pays `seats` for each concert now (no genres).
async fn sell(app: &TestApp, sales: &[(&str, u32)]) {
    let at = Utc::now().to_rfc3339();
    let events: Vec<Value> = sales
        .iter()
        .map(|(c, s)| paid(&format!("pay-{c}"), c, *s, &[], &at))
        .collect();
    assert!(pay(app, &events)
        .await
        .iter()
        .all(|v| *v == Outcome::Applied));
}

fn cached(reply: &Reply) {
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.headers.get("cache-control").unwrap(),
        "public, max-age=5"
    );
}

/// `(concertId, rank)` of a JSON array of items.
fn ranks(list: &Value) -> Vec<(String, u64)> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["concertId"].as_str().unwrap().to_owned(),
                i["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn pairs(expected: &[(&str, u64)]) -> Vec<(String, u64)> {
    expected.iter().map(|(c, r)| (c.to_string(), *r)).collect()
}

#[tokio::test]
async fn a_page_carries_each_concerts_seats_and_details() {
    let app = TestApp::spawn(&[]).await;
    sell(&app, &[("big", 5), ("small", 3), ("unknown", 1)]).await;
    schedule(
        &app,
        "big",
        10,
        "Big Show",
        Some("Olympic Hall"),
        "2026-12-24T19:00:00+09:00",
    )
    .await;
    schedule(&app, "small", 4, "Small Show", None, "2026-12-25T18:00:00Z").await;
    let board = read(&app, "/rankings/daily").await;
    cached(&board);
    assert_eq!(board.body["fellBack"], false);
    assert_eq!(board.body["by"], "seats");
    assert_eq!(board.body["total"], 3);
    assert_eq!(
        board.body["items"],
        json!([
            {"rank": 1, "concertId": "big", "score": 5, "capacity": 10, "rate": 0.5,
             "title": "Big Show", "venue": "Olympic Hall", "startsAt": "2026-12-24T19:00:00+09:00",
             "previousRank": null, "movement": {"kind": "new"}, "previousAt": null},
            {"rank": 2, "concertId": "small", "score": 3, "capacity": 4, "rate": 0.75,
             "title": "Small Show", "venue": null, "startsAt": "2026-12-25T18:00:00Z",
             "previousRank": null, "movement": {"kind": "new"}, "previousAt": null},
            {"rank": 3, "concertId": "unknown", "score": 1, "capacity": null, "rate": null,
             "title": null, "venue": null, "startsAt": null,
             "previousRank": null, "movement": {"kind": "new"}, "previousAt": null},
        ])
    );
    // A page further down reads the same rows.
    let second = read(&app, "/rankings/daily?offset=1&limit=1").await;
    assert_eq!(second.body["items"][0], board.body["items"][1]);
    // The single-concert read carries them too.
    let one = read(&app, "/rankings/all-time/concerts/small").await;
    cached(&one);
    assert_eq!(
        (
            &one.body["rank"],
            &one.body["score"],
            &one.body["capacity"],
            &one.body["title"]
        ),
        (&json!(2), &json!(3), &json!(4), &json!("Small Show"))
    );
}

/// The top of a board is kept rendered (the page cache), yet a read after any write shows
/// it at once: a payment, a details update, a refund, a cancellation. The kept pages end no
/// later than the board they show, and within five minutes.
#[tokio::test]
async fn a_read_after_any_write_shows_it_though_the_top_of_a_board_is_kept() {
    let app = TestApp::spawn(&[]).await;
    let daily = || async { items(&read(&app, "/rankings/daily").await) };
    sell(&app, &[("a", 2)]).await;
    assert_eq!(daily().await, [("a".into(), 2, 1)]);
    assert_eq!(daily().await, [("a".into(), 2, 1)]);
    let rankings = &app.stack.ranking_api.rankings;
    let board = rankings.board_now(lineup::ranking::Period::Daily, None);
    let mut inspect = app.inspect.clone();
    let mut ends = Vec::new();
    for key in [rankings.page_cache_key(), rankings.board_key(&board)] {
        let end: i64 = redis::cmd("PEXPIRETIME")
            .arg(key)
            .query_async(&mut inspect)
            .await
            .unwrap();
        ends.push(end);
    }
    let soon = Utc::now().timestamp_millis() + 300_000;
    assert!(
        0 < ends[0] && ends[0] <= ends[1] && ends[0] <= soon,
        "{ends:?}"
    );

    sell(&app, &[("b", 3)]).await;
    assert_eq!(daily().await, [("b".into(), 3, 1), ("a".into(), 2, 2)]);
    // A title that JSON escapes, and one it does not: a kept page shows both as stored.
    schedule(
        &app,
        "a",
        10,
        r#"A "Show" \ live"#,
        None,
        "2026-12-24T19:00:00Z",
    )
    .await;
    schedule(&app, "b", 6, "B Show", Some("Hall"), "2026-12-25T19:00:00Z").await;
    for _ in 0..2 {
        let items = &read(&app, "/rankings/daily").await.body["items"];
        assert_eq!(
            (&items[0]["title"], &items[0]["venue"], &items[0]["rate"]),
            (&json!("B Show"), &json!("Hall"), &json!(0.5))
        );
        assert_eq!(
            (
                &items[1]["title"],
                &items[1]["venue"],
                &items[1]["startsAt"]
            ),
            (
                &json!(r#"A "Show" \ live"#),
                &Value::Null,
                &json!("2026-12-24T19:00:00Z")
            )
        );
    }
    let refund = envelope(
        "PaymentRefunded",
        json!({"paymentId": "pay-b", "refundId": "r-b", "concertId": "b", "seats": 3}),
    );
    assert_eq!(pay(&app, &[refund]).await, [Outcome::Applied]);
    assert_eq!(daily().await, [("a".into(), 2, 1)]);
    let cancel = envelope("ConcertCancelled", json!({"concertId": "a"}));
    assert_eq!(pay(&app, &[cancel]).await, [Outcome::Applied]);
    assert_eq!(read(&app, "/rankings/daily").await.body["total"], 0);
}

#[tokio::test]
async fn a_rate_read_ranks_by_sell_through_and_leaves_off_unknown_capacities() {
    let app = TestApp::spawn(&[]).await;
    sell(&app, &[("a", 3), ("b", 6), ("c", 9), ("d", 20), ("e", 1)]).await;
    // d has no known capacity: it is on the seat board, not on the rate board.
    for (concert, capacity) in [("a", 4), ("b", 8), ("c", 10), ("e", 3)] {
        schedule(
            &app,
            concert,
            capacity,
            concert,
            None,
            "2026-12-24T19:00:00Z",
        )
        .await;
    }
    let board = read(&app, "/rankings/daily?by=rate").await;
    cached(&board);
    assert_eq!(board.body["by"], "rate");
    assert_eq!(board.body["total"], 4);
    // 0.9, then a and b tied at 0.75 (ties by concertId), then 1/3 at rank 4.
    assert_eq!(
        items(&board),
        [
            ("c".into(), 9, 1),
            ("a".into(), 3, 2),
            ("b".into(), 6, 2),
            ("e".into(), 1, 4)
        ]
    );
    let rates: Vec<f64> = board.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["rate"].as_f64().unwrap())
        .collect();
    assert_eq!(rates, [0.9, 0.75, 0.75, 0.333333]);
    // The seat read of the same bucket has d first, without a rate.
    let seats = read(&app, "/rankings/daily?by=seats&limit=1").await;
    assert_eq!(items(&seats), [("d".into(), 20, 1)]);
    assert!(seats.body["items"][0]["rate"].is_null());
    // Around-me on the rate board ranks by it too.
    let b = read(&app, "/rankings/daily/concerts/b?by=rate&around=1").await;
    assert_eq!((&b.body["rank"], &b.body["score"]), (&json!(2), &json!(6)));
    assert_eq!(ranks(&b.body["above"]), pairs(&[("a", 2)]));
    assert_eq!(ranks(&b.body["below"]), pairs(&[("e", 4)]));
    read(&app, "/rankings/daily/concerts/d?by=rate")
        .await
        .assert_problem(404);
}

#[tokio::test]
async fn around_me_returns_the_neighbours_with_their_ranks() {
    let app = TestApp::spawn(&[]).await;
    sell(
        &app,
        &[
            ("a", 9),
            ("b", 7),
            ("c", 7),
            ("d", 5),
            ("e", 3),
            ("f", 3),
            ("g", 1),
        ],
    )
    .await;
    schedule(&app, "c", 70, "C", Some("Hall"), "2026-12-24T19:00:00Z").await;
    let around = |concert: &str, n: &str| {
        let path = format!("/rankings/weekly/concerts/{concert}{n}");
        let app = &app;
        async move {
            let reply = read(app, &path).await;
            cached(&reply);
            reply
        }
    };
    // At the top: nothing above.
    let top = around("a", "?around=2").await;
    assert_eq!(
        (&top.body["concertId"], &top.body["rank"]),
        (&json!("a"), &json!(1))
    );
    assert_eq!(ranks(&top.body["above"]), pairs(&[]));
    assert_eq!(ranks(&top.body["below"]), pairs(&[("b", 2), ("c", 2)]));
    // In the middle, between two ties.
    let middle = around("d", "?around=2").await;
    assert_eq!(middle.body["rank"], 4);
    assert_eq!(ranks(&middle.body["above"]), pairs(&[("b", 2), ("c", 2)]));
    assert_eq!(ranks(&middle.body["below"]), pairs(&[("e", 5), ("f", 5)]));
    // Inside a tie: the concert shares its rank with the one above.
    let tied = around("c", "?around=1").await;
    assert_eq!(
        (&tied.body["rank"], &tied.body["score"]),
        (&json!(2), &json!(7))
    );
    assert_eq!(tied.body["title"], "C");
    assert_eq!(tied.body["rate"], 0.1);
    assert_eq!(ranks(&tied.body["above"]), pairs(&[("b", 2)]));
    assert_eq!(ranks(&tied.body["below"]), pairs(&[("d", 4)]));
    assert_eq!(tied.body["above"][0]["score"], 7);
    // At the bottom: nothing below.
    let bottom = around("g", "?around=2").await;
    assert_eq!(bottom.body["rank"], 7);
    assert_eq!(ranks(&bottom.body["above"]), pairs(&[("e", 5), ("f", 5)]));
    assert_eq!(ranks(&bottom.body["below"]), pairs(&[]));
    // N = 0 (and the default): the concert alone.
    for n in ["", "?around=0"] {
        let alone = around("e", n).await;
        assert_eq!(
            (&alone.body["rank"], &alone.body["score"]),
            (&json!(5), &json!(3))
        );
        assert_eq!(alone.body["above"], json!([]));
        assert_eq!(alone.body["below"], json!([]));
    }
    // N = 10 reaches past both ends.
    let all = around("d", "?around=10").await;
    assert_eq!(
        ranks(&all.body["above"]),
        pairs(&[("a", 1), ("b", 2), ("c", 2)])
    );
    assert_eq!(
        ranks(&all.body["below"]),
        pairs(&[("e", 5), ("f", 5), ("g", 7)])
    );
    read(&app, "/rankings/weekly/concerts/nobody?around=3")
        .await
        .assert_problem(404);
}

#[tokio::test]
async fn bad_read_parameters_are_uncached_problems() {
    let app = TestApp::spawn(&[]).await;
    sell(&app, &[("a", 1)]).await;
    for path in [
        "/rankings/yearly",
        "/rankings/yearly/concerts/a",
        "/rankings/daily/concerts/a?around=11",
        "/rankings/daily/concerts/a?around=-1",
        "/rankings/daily/concerts/a?around=x",
        "/rankings/daily/concerts/a?around=",
        "/rankings/daily?by=foo",
        "/rankings/daily?by=",
        "/rankings/daily/concerts/a?by=RATE",
        "/rankings/daily?by=rate&by=seats",
    ] {
        read(&app, path).await.assert_problem(400);
    }
    // The same reads with good values answer, cached.
    cached(&read(&app, "/rankings/daily/concerts/a?around=10&by=seats").await);
    cached(&read(&app, "/rankings/daily?by=rate").await);
}

/// Through the handler, with the real clock: a zone is chosen where it is neither just before
/// midnight nor just after it, so the day cannot change during the test.
#[tokio::test]
async fn before_the_early_cutoff_reads_without_a_date_serve_the_previous_bucket() {
    let now = Utc::now();
    let (zone, local) = [
        ("UTC", chrono_tz::UTC),
        ("Asia/Seoul", chrono_tz::Asia::Seoul),
    ]
    .into_iter()
    .map(|(name, tz)| (name, now.with_timezone(&tz)))
    .find(|(_, local)| (1..23).contains(&local.hour()))
    .expect("UTC and Seoul are 9 hours apart");
    let today = local.date_naive();
    let yesterday = today - Days::days(1);
    let mut vars = vec![
        ("RANKING_TIME_ZONE", zone),
        ("RANKING_EARLY_CUTOFF", "23:59"),
    ];
    let app = TestApp::spawn(&vars).await;
    let paid_yesterday = (now - Days::days(1)).to_rfc3339();
    assert_eq!(
        pay(&app, &[paid("p1", "late-night", 2, &[], &paid_yesterday)]).await,
        [Outcome::Applied]
    );
    let daily = read(&app, "/rankings/daily").await;
    cached(&daily);
    assert_eq!(
        (&daily.body["bucket"], &daily.body["fellBack"]),
        (
            &json!(yesterday.format("%Y-%m-%d").to_string()),
            &json!(true)
        )
    );
    assert_eq!(items(&daily), [("late-night".into(), 2, 1)]);
    let one = read(&app, "/rankings/daily/concerts/late-night").await;
    assert_eq!(
        (&one.body["fellBack"], &one.body["rank"]),
        (&json!(true), &json!(1))
    );
    // Weekly falls back only on a Monday; monthly never.
    let weekly = read(&app, "/rankings/weekly").await;
    let monday = today.weekday() == Weekday::Mon;
    let week = if monday { yesterday } else { today }.iso_week();
    assert_eq!(
        (&weekly.body["bucket"], &weekly.body["fellBack"]),
        (
            &json!(format!("{}-W{:02}", week.year(), week.week())),
            &json!(monday)
        )
    );
    let monthly = read(&app, "/rankings/monthly").await;
    assert_eq!(monthly.body["fellBack"], false);
    assert_eq!(monthly.body["bucket"], today.format("%Y-%m").to_string());
    // An explicit date is served as asked.
    let asked = read(
        &app,
        &format!("/rankings/daily?date={}", today.format("%Y-%m-%d")),
    )
    .await;
    assert_eq!(
        (&asked.body["bucket"], &asked.body["fellBack"]),
        (&json!(today.format("%Y-%m-%d").to_string()), &json!(false))
    );
    assert_eq!(asked.body["total"], 0);

    // With the cut-off at midnight, or none, no read falls back.
    vars[1].1 = "00:00";
    for app in [
        TestApp::spawn(&vars).await,
        TestApp::spawn(&vars[..1]).await,
    ] {
        let daily = read(&app, "/rankings/daily").await;
        assert_eq!(
            (&daily.body["bucket"], &daily.body["fellBack"]),
            (&json!(today.format("%Y-%m-%d").to_string()), &json!(false))
        );
    }
}
