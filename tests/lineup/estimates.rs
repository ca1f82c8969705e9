//! Wait estimates as a buyer lives them: real sessions ending on a real clock, a promoter
//! ticking beside them, and 300 buyers who join at once and poll exactly as told. Each run
//! prints a `RELIABILITY:` line.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use lineup_tests::queue::{join, leave, status};
use lineup_tests::rankings::{pay, payment};
use lineup_tests::{sleep, Reply, TestApp};
use rand::Rng;

const BUYERS: usize = 300;
const CAPACITY: usize = 20;
const SESSION: Duration = Duration::from_secs(6);
const TICK: Duration = Duration::from_secs(1);
/// What the range may miss by: the wait is measured to the admission the promoter records,
/// and each figure is rounded to the second.
const SLACK: f64 = 1.0;

/// How a buyer's session ends once it sees its turn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Endings {
    /// Every session runs out.
    Expiry,
    /// Every buyer pays or leaves 2–6 s after seeing its turn.
    Early,
    /// Every other buyer does; the rest let the session run out.
    Mixed,
}

/// One waiting reply as the buyer read it.
#[derive(Debug, Clone, Copy)]
struct Poll {
    at: DateTime<Utc>,
    position: u64,
    estimate: Option<f64>,
    range: Option<(f64, f64)>,
}

/// What one buyer saw and did.
#[derive(Debug, Default)]
struct Buyer {
    polls: Vec<Poll>,
    /// When the promoter (or the join) admitted it: its session's end less the session.
    admitted: Option<DateTime<Utc>>,
    /// When its session ended: its own leave or payment, or the session's end.
    ended: Option<DateTime<Utc>>,
}

fn seconds(value: &serde_json::Value) -> Option<f64> {
    value.as_u64().map(|s| s as f64)
}

/// Reads a waiting reply, checking what every waiting reply promises: a number and a range
/// around it from the first poll on, and a poll interval taken from the range's low end.
fn waiting(reply: &Reply, name: &str) -> Poll {
    let body = &reply.body;
    let estimate = seconds(&body["estimatedWaitSeconds"]);
    let range = match (
        seconds(&body["estimatedWaitRange"]["low"]),
        seconds(&body["estimatedWaitRange"]["high"]),
    ) {
        (Some(low), Some(high)) => Some((low, high)),
        _ => None,
    };
    let (Some(e), Some((low, high))) = (estimate, range) else {
        panic!("{name}: a waiter without a number and a range: {body}");
    };
    assert!(low <= e && e <= high, "{name}: {body}");
    let told = body["pollAfterSeconds"].as_u64().expect("pollAfterSeconds");
    assert!(
        told <= ((low as u64) / 10).max(1),
        "{name}: told to poll after {told} s with a low end of {low} s: {body}"
    );
    Poll {
        at: Utc::now(),
        position: body["position"].as_u64().expect("position"),
        estimate,
        range,
    }
}

/// Sends a buyer's call again after `Retry-After` while Redis sheds load (503), as the page
/// does.
async fn obeying<F, Fut>(call: F) -> Reply
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Reply>,
{
    loop {
        let reply = call().await;
        if reply.status != 503 {
            return reply;
        }
        let after = reply
            .headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok()?.parse().ok())
            .expect("Retry-After on a 503");
        sleep(Duration::from_secs(after)).await;
    }
}

