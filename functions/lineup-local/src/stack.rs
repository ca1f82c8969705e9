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

/// The settings `lineup-local` runs with, as one lookup: `env`'s (the process environment),
/// else the admission JWT's defaults for a stack on `address` (`admission_defaults`), else
/// [`LOCAL_DEFAULTS`].
pub fn local_settings(
    address: std::net::SocketAddr,
    env: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
) -> Result<impl Fn(&str) -> Option<String> + Send + Sync + 'static, String> {
    let admission = admission_defaults(address, &env)?;
    Ok(move |name: &str| {
        env(name)
            .or_else(|| {
                admission
                    .iter()
                    .find(|(variable, _)| variable == name)
                    .map(|(_, value)| value.clone())
            })
            .or_else(|| {
                LOCAL_DEFAULTS
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| (*v).to_owned())
            })
    })
}

/// The admission JWT's settings the local stack adds where `env` has none: the issuer is the
/// stack's own address, the audience `booking`, and the key a fresh one for
/// `ADMISSION_ALGORITHM` (RS256 by default), made now and kept for the run. An empty
/// `ADMISSION_ISSUER` turns admission off: then it adds none. Listening on every interface,
/// the issuer is `127.0.0.1` (an `http://` issuer must be a loopback one).
fn admission_defaults(
    mut address: std::net::SocketAddr,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, String> {
    if address.ip().is_unspecified() {
        address.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    let issuer = env("ADMISSION_ISSUER");
    if issuer
        .as_deref()
        .is_some_and(|issuer| issuer.trim().is_empty())
    {
        return Ok(Vec::new());
    }
    let mut defaults = Vec::new();
    if issuer.is_none() {
        defaults.push(("ADMISSION_ISSUER".into(), format!("http://{address}")));
    }
    if env("ADMISSION_AUDIENCE").is_none() {
        defaults.push(("ADMISSION_AUDIENCE".into(), "booking".into()));
    }
    if env("ADMISSION_KEYS").is_none() {
        let named = env("ADMISSION_ALGORITHM").unwrap_or_default();
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
    pub event_applier: event_applier::Deps,
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
            event_applier: event_applier::Deps::new(started, metrics)?,
        })
    }
}
