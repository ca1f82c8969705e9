//! Rolling windows (last-24h, last-7d) and trending boards: payment events and the tick
//! through the event applier, boards through the ranking API and, for trending scores,
//! straight from Redis.

use chrono::{DateTime, TimeDelta, Utc};
use lineup::ranking::Outcome;
use lineup::ranking::{Period, Rankings};
use lineup_tests::rankings::{
    envelope, items, paid, pay, read, schedule, server_now, tick, trending_scores,
};
use lineup_tests::TestApp;
use serde_json::{json, Value};

/// The rolling windows' bucket, 5 minutes.
pub(crate) const BUCKET_MS: i64 = 300_000;

fn rankings(app: &TestApp) -> &Rankings {
    &app.stack.ranking_api.rankings
}

/// `(concertId, score)` of a board read now, through the API.
pub(crate) async fn board(app: &TestApp, path: &str) -> Vec<(String, u64)> {
    items(&read(app, path).await)
        .into_iter()
        .map(|(concert, score, _)| (concert, score))
        .collect()
}

pub(crate) fn refunded(payment: &str, refund: &str, concert: &str, seats: u32) -> Value {
    envelope(
        "PaymentRefunded",
        json!({"paymentId": payment, "refundId": refund, "concertId": concert, "seats": seats}),
    )
}

fn ago(now: DateTime<Utc>, minutes: i64) -> String {
    (now - TimeDelta::minutes(minutes)).to_rfc3339()
}

#[tokio::test]
async fn a_payment_counts_on_the_rolling_and_trending_boards_overall_and_per_genre() {
    let app = TestApp::spawn(&[]).await;
    let now = server_now(&app).await;
    assert_eq!(
        pay(&app, &[paid("p1", "c1", 3, &["rock"], &now.to_rfc3339())]).await,
        [Outcome::Applied]
    );
    for period in ["last-24h", "last-7d"] {
        for genre in ["", "&genre=rock"] {
            let path = format!("/rankings/{period}?limit=5{genre}");
            assert_eq!(board(&app, &path).await, [("c1".into(), 3)], "{path}");
        }
        assert_eq!(
            read(&app, &format!("/rankings/{period}?genre=pop"))
                .await
                .body["total"],
            0
        );
        let page = read(&app, &format!("/rankings/{period}")).await;
        assert_eq!(page.body["bucket"], "rolling");
    }
    for genre in ["", "&genre=rock"] {
        let path = format!("/rankings/trending?limit=5{genre}");
        let trending = board(&app, &path).await;
        assert_eq!(trending.len(), 1, "{path}");
        assert_eq!(trending[0].0, "c1");
    }
    // Trending scores decayed sales: it has no rate order.
    read(&app, "/rankings/trending?by=rate")
        .await
        .assert_problem(400);
    assert_eq!(read(&app, "/rankings/last-24h?by=rate").await.status, 200);
    // A live board is read as of now: a date is bad input.
    for period in ["last-24h", "last-7d", "trending"] {
        read(&app, &format!("/rankings/{period}?date=2026-11-20"))
            .await
            .assert_problem(400);
    }
}

/// A trending score is decayed sales, not seats: its rows show no sell-through, even for a
/// concert whose capacity is known, on a page and around a concert.
#[tokio::test]
async fn trending_rows_show_no_rate() {
    let app = TestApp::spawn(&[]).await;
    schedule(&app, "c1", 10, "Show", None, "2027-01-01T19:00:00Z").await;
    let now = server_now(&app).await;
    pay(&app, &[paid("p1", "c1", 4, &[], &now.to_rfc3339())]).await;
    let daily = read(&app, "/rankings/daily").await;
    assert_eq!(daily.body["items"][0]["rate"], 0.4);
    let trending = read(&app, "/rankings/trending").await;
    assert_eq!(trending.body["items"][0]["capacity"], 10);
    assert!(
        trending.body["items"][0]["rate"].is_null(),
        "{}",
        trending.body
    );
    let around = read(&app, "/rankings/trending/concerts/c1?around=1").await;
    assert!(around.body["rate"].is_null(), "{}", around.body);
}

