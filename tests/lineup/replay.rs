//! Replay: ten thousand payment, refund and cancellation events over the six weeks before
//! the run (two or three months) and four genres, and up to three versions of most
//! concerts' details, each delivered one to three times, shuffled within a window (a third
//! of the refunds before their payment), partly concurrently, partly in SQS batches and
//! partly one by one. The calendar, rate, rolling and trending boards and the details must
//! equal an independent in-memory model of the stream, and every calendar board read must
//! show each row's movement since the model's board one bucket before. Prints a
//! `RELIABILITY:` line.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use futures::future::join_all;
use lambda_runtime::{Context, LambdaEvent};
use lineup::ids::Genre;
use lineup::ranking::{Board, Period};
use lineup_tests::rankings::envelope;
use lineup_tests::TestApp;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const EVENTS: usize = 10_000;
const CANCELS: usize = 5;
pub(super) const WINDOW: usize = 100;
pub(super) const CONCERTS: usize = 40;
pub(super) const GENRES: [&str; 4] = ["rock", "pop", "jazz", "k-pop"];

/// The stream as a test author would describe it, before any delivery.
#[derive(Clone)]
pub(super) enum Logical {
    Pay {
        id: String,
        concert: usize,
        seats: u64,
        at: DateTime<Utc>,
    },
    Refund {
        id: String,
        payment: usize,
        seats: u64,
    },
    Cancel {
        concert: usize,
    },
}

pub(super) struct Stream {
    pub(super) events: Vec<Logical>,
    /// Index into `events` of each payment, in order.
    pub(super) payments: Vec<usize>,
    pub(super) genres: Vec<Vec<&'static str>>,
    /// Each concert's versions of its details, oldest first; every fifth concert has none.
    pub(super) details: Vec<Vec<Version>>,
}

/// One version of a concert's details.
#[derive(Clone)]
pub(super) struct Version {
    title: String,
    venue: Option<String>,
    capacity: u64,
    updated_at: DateTime<Utc>,
}

pub(super) fn concert_id(concert: usize) -> String {
    format!("concert-{concert:02}")
}

/// `n` events dated over the `days` before `now`, the last cancellations 900 before the end.
pub(super) fn generate(rng: &mut StdRng, now: DateTime<Utc>, n: usize, days: i64) -> Stream {
    let genres: Vec<Vec<&str>> = (0..CONCERTS)
        .map(|_| {
            let count = rng.random_range(0..=2);
            let mut g: Vec<&str> = GENRES.choose_multiple(rng, count).copied().collect();
            g.sort();
            g
        })
        .collect();
    // Dated up to the run, so the last week and day are in the rolling windows.
    let first_day = now - Duration::days(days);
    let mut events = Vec::with_capacity(n);
    let mut payments: Vec<usize> = Vec::new();
    let cancel_at: BTreeSet<usize> = (0..CANCELS).map(|k| n - 900 + k * 150).collect();
    let mut cancelled = 0;
    for position in 0..n {
        if cancel_at.contains(&position) {
            events.push(Logical::Cancel {
                concert: cancelled * 7,
            });
            cancelled += 1;
            continue;
        }
        // A refund refers to a payment at least two windows earlier; some are delivered
        // before their payment all the same (see the delivery loop).
        let refundable = payments.partition_point(|&p| p + 2 * WINDOW <= position);
        if refundable > 0 && rng.random_bool(0.2) {
            let payment = rng.random_range(0..refundable);
            events.push(Logical::Refund {
                id: format!("refund-{position}"),
                payment,
                seats: rng.random_range(1..=4),
            });
        } else {
            payments.push(position);
            events.push(Logical::Pay {
                id: format!("pay-{position}"),
                concert: rng.random_range(0..CONCERTS),
                seats: rng.random_range(1..=6),
                at: first_day + Duration::seconds(rng.random_range(0..days * 86_400)),
            });
        }
    }
    let details = (0..CONCERTS)
        .map(|concert| {
            if concert % 5 == 4 {
                return Vec::new();
            }
            let first = Utc.with_ymd_and_hms(2026, 10, 1, 0, 0, 0).unwrap();
            (0..rng.random_range(1..=3))
                .map(|v| Version {
                    title: format!("Concert {concert}, take {v}"),
                    venue: (v % 2 == 0).then(|| format!("Hall {concert}")),
                    capacity: rng.random_range(20..=400),
                    updated_at: first + Duration::hours(10 * v + rng.random_range(0..10)),
                })
                .collect()
        })
        .collect();
    Stream {
        events,
        payments,
        genres,
        details,
    }
}

