//! The yardstick on the current-thread runtime the lineup functions use, reported beside
//! it so that the share of the runtime flavour in their cold start is visible.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: LambdaEvent<serde_json::Value>| async {
        Ok::<_, Error>(())
    }))
    .await
}
