use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::metrics::MetricsSink;
use queue_api::{handle, Deps};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(queue_api::SECRETS, queue_api::PUBLISHING).await?;
    let deps = Deps::new(&started, MetricsSink::Stdout)?;
    run(service_fn(|event| {
        lineup::http::answer_lambda_event(event, |request| handle(request, &deps))
    }))
    .await
}