fn details_event(stream: &Stream, concert: usize, version: &Version) -> Value {
    let detail_type = if version.title.ends_with("take 0") {
        "ConcertScheduled"
    } else {
        "ConcertUpdated"
    };
    envelope(
        detail_type,
        json!({"concertId": concert_id(concert), "title": version.title, "venue": version.venue,
               "capacity": version.capacity, "genres": stream.genres[concert],
               "startsAt": "2027-01-15T18:30:00+09:00",
               "updatedAt": version.updated_at.to_rfc3339()}),
    )
}

/// concertId → `(updatedAt ms, capacity, details JSON)` the details hash must hold: the
/// latest version of each concert not cancelled.
pub(super) fn details_model(stream: &Stream) -> Details {
    let cancelled: BTreeSet<usize> = stream
        .events
        .iter()
        .filter_map(|e| match e {
            Logical::Cancel { concert } => Some(*concert),
            _ => None,
        })
        .collect();
    let mut model = BTreeMap::new();
    for (concert, versions) in stream.details.iter().enumerate() {
        let Some(latest) = versions.iter().max_by_key(|v| v.updated_at) else {
            continue;
        };
        if cancelled.contains(&concert) {
            continue;
        }
        model.insert(
            concert_id(concert),
            (
                latest.updated_at.timestamp_millis(),
                latest.capacity,
                json!({"title": latest.title, "venue": latest.venue, "capacity": latest.capacity,
                       "startsAt": "2027-01-15T18:30:00+09:00", "genres": stream.genres[concert]}),
            ),
        );
    }
    model
}

fn to_event(stream: &Stream, event: &Logical) -> Value {
    match event {
        Logical::Pay {
            id,
            concert,
            seats,
            at,
        } => envelope(
            "PaymentCompleted",
            json!({"paymentId": id, "concertId": concert_id(*concert), "seats": seats,
                   "genres": stream.genres[*concert], "completedAt": at.to_rfc3339()}),
        ),
        Logical::Refund { id, payment, seats } => {
            let Logical::Pay {
                id: payment_id,
                concert,
                ..
            } = &stream.events[stream.payments[*payment]]
            else {
                unreachable!("refunds refer to payments")
            };
            envelope(
                "PaymentRefunded",
                json!({"paymentId": payment_id, "refundId": id, "concertId": concert_id(*concert), "seats": seats}),
            )
        }
        Logical::Cancel { concert } => envelope(
            "ConcertCancelled",
            json!({"concertId": concert_id(*concert)}),
        ),
    }
}

/// `(period, bucket, genre)` → concert → seats: what the boards must hold.
type Boards = BTreeMap<(String, String, Option<String>), BTreeMap<String, u64>>;

/// Every payment that still counts at the end: its concert, the seats its refunds left and
/// its time. A cancelled concert's payments count nowhere.
fn surviving(stream: &Stream) -> Vec<(usize, u64, DateTime<Utc>)> {
    let mut refunded: HashMap<usize, u64> = HashMap::new();
    let mut cancelled: BTreeSet<usize> = BTreeSet::new();
    for event in &stream.events {
        match event {
            Logical::Refund { payment, seats, .. } => {
                *refunded.entry(*payment).or_default() += seats
            }
            Logical::Cancel { concert } => {
                cancelled.insert(*concert);
            }
            Logical::Pay { .. } => {}
        }
    }
    stream
        .payments
        .iter()
        .enumerate()
        .filter_map(|(n, &index)| {
            let Logical::Pay {
                concert, seats, at, ..
            } = &stream.events[index]
            else {
                unreachable!()
            };
            let left = seats - refunded.get(&n).copied().unwrap_or(0).min(*seats);
            (left > 0 && !cancelled.contains(concert)).then_some((*concert, left, *at))
        })
        .collect()
}

/// The board and its genre variants a concert's sales count on.
fn with_genres(stream: &Stream, concert: usize) -> impl Iterator<Item = Option<String>> + '_ {
    std::iter::once(None).chain(stream.genres[concert].iter().map(|g| Some(g.to_string())))
}

