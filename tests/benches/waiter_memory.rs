//! Bytes of Redis memory per waiting buyer: `cargo bench -p lineup-tests --bench waiter_memory`.
//! Issues WAITERS tokens (user ids of 12 characters) to one queue whose only place is taken,
//! through the real issue script, and reads `used_memory` before and after.

use lineup_tests::TestApp;

const WAITERS: usize = 200_000;
const IN_FLIGHT: usize = 256;

#[tokio::main]
async fn main() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let queue = lineup::ids::QueueId::parse("big-onsale").unwrap();
    let room = app.room().clone();
    room.issue(
        &queue,
        &lineup::ids::UserId::parse("holder-00000").unwrap(),
        None,
    )
    .await
    .unwrap();
    let before = app.info_number("memory", "used_memory").await;
    let started = std::time::Instant::now();
    for batch in (0..WAITERS).collect::<Vec<_>>().chunks(IN_FLIGHT) {
        let calls = batch.iter().map(|i| {
            let user = lineup::ids::UserId::parse(&format!("user-{i:07}")).unwrap();
            let room = room.clone();
            let queue = queue.clone();
            async move { room.issue(&queue, &user, None).await.unwrap() }
        });
        futures::future::join_all(calls).await;
    }
    let elapsed = started.elapsed();
    let after = app.info_number("memory", "used_memory").await;
    let per_waiter = (after - before) as f64 / WAITERS as f64;
    println!("waiters: {WAITERS}");
    println!("used_memory delta: {} bytes", after - before);
    println!("bytes per waiter: {per_waiter:.1}");
    println!(
        "issue throughput: {:.0} tokens/s ({IN_FLIGHT} in flight, one connection)",
        WAITERS as f64 / elapsed.as_secs_f64()
    );
}
