//! `queue-reaper`: removes expired sessions and abandoned waiters from every registered
//! queue, in bounded chunks so no Redis call blocks for long even on a line of a million.
//! Correctness never waits for it: expired and absent entries are already ignored by every
//! other script; the reaper only gives the memory back.
//!
//! In a sold-out queue it gives every waiter back (`givenBack`), chunk by chunk.
//!
//! Publishes `QueueTokenExpired` and `QueueWaiterAbandoned` for what it removes, and writes
//! one EMF metrics record per queue.
//!
//! The input is ignored: a scheduled event, `{}` or anything else all mean "reap now".

use lambda_runtime::LambdaEvent;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, QueueConfig, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup::publish::Outlet;
use lineup::queue::{ReapReport, WaitingRoom};
use serde_json::Value;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    pub outlet: Outlet,
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
        let env = &started.config.env;
        Ok(Deps {
            room: started.room_with(QueueConfig {
                creation: env.queue_creation()?,
                ..QueueConfig::new(env.waiting_room()?)
            }),
            outlet: started.outlet(metrics),
        })
    }
}

/// Reaps every queue. A queue that fails is logged and left for the next run.
pub async fn handle(
    _event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<ReapReport, lambda_runtime::Error> {
    Ok(reap_all(deps).await)
}

pub async fn reap_all(deps: &Deps) -> ReapReport {
    let room = &deps.room;
    let mut total = ReapReport::default();
    let queues = match room.registered_queues().await {
        Ok(queues) => queues,
        Err(err) => {
            tracing::warn!(error = %err, "reaper could not read the queue registry");
            return total;
        }
    };
    for queue in &queues {
        match room.reap(queue).await {
            Ok(report) => total.queues.push(report),
            Err(err) => tracing::warn!(%queue, error = %err, "reaping failed"),
        }
    }
    deps.outlet
        .report("reaped", total.totals(), total.records(), total.events())
        .await;
    total
}
