//! `queue-promoter`: admits waiters. EventBridge schedules fire at most once a minute, so
//! one invocation ticks every `PROMOTE_TICK_SECONDS` for up to `PROMOTE_BUDGET_SECONDS`
//! (stopping early if the Lambda deadline is near). Each tick reads the queue registry and
//! promotes every queue in one pipelined round trip.
//!
//! The input is ignored: a scheduled event, `{}` or anything else all mean "tick now".

use std::time::{Duration, Instant, SystemTime};

use lambda_runtime::LambdaEvent;
use lineup::queue::{PromotionReport, WaitingRoom};
use serde::Serialize;
use serde_json::Value;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
}

/// What one invocation did.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Output {
    pub ticks: u64,
    /// Ticks that could not reach Redis; the next tick or invocation tries again.
    pub failed_ticks: u64,
    pub admitted: u64,
    pub dropped: u64,
}

/// Runs promotion ticks until the budget is spent. Redis failures are logged and retried
/// on the next tick rather than failing the invocation.
pub async fn handle(
    event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<Output, lambda_runtime::Error> {
    let settings = deps.room.settings();
    let started = Instant::now();
    let deadline = remaining_time(&event).map(|left| started + left);
    let mut output = Output::default();
    loop {
        match tick(&deps.room).await {
            Ok(report) => {
                output.admitted += report.admitted;
                output.dropped += report.dropped;
                tracing::info!(?report, "promotion tick");
            }
            Err(err) => {
                output.failed_ticks += 1;
                tracing::warn!(error = %err, "promotion tick failed");
            }
        }
        output.ticks += 1;
        let next = started + settings.promote_tick * output.ticks as u32;
        let budget_left = next.duration_since(started) <= settings.promote_budget;
        // Leave two seconds for the last tick to finish before Lambda's deadline.
        let deadline_left = deadline.is_none_or(|d| next + Duration::from_secs(2) < d);
        if !(budget_left && deadline_left) {
            return Ok(output);
        }
        tokio::time::sleep_until(next.into()).await;
    }
}

/// One promotion tick over every registered queue.
pub async fn tick(room: &WaitingRoom) -> Result<PromotionReport, lineup::Error> {
    let queues = room.registered_queues().await?;
    room.promote(&queues).await
}

fn remaining_time(event: &LambdaEvent<Value>) -> Option<Duration> {
    let deadline = SystemTime::UNIX_EPOCH + Duration::from_millis(event.context.deadline);
    // The default test context has no deadline (0): no limit then.
    deadline.duration_since(SystemTime::now()).ok()
}
