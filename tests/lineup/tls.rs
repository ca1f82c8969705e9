//! Redis over TLS (`rediss://`), the only way ElastiCache is reached in AWS: the functions
//! work through a server whose certificate chains to `REDIS_CA_FILE`, keep working after it
//! restarts, work through a cluster that speaks only TLS (as ElastiCache Serverless does),
//! and send nothing to a server they cannot verify.

use std::time::Duration;

use chrono::Utc;
use lineup::ranking::Outcome;
use lineup_tests::queue::{join, status};
use lineup_tests::rankings::paid;
use lineup_tests::{api_request, authorizer_request, sleep, Reply, TestApp, CERTIFIED_HOST};
use serde_json::Value;

/// Scripts and script loads: what any of the functions' requests would have sent.
async fn scripts_run(app: &TestApp) -> u64 {
    let calls = app.command_calls().await;
    ["evalsha", "eval", "script|load"]
        .iter()
        .map(|name| calls.get(*name).copied().unwrap_or(0))
        .sum()
}

async fn pay(app: &TestApp, payment: &str) -> Outcome {
    let event = paid(payment, "tls-show", 2, &["rock"], &Utc::now().to_rfc3339());
    event_applier::apply_events(&[event], &app.stack.event_applier)
        .await
        .remove(0)
}

/// Issue, status and the gatekeeper in `queue`, of capacity 1: Ana is let in, Ben waits.
async fn queue_functions_serve(app: &TestApp, queue: &str) {
    let ana = join(app, queue, "ana").await;
    assert_eq!(ana.status, 201, "{queue}: {:?}", ana.body);
    let ben = join(app, queue, "ben").await;
    let place = status(app, queue, &ben.token()).await;
    assert_eq!(place.body["position"], 1, "{queue}: {:?}", place.body);
    let (allowed, _) = app
        .authorize(authorizer_request(Some(&ana.token()), Some(queue), None))
        .await;
    assert!(allowed, "{queue}");
}

/// Applies a payment of two seats and reads the concert's all-time score back.
async fn pay_and_read_score(app: &TestApp, payment: &str) -> Value {
    assert!(matches!(pay(app, payment).await, Outcome::Applied));
    let board = ranking_api::handle(
        api_request("GET", "/rankings/all-time/concerts/tls-show", None),
        &app.stack.ranking_api,
    )
    .await
    .unwrap();
    Reply::from(board).body["score"].clone()
}

/// A private server reachable only on its TLS port, with a certificate for `localhost` from a CA
/// made for the run. Through `REDIS_CA_FILE`, every function works over `rediss://` (issue, status,
/// gatekeeper, payment, board), and again after the server restarts, on a connection verified
/// against the same CA.
#[tokio::test]
async fn every_function_works_over_tls_and_after_the_server_restarts() {
    let mut app = TestApp::spawn_over_tls(&[("QUEUE_CAPACITY", "1")], CERTIFIED_HOST).await;

    queue_functions_serve(&app, "show").await;
    assert_eq!(pay_and_read_score(&app, "pay-1").await, 2);

    // A restart drops the TLS connection; the next one must be verified against the same
    // CA, not the bundled Amazon roots.
    app.redis
        .as_mut()
        .expect("a private server")
        .restart()
        .await
        .expect("restart");
    let mut recovered = false;
    for _ in 0..50 {
        let reply = join(&app, "show", "cy").await;
        if reply.status == 201 {
            recovered = true;
            break;
        }
        reply.assert_problem(503);
        sleep(Duration::from_millis(100)).await;
    }
    assert!(
        recovered,
        "queue-api served again over TLS after the restart"
    );
    assert!(matches!(pay(&app, "pay-2").await, Outcome::Applied));
}

/// Whatever the reason the server cannot be verified, the functions answer as in an outage
/// (503 with Retry-After; a payment left for redelivery) and the server runs nothing.
async fn assert_refused(app: &TestApp) {
    let reply = join(app, "show", "ana").await;
    reply.assert_problem(503);
    assert!(reply.headers.contains_key("retry-after"));
    assert!(matches!(pay(app, "pay-1").await, Outcome::Failed(_)));
    assert_eq!(scripts_run(app).await, 0);
}

#[tokio::test]
async fn a_server_whose_certificate_does_not_chain_to_a_trusted_root_gets_nothing() {
    // No REDIS_CA_FILE: the bundled Amazon roots, which never issued the test CA.
    let app = TestApp::spawn_over_tls(&[("REDIS_CA_FILE", "")], CERTIFIED_HOST).await;
    assert_refused(&app).await;
}

#[tokio::test]
async fn a_server_whose_certificate_names_another_host_gets_nothing() {
    // The same server and a trusted CA, reached by an address its certificate does not name.
    let app = TestApp::spawn_over_tls(&[], "127.0.0.1").await;
    assert_refused(&app).await;
}

/// A cluster of 3 primaries that speaks TLS to clients and on its bus, with 6 queues spread over
/// its shards. The client follows the slots to all 3 primaries and verifies each.
#[tokio::test]
async fn every_function_works_over_tls_on_a_cluster() {
    let app = TestApp::spawn_on_tls_cluster(&[("QUEUE_CAPACITY", "1")]).await;
    // Queues hash to different shards: the client follows the slots to every primary,
    // verifying each node's certificate on the way.
    for queue in ["show-a", "show-b", "show-c", "show-d", "show-e", "show-f"] {
        queue_functions_serve(&app, queue).await;
    }
    assert_eq!(pay_and_read_score(&app, "pay-1").await, 2);
    let shards_used = app
        .infos("commandstats")
        .await
        .iter()
        .filter(|info| info.contains("cmdstat_evalsha"))
        .count();
    assert_eq!(
        shards_used, 3,
        "the six queues and the boards reach every shard"
    );
}
