//! A buyer's and an operator's calls to the waiting room, through the same handlers the
//! Lambda runtime calls, and the checks on their answers that several suites share.

use std::time::{Duration, Instant};

use lambda_runtime::{Context, LambdaEvent};
use serde_json::{json, Value};

use crate::{api_request, sleep, Reply, TestApp};

/// `POST /queues/{queue}/tokens` for `user` (the body names the buyer).
pub async fn join(app: &TestApp, queue: &str, user: &str) -> Reply {
    let body = json!({ "userId": user }).to_string();
    app.queue_api(api_request(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
    ))
    .await
}

/// `GET /queues/{queue}/tokens/{token}`.
pub async fn status(app: &TestApp, queue: &str, token: &str) -> Reply {
    app.queue_api(api_request(
        "GET",
        &format!("/queues/{queue}/tokens/{token}"),
        None,
    ))
    .await
}

/// `DELETE /queues/{queue}/tokens/{token}`.
pub async fn leave(app: &TestApp, queue: &str, token: &str) -> Reply {
    app.queue_api(api_request(
        "DELETE",
        &format!("/queues/{queue}/tokens/{token}"),
        None,
    ))
    .await
}

/// `GET /queues/{queue}`.
pub async fn summary(app: &TestApp, queue: &str) -> Reply {
    app.queue_api(api_request("GET", &format!("/queues/{queue}"), None))
        .await
}

/// One promoter invocation, as its schedule would start it.
pub async fn promote(app: &TestApp) -> queue_promoter::Output {
    queue_promoter::handle(
        LambdaEvent::new(json!({}), Context::default()),
        &app.stack.promoter,
    )
    .await
    .expect("promoter")
}

/// `PUT /queues/{queue}/settings` with `body`.
pub async fn put_settings(app: &TestApp, queue: &str, body: &Value) -> Reply {
    app.queue_api(api_request(
        "PUT",
        &format!("/queues/{queue}/settings"),
        Some(&body.to_string()),
    ))
    .await
}

/// Waits `d` while calls keep reaching `queue` (a summary read every half second), as the
/// promoter's ticks keep a deployed queue served. A longer gap in which nothing reaches a
/// queue counts as an outage and earns its waiters a grace.
pub async fn served_for(app: &TestApp, queue: &str, d: Duration) {
    let until = Instant::now() + d;
    while Instant::now() < until {
        assert_eq!(summary(app, queue).await.status, 200);
        sleep((until - Instant::now()).min(Duration::from_millis(500))).await;
    }
}

/// Asserts a problem answer with status `code` and problem type `kind`.
pub fn assert_kind(reply: &Reply, code: u16, kind: &str) {
    reply.assert_problem(code);
    assert_eq!(
        reply.body["type"],
        format!("https://lineup.dev/problems/{kind}"),
        "{}",
        reply.body
    );
}
