use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use ranking_api::{handle, Deps};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(ranking_api::SECRETS, ranking_api::PUBLISHING).await?;
    let deps = Deps::new(&started)?;
    run(service_fn(|event| {
        lineup::http::answer_lambda_event(event, |request| handle(request, &deps))
    }))
    .await
}
