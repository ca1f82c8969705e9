use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use queue_authorizer::{handle, Deps};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(queue_authorizer::SECRETS, queue_authorizer::PUBLISHING).await?;
    let deps = Deps::new(&started)?;
    run(service_fn(|event| handle(event, &deps))).await
}
