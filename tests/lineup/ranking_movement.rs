//! Movement on the calendar boards (issue 58): each row's rank one bucket before, read from
//! the bucket the rankings already keep, as it stands now; a concert's percentile on its board.

use chrono::{Duration as Days, Timelike, Utc};
use lineup_tests::rankings::{read, sell_at};
use lineup_tests::{Reply, TestApp};
use serde_json::{json, Value};

/// `(concertId, rank, previousRank, movement)` of each row of a board page.
fn moves(reply: &Reply) -> Vec<(String, u64, Value, Value)> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["concertId"].as_str().unwrap().to_owned(),
                i["rank"].as_u64().unwrap(),
                i["previousRank"].clone(),
                i["movement"].clone(),
            )
        })
        .collect()
}

fn row(concert: &str, rank: u64, previous: Value, movement: Value) -> (String, u64, Value, Value) {
    (concert.to_owned(), rank, previous, movement)
}

fn up(by: u64) -> Value {
    json!({"kind": "up", "by": by})
}

fn down(by: u64) -> Value {
    json!({"kind": "down", "by": by})
}

/// A moment of today well inside the day in `zone`, so that "yesterday" is a whole day back
/// whatever the hour the test runs at: a test at 00:10 would otherwise pay "today" yesterday.
fn zone_with_room() -> (&'static str, chrono_tz::Tz) {
    let now = Utc::now();
    [
        ("UTC", chrono_tz::UTC),
        ("Asia/Seoul", chrono_tz::Asia::Seoul),
    ]
    .into_iter()
    .find(|(_, tz)| (1..23).contains(&now.with_timezone(tz).hour()))
    .expect("UTC and Seoul are 9 hours apart")
}

#[tokio::test]
async fn each_row_moves_against_the_day_before_as_it_stands_now_and_ties_share_a_rank() {
    let (zone, _) = zone_with_room();
    let app = TestApp::spawn(&[("RANKING_TIME_ZONE", zone)]).await;
    let now = Utc::now();
    let yesterday = now - Days::days(1);
    // Yesterday: a 5, b and c 3 (both 2nd), e 1.
    sell_at(
        &app,
        yesterday,
        &[
            ("y-a", "a", 5, &[]),
            ("y-b", "b", 3, &[]),
            ("y-c", "c", 3, &[]),
            ("y-e", "e", 1, &[]),
        ],
    )
    .await;
    // Today: b 4, c and d 2 (both 2nd), a 1.
    sell_at(
        &app,
        now,
        &[
            ("t-b", "b", 4, &[]),
            ("t-c", "c", 2, &[]),
            ("t-d", "d", 2, &[]),
            ("t-a", "a", 1, &[]),
        ],
    )
    .await;
    let expected = vec![
        row("b", 1, json!(2), up(1)),
        row("c", 2, json!(2), json!({"kind": "same"})),
        row("d", 2, Value::Null, json!({"kind": "new"})),
        row("a", 4, json!(1), down(3)),
    ];
    let first = read(&app, "/rankings/daily").await;
    assert_eq!(moves(&first), expected);
    // The top of the board is kept rendered: the second read is the kept page, the same.
    let kept = read(&app, "/rankings/daily").await;
    assert_eq!(moves(&kept), expected);
    // A page beyond the top, which is never kept, says the same.
    let second_page = read(&app, "/rankings/daily?offset=2&limit=2").await;
    assert_eq!(moves(&second_page), expected[2..]);

    // A late payment for yesterday moves yesterday's board, and so today's movement: e 11.
    sell_at(&app, yesterday, &[("y-e2", "e", 10, &[])]).await;
    let late = read(&app, "/rankings/daily").await;
    assert_eq!(
        moves(&late),
        vec![
            row("b", 1, json!(3), up(2)),
            row("c", 2, json!(3), up(1)),
            row("d", 2, Value::Null, json!({"kind": "new"})),
            row("a", 4, json!(2), down(2)),
        ]
    );

    // A concert's own read carries its movement and its percentile.
    let a = read(&app, "/rankings/daily/concerts/a?around=1").await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(
        (
            &a.body["rank"],
            &a.body["previousRank"],
            &a.body["movement"]
        ),
        (&json!(4), &json!(2), &down(2))
    );
    assert_eq!(
        (&a.body["total"], &a.body["percentile"]),
        (&json!(4), &json!(25.0))
    );
    assert_eq!(a.body["above"][0]["movement"], json!({"kind": "new"}));
    let c = read(&app, "/rankings/daily/concerts/c").await;
    // c shares rank 2 of 4 with d: three of the four stand at or below it.
    assert_eq!(c.body["percentile"], json!(75.0));

    // The weekly and monthly boards compare with the week and month before: yesterday is in
    // the same week or month as today, or in the one before.
    for period in ["weekly", "monthly"] {
        let board = read(&app, &format!("/rankings/{period}")).await;
        for (concert, _, previous, movement) in moves(&board) {
            assert!(!movement.is_null(), "{period} {concert}");
            assert_eq!(
                movement["kind"] == "new",
                previous.is_null(),
                "{period} {concert}"
            );
        }
    }
}

