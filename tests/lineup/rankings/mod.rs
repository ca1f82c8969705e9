//! Rankings: payment events through the event applier, boards through the ranking API.
//!
//! Split by concern: `exactly_once`, `calendar`, `details`, `delivery`.

use chrono::{Duration as Days, Utc};
use lineup::ids::Genre;
use lineup::ranking::Outcome;
use lineup::ranking::{Board, Period};
use lineup_tests::rankings::envelope;
use lineup_tests::TestApp;
use serde_json::{json, Value};

mod calendar;
mod delivery;
mod details;
mod exactly_once;

/// Boards and dedupe records that last ten years, so dated events stay plausible.
const LONG_RETENTION: [(&str, &str); 4] = [
    ("RANKING_DAILY_RETENTION_DAYS", "3650"),
    ("RANKING_WEEKLY_RETENTION_WEEKS", "520"),
    ("RANKING_MONTHLY_RETENTION_MONTHS", "120"),
    ("RANKING_DEDUPE_DAYS", "3660"),
];

fn refunded(payment: &str, refund: Option<&str>, concert: &str, seats: u32, at: &str) -> Value {
    let mut detail = json!({"paymentId": payment, "concertId": concert, "seats": seats, "genres": ["rock"], "completedAt": at});
    if let Some(refund) = refund {
        detail["refundId"] = json!(refund);
    }
    envelope("PaymentRefunded", detail)
}

fn now() -> String {
    Utc::now().to_rfc3339()
}

/// Applies `events`, then folds what the apply calls left: they are on the boards after.
async fn send(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    lineup_tests::rankings::pay(app, events).await
}

/// Applies `events` alone, as the event applier does: one round trip, the fold's leftovers left.
async fn apply(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    event_applier::apply_events(events, &app.stack.event_applier).await
}

/// Script calls a client sent. (The ranking script itself runs SADD, so only script calls
/// are client round trips here.)
fn script_calls(calls: &std::collections::HashMap<&str, u64>) -> u64 {
    assert!(!calls.contains_key("smembers"), "{calls:?}");
    ["evalsha", "eval", "script|load"]
        .iter()
        .map(|name| calls.get(name).copied().unwrap_or(0))
        .sum()
}

/// The result name a verdict is reported with (`applied`, `pending`, `conflict`, …).
pub(crate) fn result(verdict: &Outcome) -> String {
    serde_json::to_value(verdict).unwrap()["result"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn results(verdicts: &[Outcome]) -> Vec<String> {
    verdicts.iter().map(result).collect()
}

/// The counts of the event applier's EMF records so far, summed per metric.
fn ranking_metric(app: &TestApp, name: &str) -> u64 {
    app.metrics
        .lines()
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["service"] == "rankings")
        .map(|record| record[name].as_u64().unwrap_or(0))
        .sum()
}

fn hours_ago(hours: i64) -> String {
    (Utc::now() - Days::hours(hours)).to_rfc3339()
}

/// Every board a payment made now counts on, overall and for rock.
fn todays_boards(app: &TestApp) -> Vec<Board> {
    let today = app.stack.event_applier.rankings.today();
    let mut boards = Vec::new();
    for genre in [None, Some(Genre::parse("rock").unwrap())] {
        for period in Period::ALL {
            boards.push(Board::on(period, today, genre.clone()));
        }
    }
    boards
}