/// `(window, genre)` → concert → seats: the rolling boards when the server's clock is in
/// 5-minute bucket `now_bucket`. A window of n buckets holds the current one and the n − 1
/// before it.
pub(super) fn window_model(
    stream: &Stream,
    now_bucket: i64,
) -> BTreeMap<(&'static str, Option<String>), BTreeMap<String, u64>> {
    let mut boards = BTreeMap::new();
    for (concert, left, at) in surviving(stream) {
        let bucket = at.timestamp_millis().div_euclid(300_000);
        for (window, buckets) in [("last-24h", 288), ("last-7d", 2016)] {
            if bucket > now_bucket - buckets {
                for genre in with_genres(stream, concert) {
                    *boards
                        .entry((window, genre))
                        .or_insert_with(BTreeMap::new)
                        .entry(concert_id(concert))
                        .or_default() += left;
                }
            }
        }
    }
    boards
}

/// genre → concert → weighted seats on trending generation `generation` (length 12 half-lives):
/// each sale in `[(k − 1)P, (k + 1)P)` at `seats · 2^((t − kP)/H)`.
pub(super) fn trending_model(
    stream: &Stream,
    generation: i64,
    half_life_ms: i64,
) -> BTreeMap<Option<String>, BTreeMap<String, f64>> {
    let p = 12 * half_life_ms;
    let mut boards = BTreeMap::new();
    for (concert, left, at) in surviving(stream) {
        let t = at.timestamp_millis();
        if t < (generation - 1) * p || t >= (generation + 1) * p {
            continue;
        }
        let weight = ((t - generation * p) as f64 / half_life_ms as f64).exp2();
        for genre in with_genres(stream, concert) {
            *boards
                .entry(genre)
                .or_insert_with(BTreeMap::new)
                .entry(concert_id(concert))
                .or_default() += left as f64 * weight;
        }
    }
    boards
}

fn model(stream: &Stream) -> Boards {
    let mut boards = Boards::new();
    for (concert, left, at) in surviving(stream) {
        let day: NaiveDate = at.date_naive();
        let week = day.iso_week();
        let buckets = [
            ("daily", day.format("%Y-%m-%d").to_string()),
            ("weekly", format!("{}-W{:02}", week.year(), week.week())),
            ("monthly", day.format("%Y-%m").to_string()),
            ("all-time", "all".to_string()),
        ];
        for genre in with_genres(stream, concert) {
            for (period, bucket) in &buckets {
                *boards
                    .entry((period.to_string(), bucket.clone(), genre.clone()))
                    .or_default()
                    .entry(concert_id(concert))
                    .or_default() += left;
            }
        }
    }
    boards
}

/// One delivery call: how the events reach the updater.
enum Delivery {
    /// The local stack's and the handlers' shared entry, many calls at once.
    Direct(Vec<Value>),
    /// An SQS batch of up to ten.
    Sqs(Vec<Value>),
    /// One EventBridge invocation per event.
    EventBridge(Value),
}

async fn deliver(app: &TestApp, delivery: Delivery) -> usize {
    match delivery {
        Delivery::Direct(events) => {
            let verdicts = ranking_updater::apply_events(&events, &app.stack.ranking_updater).await;
            assert!(
                verdicts.iter().all(|v| !matches!(
                    v,
                    lineup::ranking::Outcome::Rejected(_) | lineup::ranking::Outcome::Failed(_)
                )),
                "{verdicts:?}"
            );
            1
        }
        Delivery::Sqs(events) => {
            let records: Vec<Value> = events
                .iter()
                .enumerate()
                .map(|(i, e)| json!({"messageId": format!("m{i}"), "receiptHandle": "h", "body": e.to_string(), "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs"}))
                .collect();
            let out = ranking_updater::handle(
                LambdaEvent::new(json!({"Records": records}), Context::default()),
                &app.stack.ranking_updater,
            )
            .await
            .expect("batch");
            assert_eq!(out["batchItemFailures"], json!([]), "{out}");
            1
        }
        Delivery::EventBridge(event) => {
            ranking_updater::handle(
                LambdaEvent::new(event, Context::default()),
                &app.stack.ranking_updater,
            )
            .await
            .expect("event");
            1
        }
    }
}

