//! What every Lambda binary does once per container before serving: logging, the settings
//! every function reads (with secrets from Secrets Manager), the Redis connection and, for
//! the functions that publish, `EVENT_BUS_NAME` and the EventBridge client. The others never
//! read the bus or build an AWS client for it. The client is built while the connection
//! waits for the server's first answer. Each function's `Deps::new` then reads its own
//! settings and builds what it holds from them ([`Started::room`] and the like).
//!
//! The functions run on tokio's current-thread runtime: a Lambda sandbox serves one
//! invocation at a time, and starting worker threads, then handing every I/O event from them
//! to the main thread, cost about a fifth of a cold start (BENCHMARKS.md).

use crate::config::{Config, ConfigError, QueueConfig, RankingSettings, RateLimits, SecretPolicy};
use crate::coupon::Coupons;
use crate::metrics::MetricsSink;
use crate::publish::{Outlet, Publisher};
use crate::queue::WaitingRoom;
use crate::ranking::Rankings;
use crate::store::Conn;

/// Whether a function publishes (to `EVENT_BUS_NAME`, when set): queue state events, or the
/// coupon publisher's claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publishing {
    QueueEvents,
    Nothing,
}

/// Why a container could not start: a bad setting (named), or a Redis URL that cannot be
/// used. An unreachable Redis is not one of them.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("REDIS_URL: {0}")]
    Redis(#[from] redis::RedisError),
}

/// What a function builds its dependencies from.
pub struct Started {
    pub config: Config,
    pub conn: Conn,
    /// Off (and no AWS client built) for [`Publishing::Nothing`] or without `EVENT_BUS_NAME`.
    pub publisher: Publisher,
}

impl Started {
    /// Connects to `url` as every function does at cold start: the connection is opened
    /// ahead of the first request, but a Redis outage does not stop the start (see
    /// [`crate::store::Conn::open`]).
    pub async fn connect(
        config: Config,
        url: &str,
        publishing: Publishing,
    ) -> Result<Started, StartError> {
        let conn = crate::store::connect(&config.redis, url)?;
        let bus = match publishing {
            Publishing::QueueEvents => config.env.event_bus(),
            Publishing::Nothing => None,
        };
        let ((), publisher) = tokio::join!(
            conn.open(config.redis.connect_timeout),
            Publisher::for_bus(bus.as_deref())
        );
        let publisher = publisher?;
        Ok(Started {
            config,
            conn,
            publisher,
        })
    }

    /// Where the function's counts and events go, writing metrics to `metrics`.
    pub fn outlet(&self, metrics: MetricsSink) -> Outlet {
        Outlet {
            publisher: self.publisher.clone(),
            metrics,
        }
    }

    /// The waiting room, with what every call of its scripts carries read from the
    /// environment, and the slices only some functions use at their defaults.
    pub fn room(&self) -> Result<WaitingRoom, ConfigError> {
        Ok(self.room_with(QueueConfig::new(self.config.env.waiting_room()?)))
    }

    /// The waiting room, running with `config`.
    pub fn room_with(&self, config: QueueConfig) -> WaitingRoom {
        WaitingRoom::new(self.conn.clone(), &self.config.key_prefix, config)
    }

    /// The coupon campaigns, taking claims within `limits`.
    pub fn coupons(&self, limits: RateLimits) -> Coupons {
        Coupons::new(self.conn.clone(), &self.config.key_prefix, limits)
    }

    /// The rankings, running with `settings`.
    pub fn rankings(&self, settings: RankingSettings) -> Rankings {
        Rankings::new(self.conn.clone(), &self.config.key_prefix, settings)
    }
}

/// Sets up logging, reads and checks the configuration, and opens the Redis connection, so
/// the first request finds it ready. A container started during a Redis outage still
/// starts, answers with 503, and connects once Redis is back.
pub async fn cold_start(
    secrets: SecretPolicy,
    publishing: Publishing,
) -> Result<Started, lambda_runtime::Error> {
    crate::telemetry::init();
    let config = crate::secrets::load_config(secrets).await?;
    let url = config.require_redis_url()?.to_owned();
    Ok(Started::connect(config, &url, publishing).await?)
}
