//! Payment events as EventBridge delivers them, applied through `event-applier`, and the
//! boards read through `ranking-api`.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use crate::{api_request, Reply, TestApp};

/// An EventBridge event from `lineup.payments`, sent now.
pub fn envelope(detail_type: &str, detail: Value) -> Value {
    json!({
        "version": "0", "id": "evt", "detail-type": detail_type, "source": "lineup.payments",
        "account": "123456789012", "time": Utc::now().to_rfc3339(), "region": "us-east-1",
        "resources": [], "detail": detail
    })
}

/// A `BookingHealth` event for `queues` at `level`, sent at `sent`.
pub fn booking_health(queues: &[&str], level: f64, sent: DateTime<Utc>) -> Value {
    json!({"version": "0", "id": "h", "detail-type": "BookingHealth", "source": "lineup.payments",
        "account": "123456789012", "time": sent.to_rfc3339(), "region": "us-east-1",
        "resources": [], "detail": {"queueIds": queues, "level": level}})
}

/// A CloudWatch alarm state change, as EventBridge delivers it.
pub fn alarm(name: &str, state: &str, at: DateTime<Utc>) -> Value {
    json!({"version": "0", "id": "a", "detail-type": "CloudWatch Alarm State Change",
        "source": "aws.cloudwatch", "account": "123456789012",
        "time": at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true), "region": "us-east-1",
        "resources": [format!("arn:aws:cloudwatch:us-east-1:123456789012:alarm:{name}")],
        "detail": {"alarmName": name, "state": {"value": state, "reason": "test",
            "timestamp": at.format("%Y-%m-%dT%H:%M:%S%.3f%z").to_string()},
            "previousState": {"value": "OK"}, "configuration": {"metrics": []}}})
}

/// A `PaymentCompleted` for the boards only (no queue or user).
pub fn paid(payment: &str, concert: &str, seats: u32, genres: &[&str], at: &str) -> Value {
    envelope(
        "PaymentCompleted",
        json!({"paymentId": payment, "concertId": concert, "seats": seats, "genres": genres, "completedAt": at}),
    )
}

/// A `PaymentCompleted` that names `queue` and `user`, completed now: it ends that session.
pub fn payment(payment: &str, queue: &str, user: &str) -> Value {
    envelope(
        "PaymentCompleted",
        json!({"paymentId": payment, "concertId": "c1", "seats": 2, "queueId": queue, "userId": user,
               "completedAt": Utc::now().to_rfc3339()}),
    )
}

/// Applies `events` through `event-applier`'s own code, then runs the tick's fold until
/// the fold queue is empty: every payment is on its boards, as within a minute in AWS.
pub async fn pay(app: &TestApp, events: &[Value]) -> Vec<lineup::ranking::Outcome> {
    let verdicts = event_applier::apply_events(events, &app.stack.event_applier).await;
    let fold = app
        .stack
        .event_applier
        .rankings
        .fold()
        .await
        .expect("the fold");
    assert_eq!(fold.left, 0, "the fold queue after a fold: {fold:?}");
    verdicts
}

/// Pays each `(payment, concert, seats, genres)` at `at` through [`pay`], and asserts each
/// is applied.
pub async fn sell_at(app: &TestApp, at: DateTime<Utc>, sales: &[(&str, &str, u32, &[&str])]) {
    let at = at.to_rfc3339();
    let events: Vec<Value> = sales
        .iter()
        .map(|(payment, concert, seats, genres)| paid(payment, concert, *seats, genres, &at))
        .collect();
    assert!(
        pay(app, &events)
            .await
            .iter()
            .all(|v| *v == lineup::ranking::Outcome::Applied),
        "{sales:?}"
    );
}

/// Runs the tick as the schedule does: a `Scheduled Event` through the event applier's handler.
pub async fn tick(app: &TestApp) -> Value {
    use lambda_runtime::{Context, LambdaEvent};
    event_applier::handle(
        LambdaEvent::new(
            json!({"version": "0", "id": "tick", "detail-type": "Scheduled Event",
                   "source": "aws.events", "account": "123456789012",
                   "time": Utc::now().to_rfc3339(), "region": "us-east-1",
                   "resources": [], "detail": {}}),
            Context::default(),
        ),
        &app.stack.event_applier,
    )
    .await
    .expect("the tick")
}

