use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::config::SecretPolicy;
use lineup::queue::WaitingRoom;
use queue_reaper::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (config, conn) = cold_start(SecretPolicy::GenerateIfMissing).await?;
    let deps = Deps {
        room: WaitingRoom::new(conn, &config.key_prefix, config.queue.clone()),
    };
    run(service_fn(|event| handle(event, &deps))).await
}
