//! The ranking tick on the real clock: with no event arriving, it takes the payments of a
//! bucket that has left each rolling window off the boards. Its one test waits for the next
//! 5-minute bucket on Redis's clock (30 s to 5 min), so it sorts near the start of the test
//! binary and its wait overlaps the other tests (`tests/real-time` names it).

use std::time::Duration;

use chrono::DateTime;
use lineup::ranking::Outcome;
use lineup_tests::rankings::{paid, pay, server_now, tick};
use lineup_tests::TestApp;

use crate::windows::{board, refunded, BUCKET_MS};

/// Sleeps until the next 5-minute bucket starts on the server's clock, plus a second.
async fn wait_for_next_bucket(app: &TestApp) {
    let now = server_now(app).await.timestamp_millis();
    let next = (now.div_euclid(BUCKET_MS) + 1) * BUCKET_MS;
    lineup_tests::sleep(Duration::from_millis((next - now + 1_000) as u64)).await;
}

#[tokio::test]
async fn the_tick_slides_the_windows_with_no_event_arriving_and_refunds_follow() {
    let app = TestApp::spawn(&[]).await;
    // Payments in the oldest bucket each window still holds leave it when the next bucket
    // starts. Start early in a bucket, so they are inside when they arrive.
    let mut now = server_now(&app).await;
    if BUCKET_MS - now.timestamp_millis().rem_euclid(BUCKET_MS) < 30_000 {
        wait_for_next_bucket(&app).await;
        now = server_now(&app).await;
    }
    let bucket_start = now.timestamp_millis().div_euclid(BUCKET_MS) * BUCKET_MS;
    let at = |buckets_back: i64| {
        DateTime::from_timestamp_millis(bucket_start - buckets_back * BUCKET_MS + 1_000)
            .unwrap()
            .to_rfc3339()
    };
    let verdicts = pay(
        &app,
        &[
            paid("edge-day", "leaving-day", 4, &["pop"], &at(287)),
            paid("edge-week", "leaving-week", 6, &["pop"], &at(2015)),
            paid("stays", "staying", 1, &["pop"], &at(0)),
            paid("stays-2", "refunded-now", 3, &["pop"], &at(0)),
            paid("edge-day-2", "refunded-later", 7, &[], &at(287)),
        ],
    )
    .await;
    assert!(
        verdicts.iter().all(|v| *v == Outcome::Applied),
        "{verdicts:?}"
    );
    // A refund before the tick takes its seats back from every window.
    pay(&app, &[refunded("stays-2", "r1", "refunded-now", 1)]).await;
    assert_eq!(
        board(&app, "/rankings/last-24h").await,
        [
            ("refunded-later".into(), 7),
            ("leaving-day".into(), 4),
            ("refunded-now".into(), 2),
            ("staying".into(), 1)
        ]
    );
    assert_eq!(
        board(&app, "/rankings/last-7d?genre=pop").await[0],
        ("leaving-week".into(), 6)
    );

    wait_for_next_bucket(&app).await;
    // No event arrives; the tick alone slides the windows.
    let report = tick(&app).await;
    // One field per window for each of the three payments that left.
    assert_eq!(report["processed"], 3, "{report}");
    assert_eq!(report["more"], false, "{report}");
    assert_eq!(
        board(&app, "/rankings/last-24h").await,
        [("refunded-now".into(), 2), ("staying".into(), 1)]
    );
    assert_eq!(
        board(&app, "/rankings/last-24h?genre=pop").await,
        [("refunded-now".into(), 2), ("staying".into(), 1)]
    );
    let week = board(&app, "/rankings/last-7d").await;
    assert!(week.iter().all(|(c, _)| c != "leaving-week"), "{week:?}");
    assert!(week.contains(&("leaving-day".into(), 4)), "{week:?}");
    assert!(week.contains(&("refunded-later".into(), 7)), "{week:?}");
    // A refund after its bucket left the day takes from the week only.
    pay(&app, &[refunded("edge-day-2", "r2", "refunded-later", 5)]).await;
    assert!(board(&app, "/rankings/last-24h")
        .await
        .iter()
        .all(|(c, _)| c != "refunded-later"));
    assert!(board(&app, "/rankings/last-7d")
        .await
        .contains(&("refunded-later".into(), 2)));
    // A refund of a payment that left both windows recreates nothing.
    pay(&app, &[refunded("edge-week", "r3", "leaving-week", 6)]).await;
    assert!(board(&app, "/rankings/last-7d")
        .await
        .iter()
        .all(|(c, _)| c != "leaving-week"));
    // A second tick has nothing left to do.
    assert_eq!(tick(&app).await["processed"], 0);
}