/// Joins, polls exactly as told until admitted, then ends the session as `endings` says.
async fn buyer(app: &TestApp, i: usize, endings: Endings) -> Buyer {
    let name = format!("b{i}");
    // Everyone arrives within the first two seconds.
    sleep(Duration::from_millis(rand::rng().random_range(0..2000))).await;
    let mut seen = Buyer::default();
    let mut reply = obeying(|| join(app, "sale", &name)).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let token = reply.token();
    let until = loop {
        match reply.body["status"].as_str() {
            Some("waiting") => seen.polls.push(waiting(&reply, &name)),
            Some("active") => {
                break reply.body["activeUntil"]
                    .as_str()
                    .and_then(|t| t.parse::<DateTime<Utc>>().ok())
                    .expect("activeUntil");
            }
            _ => panic!("{name}: {}", reply.body),
        }
        let told = reply.body["pollAfterSeconds"].as_u64().expect("told");
        sleep(Duration::from_secs(told)).await;
        reply = obeying(|| status(app, "sale", &token)).await;
    };
    seen.admitted = Some(until - chrono::Duration::from_std(SESSION).unwrap());
    let early = match endings {
        Endings::Expiry => false,
        Endings::Early => true,
        Endings::Mixed => i.is_multiple_of(2),
    };
    if !early {
        seen.ended = Some(until);
        return seen;
    }
    sleep(Duration::from_millis(rand::rng().random_range(2000..6000))).await;
    seen.ended = Some(Utc::now().min(until));
    if Utc::now() < until {
        if i.is_multiple_of(3) {
            // The payment event, redelivered while Redis sheds load, as EventBridge would.
            let event = payment(&format!("pay-{name}"), "sale", &name);
            while let [lineup::ranking::Outcome::Failed(_)] = ranking_updater::apply_events(
                std::slice::from_ref(&event),
                &app.stack.ranking_updater,
            )
            .await
            .as_slice()
            {
                sleep(Duration::from_secs(1)).await;
            }
        } else {
            let left = obeying(|| leave(app, "sale", &token)).await;
            assert!(matches!(left.status, 204 | 410), "{name}: {}", left.body);
        }
    }
    seen
}

/// Runs an on-sale of `BUYERS` into a queue of `CAPACITY` with `SESSION` sessions and a
/// promoter ticking every `TICK`, and returns what each buyer saw.
async fn on_sale(endings: Endings) -> Vec<Buyer> {
    let _turn = lineup_tests::CPU_HEAVY.lock().await;
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", &CAPACITY.to_string()),
        ("SESSION_SECONDS", &SESSION.as_secs().to_string()),
        ("PROMOTE_TICK_SECONDS", &TICK.as_secs().to_string()),
        ("WAITING_IDLE_SECONDS", "60"),
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    let done = std::sync::atomic::AtomicBool::new(false);
    let promoter = async {
        let started = Instant::now();
        let mut ticks = 0u32;
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            lineup_tests::queue::promote(&app).await;
            ticks += 1;
            let next = started + TICK * ticks;
            sleep(next.saturating_duration_since(Instant::now())).await;
        }
    };
    let buyers = async {
        let seen = join_all((0..BUYERS).map(|i| buyer(&app, i, endings))).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        seen
    };
    let ((), seen) = tokio::join!(promoter, buyers);
    seen
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

