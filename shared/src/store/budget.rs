//! A request's time with Redis: every call one request makes, however many round trips it
//! takes (a script the server lacked, a queue's registration, a draw seed learnt), ends
//! within [`REQUEST_BUDGET`] response timeouts of the request's start; and a call outside a
//! request (a promotion tick, a reaper run) within two, its first try and a script sent again.

use std::future::Future;
use std::time::{Duration, Instant};

tokio::task_local! {
    /// When the request being handled on this task began.
    static STARTED: Instant;
}

/// How many response timeouts (`REDIS_RESPONSE_TIMEOUT_MS`) all the Redis calls of one
/// request may take together. Past that, the next step fails as a timeout: 503.
pub const REQUEST_BUDGET: u32 = 4;

/// How many response timeouts one call may take outside a request.
const CALL_BUDGET: u32 = 2;

/// Handles one request, `handling`, with its Redis budget starting now. Every HTTP function
/// and the gatekeeper run each request through this.
pub async fn request<F: Future>(handling: F) -> F::Output {
    STARTED.scope(Instant::now(), handling).await
}

/// How long one call may still wait, each reply at most `reply_within`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limit {
    reply_within: Duration,
    deadline: Instant,
}

impl Limit {
    /// The limit of a call starting now: the rest of its request's budget, or two response
    /// timeouts outside a request.
    pub(super) fn starting_now(reply_within: Duration) -> Self {
        let now = Instant::now();
        let deadline = STARTED
            .try_with(|started| *started + reply_within * REQUEST_BUDGET)
            .unwrap_or(now + reply_within * CALL_BUDGET);
        Limit {
            reply_within,
            deadline,
        }
    }

    /// What is left of the budget.
    pub(super) fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// How long the next reply may take: a response timeout, or what is left of the
    /// budget if less (zero once it is spent).
    pub(super) fn next_reply(&self) -> Duration {
        self.reply_within.min(self.remaining())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_shares_four_response_timeouts_among_its_calls() {
        let timeout = Duration::from_millis(100);
        request(async {
            let limit = Limit::starting_now(timeout);
            assert_eq!(limit.next_reply(), timeout);
            tokio::time::sleep(timeout * 7 / 2).await;
            // A call that starts late in the request gets only what is left.
            let late = Limit::starting_now(timeout);
            assert!(late.next_reply() <= timeout / 2, "{:?}", late.next_reply());
            tokio::time::sleep(timeout).await;
            assert_eq!(Limit::starting_now(timeout).next_reply(), Duration::ZERO);
        })
        .await;
    }

    #[tokio::test]
    async fn a_call_outside_a_request_gets_two_response_timeouts() {
        let timeout = Duration::from_millis(100);
        let limit = Limit::starting_now(timeout);
        assert_eq!(limit.next_reply(), timeout);
        assert!(limit.deadline <= Instant::now() + timeout * 2);
        assert!(limit.deadline > Instant::now() + timeout);
    }
}
