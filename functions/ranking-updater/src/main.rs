use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::config::SecretPolicy;
use lineup::ranking::Rankings;
use ranking_updater::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (config, conn) = cold_start(SecretPolicy::GenerateIfMissing).await?;
    let deps = Deps {
        rankings: Rankings::new(conn, &config.key_prefix, config.ranking.clone()),
    };
    run(service_fn(|event| handle(event, &deps))).await
}