async fn board(
    app: &TestApp,
    period: &str,
    bucket_day: &str,
    genre: &Option<String>,
) -> BTreeMap<String, u64> {
    let mut path = format!("/rankings/{period}?limit=100&date={bucket_day}");
    if let Some(genre) = genre {
        path.push_str(&format!("&genre={genre}"));
    }
    let page = lineup_tests::rankings::read(app, &path).await;
    lineup_tests::rankings::items(&page)
        .into_iter()
        .map(|(concert, score, _rank)| (concert, score))
        .collect()
}

/// A day inside the bucket, for the `date` parameter.
fn day_in(period: &str, bucket: &str) -> String {
    match period {
        "daily" => bucket.to_owned(),
        "weekly" => {
            let (year, week) = bucket.split_once("-W").unwrap();
            NaiveDate::from_isoywd_opt(
                year.parse().unwrap(),
                week.parse().unwrap(),
                chrono::Weekday::Mon,
            )
            .unwrap()
            .to_string()
        }
        "monthly" => format!("{bucket}-01"),
        _ => "2026-11-01".to_owned(),
    }
}

/// [`schedule`]'s windows, deliveries, early refunds and versions.
type Scheduled = (Vec<Vec<Value>>, usize, usize, usize);

/// Each event 1–3 times, the first copy in its own window, others in it or the next; each
/// version of the details 1–3 times within the first `details_in` windows. Returns the
/// windows, the deliveries, the refunds delivered before their payment and the versions.
pub(super) fn schedule(rng: &mut StdRng, stream: &Stream, details_in: usize) -> Scheduled {
    let windows = stream.events.len() / WINDOW + 1;
    let mut by_window: Vec<Vec<Value>> = vec![Vec::new(); windows];
    let mut deliveries = 0;
    let mut early_refunds = 0;
    for (position, event) in stream.events.iter().enumerate() {
        let json = to_event(stream, event);
        let mut window = position / WINDOW;
        // EventBridge does not order deliveries: a third of the refunds arrive in the
        // window before their payment's (their copies there or with the payment).
        if let Logical::Refund { payment, .. } = event {
            let paid_in = stream.payments[*payment] / WINDOW;
            if paid_in > 0 && rng.random_bool(0.3) {
                window = paid_in - 1;
                early_refunds += 1;
            }
        }
        for copy in 0..rng.random_range(1..=3) {
            let target = if copy == 0 {
                window
            } else {
                window + rng.random_range(0..=1)
            };
            by_window[target].push(json.clone());
            deliveries += 1;
        }
    }
    let mut versions = 0;
    for (concert, history) in stream.details.iter().enumerate() {
        for version in history {
            let json = details_event(stream, concert, version);
            versions += 1;
            for _ in 0..rng.random_range(1..=3) {
                by_window[rng.random_range(0..details_in)].push(json.clone());
                deliveries += 1;
            }
        }
    }
    (by_window, deliveries, early_refunds, versions)
}

/// Each window's events shuffled, in calls of 1–10 by the three paths, all of a window at
/// once. Returns the calls.
pub(super) async fn deliver_windows(app: &TestApp, rng: &mut StdRng, by: Vec<Vec<Value>>) -> usize {
    let mut calls = 0;
    for mut window in by {
        window.shuffle(rng);
        let mut batch = Vec::new();
        let mut rest = window.as_slice();
        while !rest.is_empty() {
            let size = rng.random_range(1..=10).min(rest.len());
            let (chunk, tail) = rest.split_at(size);
            rest = tail;
            batch.push(match rng.random_range(0..3) {
                0 => Delivery::Direct(chunk.to_vec()),
                1 => Delivery::Sqs(chunk.to_vec()),
                _ => Delivery::EventBridge(chunk[0].clone()),
            });
            if let Delivery::EventBridge(_) = batch.last().unwrap() {
                // The rest of that chunk goes as its own direct call.
                if size > 1 {
                    batch.push(Delivery::Direct(chunk[1..].to_vec()));
                }
            }
        }
        // Every call of a window at once.
        calls += join_all(batch.into_iter().map(|d| deliver(app, d)))
            .await
            .into_iter()
            .sum::<usize>();
    }
    calls
}

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
    let fold = app
        .stack
        .ranking_updater
        .rankings
        .fold()
        .await
        .expect("fold");
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
        .arg(app.stack.ranking_updater.rankings.details_key())
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

/// A reader's retention: `RANKING_DAILY_RETENTION_DAYS`, `RANKING_WEEKLY_RETENTION_WEEKS`
/// and `RANKING_MONTHLY_RETENTION_MONTHS`.
#[derive(Clone, Copy, Debug)]
struct Retention {
    days: u32,
    weeks: u32,
    months: u32,
}

