//! Replay: ten thousand payment, refund and cancellation events over the six weeks before
//! the run (two or three months) and four genres, and up to three versions of most
//! concerts' details, each delivered one to three times, shuffled within a window (a third
//! of the refunds before their payment), partly concurrently, partly in SQS batches and
//! partly one by one. The calendar, rate, rolling and trending boards and the details must
//! equal an independent in-memory model of the stream, and every calendar board read must
//! show each row's movement since the model's board one bucket before. Prints a
//! `RELIABILITY:` line.

use std::collections::BTreeMap;

use chrono::Utc;
use lineup::ids::Genre;
use lineup::ranking::{Board, Period};
use lineup_tests::TestApp;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde_json::Value;

mod live;
mod movement;
mod stream;

pub(crate) use live::*;
pub(crate) use movement::*;
pub(crate) use stream::*;

/// 10 000 events (payments, refunds, 5 cancellations) over 41 days, 7 ISO weeks, 2 months and 4
/// genres. Each is delivered 1–3 times, shuffled within windows of 100, so some refunds come a
/// window before their payment. Each window's calls run concurrently, by three paths: direct, SQS
/// batches of up to 10, and single EventBridge invocations. Every board (daily, weekly, monthly,
/// all-time; overall and per genre) must equal an independent in-memory model of the stream, in
/// which every refund counts whatever its order of arrival. Redis must hold no other board.
/// Every calendar board, by seats and by rate, is then read through the ranking API as a whole
/// page, a top 10 twice (rendered, then kept), its middle concert's own read with 3 rows either
/// side, and a many-concerts read of all 40 concerts: each row's rank, `previousRank` and
/// `movement` must follow the competition ranks (1, 2, 2, 4) the test computes on the model's
/// board one bucket before (the day, ISO week or month before; `new` off it; null on
/// all-time). The pages and many-concerts reads are repeated by the API redeployed with a
/// shorter retention, under which the older buckets before are gone: null there. The
/// `RELIABILITY:` line gives the counts of events, deliveries, calls, boards and rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_shuffled_duplicated_events_match_an_independent_model() {
    let retention = KEPT.vars();
    let mut vars: Vec<(&str, &str)> = retention.iter().map(|(k, v)| (*k, v.as_str())).collect();
    // The stream is dated: keep its events inside the dedupe window.
    vars.push(("RANKING_DEDUPE_DAYS", "3660"));
    let app = TestApp::spawn(&vars).await;
    let mut rng = StdRng::seed_from_u64(2026);
    let stream = generate(&mut rng, Utc::now(), EVENTS, 41);
    let (by_window, deliveries, early_refunds, versions) =
        schedule(&mut rng, &stream, EVENTS / WINDOW + 1);
    let calls = deliver_windows(&app, &mut rng, by_window).await;

    // What the apply calls left in the fold queue reaches the boards at the tick's fold.
    let fold = app.stack.event_applier.rankings.fold().await.expect("fold");
    assert_eq!(fold.left, 0, "{fold:?}");
    let expected = model(&stream);
    for ((period, bucket, genre), concerts) in &expected {
        let got = board(&app, period, &day_in(period, bucket), genre).await;
        assert_eq!(&got, concerts, "{period} {bucket} {genre:?}");
    }
    // And no calendar board holds anything the model does not.
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:board:*", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let calendar = keys
        .iter()
        .filter(|k| !k.contains(":last-") && !k.contains(":trending:"))
        .count();
    assert_eq!(calendar, expected.len(), "boards in Redis vs the model");
    let (rolling, trending) = compare_live_boards(&app, &stream).await;

    // The details hash holds the latest version of each concert not cancelled.
    let details = details_model(&stream);
    let stored: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(app.stack.event_applier.rankings.details_key())
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let stored: BTreeMap<String, (i64, u64, Value)> = stored
        .into_iter()
        .map(|(concert, value)| {
            let mut words = value.splitn(3, ' ');
            let at = words.next().unwrap().parse().unwrap();
            let capacity = words.next().unwrap().parse().unwrap();
            let json = serde_json::from_str(words.next().unwrap()).unwrap();
            (concert, (at, capacity, json))
        })
        .collect();
    assert_eq!(stored, details, "details hash vs the model");

    // Every rate board: the model's seats over the latest capacity, in millionths, for the
    // concerts whose capacity is known; no rate board beyond those.
    let mut rate_boards = 0;
    for ((period, bucket, genre), concerts) in &expected {
        let board = Board {
            period: Period::parse(period).unwrap(),
            bucket: bucket.clone(),
            genre: genre.as_deref().map(|g| Genre::parse(g).unwrap()),
        };
        let want: BTreeMap<String, i64> = concerts
            .iter()
            .filter_map(|(concert, seats)| {
                let (_, capacity, _) = details.get(concert)?;
                Some((concert.clone(), (seats * 1_000_000 / capacity) as i64))
            })
            .collect();
        let got: BTreeMap<String, i64> = lineup_tests::rankings::rate_board(&app, &board)
            .await
            .into_iter()
            .collect();
        assert_eq!(got, want, "rate {period} {bucket} {genre:?}");
        rate_boards += usize::from(!want.is_empty());
    }
    let rate_keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:rate:*", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    // The rolling boards' rate boards were compared with the window model above.
    let calendar_rates = rate_keys.iter().filter(|k| !k.contains(":last-")).count();
    assert_eq!(
        calendar_rates, rate_boards,
        "rate boards in Redis vs the model"
    );

    // Movement: every calendar board read, by seats and by rate, as a page, a kept page, a
    // concert's own read and a many-concerts read, against the model's competition ranks one
    // bucket before; then pages and many-concerts reads by a redeployed API whose shorter
    // retention no longer keeps the older buckets before.
    let kept = check_movement(&app.stack.ranking_api, &expected, &details, KEPT, true).await;
    for (kind, count) in [
        ("up", kept.up),
        ("down", kept.down),
        ("same", kept.same),
        ("new", kept.new),
        ("tied before", kept.tied_before),
        ("all-time", kept.all_time),
    ] {
        assert!(count > 0, "no {kind} row: {kept:?}");
    }
    assert_eq!(kept.gone, 0, "{kept:?}");
    // Each top 10 read twice was kept, so its second read came from the page cache; beside
    // them, the many-concerts reads' answers.
    let fields: Vec<String> = redis::cmd("HKEYS")
        .arg(app.stack.ranking_api.rankings.page_cache_key())
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let (answers, pages): (Vec<_>, Vec<_>) =
        fields.iter().partition(|f| f.starts_with("concerts "));
    assert_eq!(pages.len(), kept.kept_pages, "pages kept");
    assert!(!answers.is_empty(), "many-concerts answers kept");
    let short = SHORT.vars();
    let shorter: Vec<(&str, &str)> = short.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let redeployed = app.redeployed(&shorter).await;
    let gone = check_movement(&redeployed.ranking_api, &expected, &details, SHORT, false).await;
    assert!(
        gone.gone > 0 && gone.up + gone.down + gone.same + gone.new > 0,
        "{gone:?}"
    );
    println!(
        "RELIABILITY: replay: {EVENTS} events ({} payments, {} refunds, {CANCELS} cancellations) \
         delivered {deliveries} times in {calls} calls (windows of {WINDOW}, each window's calls \
         concurrent; direct, SQS batches and single events), {early_refunds} refunds delivered \
         before their payment, {versions} versions of concert details; {} calendar boards, \
         {rate_boards} rate boards, {rolling} rolling and {trending} trending boards and the \
         details of {} concerts equal to the model; movement: {} reads of the calendar boards \
         by seats and by rate (whole pages, top-10 pages rendered then kept, a concert's own \
         read with 3 rows either side, many-concerts reads of all {CONCERTS} concerts) agree \
         with the model on the {} rows of those boards: rank, and previousRank and movement \
         by the model's competition ranks on the board one bucket before ({} up, {} down, {} \
         same, {} new, {} with a rank shared before, {} null on all-time); {} reads (pages, \
         many-concerts) by the API redeployed with shorter retention ({}) agree on the same \
         rows, {} of them null where the bucket before is no longer kept",
        stream.payments.len(),
        EVENTS - stream.payments.len() - CANCELS,
        expected.len(),
        details.len(),
        kept.reads,
        kept.rows,
        kept.up,
        kept.down,
        kept.same,
        kept.new,
        kept.tied_before,
        kept.all_time,
        gone.reads,
        SHORT.describe(),
        gone.gone,
    );
}
