//! What every Lambda binary does once per container before serving: logging, configuration
//! (with secrets from Secrets Manager), the Redis connection and the event publisher.

use crate::config::{Config, SecretPolicy};
use crate::publish::Publisher;
use crate::queue::WaitingRoom;
use crate::ranking::Rankings;
use crate::store::Conn;

/// What a function builds its dependencies from.
pub struct Started {
    pub config: Config,
    pub conn: Conn,
    /// Queue state events to `EVENT_BUS_NAME`; off when it is unset.
    pub publisher: Publisher,
}

impl Started {
    pub fn room(&self) -> WaitingRoom {
        WaitingRoom::new(
            self.conn.clone(),
            &self.config.key_prefix,
            self.config.queue.clone(),
        )
    }

    pub fn rankings(&self) -> Rankings {
        Rankings::new(
            self.conn.clone(),
            &self.config.key_prefix,
            self.config.ranking.clone(),
        )
    }
}

/// Sets up logging, reads and checks the configuration, and creates the Redis connection
/// (lazily, so a container started during a Redis outage still answers with 503).
pub async fn cold_start(secrets: SecretPolicy) -> Result<Started, lambda_runtime::Error> {
    crate::telemetry::init();
    let config = crate::secrets::load_config(secrets).await?;
    let conn = crate::store::connect(&config.redis, config.require_redis_url()?)?;
    let publisher = Publisher::for_bus(config.event_bus.as_deref()).await;
    Ok(Started {
        config,
        conn,
        publisher,
    })
}
