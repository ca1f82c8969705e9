//! `coupon-publisher`: drains the coupon outboxes into EventBridge (`EVENT_BUS_NAME`, source
//! `lineup.coupon`, detail-type `CouponClaimed`). EventBridge schedules fire at most once a
//! minute, so one invocation drains every [`DRAIN_EVERY`] for up to [`BUDGET`] (stopping
//! early if the Lambda deadline is near).
//!
//! A drain pass reads the campaign registry, then the oldest outbox entries of every
//! campaign in one pipelined round trip, sends them in PutEvents calls of at most ten, and
//! removes in one more round trip only the entries EventBridge accepted. An entry refused
//! (throttled, an endpoint down, a call that timed out) stays and is sent again by a later
//! pass: every claim is published at least once, and a consumer dedupes by (`couponId`,
//! `userId`).
//!
//! Without `EVENT_BUS_NAME` an invocation ends at once, and claims wait in their outbox
//! until their campaign expires.
//!
//! The input is ignored: a scheduled event, `{}` or anything else all mean "drain now".

use std::time::{Duration, Instant, SystemTime};

use futures::future::join_all;
use lambda_runtime::LambdaEvent;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, RateLimits, SecretPolicy};
use lineup::coupon::{CouponClaimed, Coupons, Pending, Registered, DETAIL_TYPE, SOURCE};
use lineup::ids::UserId;
use lineup::publish::{Outgoing, Publisher, ENTRIES_PER_CALL};
use lineup::store::Batch;
use serde::Serialize;
use serde_json::Value;

/// Pause between drain passes within one invocation.
pub const DRAIN_EVERY: Duration = Duration::from_secs(1);
/// How long one invocation keeps draining.
pub const BUDGET: Duration = Duration::from_secs(50);
/// Most rounds of one pass: a pass stops early once an outbox is empty or a round sends
/// nothing that EventBridge accepts.
const ROUNDS_PER_PASS: usize = 100;
/// PutEvents calls in flight at once.
const CONCURRENT_CALLS: usize = 8;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub coupons: Coupons,
    pub publisher: Publisher,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Unused;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::QueueEvents;

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads: the one place they are wired.
    pub fn new(started: &Started) -> Result<Self, ConfigError> {
        Ok(Deps {
            // It takes no claims, so no claim limits.
            coupons: started.coupons(RateLimits::OFF),
            publisher: started.publisher.clone(),
        })
    }
}

/// What one invocation or pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub passes: u64,
    /// Passes that could not reach Redis; the next pass tries again.
    pub failed_passes: u64,
    /// Claims EventBridge accepted, and so removed from their outbox.
    pub published: u64,
    /// Sends EventBridge refused; those entries stay in their outbox.
    pub refused: u64,
}

/// Drains until the budget is spent. Redis failures are logged and retried on the next pass.
pub async fn handle(
    event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<Output, lambda_runtime::Error> {
    let started = Instant::now();
    let deadline = remaining_time(&event).map(|left| started + left);
    let mut output = Output::default();
    loop {
        match drain(deps).await {
            Ok(pass) => {
                output.published += pass.published;
                output.refused += pass.refused;
            }
            Err(err) => {
                output.failed_passes += 1;
                tracing::warn!(error = %err, "coupon outbox pass failed");
            }
        }
        output.passes += 1;
        if !deps.publisher.is_enabled() {
            // Without a bus nothing ever drains: one pass, which reads nothing.
            return Ok(output);
        }
        let next = started + DRAIN_EVERY * output.passes as u32;
        let budget_left = next.duration_since(started) <= BUDGET;
        let deadline_left = deadline.is_none_or(|d| next + Duration::from_secs(2) < d);
        if !(budget_left && deadline_left) {
            return Ok(output);
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

/// One drain pass over every registered campaign: rounds of read, publish, remove, until
/// the outboxes are empty or EventBridge accepts nothing more. Without a bus (publishing
/// off) it reads nothing.
pub async fn drain(deps: &Deps) -> Result<Output, lineup::Error> {
    let mut output = Output {
        passes: 1,
        ..Output::default()
    };
    if !deps.publisher.is_enabled() {
        return Ok(output);
    }
    // Each round reads only the campaigns whose last read filled a whole page: the others'
    // outboxes are empty, or hold only entries EventBridge just refused.
    let mut campaigns = deps.coupons.registered().await?;
    for _ in 0..ROUNDS_PER_PASS {
        let mut batch = Batch::new();
        let staged: Vec<_> = campaigns
            .iter()
            .map(|campaign| {
                deps.coupons
                    .stage_pending(&mut batch, campaign, ENTRIES_PER_CALL)
            })
            .collect();
        let replies = deps.coupons.send(&batch).await?;
        let mut entries = Vec::new();
        let mut full = Vec::new();
        for (campaign, staged) in campaigns.iter().zip(&staged) {
            let Pending::Entries { entries: pending } = staged.read(&replies)?;
            if pending.len() == ENTRIES_PER_CALL {
                full.push(campaign.clone());
            }
            for (user, claim) in pending {
                let detail = CouponClaimed::detail(&campaign.coupon, &user, &claim);
                entries.push((campaign, user, detail));
            }
        }
        if entries.is_empty() {
            break;
        }
        let calls: Vec<_> = entries.chunks(ENTRIES_PER_CALL).collect();
        let events: Vec<Vec<Outgoing>> = calls
            .iter()
            .map(|call| {
                call.iter()
                    .map(|(_, _, detail)| Outgoing {
                        source: SOURCE,
                        detail_type: DETAIL_TYPE,
                        detail: detail.clone(),
                    })
                    .collect()
            })
            .collect();
        let mut accepted: Vec<Vec<bool>> = Vec::with_capacity(events.len());
        for group in events.chunks(CONCURRENT_CALLS) {
            accepted.extend(join_all(group.iter().map(|call| deps.publisher.put(call))).await);
        }
        let mut ack = Batch::new();
        let mut published = 0u64;
        for campaign in &campaigns {
            let users: Vec<&UserId> = calls
                .iter()
                .zip(&accepted)
                .flat_map(|(call, accepted)| call.iter().zip(accepted))
                .filter(|((owner, _, _), accepted)| **accepted && same(owner, campaign))
                .map(|((_, user, _), _)| user)
                .collect();
            if !users.is_empty() {
                published += users.len() as u64;
                deps.coupons.stage_ack(&mut ack, campaign, &users);
            }
        }
        let refused = entries.len() as u64 - published;
        output.published += published;
        output.refused += refused;
        if !ack.is_empty() {
            deps.coupons.send(&ack).await?;
        }
        if published == 0 || full.is_empty() {
            break;
        }
        campaigns = full;
    }
    if output.published > 0 || output.refused > 0 {
        tracing::info!(
            published = output.published,
            refused = output.refused,
            "coupon outbox pass"
        );
    }
    Ok(output)
}

fn same(a: &Registered, b: &Registered) -> bool {
    a.coupon == b.coupon && a.home == b.home
}

fn remaining_time(event: &LambdaEvent<Value>) -> Option<Duration> {
    let deadline = SystemTime::UNIX_EPOCH + Duration::from_millis(event.context.deadline);
    // The default test context has no deadline (0): no limit then.
    deadline.duration_since(SystemTime::now()).ok()
}
