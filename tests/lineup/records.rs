//! Payment records: a refund finds every board its payment counted on from the record's few
//! bytes; records live in groups that end; records of the old layout, one hash per payment,
//! are still read by redeliveries and refunds.

use chrono::Utc;
use lineup::ranking::Outcome;
use lineup_tests::rankings::{envelope, items, paid, read, sorted_set};
use lineup_tests::TestApp;
use serde_json::{json, Value};

/// Boards and dedupe records that last ten years, so dated events stay plausible.
const LONG_RETENTION: [(&str, &str); 4] = [
    ("RANKING_DAILY_RETENTION_DAYS", "3650"),
    ("RANKING_WEEKLY_RETENTION_WEEKS", "520"),
    ("RANKING_MONTHLY_RETENTION_MONTHS", "120"),
    ("RANKING_DEDUPE_DAYS", "3660"),
];

fn refund(payment: &str, refund: &str, concert: &str, seats: u32) -> Value {
    envelope(
        "PaymentRefunded",
        json!({"paymentId": payment, "refundId": refund, "concertId": concert, "seats": seats}),
    )
}

/// Applies `events` and folds what they left.
async fn send(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    lineup_tests::rankings::pay(app, events).await
}

/// The seats `concert` has on the board read at `path`, 0 when it is not on it.
async fn seats_on(app: &TestApp, path: &str, concert: &str) -> u64 {
    let board = read(app, path).await;
    items(&board)
        .into_iter()
        .find(|(c, _, _)| c == concert)
        .map_or(0, |(_, seats, _)| seats)
}

/// Every calendar board (overall and per genre) holding `date`, by its read path.
fn calendar_paths(date: &str, genres: &[&str]) -> Vec<String> {
    let mut paths = Vec::new();
    for period in ["daily", "weekly", "monthly", "all-time"] {
        paths.push(format!("/rankings/{period}?date={date}&limit=100"));
        for genre in genres {
            paths.push(format!(
                "/rankings/{period}?date={date}&genre={genre}&limit=100"
            ));
        }
    }
    paths
}

/// Every live board (rolling windows and trending, overall and per genre), by its read path.
fn live_paths(genres: &[&str]) -> Vec<String> {
    let mut paths = Vec::new();
    for period in ["last-24h", "last-7d"] {
        paths.push(format!("/rankings/{period}?limit=100"));
        for genre in genres {
            paths.push(format!("/rankings/{period}?genre={genre}&limit=100"));
        }
    }
    paths
}

/// A refund finds each board from the day and ISO week the record keeps, so payments on the
/// days where the week-based year is not the calendar year are refunded from the right
/// weekly boards: 2020-12-31 and 2021-01-01 in 2020-W53, 2024-12-30 in 2025-W01.
#[tokio::test]
async fn a_refund_takes_back_from_every_calendar_board_its_payment_counted_on_across_new_year() {
    let app = TestApp::spawn(&LONG_RETENTION).await;
    let days = ["2020-12-31", "2021-01-01", "2024-12-30", "2025-12-29"];
    let genres = ["rock", "k-pop"];
    for (i, day) in days.iter().enumerate() {
        let concert = format!("nye-{i}");
        let at = format!("{day}T12:00:00Z");
        assert_eq!(
            send(&app, &[paid(&format!("p{i}"), &concert, 5, &genres, &at)]).await,
            [Outcome::Applied]
        );
        for path in calendar_paths(day, &genres) {
            assert_eq!(seats_on(&app, &path, &concert).await, 5, "{path}");
        }
        assert_eq!(
            send(
                &app,
                &[refund(&format!("p{i}"), &format!("r{i}"), &concert, 2)]
            )
            .await,
            [Outcome::Applied]
        );
        for path in calendar_paths(day, &genres) {
            assert_eq!(
                seats_on(&app, &path, &concert).await,
                3,
                "{path} after 2 refunded"
            );
        }
        assert_eq!(
            send(
                &app,
                &[refund(&format!("p{i}"), &format!("r{i}-rest"), &concert, 9)]
            )
            .await,
            [Outcome::Applied]
        );
        for path in calendar_paths(day, &genres) {
            assert_eq!(
                seats_on(&app, &path, &concert).await,
                0,
                "{path} after all refunded"
            );
        }
    }
    let w53 = read(&app, "/rankings/weekly?date=2021-01-01").await;
    assert_eq!(w53.body["bucket"], "2020-W53");
    let w01 = read(&app, "/rankings/weekly?date=2024-12-30").await;
    assert_eq!(w01.body["bucket"], "2025-W01");
}

