//! What every Lambda binary does once per container before serving: logging, configuration
//! (with secrets from Secrets Manager), and the Redis connection.

use crate::config::{Config, SecretPolicy};
use crate::store::Conn;

/// Sets up logging, reads and checks the configuration, and creates the Redis connection
/// (lazily, so a container started during a Redis outage still answers with 503).
pub async fn cold_start(secrets: SecretPolicy) -> Result<(Config, Conn), lambda_runtime::Error> {
    crate::telemetry::init();
    let config = crate::secrets::load_config(secrets).await?;
    let conn = crate::store::connect(&config.redis, config.require_redis_url()?)?;
    Ok((config, conn))
}
