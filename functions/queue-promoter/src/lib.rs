//! `queue-promoter`: admits waiters. EventBridge schedules fire at most once a minute, so
//! one invocation ticks every `PROMOTE_TICK_SECONDS` (every second on the striped line, under
//! each line's lease, `LINE_STRIPES`) for up to `PROMOTE_BUDGET_SECONDS`
//! (stopping early if the Lambda deadline is near). Each tick reads the queue registry and
//! promotes every queue in one pipelined round trip.
//!
//! The input is ignored: a scheduled event, `{}` or anything else all mean "tick now".

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use lambda_runtime::LambdaEvent;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, PromoterSettings, SecretPolicy};
use lineup::ids::QueueId;
use lineup::metrics::MetricsSink;
use lineup::publish::Outlet;
use lineup::queue::{PromotionReport, WaitingRoom};
use serde::Serialize;
use serde_json::Value;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    /// How long one invocation keeps ticking.
    pub promoter: PromoterSettings,
    pub outlet: Outlet,
    /// The registry as read by the last tick, kept while the container lives.
    pub known_queues: KnownQueues,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Unused;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::QueueEvents;

impl Deps {
    /// The handler's dependencies from what cold start built, writing metrics to `metrics`:
    /// the one place they are wired.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        Ok(Deps {
            room: started.room()?,
            promoter: started.config.env.promoter()?,
            outlet: started.outlet(metrics),
            known_queues: KnownQueues::default(),
        })
    }
}

/// The queues the next tick promotes. Each tick refreshes it in the same round trip as its
/// promotions, so a tick costs one round trip while the set of queues stays the same.
#[derive(Clone, Default)]
pub struct KnownQueues(Arc<Mutex<Option<Vec<QueueId>>>>);

/// What one invocation did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub ticks: u64,
    /// Ticks that could not reach Redis; the next tick or invocation tries again.
    pub failed_ticks: u64,
    pub admitted: u64,
    pub abandoned: u64,
    pub expired: u64,
    /// Queue state events that could not be published after every retry.
    pub unpublished_events: u64,
}

/// Runs promotion ticks until the budget is spent. Redis failures are logged and retried
/// on the next tick rather than failing the invocation.
pub async fn handle(
    event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<Output, lambda_runtime::Error> {
    let started = Instant::now();
    let deadline = remaining_time(&event).map(|left| started + left);
    let mut output = Output::default();
    loop {
        match tick(deps).await {
            Ok(report) => {
                output.admitted += report.admitted();
                output.abandoned += report.abandoned();
                output.expired += report.expired();
                output.unpublished_events += publish_and_measure(&report, deps).await;
            }
            Err(err) => {
                output.failed_ticks += 1;
                tracing::warn!(error = %err, "promotion tick failed");
            }
        }
        output.ticks += 1;
        let next = started + deps.room.tick_every() * output.ticks as u32;
        let budget_left = next.duration_since(started) <= deps.promoter.budget;
        // Leave two seconds for the last tick to finish before Lambda's deadline.
        let deadline_left = deadline.is_none_or(|d| next + Duration::from_secs(2) < d);
        if !(budget_left && deadline_left) {
            return Ok(output);
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

/// One promotion tick over every registered queue: one round trip, except the first tick of
/// a new container (which reads the registry first) and a tick that finds new queues.
pub async fn tick(deps: &Deps) -> Result<PromotionReport, lineup::Error> {
    let known = deps
        .known_queues
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let queues = match known {
        Some(queues) => queues,
        None => deps.room.registered_queues().await?,
    };
    let (mut report, registered) = deps.room.promote_and_list(&queues, true).await?;
    // Queues registered since the last tick are promoted at once, in a second round trip
    // that only a change of the registry costs.
    let new: Vec<QueueId> = registered
        .iter()
        .flatten()
        .filter(|queue| !queues.contains(queue))
        .cloned()
        .collect();
    if !new.is_empty() {
        report.queues.extend(deps.room.promote(&new).await?.queues);
    }
    // A listing not read this tick (its shard failing over) leaves the known list as it was.
    if registered.is_some() {
        *deps
            .known_queues
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = registered;
    }
    Ok(report)
}

/// Publishes the tick's events and writes its metrics; returns the events not published.
pub async fn publish_and_measure(report: &PromotionReport, deps: &Deps) -> u64 {
    deps.outlet
        .report(
            "promotion tick",
            report.totals(),
            report.records(),
            report.events(),
        )
        .await
}

fn remaining_time(event: &LambdaEvent<Value>) -> Option<Duration> {
    let deadline = SystemTime::UNIX_EPOCH + Duration::from_millis(event.context.deadline);
    // The default test context has no deadline (0): no limit then.
    deadline.duration_since(SystemTime::now()).ok()
}