/// The replay's: every bucket of the stream, and the one before each, is kept.
const KEPT: Retention = Retention {
    days: 3650,
    weeks: 520,
    months: 120,
};

/// A redeployed API's: the buckets before the older days, weeks and the older month of the
/// stream are gone by its reckoning (their keys are still there, with the replay's TTLs).
const SHORT: Retention = Retention {
    days: 20,
    weeks: 3,
    months: 2,
};

impl Retention {
    fn vars(self) -> [(&'static str, String); 3] {
        [
            ("RANKING_DAILY_RETENTION_DAYS", self.days.to_string()),
            ("RANKING_WEEKLY_RETENTION_WEEKS", self.weeks.to_string()),
            ("RANKING_MONTHLY_RETENTION_MONTHS", self.months.to_string()),
        ]
    }

    fn describe(self) -> String {
        format!(
            "{} days, {} weeks, {} months",
            self.days, self.weeks, self.months
        )
    }

    /// Whether the board of calendar `bucket` is still kept on `today` (UTC, the replay's
    /// ranking zone): it ends at midnight of its first day plus the retention.
    fn keeps(self, period: &str, bucket: &str, today: NaiveDate) -> bool {
        let start = bucket_start(period, bucket);
        let ends = match period {
            "daily" => start + Duration::days(self.days.into()),
            "weekly" => start + Duration::weeks(self.weeks.into()),
            "monthly" => start
                .checked_add_months(chrono::Months::new(self.months))
                .unwrap(),
            _ => return true,
        };
        ends > today
    }
}

/// concertId → `(updatedAt ms, capacity, details JSON)`, as [`details_model`] gives it.
pub(super) type Details = BTreeMap<String, (i64, u64, Value)>;

/// `(period, bucket, genre)` of a board of the model.
type BoardKey = (String, String, Option<String>);

/// A board's order: seats sold, or sell-through (the rate boards).
#[derive(Clone, Copy, Debug, PartialEq)]
enum By {
    Seats,
    Rate,
}

impl By {
    fn as_str(self) -> &'static str {
        match self {
            By::Seats => "seats",
            By::Rate => "rate",
        }
    }
}

/// The first day of a calendar bucket of the model (the all-time board: any day).
fn bucket_start(period: &str, bucket: &str) -> NaiveDate {
    NaiveDate::parse_from_str(&day_in(period, bucket), "%Y-%m-%d").unwrap()
}

/// The bucket before `bucket`: the day, ISO week or month before; none before all-time.
fn previous_bucket(period: &str, bucket: &str) -> Option<String> {
    let start = bucket_start(period, bucket);
    match period {
        "daily" => Some((start - Duration::days(1)).format("%Y-%m-%d").to_string()),
        "weekly" => {
            let week = (start - Duration::days(7)).iso_week();
            Some(format!("{}-W{:02}", week.year(), week.week()))
        }
        // The last day of the month before is in it.
        "monthly" => Some((start - Duration::days(1)).format("%Y-%m").to_string()),
        _ => None,
    }
}

/// The model's board `key` ordered `by`: concert → seats, or seats × 10⁶ ÷ the latest
/// capacity, rounded down, for the concerts whose capacity is known. Empty where the model
/// has no such board.
fn scored(expected: &Boards, details: &Details, key: &BoardKey, by: By) -> BTreeMap<String, u64> {
    let Some(seats) = expected.get(key) else {
        return BTreeMap::new();
    };
    match by {
        By::Seats => seats.clone(),
        By::Rate => seats
            .iter()
            .filter_map(|(concert, seats)| {
                let (_, capacity, _) = details.get(concert)?;
                Some((concert.clone(), seats * 1_000_000 / capacity))
            })
            .collect(),
    }
}

/// Competition ranks (1, 2, 2, 4): one more than the concerts scoring more.
fn competition_ranks(board: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    board
        .iter()
        .map(|(concert, score)| {
            let above = board.values().filter(|other| *other > score).count();
            (concert.clone(), above as u64 + 1)
        })
        .collect()
}