/// A record written before records were grouped: one hash per payment with its contents, and,
/// once folded, its calendar boards and windows note. An older version's fold entry for it is
/// folded; a redelivery of it is a duplicate, or a conflict naming what it first said; its
/// refunds take back from each board it counted on, rolling and trending included, and never
/// more than its seats.
#[tokio::test]
async fn a_record_of_the_old_layout_is_still_read_by_redeliveries_and_refunds() {
    let app = TestApp::spawn(&[]).await;
    let now = Utc::now().to_rfc3339();
    let genres = ["rock", "pop"];
    let rankings = &app.stack.event_applier.rankings;
    let prefix = &app.config.key_prefix;
    let fold_key = format!("{prefix}:{{rk}}:fold");
    // Twenty payments in one call: the call folds the first within its budget and leaves the
    // rest in the fold queue, the last one last.
    let payments: Vec<Value> = (0..20)
        .map(|i| paid(&format!("old-{i}"), &format!("c-{i}"), 3, &genres, &now))
        .collect();
    let verdicts = event_applier::apply_events(&payments, &app.stack.event_applier).await;
    assert!(
        verdicts.iter().all(|v| *v == Outcome::Applied),
        "{verdicts:?}"
    );
    let mut inspect = app.inspect.clone();
    let last: String = redis::cmd("LINDEX")
        .arg(&fold_key)
        .arg(-1)
        .query_async(&mut inspect)
        .await
        .expect("the fold queue's last entry");
    // Make that payment one the old version recorded: its record a hash of its own, its
    // entry naming it, and no record of today's layout.
    let words: Vec<&str> = last.splitn(5, ' ').collect();
    let [kind, seats, group, field, shape] = words[..] else {
        panic!("{last}")
    };
    assert_eq!((kind, seats), ("p", "3"), "{last}");
    let removed: u32 = redis::cmd("HDEL")
        .arg(group)
        .arg(hex::decode(field).expect("hex"))
        .query_async(&mut inspect)
        .await
        .expect("HDEL");
    assert_eq!(removed, 1, "the record of today's layout");
    let legacy = format!("{prefix}:{{rk}}:payment:old-19");
    let () = redis::pipe()
        .cmd("HSET")
        .arg(&legacy)
        .arg("concert")
        .arg("c-19")
        .arg("seats")
        .arg(3)
        .arg("contents")
        .arg("concertId=c-19 seats=3 genres=pop,rock")
        .ignore()
        .cmd("EXPIRE")
        .arg(&legacy)
        .arg(35 * 86_400)
        .ignore()
        .cmd("LSET")
        .arg(&fold_key)
        .arg(-1)
        .arg(format!("P 3 {legacy} {shape}"))
        .ignore()
        .query_async(&mut inspect)
        .await
        .expect("the old layout");
    assert_eq!(rankings.fold().await.expect("the fold").left, 0);
    let noted: (Option<String>, Option<String>) = redis::cmd("HMGET")
        .arg(&legacy)
        .arg("boards")
        .arg("windows")
        .query_async(&mut inspect)
        .await
        .expect("the old record");
    assert_eq!(
        noted.0.as_deref().map(|b| b.split(' ').count()),
        Some(12),
        "the old fold lists the calendar boards"
    );
    let today = lineup::ranking::local_day(Utc::now(), rankings.settings().time_zone)
        .format("%Y-%m-%d")
        .to_string();
    let mut boards = calendar_paths(&today, &genres);
    boards.extend(live_paths(&genres));
    for path in &boards {
        assert_eq!(seats_on(&app, path, "c-19").await, 3, "{path}");
    }
    let trending = trending_of(&app, "c-19").await;
    assert!(trending > 0.0);

    // Redelivered as it was: a duplicate; with other seats: a conflict naming what it said.
    assert_eq!(
        send(&app, &[payments[19].clone()]).await,
        [Outcome::Duplicate]
    );
    let other = send(&app, &[paid("old-19", "c-19", 4, &genres, &now)]).await;
    let [Outcome::Conflict(reason)] = &other[..] else {
        panic!("{other:?}")
    };
    assert!(
        reason.contains("first delivered with concertId=c-19 seats=3 genres=pop,rock"),
        "{reason}"
    );

    // A refund of 1 takes 1 from every board, and its share of the trending weight.
    assert_eq!(
        send(&app, &[refund("old-19", "old-r1", "c-19", 1)]).await,
        [Outcome::Applied]
    );
    for path in &boards {
        assert_eq!(seats_on(&app, path, "c-19").await, 2, "{path}");
    }
    let after = trending_of(&app, "c-19").await;
    assert!(
        (after - trending * 2.0 / 3.0).abs() < 1e-9 * trending,
        "{after} {trending}"
    );
    assert_eq!(
        send(&app, &[refund("old-19", "old-r1", "c-19", 1)]).await,
        [Outcome::Duplicate]
    );
    // A refund of more than is left takes what is left: the concert leaves every board.
    assert_eq!(
        send(&app, &[refund("old-19", "old-r2", "c-19", 9)]).await,
        [Outcome::Applied]
    );
    for path in &boards {
        assert_eq!(seats_on(&app, path, "c-19").await, 0, "{path}");
    }
    assert_eq!(trending_of(&app, "c-19").await, 0.0);
    assert_eq!(
        send(&app, &[refund("old-19", "old-r3", "c-19", 1)]).await,
        [Outcome::Ignored("payment already fully refunded".into())]
    );
    // The payment of today's layout beside it is untouched.
    for path in &boards {
        assert_eq!(seats_on(&app, path, "c-18").await, 3, "{path}");
    }
}

