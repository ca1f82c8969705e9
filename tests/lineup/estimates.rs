//! Wait estimates as a buyer lives them: real sessions ending on a real clock, a promoter
//! ticking beside them, and 300 buyers who join at once and poll exactly as told. Each run
//! prints a `RELIABILITY:` line.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use lineup::queue::POLL_AFTER_WAIT_PART;
use lineup_tests::queue::{join, leave, status};
use lineup_tests::rankings::{pay, payment};
use lineup_tests::{sleep, Reply, TestApp};
use rand::Rng;

const BUYERS: usize = 300;
const CAPACITY: usize = 20;
const TICK: Duration = Duration::from_secs(1);
/// What the range may miss by: the wait is measured to the admission the promoter records,
/// and each figure is rounded to the second.
const SLACK: f64 = 1.0;

/// How long sessions last: the session's length, and how each buyer ends its own once it sees
/// its turn.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// 6 s sessions that all run out.
    Expiry,
    /// 6 s sessions, every buyer paying or leaving 2–6 s after seeing its turn.
    Early,
    /// 6 s sessions, every other buyer ending 2–6 s after its turn, the rest running out.
    Mixed,
    /// 60 s sessions, every buyer paying or leaving 2–6 s after its turn: far shorter than
    /// the session allows.
    EarlyOfLong,
    /// 10 s sessions, each buyer ending an exponential time after its turn (mean 2 s), or
    /// running out.
    Exponential,
    /// 10 s sessions: three buyers in five end 1–2 s after their turn, the rest 7–10 s.
    Bimodal,
}

impl Shape {
    fn session(self) -> Duration {
        match self {
            Shape::Expiry | Shape::Early | Shape::Mixed => Duration::from_secs(6),
            Shape::EarlyOfLong => Duration::from_secs(60),
            Shape::Exponential | Shape::Bimodal => Duration::from_secs(10),
        }
    }

    /// How long after seeing its turn buyer `i` ends its session; `None`: it lets it run out.
    fn ending(self, i: usize) -> Option<Duration> {
        let mut rng = rand::rng();
        let ms = match self {
            Shape::Expiry => return None,
            Shape::Mixed if !i.is_multiple_of(2) => return None,
            Shape::Early | Shape::Mixed | Shape::EarlyOfLong => rng.random_range(2000..6000),
            Shape::Exponential => (-2000.0 * (1.0 - rng.random::<f64>()).ln()) as u64,
            Shape::Bimodal if rng.random_range(0..5) < 3 => rng.random_range(1000..2000),
            Shape::Bimodal => rng.random_range(7000..10_000),
        };
        Some(Duration::from_millis(ms)).filter(|d| *d < self.session())
    }

    fn describe(self) -> &'static str {
        match self {
            Shape::Expiry => "6 s sessions that run out",
            Shape::Early => "6 s sessions ended 2–6 s after the turn by paying or leaving",
            Shape::Mixed => "6 s sessions, half ended 2–6 s after the turn, half run out",
            Shape::EarlyOfLong => "60 s sessions ended 2–6 s after the turn",
            Shape::Exponential => {
                "10 s sessions ended an exponential time (mean 2 s) after the turn"
            }
            Shape::Bimodal => "10 s sessions, 3 in 5 ended 1–2 s after the turn, the rest 7–10 s",
        }
    }
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
    /// When its join was answered.
    joined: Option<DateTime<Utc>>,
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
        told <= ((low as u64) / POLL_AFTER_WAIT_PART).max(1),
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

