//! What every Lambda binary does once per container before serving: logging, configuration
//! (with secrets from Secrets Manager) and the Redis connection. Functions that publish
//! queue events also ask for the publisher; the others never build an AWS client for it.

use crate::config::{Config, SecretPolicy};
use crate::publish::Publisher;
use crate::queue::WaitingRoom;
use crate::ranking::Rankings;
use crate::store::Conn;

/// What a function builds its dependencies from.
pub struct Started {
    pub config: Config,
    pub conn: Conn,
}

impl Started {
    /// Connects to `url` as every function does at cold start: the connection is opened
    /// ahead of the first request, but a Redis outage does not stop the start (see
    /// [`crate::store::Conn::open`]).
    pub async fn connect(config: Config, url: &str) -> Result<Started, redis::RedisError> {
        let conn = crate::store::connect(&config.redis, url)?;
        conn.open(config.redis.connect_timeout).await;
        Ok(Started { config, conn })
    }

    pub fn room(&self) -> WaitingRoom {
        WaitingRoom::new(
            self.conn.clone(),
            &self.config.key_prefix,
            self.config.queue.clone(),
        )
    }

    /// Queue state events to `EVENT_BUS_NAME`; off (and no AWS client built) when unset.
    pub async fn publisher(&self) -> Publisher {
        Publisher::for_bus(self.config.event_bus.as_deref()).await
    }

    pub fn rankings(&self) -> Rankings {
        Rankings::new(
            self.conn.clone(),
            &self.config.key_prefix,
            self.config.ranking.clone(),
        )
    }
}

/// Sets up logging, reads and checks the configuration, and opens the Redis connection, so
/// the first request finds it ready. A container started during a Redis outage still
/// starts, answers with 503, and connects once Redis is back.
pub async fn cold_start(secrets: SecretPolicy) -> Result<Started, lambda_runtime::Error> {
    crate::telemetry::init();
    let config = crate::secrets::load_config(secrets).await?;
    let url = config.require_redis_url()?.to_owned();
    Ok(Started::connect(config, &url).await?)
}