#[tokio::test]
async fn a_genre_board_compares_with_the_same_genre_the_bucket_before() {
    let (zone, _) = zone_with_room();
    let app = TestApp::spawn(&[("RANKING_TIME_ZONE", zone)]).await;
    let now = Utc::now();
    let yesterday = now - Days::days(1);
    sell_at(
        &app,
        yesterday,
        &[("y-x", "x", 2, &["rock"]), ("y-p", "p", 9, &["pop"])],
    )
    .await;
    sell_at(
        &app,
        now,
        &[
            ("t-y", "y", 3, &["rock"]),
            ("t-x", "x", 1, &["rock"]),
            ("t-p", "p", 9, &["pop"]),
        ],
    )
    .await;
    let rock = read(&app, "/rankings/daily?genre=rock").await;
    assert_eq!(
        moves(&rock),
        vec![
            row("y", 1, Value::Null, json!({"kind": "new"})),
            row("x", 2, json!(1), down(1)),
        ]
    );
}

#[tokio::test]
async fn nothing_to_compare_with_is_null_never_new() {
    let (zone, _) = zone_with_room();
    let now = Utc::now();
    let yesterday = now - Days::days(1);
    let sales: [(&str, &str, u32, &[&str]); 1] = [("t-k", "k", 1, &[])];

    // The all-time board has no bucket before.
    let app = TestApp::spawn(&[("RANKING_TIME_ZONE", zone)]).await;
    sell_at(&app, now, &sales).await;
    let all_time = read(&app, "/rankings/all-time").await;
    assert_eq!(
        moves(&all_time),
        vec![row("k", 1, Value::Null, Value::Null)]
    );

    // Keeping one day of daily boards, yesterday's is gone by today: its concerts are not
    // new, they are not compared.
    let app = TestApp::spawn(&[
        ("RANKING_TIME_ZONE", zone),
        ("RANKING_DAILY_RETENTION_DAYS", "1"),
    ])
    .await;
    sell_at(&app, now, &sales).await;
    let daily = read(&app, "/rankings/daily").await;
    assert_eq!(moves(&daily), vec![row("k", 1, Value::Null, Value::Null)]);

    // Keeping two, a read of yesterday's board compares with nothing: the day before is gone.
    let app = TestApp::spawn(&[
        ("RANKING_TIME_ZONE", zone),
        ("RANKING_DAILY_RETENTION_DAYS", "2"),
    ])
    .await;
    sell_at(&app, yesterday, &[("y-k", "k", 4, &[])]).await;
    sell_at(&app, now, &sales).await;
    let local_yesterday = yesterday
        .with_timezone(&zone.parse::<chrono_tz::Tz>().unwrap())
        .format("%Y-%m-%d");
    let oldest = read(&app, &format!("/rankings/daily?date={local_yesterday}")).await;
    assert_eq!(moves(&oldest), vec![row("k", 1, Value::Null, Value::Null)]);
    // Today's compares with yesterday's, which is kept.
    let today = read(&app, "/rankings/daily").await;
    assert_eq!(
        moves(&today),
        vec![row("k", 1, json!(1), json!({"kind": "same"}))]
    );
}

#[tokio::test]
async fn the_morning_fallback_compares_with_the_bucket_before_the_one_served() {
    let (zone, _) = zone_with_room();
    let app = TestApp::spawn(&[
        ("RANKING_TIME_ZONE", zone),
        ("RANKING_EARLY_CUTOFF", "23:59"),
    ])
    .await;
    let now = Utc::now();
    sell_at(&app, now - Days::days(2), &[("b-m", "m", 1, &[])]).await;
    sell_at(
        &app,
        now - Days::days(1),
        &[("y-m", "m", 2, &[]), ("y-n", "n", 5, &[])],
    )
    .await;
    sell_at(&app, now, &[("t-m", "m", 9, &[])]).await;
    let served = read(&app, "/rankings/daily").await;
    assert_eq!(served.body["fellBack"], true);
    assert_eq!(
        moves(&served),
        vec![
            row("n", 1, Value::Null, json!({"kind": "new"})),
            row("m", 2, json!(1), down(1)),
        ]
    );
}
