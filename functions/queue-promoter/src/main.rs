use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::{cold_start, Publishing};
use lineup::config::SecretPolicy;
use lineup::metrics::MetricsSink;
use queue_promoter::{handle, Deps, KnownQueues};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(SecretPolicy::GenerateIfMissing, Publishing::QueueEvents).await?;
    let deps = Deps {
        room: started.room(),
        publisher: started.publisher.clone(),
        metrics: MetricsSink::Stdout,
        known_queues: KnownQueues::default(),
    };
    run(service_fn(|event| handle(event, &deps))).await
}