/// Joins, polls exactly as told until admitted, then ends the session as `shape` says.
async fn buyer(app: &TestApp, i: usize, shape: Shape) -> Buyer {
    let name = format!("b{i}");
    // Everyone arrives within the first two seconds.
    sleep(Duration::from_millis(rand::rng().random_range(0..2000))).await;
    let mut seen = Buyer::default();
    let mut reply = obeying(|| join(app, "sale", &name)).await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    seen.joined = Some(Utc::now());
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
    seen.admitted = Some(until - chrono::Duration::from_std(shape.session()).unwrap());
    let Some(after) = shape.ending(i) else {
        seen.ended = Some(until);
        return seen;
    };
    // Sleeps of over 2 s are for the real-time suites only; this is one.
    sleep(after).await;
    seen.ended = Some(Utc::now().min(until));
    if Utc::now() < until {
        if i.is_multiple_of(3) {
            // The payment event, redelivered while Redis sheds load, as EventBridge would.
            let event = payment(&format!("pay-{name}"), "sale", &name);
            while let [lineup::ranking::Outcome::Failed(_)] =
                event_applier::apply_events(std::slice::from_ref(&event), &app.stack.event_applier)
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

/// What an on-sale showed: what each buyer saw, and when each promoter tick began and ended.
struct Sale {
    buyers: Vec<Buyer>,
    ticks: Vec<(DateTime<Utc>, DateTime<Utc>)>,
}

/// Runs an on-sale of `BUYERS` into a queue of `CAPACITY` with `shape`'s sessions and a
/// promoter ticking every `TICK`.
async fn on_sale(shape: Shape) -> Sale {
    let _turn = lineup_tests::CPU_HEAVY.read().await;
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", &CAPACITY.to_string()),
        ("SESSION_SECONDS", &shape.session().as_secs().to_string()),
        ("PROMOTE_TICK_SECONDS", &TICK.as_secs().to_string()),
        ("WAITING_IDLE_SECONDS", "60"),
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    let done = std::sync::atomic::AtomicBool::new(false);
    let promoter = async {
        let started = Instant::now();
        let mut ticks = Vec::new();
        while !done.load(std::sync::atomic::Ordering::Relaxed) {
            let began = Utc::now();
            lineup_tests::queue::promote(&app).await;
            ticks.push((began, Utc::now()));
            let next = started + TICK * ticks.len() as u32;
            sleep(next.saturating_duration_since(Instant::now())).await;
        }
        ticks
    };
    let buyers = async {
        let seen = join_all((0..BUYERS).map(|i| buyer(&app, i, shape))).await;
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        seen
    };
    let (ticks, buyers) = tokio::join!(promoter, buyers);
    Sale { buyers, ticks }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[rank]
}

/// The endings after which the figures are first reported.
const FIRST_ENDINGS: usize = 10;

/// How many sessions must have ended before the estimate is held to the band:
/// max(40, capacity ÷ 10). Ten endings are too few for any estimator: the mean of ten
/// exponential lengths lies outside 0.67–1.5 of the true mean in about one run in five
/// (χ² with 20 degrees of freedom: 0.21), and every waiter's estimate shares that error;
/// forty bring it to about one in eighty (0.012), and lengths that spread less, far lower.
const LEARNED_AFTER: usize = if CAPACITY / 10 > 40 {
    CAPACITY / 10
} else {
    40
};

/// From when figures are taken. The ended lengths count from the next tick that admits
/// someone, so from the end of the first tick begun after the endings.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Since {
    /// Once a tick has counted this many ended sessions.
    Endings(usize),
    /// Once, besides, a session's length has passed since the first admission: until then no
    /// live session can have shown that it lasts longer than those that ended.
    ASession(usize),
}

/// What one run showed.
struct Figures {
    /// The real wait ÷ the estimate shown from `since`: p10, p50, p90.
    ratios: (f64, f64, f64),
    /// The share of waiters whose real wait the range then shown held, and its median
    /// high ÷ low.
    learned_range: (f64, f64),
    /// The same for the range of each waiter's first poll.
    first_range: (f64, f64),
}

/// Checks what every run promises (no estimate rose while its waiter's position held) and
/// prints its figures: the range shown at each waiter's first poll, and the real wait ÷ the
/// first estimate a waiter was shown from `since`, with the range shown then, for `check` to
/// hold.
fn report(sale: &Sale, shape: Shape, since: Since) -> Figures {
    let buyers = &sale.buyers;
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
    let mut endings: Vec<DateTime<Utc>> = buyers.iter().filter_map(|b| b.ended).collect();
    endings.sort();
    let count = match since {
        Since::Endings(n) | Since::ASession(n) => n,
    };
    let mut ended = *endings.get(count - 1).expect("enough sessions ended");
    if let Since::ASession(_) = since {
        let first = buyers
            .iter()
            .filter_map(|b| b.admitted)
            .min()
            .expect("admitted");
        ended = ended.max(first + chrono::Duration::from_std(shape.session()).unwrap());
    }
    let learned = sale
        .ticks
        .iter()
        .find(|(began, _)| *began > ended)
        .map(|(_, done)| *done)
        .expect("a tick after the endings");
    let waited = |b: &Buyer, at: DateTime<Utc>| {
        (b.admitted.expect("admitted") - at).num_milliseconds() as f64 / 1000.0
    };
    let holds = |(low, high): (f64, f64), real: f64| low - SLACK <= real && real <= high + SLACK;
    let width = |(low, high): (f64, f64)| high / low.max(1.0);
    let (mut first_inside, mut first_widths) = (0, Vec::new());
    let (mut learned_inside, mut learned_widths) = (0, Vec::new());
    let mut ratios = Vec::new();
    for b in buyers {
        let Some(first) = b.polls.first() else {
            continue;
        };
        let range = first.range.expect("a range");
        first_inside += usize::from(holds(range, waited(b, first.at)));
        first_widths.push(width(range));
        if let Some(after) = b.polls.iter().find(|p| p.at >= learned) {
            let estimate = after.estimate.expect("a number");
            let real = waited(b, after.at).max(0.0);
            ratios.push(real / estimate.max(1.0));
            let range = after.range.expect("a range");
            learned_inside += usize::from(holds(range, real));
            learned_widths.push(width(range));
        }
    }
    for list in [&mut ratios, &mut first_widths, &mut learned_widths] {
        list.sort_by(f64::total_cmp);
    }
    let shown = first_widths.len();
    let figures = Figures {
        ratios: (
            percentile(&ratios, 0.1),
            percentile(&ratios, 0.5),
            percentile(&ratios, 0.9),
        ),
        learned_range: (
            learned_inside as f64 / ratios.len().max(1) as f64,
            percentile(&learned_widths, 0.5),
        ),
        first_range: (
            first_inside as f64 / shown as f64,
            percentile(&first_widths, 0.5),
        ),
    };
    let (p10, p50, p90) = figures.ratios;
    println!(
        "RELIABILITY: wait estimates: {BUYERS} buyers joining at once (capacity {CAPACITY}, {}, \
         ticks every {} s, every buyer polling as told): the first poll's range held the real \
         wait for {:.0} % of {shown} (median high ÷ low {:.1}); once a tick had counted {count} \
         ended sessions{}, real wait ÷ estimate p10 {p10:.2}, p50 {p50:.2}, p90 {p90:.2} over {}, the \
         range held it for {:.0} % (median high ÷ low {:.1})",
        shape.describe(),
        TICK.as_secs(),
        figures.first_range.0 * 100.0,
        figures.first_range.1,
        match since {
            Since::Endings(_) => "",
            Since::ASession(_) => " and a session's length had passed since the first admission",
        },
        ratios.len(),
        figures.learned_range.0 * 100.0,
        figures.learned_range.1,
    );
    // Admitted on joining: the first `CAPACITY`, and one more for each session that ended
    // before the last buyer had joined.
    let last_join = buyers
        .iter()
        .filter_map(|b| b.joined)
        .max()
        .expect("joined");
    let freed_while_joining = endings.iter().filter(|e| **e < last_join).count();
    assert!(
        shown >= BUYERS - CAPACITY - freed_while_joining,
        "{shown} waiters, {freed_while_joining} sessions ended while buyers joined"
    );
    assert!(
        ratios.len() >= BUYERS / 2,
        "{} waiters seen once {count} sessions had ended",
        ratios.len()
    );
    figures
}

/// How far the real wait ÷ the estimate may stray, either way, where lengths spread little.
const BAND: f64 = 1.5;

/// The same where lengths spread wider: two kinds of buyer. Forty lengths known in full give a
/// mean that strays from the later sessions' by up to 0.88–1.18 in the runs measured, and the
/// estimator sees most of them only in part: the live ones' ages.
const WIDE_BAND: f64 = 2.0;

/// The estimate once sessions have been seen to end: real wait ÷ estimate within 1/`band` …
/// `band` at p10, p50 and p90; the range then shown holds the real wait for ≥ 80 % of waiters,
/// with a median high ÷ low ≤ 4; and the range of each waiter's first poll held it for ≥ 80 %.
fn check(figures: &Figures, band: f64) {
    let (p10, p50, p90) = figures.ratios;
    for ratio in [p10, p50, p90] {
        assert!(
            (1.0 / band..=band).contains(&ratio),
            "real wait ÷ estimate out of bounds: p10 {p10:.2}, p50 {p50:.2}, p90 {p90:.2}"
        );
    }
    let (held, width) = figures.learned_range;
    assert!(
        held >= 0.8,
        "the range held the real wait for {:.0} %",
        held * 100.0
    );
    assert!(width <= 4.0, "median high ÷ low {width:.1}");
    assert!(
        figures.first_range.0 >= 0.8,
        "the first poll's range held the real wait for {:.0} %",
        figures.first_range.0 * 100.0
    );
}

/// Runs an on-sale of `shape`, reports its figures after `FIRST_ENDINGS` endings and holds
/// those after `LEARNED_AFTER` to `check` within `band`.
async fn learned_and_checked(shape: Shape, band: f64) -> Sale {
    let sale = on_sale(shape).await;
    report(&sale, shape, Since::Endings(FIRST_ENDINGS));
    check(&report(&sale, shape, Since::Endings(LEARNED_AFTER)), band);
    sale
}

/// Every session runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_every_session_runs_out() {
    learned_and_checked(Shape::Expiry, BAND).await;
}

/// Every buyer pays or leaves 2–6 s after seeing its turn: the first sessions to end are the
/// short ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_buyers_end_their_sessions_early_at_varying_times() {
    learned_and_checked(Shape::Early, BAND).await;
}