#[tokio::test]
async fn late_events_inside_a_window_count_and_older_ones_never_recreate_anything() {
    let app = TestApp::spawn(&[]).await;
    let now = server_now(&app).await;
    let verdicts = pay(
        &app,
        &[
            // Inside the last 24 hours (by more than a bucket).
            paid("in-day", "late", 2, &["rock"], &ago(now, 24 * 60 - 15)),
            // Outside the day, inside the week.
            paid("in-week", "week", 5, &["rock"], &ago(now, 24 * 60 + 15)),
            // Outside both, inside the dedupe window: only the calendar boards count it.
            paid("old", "old", 9, &["rock"], &ago(now, 8 * 24 * 60)),
        ],
    )
    .await;
    assert!(
        verdicts.iter().all(|v| *v == Outcome::Applied),
        "{verdicts:?}"
    );
    assert_eq!(
        board(&app, "/rankings/last-24h?genre=rock").await,
        [("late".into(), 2)]
    );
    assert_eq!(
        board(&app, "/rankings/last-7d").await,
        [("week".into(), 5), ("late".into(), 2)]
    );
    assert!(board(&app, "/rankings/all-time")
        .await
        .iter()
        .any(|(c, _)| c == "old"));
    // A tick changes nothing: everything counted is still inside its window.
    assert_eq!(tick(&app).await["processed"], 0);
    assert_eq!(
        board(&app, "/rankings/last-7d?genre=rock").await,
        [("week".into(), 5), ("late".into(), 2)]
    );
    // A refund of the old payment finds nothing on the windows to take from.
    pay(&app, &[refunded("old", "r-old", "old", 9)]).await;
    for path in [
        "/rankings/last-24h",
        "/rankings/last-7d",
        "/rankings/trending",
    ] {
        assert!(
            board(&app, path).await.iter().all(|(c, _)| c != "old"),
            "{path}"
        );
    }
}

#[tokio::test]
async fn a_cancelled_concert_leaves_the_rolling_and_trending_boards() {
    let app = TestApp::spawn(&[]).await;
    let now = server_now(&app).await.to_rfc3339();
    pay(
        &app,
        &[
            paid("p1", "doomed", 5, &["rock"], &now),
            paid("p2", "fine", 1, &["rock"], &now),
        ],
    )
    .await;
    let cancel = envelope("ConcertCancelled", json!({"concertId": "doomed"}));
    assert_eq!(pay(&app, &[cancel]).await, [Outcome::Applied]);
    for period in ["last-24h", "last-7d", "trending"] {
        for genre in ["", "?genre=rock"] {
            let path = format!("/rankings/{period}{genre}");
            let got = board(&app, &path).await;
            assert_eq!(got.len(), 1, "{path}: {got:?}");
            assert_eq!(got[0].0, "fine", "{path}");
        }
    }
    // A refund after the cancellation, and the tick, bring nothing back.
    pay(&app, &[refunded("p1", "r1", "doomed", 2)]).await;
    tick(&app).await;
    for period in ["last-24h", "last-7d", "trending"] {
        assert_eq!(
            read(&app, &format!("/rankings/{period}")).await.body["total"],
            1
        );
    }
}

#[tokio::test]
async fn a_concert_selling_now_outranks_one_that_sold_more_days_ago() {
    let app = TestApp::spawn(&[]).await;
    let now = server_now(&app).await;
    pay(
        &app,
        &[
            paid("hot", "selling-now", 5, &["jazz"], &ago(now, 10)),
            paid(
                "cooling",
                "sold-two-days-ago",
                100,
                &["jazz"],
                &ago(now, 2 * 24 * 60),
            ),
            paid(
                "cold",
                "sold-last-week",
                1000,
                &["jazz"],
                &ago(now, 8 * 24 * 60),
            ),
        ],
    )
    .await;
    for path in ["/rankings/trending", "/rankings/trending?genre=jazz"] {
        let got: Vec<String> = board(&app, path)
            .await
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        assert_eq!(got, ["selling-now", "sold-two-days-ago"], "{path}");
    }
    // By seats, the week says the opposite.
    assert_eq!(
        board(&app, "/rankings/last-7d").await,
        [("sold-two-days-ago".into(), 100), ("selling-now".into(), 5)]
    );
}

