//! The smallest `lambda_runtime` function, as in the runtime's examples (`#[tokio::main]`,
//! the multi-thread runtime): the yardstick for cold-start time.

use lambda_runtime::{run, service_fn, Error, LambdaEvent};

#[tokio::main]
async fn main() -> Result<(), Error> {
    run(service_fn(|_: LambdaEvent<serde_json::Value>| async {
        Ok::<_, Error>(())
    }))
    .await
}
