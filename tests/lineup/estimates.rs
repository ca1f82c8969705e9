//! Wait estimates as a buyer lives them: real sessions ending on a real clock, a promoter
//! ticking beside them, waiters arriving at a steady pace and polling. Prints a
//! `RELIABILITY:` line.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use lineup_tests::queue::{join, leave, status};
use lineup_tests::rankings::{pay, payment};
use lineup_tests::{sleep, TestApp};

const CAPACITY: usize = 2;
const SESSION: Duration = Duration::from_secs(3);
const TICK: Duration = Duration::from_millis(250);
const POLL: Duration = Duration::from_millis(300);

/// What one waiter saw: each poll's (position, estimate), the first number and when it came,
/// and when it was admitted.
#[derive(Debug, Default)]
struct Waiter {
    polls: Vec<(u64, Option<u64>)>,
    first: Option<(u64, DateTime<Utc>)>,
    admitted: Option<DateTime<Utc>>,
}

/// Joins at `arrive_after` and polls until admitted.
async fn waiter(app: &TestApp, name: String, arrive_after: Duration) -> (Waiter, String) {
    sleep(arrive_after).await;
    let mut seen = Waiter::default();
    let joined = join(app, "sale", &name).await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    let token = joined.token();
    let mut reply = joined;
    loop {
        let now = Utc::now();
        match reply.body["status"].as_str() {
            Some("waiting") => {
                let position = reply.body["position"].as_u64().expect("position");
                let estimate = reply.body["estimatedWaitSeconds"].as_u64();
                seen.polls.push((position, estimate));
                if let (Some(e), None) = (estimate, seen.first) {
                    seen.first = Some((e, now));
                }
            }
            Some("active") => {
                let until: DateTime<Utc> = reply.body["activeUntil"]
                    .as_str()
                    .and_then(|t| t.parse().ok())
                    .expect("activeUntil");
                seen.admitted = Some(until - chrono::Duration::from_std(SESSION).unwrap());
                break;
            }
            _ => panic!("{name}: {}", reply.body),
        }
        sleep(POLL).await;
        reply = status(app, "sale", &token).await;
    }
    (seen, token)
}

/// Ends the session of buyer `i` after `after`: even ones leave, odd ones pay (the payment
/// releases the session, and the place is filled on the next tick).
async fn end_early(app: &TestApp, i: usize, name: &str, token: &str, after: Duration) {
    sleep(after).await;
    if i.is_multiple_of(2) {
        assert_eq!(leave(app, "sale", token).await.status, 204);
    } else {
        pay(app, &[payment(&format!("pay-{name}"), "sale", name)]).await;
    }
}

/// Runs an on-sale: `CAPACITY` buyers take every place at once, then `waiters` arrive one
/// every `pace`; a promoter ticks every `TICK` until all are admitted. Sessions run out, or
/// with `pays_after` each buyer ends theirs that long after admission. Returns each
/// waiter's first estimate ÷ its actual wait, after checking that no estimate rose while the
/// waiter's position held.
async fn on_sale(waiters: usize, pace: Duration, pays_after: Option<Duration>) -> Vec<f64> {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", &CAPACITY.to_string()),
        ("SESSION_SECONDS", &SESSION.as_secs().to_string()),
        ("WAITING_IDLE_SECONDS", "30"),
    ])
    .await;
    let mut firsts = Vec::new();
    for i in 0..CAPACITY {
        let name = format!("first-{i}");
        let first = join(&app, "sale", &name).await;
        assert_eq!(first.body["status"], "active");
        firsts.push((i, name, first.token()));
    }
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
        let first_buyers = join_all(firsts.iter().map(|(i, name, token)| async {
            if let Some(after) = pays_after {
                end_early(&app, *i, name, token, after).await;
            }
        }));
        let waiters = join_all((0..waiters).map(|i| {
            let app = &app;
            async move {
                let name = format!("w{i}");
                let (seen, token) = waiter(app, name.clone(), pace * i as u32).await;
                if let Some(after) = pays_after {
                    end_early(app, i, &name, &token, after).await;
                }
                seen
            }
        }));
        let ((), seen) = tokio::join!(
            async {
                first_buyers.await;
            },
            waiters
        );
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        seen
    };
    let ((), seen) = tokio::join!(promoter, buyers);
    let mut ratios = Vec::new();
    for (i, w) in seen.iter().enumerate() {
        for pair in w.polls.windows(2) {
            let ((p0, e0), (p1, e1)) = (pair[0], pair[1]);
            if let (true, Some(e0), Some(e1)) = (p0 == p1, e0, e1) {
                assert!(
                    e1 <= e0,
                    "w{i}: the estimate rose at position {p0}: {:?}",
                    w.polls
                );
            }
        }
        // Admitted before any session ended: no rate was known, and null was honest.
        let Some((estimate, at)) = w.first else {
            assert!(i < CAPACITY, "w{i} never saw a number: {w:?}");
            continue;
        };
        let admitted = w.admitted.expect("admitted");
        let actual = (admitted - at).num_milliseconds() as f64 / 1000.0;
        ratios.push(estimate as f64 / actual.max(0.5));
    }
    ratios
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

/// Checks the spread of `ratios` and prints it.
fn report(mut ratios: Vec<f64>, waiters: usize, endings: &str) {
    assert!(ratios.len() + CAPACITY >= waiters, "{ratios:?}");
    ratios.sort_by(f64::total_cmp);
    let (p10, median, p90) = (
        percentile(&ratios, 0.1),
        percentile(&ratios, 0.5),
        percentile(&ratios, 0.9),
    );
    println!(
        "RELIABILITY: honest estimates: {} waiters behind a full queue (capacity {CAPACITY}, \
         {} s sessions {endings}, ticks every {} ms): first estimate ÷ actual wait \
         median {median:.2}, p10 {p10:.2}, p90 {p90:.2}; no estimate rose while its position held",
        ratios.len(),
        SESSION.as_secs(),
        TICK.as_millis(),
    );
    for ratio in [p10, median, p90] {
        assert!(
            (1.0 / 1.5..=1.5).contains(&ratio),
            "first estimate ÷ actual wait out of bounds: {ratios:?}"
        );
    }
}

/// An on-sale on a real clock: capacity 2 taken at once, 3 s sessions that run out, 10 waiters
/// arriving every 0.7 s (then every 0.5 s), each polling every 0.3 s, a promoter ticking every 250
/// ms. Each waiter's first estimate is compared with its actual wait (over the waiters who saw a
/// number; the first ones are admitted while the estimate is still `null`). No waiter's estimate
/// may rise while its position holds. The p10, median and p90 of first estimate ÷ actual wait must
/// lie within 1/1.5 … 1.5; the `RELIABILITY:` line prints them.
#[tokio::test]
async fn the_first_estimate_a_waiter_sees_is_within_half_again_of_its_wait_and_never_rises() {
    let ratios = on_sale(10, Duration::from_millis(700), None).await;
    report(ratios, 10, "ending by expiry");
}

/// The same on-sale, but every buyer ends the session after 1.5 s, half by leaving and half by
/// payment. The same bounds hold.
#[tokio::test]
async fn estimates_stay_honest_when_buyers_pay_or_leave_before_their_session_ends() {
    let ratios = on_sale(
        10,
        Duration::from_millis(500),
        Some(Duration::from_millis(1500)),
    )
    .await;
    report(ratios, 10, "ended after 1.5 s by leaving or paying");
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