#[tokio::test]
async fn trending_generations_hold_each_sale_at_its_decayed_weight_and_roll_over() {
    // A half-life of an hour: generations of 12 hours.
    let app = TestApp::spawn(&[("RANKING_TRENDING_HALF_LIFE_HOURS", "1")]).await;
    let half_life_ms = 3_600_000f64;
    let generation_ms = 12 * 3_600_000;
    let now = server_now(&app).await;
    // An hour ago, but not before this generation began: in the first hour of a generation
    // (00:00–01:00 and 12:00–13:00 UTC) an hour ago lies in the one before, which the next
    // generation does not hold.
    let began = DateTime::from_timestamp_millis(
        now.timestamp_millis().div_euclid(generation_ms) * generation_ms,
    )
    .unwrap();
    let recent = (now - TimeDelta::hours(1)).max(began);
    let older = now - TimeDelta::hours(13);
    pay(
        &app,
        &[
            paid("recent", "recent", 3, &[], &recent.to_rfc3339()),
            paid("older", "older", 1000, &[], &older.to_rfc3339()),
        ],
    )
    .await;
    let read_at = |at: DateTime<Utc>| rankings(&app).board_at(Period::Trending, at, None);
    let current = read_at(now);
    let generation: i64 = current.bucket.parse().unwrap();
    assert_eq!(generation, now.timestamp_millis().div_euclid(generation_ms));
    // Independently: seats · 2^((t − kP)/H) on generation k.
    let weight = |at: DateTime<Utc>, k: i64| {
        ((at.timestamp_millis() - k * generation_ms) as f64 / half_life_ms).exp2()
    };
    let expect = |seats: f64, at: DateTime<Utc>, k: i64| seats * weight(at, k);
    let close = |got: f64, want: f64| (got - want).abs() <= want * 1e-12;
    let scores = trending_scores(&app, &current).await;
    let recent_score = scores.iter().find(|(c, _)| c == "recent").unwrap().1;
    assert!(
        close(recent_score, expect(3.0, recent, generation)),
        "{scores:?}"
    );
    // 13 hours ago lies in this generation only if this generation began before it.
    let older_inside = older.timestamp_millis() >= (generation - 1) * generation_ms;
    let older_score = scores.iter().find(|(c, _)| c == "older").map(|(_, s)| *s);
    assert_eq!(older_score.is_some(), older_inside, "{scores:?}");
    if let Some(score) = older_score {
        assert!(
            close(score, expect(1000.0, older, generation)),
            "{scores:?}"
        );
    }
    // Every weight stays within 2^±12 of a seat.
    for (_, score) in &scores {
        assert!(*score < 1000.0 * 4096.0 && *score > 3.0 / 4096.0);
    }
    // Twelve hours on, reads use the next generation, written already: it holds the recent
    // sale at its weight there, and not the one more than a generation older.
    let next = read_at(now + TimeDelta::hours(12));
    assert_eq!(next.bucket, (generation + 1).to_string());
    let scores = trending_scores(&app, &next).await;
    assert_eq!(scores.len(), 1, "{scores:?}");
    assert_eq!(scores[0].0, "recent");
    assert!(close(scores[0].1, expect(3.0, recent, generation + 1)));
    // The same sale is worth the same now from either generation.
    let trend = rankings(&app).trend();
    let worth = |score: f64, k: i64| score * trend.scale(k, now);
    assert!(close(
        worth(scores[0].1, generation + 1),
        worth(recent_score, generation)
    ));
    // 3 seats, halved for every hour since (1.5 when they were sold an hour ago).
    let hours_since = (now - recent).num_milliseconds() as f64 / half_life_ms;
    assert!(close(
        worth(recent_score, generation),
        3.0 * (-hours_since).exp2()
    ));
    // Generation boards are listed in the concert index and expire after their reads.
    let ttl: i64 = redis::cmd("EXPIRETIME")
        .arg(rankings(&app).board_key(&next))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(ttl, (generation + 2) * generation_ms / 1000 + 86_400);
}

#[tokio::test]
async fn a_payment_redelivered_and_refunded_in_its_own_batch_counts_once_net() {
    let app = TestApp::spawn(&[]).await;
    let now = server_now(&app).await.to_rfc3339();
    let payment = paid("p1", "c1", 5, &["rock"], &now);
    let verdicts = pay(
        &app,
        &[
            refunded("p1", "r-early", "c1", 1),
            payment.clone(),
            payment.clone(),
            refunded("p1", "r1", "c1", 2),
        ],
    )
    .await;
    assert_eq!(
        verdicts,
        [
            Outcome::Pending,
            Outcome::Applied,
            Outcome::Duplicate,
            Outcome::Applied
        ]
    );
    assert_eq!(pay(&app, &[payment]).await, [Outcome::Duplicate]);
    for path in ["/rankings/last-24h", "/rankings/last-7d?genre=rock"] {
        assert_eq!(board(&app, path).await, [("c1".into(), 2)], "{path}");
    }
    // Trending holds the 2 seats left at their weight: what a lone 2-seat payment weighs.
    pay(&app, &[paid("p2", "c2", 2, &["rock"], &now)]).await;
    let board = rankings(&app).board_now(Period::Trending, None);
    let scores = trending_scores(&app, &board).await;
    assert_eq!(scores.len(), 2, "{scores:?}");
    assert!(
        (scores[0].1 - scores[1].1).abs() <= scores[0].1 * 1e-12,
        "{scores:?}"
    );
    // Refunding the rest takes c1 off every live board.
    pay(&app, &[refunded("p1", "r2", "c1", 5)]).await;
    for period in ["last-24h", "last-7d", "trending"] {
        let got = read(&app, &format!("/rankings/{period}")).await;
        assert_eq!(items(&got).len(), 1, "{period}");
        assert_eq!(items(&got)[0].0, "c2", "{period}");
    }
}
