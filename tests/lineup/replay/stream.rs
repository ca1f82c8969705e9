//! The replay's stream: the events generated, their model of the boards and details, and
//! their delivery in shuffled windows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use futures::future::join_all;
use lambda_runtime::{Context, LambdaEvent};
use lineup_tests::rankings::envelope;
use lineup_tests::TestApp;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::Rng;
use serde_json::{json, Value};

use super::movement::*;

pub(crate) const EVENTS: usize = 10_000;
pub(crate) const CANCELS: usize = 5;
pub(crate) const WINDOW: usize = 100;
pub(crate) const CONCERTS: usize = 40;
pub(crate) const GENRES: [&str; 4] = ["rock", "pop", "jazz", "k-pop"];

/// The stream as a test author would describe it, before any delivery.
#[derive(Clone)]
pub(crate) enum Logical {
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

pub(crate) struct Stream {
    pub(crate) events: Vec<Logical>,
    /// Index into `events` of each payment, in order.
    pub(crate) payments: Vec<usize>,
    pub(crate) genres: Vec<Vec<&'static str>>,
    /// Each concert's versions of its details, oldest first; every fifth concert has none.
    pub(crate) details: Vec<Vec<Version>>,
}

/// One version of a concert's details.
#[derive(Clone)]
pub(crate) struct Version {
    pub(crate) title: String,
    pub(crate) venue: Option<String>,
    pub(crate) capacity: u64,
    pub(crate) updated_at: DateTime<Utc>,
}

pub(crate) fn concert_id(concert: usize) -> String {
    format!("concert-{concert:02}")
}

/// `n` events dated over the `days` before `now`, the last cancellations 900 before the end.
pub(crate) fn generate(rng: &mut StdRng, now: DateTime<Utc>, n: usize, days: i64) -> Stream {
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

pub(crate) fn details_event(stream: &Stream, concert: usize, version: &Version) -> Value {
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
pub(crate) fn details_model(stream: &Stream) -> Details {
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

pub(crate) fn to_event(stream: &Stream, event: &Logical) -> Value {
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
pub(crate) type Boards = BTreeMap<(String, String, Option<String>), BTreeMap<String, u64>>;

/// Every payment that still counts at the end: its concert, the seats its refunds left and
/// its time. A cancelled concert's payments count nowhere.
pub(crate) fn surviving(stream: &Stream) -> Vec<(usize, u64, DateTime<Utc>)> {
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
pub(crate) fn with_genres(
    stream: &Stream,
    concert: usize,
) -> impl Iterator<Item = Option<String>> + '_ {
    std::iter::once(None).chain(stream.genres[concert].iter().map(|g| Some(g.to_string())))
}

/// `(window, genre)` → concert → seats: the rolling boards when the server's clock is in
/// 5-minute bucket `now_bucket`. A window of n buckets holds the current one and the n − 1
/// before it.
pub(crate) fn window_model(
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
pub(crate) fn trending_model(
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

pub(crate) fn model(stream: &Stream) -> Boards {
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

/// One delivery call: how the events reach the event applier.
pub(crate) enum Delivery {
    /// The local stack's and the handlers' shared entry, many calls at once.
    Direct(Vec<Value>),
    /// An SQS batch of up to ten.
    Sqs(Vec<Value>),
    /// One EventBridge invocation per event.
    EventBridge(Value),
}

pub(crate) async fn deliver(app: &TestApp, delivery: Delivery) -> usize {
    match delivery {
        Delivery::Direct(events) => {
            let verdicts = event_applier::apply_events(&events, &app.stack.event_applier).await;
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
            let out = event_applier::handle(
                LambdaEvent::new(json!({"Records": records}), Context::default()),
                &app.stack.event_applier,
            )
            .await
            .expect("batch");
            assert_eq!(out["batchItemFailures"], json!([]), "{out}");
            1
        }
        Delivery::EventBridge(event) => {
            event_applier::handle(
                LambdaEvent::new(event, Context::default()),
                &app.stack.event_applier,
            )
            .await
            .expect("event");
            1
        }
    }
}

pub(crate) async fn board(
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
pub(crate) fn day_in(period: &str, bucket: &str) -> String {
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
pub(crate) type Scheduled = (Vec<Vec<Value>>, usize, usize, usize);

/// Each event 1–3 times, the first copy in its own window, others in it or the next; each
/// version of the details 1–3 times within the first `details_in` windows. Returns the
/// windows, the deliveries, the refunds delivered before their payment and the versions.
pub(crate) fn schedule(rng: &mut StdRng, stream: &Stream, details_in: usize) -> Scheduled {
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
pub(crate) async fn deliver_windows(app: &TestApp, rng: &mut StdRng, by: Vec<Vec<Value>>) -> usize {
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
