use coupon_publisher::{handle, Deps};
use lambda_runtime::{run, service_fn, Error};
use lineup::cold_start::cold_start;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let started = cold_start(coupon_publisher::SECRETS, coupon_publisher::PUBLISHING).await?;
    let deps = Deps::new(&started)?;
    run(service_fn(|event| handle(event, &deps))).await
}