/// `concert`'s weight on the current trending generation's overall board, 0 when absent.
async fn trending_of(app: &TestApp, concert: &str) -> f64 {
    let rankings = &app.stack.event_applier.rankings;
    let board = rankings.board_now(lineup::ranking::Period::Trending, None);
    lineup_tests::rankings::trending_scores(app, &board)
        .await
        .into_iter()
        .find(|(c, _)| c == concert)
        .map_or(0.0, |(_, score)| score)
}

/// The ends of the record groups the index lists, in hours.
async fn group_ends(app: &TestApp) -> Vec<i64> {
    let index = format!("{}:{{rk}}:records", app.config.key_prefix);
    sorted_set(app, &index)
        .await
        .into_iter()
        .map(|(end, score)| {
            let end: i64 = end.parse().expect("an hour");
            assert_eq!(score, (end * 3600) as f64, "scored by its end in seconds");
            end
        })
        .collect()
}

/// Records live in groups by when they end: a group ends at its end hour, between the dedupe
/// window and a quarter of it more (and an hour) after its records were written, and every
/// record in it ends with it. An operator who shortens the window starts new groups; a redelivery or a
/// refund of a payment recorded before still finds its record.
#[tokio::test]
async fn records_live_in_groups_that_end_and_are_found_whatever_the_window_was() {
    let app = TestApp::spawn(&[]).await;
    let now = Utc::now();
    let at = now.to_rfc3339();
    let first = paid("g-1", "grouped", 4, &["rock"], &at);
    assert_eq!(
        send(&app, std::slice::from_ref(&first)).await,
        [Outcome::Applied]
    );
    let ends = group_ends(&app).await;
    assert_eq!(ends.len(), 1, "{ends:?}");
    let (window, span) = (35 * 86_400, 210 * 3600);
    let lives = ends[0] * 3600 - now.timestamp();
    assert!(
        (window + 3600 - 5..=window + 3600 + span).contains(&lives),
        "{lives}"
    );
    let prefix = &app.config.key_prefix;
    let keys = app.keys_with_ttl().await;
    let groups: Vec<&String> = keys
        .iter()
        .map(|(key, _)| key)
        .filter(|key| key.starts_with(&format!("{prefix}:{{rk}}:records:")))
        .collect();
    assert_eq!(groups.len(), 256, "one hash per slot");
    let mut inspect = app.inspect.clone();
    for group in groups {
        let slot: u16 = group
            .strip_prefix(&format!("{prefix}:{{rk}}:records:{}:", ends[0]))
            .expect("a slot of the one group")
            .parse()
            .expect("a slot number");
        assert!(slot < 256, "{group}");
        let expires: i64 = redis::cmd("EXPIRETIME")
            .arg(group)
            .query_async(&mut inspect)
            .await
            .expect("EXPIRETIME");
        assert_eq!(expires, ends[0] * 3600, "{group} ends at its group's end");
    }
    let index_expires: i64 = redis::cmd("EXPIRETIME")
        .arg(format!("{prefix}:{{rk}}:records"))
        .query_async(&mut inspect)
        .await
        .expect("EXPIRETIME");
    assert_eq!(
        index_expires,
        ends[0] * 3600,
        "the index ends with its last group"
    );
    let per_payment: Vec<&String> = keys
        .iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains(":{rk}:payment:"))
        .collect();
    assert!(
        per_payment.is_empty(),
        "no key per payment: {per_payment:?}"
    );

    // A second payment in the same span joins the group; its end does not move.
    assert_eq!(
        send(&app, &[paid("g-2", "grouped", 1, &["rock"], &at)]).await,
        [Outcome::Applied]
    );
    assert_eq!(group_ends(&app).await, ends);

    // The operator shortens the window to 10 days.
    let redeployed = app.redeployed(&[("RANKING_DEDUPE_DAYS", "10")]).await;
    let updater = &redeployed.event_applier;
    let redelivered = event_applier::apply_events(&[first], updater).await;
    assert_eq!(redelivered, [Outcome::Duplicate]);
    let applied =
        event_applier::apply_events(&[paid("g-3", "grouped", 2, &["rock"], &at)], updater).await;
    assert_eq!(applied, [Outcome::Applied]);
    let ends_now = group_ends(&app).await;
    assert_eq!(ends_now.len(), 2, "{ends_now:?}");
    let newer = ends_now
        .iter()
        .find(|end| **end != ends[0])
        .expect("a new group");
    let lives = newer * 3600 - Utc::now().timestamp();
    assert!(
        (10 * 86_400 + 3600 - 5..=10 * 86_400 + 61 * 3600).contains(&lives),
        "{lives}"
    );
    let refunded =
        event_applier::apply_events(&[refund("g-1", "g-r1", "grouped", 4)], updater).await;
    assert_eq!(refunded, [Outcome::Applied]);
    updater.rankings.fold().await.expect("the fold");
    assert_eq!(
        seats_on(&app, "/rankings/daily?limit=10", "grouped").await,
        3,
        "4 + 1 + 2, less the 4 refunded"
    );
}

