use lambda_runtime::{run, service_fn, Error};
use lineup::config::SecretPolicy;
use lineup::queue::WaitingRoom;
use queue_reaper::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::telemetry::init();
    let config = lineup::secrets::load_config(SecretPolicy::GenerateIfMissing).await?;
    let conn = lineup::store::connect(&config.redis, config.require_redis_url()?)?;
    let deps = Deps {
        room: WaitingRoom::new(conn, &config.key_prefix, config.queue.clone()),
    };
    run(service_fn(|event| handle(event, &deps))).await
}
