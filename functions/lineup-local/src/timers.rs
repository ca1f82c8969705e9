//! The timers: the promoter, the reaper, the rankings' tick and the coupon publisher run on the schedules
//! EventBridge gives them in AWS, through their Lambda handlers.

use lambda_runtime::{Context, LambdaEvent};
use lineup::config::LocalSettings;

use crate::stack::Stack;

/// How often the local stack runs the rankings' tick (AWS: once a minute).
pub const ROLL_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Runs the promoter every `PROMOTE_TICK_SECONDS` (every second on the striped line), the
/// reaper every
/// `REAP_INTERVAL_SECONDS` ([`LocalSettings`]), the rankings' tick every [`ROLL_EVERY`] and a
/// coupon outbox drain every [`coupon_publisher::DRAIN_EVERY`], through their Lambda
/// handlers, until the task is dropped.
pub fn spawn_schedules(stack: &Stack, local: &LocalSettings) -> tokio::task::JoinHandle<()> {
    let promoter = stack.promoter.clone();
    let reaper = stack.reaper.clone();
    let applier = stack.event_applier.clone();
    let coupons = stack.coupon_publisher.clone();
    let tick_every = promoter.room.tick_every();
    let reap_interval = local.reap_interval;
    tokio::spawn(async move {
        let mut promote = tokio::time::interval(tick_every);
        let mut reap = tokio::time::interval(reap_interval);
        let mut roll = tokio::time::interval(ROLL_EVERY);
        let mut drain = tokio::time::interval(coupon_publisher::DRAIN_EVERY);
        loop {
            tokio::select! {
                _ = promote.tick() => {
                    // Budget 0 in the local loop: one tick per timer tick.
                    match queue_promoter::tick(&promoter).await {
                        Ok(report) => {
                            queue_promoter::publish_and_measure(&report, &promoter).await;
                        }
                        Err(err) => tracing::warn!(error = %err, "promotion tick failed"),
                    }
                }
                _ = reap.tick() => {
                    let _ = queue_reaper::handle(scheduled_event(), &reaper).await;
                }
                _ = drain.tick() => {
                    // One pass per timer tick, as the Lambda makes one per DRAIN_EVERY.
                    if let Err(err) = coupon_publisher::drain(&coupons).await {
                        tracing::warn!(error = %err, "coupon outbox pass failed");
                    }
                }
                _ = roll.tick() => {
                    if let Err(err) = event_applier::handle(scheduled_event(), &applier).await {
                        tracing::warn!(error = %err, "rankings tick failed");
                    }
                }
            }
        }
    })
}

/// The input EventBridge gives a scheduled function.
fn scheduled_event() -> LambdaEvent<serde_json::Value> {
    LambdaEvent::new(
        serde_json::json!({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}}),
        Context::default(),
    )
}