/// In a group's last hour the tick unlinks every slot of it and takes it off the index, so
/// Redis frees it off its main thread; the groups still live stay. (The group that ends is
/// planted as the apply script writes one: waiting 35 days is not a test.)
#[tokio::test]
async fn the_tick_unlinks_a_group_in_its_last_hour() {
    let app = TestApp::spawn(&[]).await;
    let at = Utc::now().to_rfc3339();
    assert_eq!(
        send(&app, &[paid("kept", "sweep", 1, &["rock"], &at)]).await,
        [Outcome::Applied]
    );
    let live = group_ends(&app).await;
    let prefix = &app.config.key_prefix;
    let ending = Utc::now().timestamp() / 3600 + 1;
    let mut inspect = app.inspect.clone();
    let mut planted = redis::pipe();
    planted
        .cmd("ZADD")
        .arg(format!("{prefix}:{{rk}}:records"))
        .arg(ending * 3600)
        .arg(ending)
        .ignore();
    for slot in [0, 17, 255] {
        let group = format!("{prefix}:{{rk}}:records:{ending}:{slot}");
        planted
            .cmd("HSET")
            .arg(&group)
            .arg("a field")
            .arg("a record")
            .ignore()
            .cmd("EXPIREAT")
            .arg(&group)
            .arg(ending * 3600)
            .ignore();
    }
    let () = planted.query_async(&mut inspect).await.expect("planted");
    lineup_tests::rankings::tick(&app).await;
    let keys = app.keys_with_ttl().await;
    let left: Vec<&String> = keys
        .iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains(&format!(":records:{ending}:")))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        group_ends(&app).await,
        live,
        "only the ending group left the index"
    );
    assert_eq!(
        send(&app, &[paid("kept", "sweep", 1, &["rock"], &at)]).await,
        [Outcome::Duplicate],
        "the live group still holds its record"
    );
}
