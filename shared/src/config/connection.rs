//! The Redis connection's settings: the mode, the endpoint and credentials, the timeouts, the
//! cap on requests in flight and the TLS roots.

use std::time::Duration;

use super::error::{bad, ConfigError};
use super::vars::Vars;
use crate::bounds::Bounds;
use crate::tls::read_root_bundle;

/// Whether Redis is one primary (with replicas) or a cluster (Redis Cluster, ElastiCache
/// cluster mode, ElastiCache Serverless).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisMode {
    Standalone,
    Cluster,
    /// Ask the server (`INFO cluster`) on first use.
    Auto,
}

/// How to reach Redis.
#[derive(Clone)]
pub struct RedisSettings {
    pub mode: RedisMode,
    /// `redis://` or `rediss://` URL; `None` lets the local stack start its own server.
    pub url: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    /// Most requests in flight on the connection (`REDIS_MAX_IN_FLIGHT`); one more is shed
    /// with 503 at once (see [`crate::store`]).
    pub max_in_flight: u32,
    /// PEM roots a `rediss://` server's certificate must chain to (`REDIS_CA_FILE`), in place
    /// of the bundled Amazon roots that ElastiCache's certificates chain to; for a Redis
    /// behind a private CA or another provider's.
    pub ca_roots: Option<Vec<u8>>,
}

/// The default of `REDIS_MAX_IN_FLIGHT`. A request costs Redis about 50–120 µs, so 64 in
/// flight are well under 10 ms of its time: Redis has to be a hundred times slower than that
/// before the last of them waits past the 1 s response timeout, and pipelining gains little
/// beyond a few dozen. A Lambda container has one request in flight at a time.
pub const MAX_IN_FLIGHT_DEFAULT: u32 = 64;

/// Without the password (or a URL, which may carry one), so a settings dump in a log never
/// holds a secret.
impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |value: bool| if value { "<set>" } else { "<unset>" };
        f.debug_struct("RedisSettings")
            .field("mode", &self.mode)
            .field("url", &set(self.url.is_some()))
            .field("username", &self.username)
            .field("password", &set(self.password.is_some()))
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("ca_roots", &set(self.ca_roots.is_some()))
            .finish()
    }
}

impl RedisSettings {
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let redis = RedisSettings {
            mode: vars.one_of(
                "REDIS_MODE",
                &[
                    ("standalone", RedisMode::Standalone),
                    ("cluster", RedisMode::Cluster),
                    ("auto", RedisMode::Auto),
                ],
            )?,
            url: vars.string("REDIS_URL"),
            username: vars.string("REDIS_USERNAME"),
            password: vars.string("REDIS_PASSWORD"),
            connect_timeout: vars.millis("REDIS_CONNECT_TIMEOUT_MS", 1_000)?,
            response_timeout: vars.millis("REDIS_RESPONSE_TIMEOUT_MS", 1_000)?,
            max_in_flight: vars.count(
                "REDIS_MAX_IN_FLIGHT",
                MAX_IN_FLIGHT_DEFAULT,
                Bounds::new(1, 100_000),
            )?,
            ca_roots: match vars.string("REDIS_CA_FILE") {
                Some(path) => {
                    Some(read_root_bundle(&path).map_err(|reason| bad("REDIS_CA_FILE", reason))?)
                }
                None => None,
            },
        };
        if let Some(url) = &redis.url {
            if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
                return Err(bad("REDIS_URL", "must start with redis:// or rediss://"));
            }
            if redis.ca_roots.is_some() && !url.starts_with("rediss://") {
                return Err(bad(
                    "REDIS_CA_FILE",
                    "is set, but REDIS_URL is not rediss:// (TLS)",
                ));
            }
        }
        Ok(redis)
    }
}