/// Checks the run's promises and prints its figures:
/// - no estimate rose while its waiter's position held;
/// - the real wait lies inside the range shown at the first poll for ≥ 80 % of waiters;
/// - the real wait ÷ the first estimate shown after the queue's first departure lies within
///   1/1.5 … 1.5 at p10, p50 and p90.
fn report(buyers: &[Buyer], endings: &str) {
    for (i, b) in buyers.iter().enumerate() {
        for pair in b.polls.windows(2) {
            let (p0, p1) = (pair[0], pair[1]);
            if let (true, Some(e0), Some(e1)) =
                (p0.position == p1.position, p0.estimate, p1.estimate)
            {
                assert!(
                    e1 <= e0,
                    "b{i}: the estimate rose at position {}: {:?}",
                    p0.position,
                    b.polls
                );
            }
        }
    }
    let first_departure = buyers
        .iter()
        .filter_map(|b| b.ended)
        .min()
        .expect("a session ended");
    let waited = |b: &Buyer, at: DateTime<Utc>| {
        (b.admitted.expect("admitted") - at).num_milliseconds() as f64 / 1000.0
    };
    let (mut inside, mut shown) = (0, 0);
    let mut ratios = Vec::new();
    for b in buyers {
        let Some(first) = b.polls.first() else {
            continue;
        };
        let (low, high) = first.range.expect("a range");
        let real = waited(b, first.at);
        shown += 1;
        if low - SLACK <= real && real <= high + SLACK {
            inside += 1;
        }
        if let Some(after) = b.polls.iter().find(|p| p.at >= first_departure) {
            let estimate = after.estimate.expect("a number");
            ratios.push(waited(b, after.at).max(0.0) / estimate.max(1.0));
        }
    }
    ratios.sort_by(f64::total_cmp);
    let coverage = inside as f64 / shown as f64;
    let (p10, p50, p90) = (
        percentile(&ratios, 0.1),
        percentile(&ratios, 0.5),
        percentile(&ratios, 0.9),
    );
    println!(
        "RELIABILITY: wait estimates: {BUYERS} buyers joining at once (capacity {CAPACITY}, {} s \
         sessions {endings}, ticks every {} s, every buyer polling as told): the real wait inside \
         the range of the first poll for {:.0} % of {shown}; real wait ÷ the first estimate after \
         the first departure p10 {p10:.2}, p50 {p50:.2}, p90 {p90:.2} over {}",
        SESSION.as_secs(),
        TICK.as_secs(),
        coverage * 100.0,
        ratios.len(),
    );
    assert!(shown >= BUYERS - CAPACITY, "{shown} waiters");
    assert!(
        ratios.len() >= BUYERS / 2,
        "{} waiters seen after the first departure",
        ratios.len()
    );
    assert!(
        coverage >= 0.8,
        "the range held the real wait for {:.0} %",
        coverage * 100.0
    );
    for ratio in [p10, p50, p90] {
        assert!(
            (1.0 / 1.5..=1.5).contains(&ratio),
            "real wait ÷ estimate out of bounds: p10 {p10:.2}, p50 {p50:.2}, p90 {p90:.2}"
        );
    }
}

/// Every session runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_every_session_runs_out() {
    report(&on_sale(Endings::Expiry).await, "that run out");
}

/// Every buyer pays or leaves 2–6 s after seeing its turn: the first sessions to end are the
/// short ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_buyers_end_their_sessions_early_at_varying_times() {
    report(
        &on_sale(Endings::Early).await,
        "ended 2–6 s after the turn by paying or leaving",
    );
}

/// Half the buyers end early, the rest let the session run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_some_sessions_end_early_and_some_run_out() {
    report(
        &on_sale(Endings::Mixed).await,
        "half ended 2–6 s after the turn, half run out",
    );
}

/// A session longer than the mean is paid for before the next tick: no waiter's estimate rises.
#[tokio::test]
async fn an_estimate_does_not_rise_when_a_long_session_is_paid_for_before_the_next_tick() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "sale", "first").await.token();
    join(&app, "sale", "w0").await;
    let mut behind = Vec::new();
    for i in 1..4 {
        behind.push(join(&app, "sale", &format!("w{i}")).await.token());
    }
    // A 1.1 s session sets the mean; w0 takes the place and keeps it for 3 s.
    sleep(Duration::from_millis(1100)).await;
    assert_eq!(leave(&app, "sale", &first).await.status, 204);
    sleep(Duration::from_millis(3000)).await;
    let before = status(&app, "sale", &behind[2]).await;
    assert_eq!(before.body["position"], 3);
    let before = before.body["estimatedWaitSeconds"]
        .as_u64()
        .expect("estimate");
    // w0 pays: the place is free until the next tick, and nobody moved.
    pay(&app, &[payment("pay-w0", "sale", "w0")]).await;
    let after = status(&app, "sale", &behind[2]).await;
    assert_eq!(after.body["position"], 3);
    let after = after.body["estimatedWaitSeconds"]
        .as_u64()
        .expect("estimate");
    assert!(after <= before, "rose from {before} s to {after} s");
}
