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
/// The admission JWT's settings the local stack adds where the environment has none: the
/// issuer is the stack's own address, the audience `booking`, and the key a fresh one for
/// `ADMISSION_ALGORITHM` (RS256 by default), made now and kept for the run. An empty
/// `ADMISSION_ISSUER` turns admission off. Listening on every interface, the issuer is
/// `127.0.0.1` (an `http://` issuer must be a loopback one).
pub fn admission_defaults(
    mut address: std::net::SocketAddr,
) -> Result<Vec<(String, String)>, String> {
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let mut defaults = Vec::new();
    if std::env::var_os("ADMISSION_ISSUER").is_none() {
        defaults.push(("ADMISSION_ISSUER".into(), format!("http://{address}")));
    }
    if std::env::var_os("ADMISSION_AUDIENCE").is_none() {
        defaults.push(("ADMISSION_AUDIENCE".into(), "booking".into()));
    }
    let off = std::env::var("ADMISSION_ISSUER").is_ok_and(|issuer| issuer.trim().is_empty());
    if std::env::var_os("ADMISSION_KEYS").is_none() && !off {
        let named = std::env::var("ADMISSION_ALGORITHM").unwrap_or_default();
        let alg = lineup::admission::ALGORITHMS
            .iter()
            .find(|(name, _)| *name == named.trim())
            .map_or(lineup::admission::ALGORITHMS[0].1, |(_, alg)| *alg);
        let now = chrono::Utc::now();
        let kid = format!("local-{}", now.timestamp());
        let (_, keys) = lineup::admission::KeySet::generate(alg, &kid, now, None)?;
        defaults.push(("ADMISSION_KEYS".into(), keys));
    }
    Ok(defaults)
}

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
