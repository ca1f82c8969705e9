//! Redis out of reach: the settings that make the functions give up quickly, the bound an
//! outage answer must come within, and retrying until served again.

use std::time::{Duration, Instant};

use crate::queue::join;
use crate::{sleep, Reply, TestApp};

/// Short Redis timeouts, so an outage is answered quickly, and no rate limits, so retries
/// are never refused for being retries.
pub const QUICK_TO_GIVE_UP: &[(&str, &str)] = &[
    ("REDIS_CONNECT_TIMEOUT_MS", "300"),
    ("REDIS_RESPONSE_TIMEOUT_MS", "500"),
    ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ("RATE_LIMIT_USER_PER_MINUTE", "0"),
];

/// The longest a request may take, whatever Redis does: its Redis budget
/// ([`lineup::store::REQUEST_BUDGET`] response timeouts, which the code enforces) twice over.
/// The second budget is room for a test machine starved of CPU, so what this catches is a
/// hang, never a slow machine. How fast an answer comes is a figure RELIABILITY.md reports.
pub fn hang_bound(response_timeout: Duration) -> Duration {
    response_timeout * lineup::store::REQUEST_BUDGET * 2
}

/// The longest any request may take while Redis is down, with [`QUICK_TO_GIVE_UP`]'s
/// timeouts: a connect timeout and [`hang_bound`] of its response timeout. Never a hang.
pub const OUTAGE_BOUND: Duration =
    Duration::from_millis(300 + 500 * lineup::store::REQUEST_BUDGET as u64 * 2);

/// How long the functions may take to serve again once a new connection can reach Redis: far
/// more than a reconnection takes, so that it tells "by itself" from "never", not fast from
/// slow.
pub const RECOVERY: Duration = Duration::from_secs(15);

/// Asserts that `reply` is the outage answer, 503 with `Retry-After`, given within the bound.
pub fn assert_unavailable_in_time(reply: &Reply, took: Duration) {
    assert_eq!(reply.status, 503, "{}", reply.body);
    assert!(reply.headers.contains_key("retry-after"));
    assert!(took < OUTAGE_BOUND, "hung for {took:?}");
}

/// `user` asks for a place in `queue` every 100 ms while the answer is 503, for at most
/// [`RECOVERY`]: the last answer, how long after the first try it came, and how many 503s
/// came before it.
pub async fn join_until_served(app: &TestApp, queue: &str, user: &str) -> (Reply, Duration, u32) {
    let started = Instant::now();
    let (reply, unavailable) =
        answer_until(|| join(app, queue, user), |reply| reply.status != 503).await;
    (reply, started.elapsed(), unavailable)
}

/// Asks `ask` every 100 ms until its answer is `done`, for at most [`RECOVERY`]: the last
/// answer, and how many came before it.
pub async fn answer_until<T, F: std::future::Future<Output = T>>(
    mut ask: impl FnMut() -> F,
    done: impl Fn(&T) -> bool,
) -> (T, u32) {
    let started = Instant::now();
    let mut before = 0;
    let mut answer = ask().await;
    while !done(&answer) && started.elapsed() < RECOVERY {
        before += 1;
        sleep(Duration::from_millis(100)).await;
        answer = ask().await;
    }
    (answer, before)
}