/// Counts of the rows a movement check compared, by what the model expects of them.
#[derive(Debug, Default)]
struct MovementCounts {
    reads: usize,
    rows: usize,
    up: usize,
    down: usize,
    same: usize,
    new: usize,
    /// Rows whose rank before is shared with another concert there.
    tied_before: usize,
    /// Null on the all-time board.
    all_time: usize,
    /// Null on a calendar board: the bucket before is no longer kept.
    gone: usize,
    /// Top-10 pages read twice, of boards not empty: each kept in the page cache.
    kept_pages: usize,
}

/// A read's row as compared: `[concertId, seats, rank, previousRank, movement]`; a field
/// the read leaves out shows as `"absent"`, so it never passes for null.
fn shown_row(item: &Value) -> Value {
    let field = |name: &str| item.get(name).cloned().unwrap_or(json!("absent"));
    json!([
        field("concertId"),
        field("score"),
        field("rank"),
        field("previousRank"),
        field("movement")
    ])
}

fn shown_rows(items: &Value) -> Value {
    Value::Array(
        items
            .as_array()
            .expect("rows")
            .iter()
            .map(shown_row)
            .collect(),
    )
}

/// The model's rows of board `key` ordered `by`, best first (score descending, then
/// concertId), each as [`shown_row`]: its competition rank, and its competition rank on the
/// model's board one bucket before while `retention` keeps that bucket on `today` (`null`
/// and `new` when the concert is not on it; both `null` without a bucket before).
fn model_rows(
    expected: &Boards,
    details: &Details,
    key: &BoardKey,
    by: By,
    retention: Retention,
    today: NaiveDate,
    counts: &mut MovementCounts,
) -> Vec<Value> {
    let (period, bucket, genre) = key;
    let board = scored(expected, details, key, by);
    let ranks = competition_ranks(&board);
    let before = previous_bucket(period, bucket)
        .filter(|previous| retention.keeps(period, previous, today))
        .map(|previous| {
            let key = (period.clone(), previous, genre.clone());
            competition_ranks(&scored(expected, details, &key, by))
        });
    let mut order: Vec<(&String, &u64)> = board.iter().collect();
    order.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    order
        .into_iter()
        .map(|(concert, _)| {
            let rank = ranks[concert];
            let (was, moved) = match &before {
                None if period == "all-time" => {
                    counts.all_time += 1;
                    (Value::Null, Value::Null)
                }
                None => {
                    counts.gone += 1;
                    (Value::Null, Value::Null)
                }
                Some(before) => match before.get(concert) {
                    None => {
                        counts.new += 1;
                        (Value::Null, json!({"kind": "new"}))
                    }
                    Some(&was) => {
                        if before.values().filter(|r| **r == was).count() > 1 {
                            counts.tied_before += 1;
                        }
                        let moved = if was > rank {
                            counts.up += 1;
                            json!({"kind": "up", "by": was - rank})
                        } else if was < rank {
                            counts.down += 1;
                            json!({"kind": "down", "by": rank - was})
                        } else {
                            counts.same += 1;
                            json!({"kind": "same"})
                        };
                        (json!(was), moved)
                    }
                },
            };
            counts.rows += 1;
            json!([concert, expected[key][concert], rank, was, moved])
        })
        .collect()
}

/// `GET path` through the ranking API `api`.
pub(super) async fn read_through(api: &ranking_api::Deps, path: &str) -> lineup_tests::Reply {
    let reply = lineup_tests::Reply::from(
        ranking_api::handle(lineup_tests::api_request("GET", path, None), api)
            .await
            .expect("infallible"),
    );
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply
}

/// One read's path, what it showed and what the model says.
type Shown = Vec<(String, Value, Value)>;

