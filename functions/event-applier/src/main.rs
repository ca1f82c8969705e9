use event_applier::{handle, Deps};
use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::metrics::MetricsSink;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(event_applier::SECRETS, event_applier::PUBLISHING).await?;
    let deps = Deps::new(&started, MetricsSink::Stdout)?;
    run(service_fn(|event| handle(event, &deps))).await
}
