//! The smallest `lambda_runtime` function: the yardstick for cold-start time.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: LambdaEvent<serde_json::Value>| async {
        Ok::<_, Error>(())
    }))
    .await
}