/// `GET path` through `ranking-api`.
pub async fn read(app: &TestApp, path: &str) -> Reply {
    Reply::from(
        ranking_api::handle(api_request("GET", path, None), &app.stack.ranking_api)
            .await
            .expect("infallible"),
    )
}

/// `(concertId, score, rank)` of a board page.
pub fn items(reply: &Reply) -> Vec<(String, u64, u64)> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["concertId"].as_str().unwrap().to_owned(),
                i["score"].as_u64().unwrap(),
                i["rank"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Every entry of the sorted set `key`, in order, with its score as stored.
pub async fn sorted_set(app: &TestApp, key: &str) -> Vec<(String, f64)> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut app.inspect.clone())
        .await
        .expect("a sorted set")
}

/// The boards a concert index (`…:{rk}:concert:<id>:boards`) lists, each with its expiry
/// (infinite for the all-time board).
pub async fn concert_index(app: &TestApp, key: &str) -> Vec<(String, f64)> {
    sorted_set(app, key).await
}

/// Every entry of a trending board as stored: concert and weighted score.
pub async fn trending_scores(app: &TestApp, board: &lineup::ranking::Board) -> Vec<(String, f64)> {
    let key = app.stack.ranking_api.rankings.board_key(board);
    let rows = sorted_set(app, &key).await;
    rows.into_iter().map(|(c, s)| (c, -s)).collect()
}

/// The server's clock (Redis `TIME`), which decides what is inside a rolling window.
pub async fn server_now(app: &TestApp) -> chrono::DateTime<Utc> {
    let (secs, micros): (i64, i64) = redis::cmd("TIME")
        .query_async(&mut app.inspect.clone())
        .await
        .expect("TIME");
    chrono::DateTime::from_timestamp_micros(secs * 1_000_000 + micros).expect("a time")
}

/// Schedules `concert` through `event-applier`: a `ConcertScheduled` event with these
/// details, which the event applier stores and from which it rates the concert on every board it
/// is already on.
pub async fn schedule(
    app: &TestApp,
    concert: &str,
    capacity: u64,
    title: &str,
    venue: Option<&str>,
    starts_at: &str,
) {
    let event = envelope(
        "ConcertScheduled",
        json!({"concertId": concert, "title": title, "capacity": capacity, "genres": ["rock"],
               "startsAt": starts_at, "venue": venue, "updatedAt": Utc::now().to_rfc3339()}),
    );
    assert_eq!(
        pay(app, &[event]).await,
        [lineup::ranking::Outcome::Applied],
        "{concert} scheduled"
    );
}

/// A `ConcertScheduled` for `concert` with `capacity` seats and `title`, as of `updated_at`.
pub fn scheduled(concert: &str, title: &str, capacity: i64, updated_at: &str) -> Value {
    envelope(
        "ConcertScheduled",
        json!({"concertId": concert, "title": title, "capacity": capacity, "genres": ["rock"],
               "startsAt": "2027-03-01T19:00:00+09:00", "venue": "Olympic Hall",
               "updatedAt": updated_at}),
    )
}

/// The stored details of `concert`: `(updatedAt ms, capacity, JSON)`.
pub async fn details(app: &TestApp, concert: &str) -> Option<(i64, u32, Value)> {
    let rankings = &app.stack.event_applier.rankings;
    let stored: Option<String> = redis::cmd("HGET")
        .arg(rankings.details_key())
        .arg(concert)
        .query_async(&mut app.inspect.clone())
        .await
        .expect("the details hash");
    let stored = stored?;
    let mut words = stored.splitn(3, ' ');
    let at = words.next()?.parse().expect("updatedAt ms");
    let capacity = words.next()?.parse().expect("capacity");
    Some((
        at,
        capacity,
        serde_json::from_str(words.next()?).expect("details JSON"),
    ))
}

/// `(concertId, score)` of the rate board of `board`, best first (score: millionths of
/// capacity sold, as stored negated).
pub async fn rate_board(app: &TestApp, board: &lineup::ranking::Board) -> Vec<(String, i64)> {
    let key = app.stack.event_applier.rankings.rate_key(board);
    let rows = sorted_set(app, &key).await;
    rows.into_iter().map(|(c, s)| (c, -s as i64)).collect()
}
