use lambda_runtime::{run, service_fn, Error};
use lineup::config::SecretPolicy;
use lineup::ranking::Rankings;
use ranking_api::{handle, Deps};

#[tokio::main]
async fn main() -> Result<(), Error> {
    lineup::telemetry::init();
    let config = lineup::secrets::load_config(SecretPolicy::GenerateIfMissing).await?;
    let conn = lineup::store::connect(&config.redis, config.require_redis_url()?)?;
    let deps = Deps {
        rankings: Rankings::new(conn, &config.key_prefix, config.ranking.clone()),
    };
    run(service_fn(|event| {
        lineup::http::answer_lambda_event(event, |request| handle(request, &deps))
    }))
    .await
}