/// Reads every calendar board of the model through `api`, by seats and by rate: the whole
/// board as one page and every concert as one many-concerts read (in another order, one id
/// twice, the cancelled concerts and those with no sales in the bucket included); with
/// `all_reads` also the top 10 twice (rendered, then kept) and the middle concert's own read
/// with 3 rows either side. Returns what each read showed beside the model at `retention`
/// on `today`, for the caller to compare.
async fn movement_reads(
    api: &ranking_api::Deps,
    expected: &Boards,
    details: &Details,
    retention: Retention,
    today: NaiveDate,
    all_reads: bool,
) -> (Shown, MovementCounts) {
    let mut counts = MovementCounts::default();
    let mut shown: Shown = Vec::new();
    // Every concert, in an order of its own, and one of them twice.
    let mut ids: Vec<String> = (0..CONCERTS)
        .map(|k| concert_id(k * 17 % CONCERTS))
        .collect();
    ids.push(concert_id(3));
    let ids = ids.join(",");
    for key in expected.keys() {
        let (period, bucket, genre) = key;
        for by in [By::Seats, By::Rate] {
            let rows = model_rows(expected, details, key, by, retention, today, &mut counts);
            let mut query = format!("date={}&by={}", day_in(period, bucket), by.as_str());
            if let Some(genre) = genre {
                query.push_str(&format!("&genre={genre}"));
            }
            let path = format!("/rankings/{period}?{query}&limit=100");
            let page = read_through(api, &path).await.body;
            shown.push((
                path.clone(),
                json!([page["bucket"], page["total"], shown_rows(&page["items"])]),
                json!([bucket, rows.len(), rows]),
            ));
            // The standings: each concert once, sorted by id; all null off the board.
            let path = format!("/rankings/{period}/concerts?{query}&ids={ids}");
            let many = read_through(api, &path).await.body;
            let got: Vec<Value> = many["concerts"]
                .as_array()
                .expect("concerts")
                .iter()
                .map(|c| {
                    let percentile = c["percentile"].as_f64().map(|p| (p * 100.0).round());
                    json!([shown_row(c), c["onBoard"], percentile])
                })
                .collect();
            let total = rows.len() as u64;
            let want: Vec<Value> = (0..CONCERTS)
                .map(|k| {
                    let id = concert_id(k);
                    match rows.iter().find(|r| r[0] == json!(id)) {
                        Some(row) => {
                            // 100 × (total − rank + 1) ÷ total in hundredths, half up.
                            let rank = row[2].as_u64().unwrap();
                            let hundredths = ((total - rank + 1) * 20_000 + total) / (2 * total);
                            json!([row, true, hundredths as f64])
                        }
                        None => json!([[id, null, null, null, null], false, null]),
                    }
                })
                .collect();
            shown.push((path, json!([many["total"], got]), json!([total, want])));
            counts.reads += 2;
            if !all_reads {
                continue;
            }
            // The top 10, rendered and then from the page cache.
            let top = &rows[..rows.len().min(10)];
            for _ in 0..2 {
                let path = format!("/rankings/{period}?{query}&limit=10");
                let page = read_through(api, &path).await.body;
                shown.push((path, shown_rows(&page["items"]), json!(top)));
                counts.reads += 1;
            }
            if rows.is_empty() {
                continue;
            }
            counts.kept_pages += 1;
            // The middle concert's own read, with its neighbours.
            let at = rows.len() / 2;
            let concert = rows[at][0].as_str().unwrap();
            let path = format!("/rankings/{period}/concerts/{concert}?{query}&around=3");
            let own = read_through(api, &path).await.body;
            shown.push((
                path,
                json!([
                    shown_rows(&own["above"]),
                    shown_row(&own),
                    shown_rows(&own["below"])
                ]),
                json!([
                    rows[at.saturating_sub(3)..at],
                    rows[at],
                    rows[at + 1..rows.len().min(at + 4)]
                ]),
            ));
            counts.reads += 1;
        }
    }
    (shown, counts)
}

/// [`movement_reads`] through `api` as of now, read again if the day changes meanwhile (a
/// bucket before may leave retention at midnight); asserts each read equals the model.
async fn check_movement(
    api: &ranking_api::Deps,
    expected: &Boards,
    details: &Details,
    retention: Retention,
    all_reads: bool,
) -> MovementCounts {
    loop {
        let today = Utc::now().date_naive();
        let (shown, counts) =
            movement_reads(api, expected, details, retention, today, all_reads).await;
        if Utc::now().date_naive() == today {
            for (path, got, want) in &shown {
                assert_eq!(got, want, "{path} ({retention:?})");
            }
            return counts;
        }
    }
}

/// The server's clock (Redis `TIME`) in ms.
pub(super) async fn server_ms(app: &TestApp) -> i64 {
    lineup_tests::rankings::server_now(app)
        .await
        .timestamp_millis()
}

