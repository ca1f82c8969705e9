use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::metrics::MetricsSink;
use ranking_updater::{handle, Deps};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(ranking_updater::SECRETS, ranking_updater::PUBLISHING).await?;
    let deps = Deps::new(&started, MetricsSink::Stdout)?;
    run(service_fn(|event| handle(event, &deps))).await
}
