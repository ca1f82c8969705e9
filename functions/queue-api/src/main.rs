use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;
use lineup::config::SecretPolicy;
use lineup::queue::WaitingRoom;
use queue_api::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), Error> {
    let (config, conn) = cold_start(SecretPolicy::Required).await?;
    let deps = Deps {
        room: WaitingRoom::new(conn, &config.key_prefix, config.queue.clone()),
        token_key: config.token_key.clone(),
    };
    run(service_fn(|event| {
        lineup::http::answer_lambda_event(event, |request| handle(request, &deps))
    }))
    .await
}