/// After ticks until nothing is left: the rolling boards equal the window model at the
/// server's bucket, and the current trending generation the trending model within a
/// relative 10^-9. Read again if a bucket starts meanwhile. Returns the boards compared.
async fn compare_live_boards(app: &TestApp, stream: &Stream) -> (usize, usize) {
    loop {
        let before = server_ms(app).await;
        let (rolling, trending) = read_live_boards(app, stream, before).await;
        let after = server_ms(app).await;
        if after.div_euclid(300_000) == before.div_euclid(300_000) {
            for (path, got, want) in &rolling {
                assert_eq!(got, want, "{path}");
            }
            let rolling = rolling.len();
            for (what, got, want) in &trending {
                assert_eq!(
                    got.keys().collect::<Vec<_>>(),
                    want.keys().collect::<Vec<_>>(),
                    "{what}"
                );
                for (concert, score) in got {
                    let model = want[concert];
                    assert!(
                        (score - model).abs() <= model * 1e-9,
                        "{what} {concert}: {score} vs {model}"
                    );
                }
            }
            return (rolling, trending.len());
        }
    }
}

/// One board's path, what Redis holds and what the model says.
type Compared<T> = Vec<(String, BTreeMap<String, T>, BTreeMap<String, T>)>;

/// Ticks until nothing is left, then reads the rolling boards (asserting them) and the
/// trending boards (returned, for the caller to compare within the tolerance), modelled
/// at server time `before`, taken before the tick.
async fn read_live_boards(
    app: &TestApp,
    stream: &Stream,
    before: i64,
) -> (Compared<u64>, Compared<f64>) {
    let rankings = &app.stack.ranking_api.rankings;
    let half_life_ms = rankings.settings().trending_half_life.as_millis() as i64;
    loop {
        let tick = ranking_updater::handle(
            LambdaEvent::new(
                json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}),
                Context::default(),
            ),
            &app.stack.ranking_updater,
        )
        .await
        .expect("the tick");
        if tick["more"] == json!(false) {
            break;
        }
    }
    let windows = window_model(stream, before.div_euclid(300_000));
    let details = details_model(stream);
    let now = DateTime::from_timestamp_millis(before).unwrap();
    let mut rolling = Vec::new();
    for period in ["last-24h", "last-7d"] {
        for genre in std::iter::once(None).chain(GENRES.iter().map(|g| Some(g.to_string()))) {
            let mut path = format!("/rankings/{period}?limit=100");
            if let Some(genre) = &genre {
                path.push_str(&format!("&genre={genre}"));
            }
            let got: BTreeMap<String, u64> =
                lineup_tests::rankings::items(&lineup_tests::rankings::read(app, &path).await)
                    .into_iter()
                    .map(|(concert, score, _)| (concert, score))
                    .collect();
            let want = windows
                .get(&(period, genre.clone()))
                .cloned()
                .unwrap_or_default();
            // Its rate board: the window's seats over the latest capacity, in millionths,
            // for the concerts whose capacity is known.
            let genre_id = genre
                .as_deref()
                .map(|g| lineup::ids::Genre::parse(g).unwrap());
            let board = rankings.board_at(
                lineup::ranking::Period::parse(period).unwrap(),
                now,
                genre_id,
            );
            let got_rates: BTreeMap<String, u64> = lineup_tests::rankings::rate_board(app, &board)
                .await
                .into_iter()
                .map(|(concert, rate)| (concert, rate as u64))
                .collect();
            let want_rates: BTreeMap<String, u64> = want
                .iter()
                .filter_map(|(concert, seats)| {
                    let (_, capacity, _) = details.get(concert)?;
                    Some((concert.clone(), seats * 1_000_000 / capacity))
                })
                .collect();
            rolling.push((path.clone(), got, want));
            rolling.push((format!("{path}&by=rate (stored)"), got_rates, want_rates));
        }
    }
    let generation = now.timestamp_millis().div_euclid(12 * half_life_ms);
    let expected = trending_model(stream, generation, half_life_ms);
    let mut trending = Vec::new();
    for genre in std::iter::once(None).chain(GENRES.iter().map(|g| Some(g.to_string()))) {
        let genre_id = genre
            .as_deref()
            .map(|g| lineup::ids::Genre::parse(g).unwrap());
        let board = rankings.board_at(lineup::ranking::Period::Trending, now, genre_id);
        let got: BTreeMap<String, f64> = lineup_tests::rankings::trending_scores(app, &board)
            .await
            .into_iter()
            .collect();
        let want = expected.get(&genre).cloned().unwrap_or_default();
        trending.push((format!("trending {genre:?}"), got, want));
    }
    (rolling, trending)
}
