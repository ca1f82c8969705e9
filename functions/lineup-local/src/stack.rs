//! The stack: every function's dependencies, each built by the function's own `Deps::new`,
//! and the settings the local stack runs with where the environment says nothing.

use lineup::cold_start::Started;
use lineup::config::ConfigError;
use lineup::metrics::MetricsSink;

/// The settings the local stack runs with where the environment does not say otherwise:
/// it has no JWT authorizer in front, so the body's `userId` names the buyer; and any
/// buyer's first token request creates a queue, so a walk-through needs no operator step.
pub const LOCAL_DEFAULTS: &[(&str, &str)] =
    &[("ALLOW_BODY_USER_ID", "unsafe"), ("QUEUE_CREATION", "open")];

/// `name` from the environment, else from [`LOCAL_DEFAULTS`].
pub fn local_setting(name: &str) -> Option<String> {
    std::env::var(name).ok().or_else(|| {
        LOCAL_DEFAULTS
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| (*v).to_owned())
    })
}

/// The dependencies of every function, built once.
#[derive(Clone)]
pub struct Stack {
    pub queue_api: queue_api::Deps,
    pub coupon_api: coupon_api::Deps,
    pub coupon_publisher: coupon_publisher::Deps,
    pub authorizer: queue_authorizer::Deps,
    pub promoter: queue_promoter::Deps,
    pub reaper: queue_reaper::Deps,
    pub ranking_api: ranking_api::Deps,
    pub ranking_updater: ranking_updater::Deps,
}

impl Stack {
    /// Every function's dependencies, built by each function's own `Deps::new`, as its
    /// `main.rs` builds them; metrics go to `metrics`. A bad setting is named.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        Ok(Stack {
            queue_api: queue_api::Deps::new(started, metrics.clone())?,
            coupon_api: coupon_api::Deps::new(started, metrics.clone())?,
            coupon_publisher: coupon_publisher::Deps::new(started)?,
            authorizer: queue_authorizer::Deps::new(started)?,
            promoter: queue_promoter::Deps::new(started, metrics.clone())?,
            reaper: queue_reaper::Deps::new(started, metrics.clone())?,
            ranking_api: ranking_api::Deps::new(started)?,
            ranking_updater: ranking_updater::Deps::new(started, metrics)?,
        })
    }
}