/// Half the buyers end early, the rest let the session run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_honest_when_some_sessions_end_early_and_some_run_out() {
    learned_and_checked(Shape::Mixed, BAND).await;
}

/// Buyers pay 2–6 s into a 60 s session: the estimate learns the lengths seen, not the
/// session's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_learn_sessions_far_shorter_than_allowed() {
    learned_and_checked(Shape::EarlyOfLong, BAND).await;
}

/// Lengths spread as an exponential, with a long tail cut at the session's end: measured against
/// `BAND`, and held to what every run promises. Forty such lengths are too few for even
/// `WIDE_BAND` to hold in every run: p90 reached 1.94 in one run beside a loaded machine, p50
/// 1.52.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_are_measured_when_lengths_are_exponential() {
    let sale = on_sale(Shape::Exponential).await;
    report(&sale, Shape::Exponential, Since::Endings(FIRST_ENDINGS));
    report(&sale, Shape::Exponential, Since::Endings(LEARNED_AFTER));
}

/// Two kinds of buyer: most pay at once, the rest take most of the session. Held within
/// `WIDE_BAND`, and measured against `BAND`: the first endings are all of the short kind, and
/// nothing seen then tells the live sessions of the long kind from the short ones yet to end.
/// Reported also once a session's length has passed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn estimates_hold_wider_when_lengths_are_bimodal() {
    let sale = learned_and_checked(Shape::Bimodal, WIDE_BAND).await;
    report(&sale, Shape::Bimodal, Since::ASession(LEARNED_AFTER));
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
