//! Buyer identity: in AWS a buyer is who a verified JWT says. A body `userId` is taken only
//! where the deployment allows it on purpose (`ALLOW_BODY_USER_ID=unsafe`, the local stack).

use lineup_tests::queue::{join, status, summary};
use lineup_tests::{api_request, api_request_with_claims, Reply, TestApp};
use serde_json::json;

/// The deployed default: no body identity.
const JWT_ONLY: (&str, &str) = ("ALLOW_BODY_USER_ID", "no");

async fn as_user(app: &TestApp, method: &str, path: &str, sub: &str) -> Reply {
    let claims = json!({"sub": sub, "iss": "https://auth.example.com", "aud": "lineup"});
    app.queue_api(api_request_with_claims(method, path, None, Some(claims)))
        .await
}

#[tokio::test]
async fn without_a_verified_jwt_a_token_request_is_unauthorized_and_writes_nothing() {
    let app = TestApp::spawn(&[JWT_ONLY]).await;
    let reply = join(&app, "show", "mallory").await;
    reply.assert_problem(401);
    assert!(
        reply.headers.get("www-authenticate").is_some(),
        "a 401 names its scheme"
    );
    let empty = app
        .queue_api(api_request("POST", "/queues/show/tokens", None))
        .await;
    empty.assert_problem(401);
    let shown = summary(&app, "show").await.body;
    assert_eq!(
        (shown["waiting"].as_u64(), shown["active"].as_u64()),
        (Some(0), Some(0))
    );

    let verified = as_user(&app, "POST", "/queues/show/tokens", "alice").await;
    assert_eq!(verified.status, 201, "{}", verified.body);
    assert_eq!(verified.body["userId"], "alice");
}

#[tokio::test]
async fn status_and_leave_answer_only_the_user_the_token_was_issued_to() {
    let app = TestApp::spawn(&[JWT_ONLY, ("QUEUE_CAPACITY", "1")]).await;
    as_user(&app, "POST", "/queues/show/tokens", "first").await;
    let token = as_user(&app, "POST", "/queues/show/tokens", "alice")
        .await
        .token();
    let path = format!("/queues/show/tokens/{token}");

    // The token alone (say, read from a log of URLs) is not enough.
    status(&app, "show", &token).await.assert_problem(401);
    as_user(&app, "GET", &path, "bob").await.assert_problem(403);
    as_user(&app, "DELETE", &path, "bob")
        .await
        .assert_problem(403);
    let mine = as_user(&app, "GET", &path, "alice").await;
    assert_eq!(mine.status, 200, "{}", mine.body);
    assert_eq!(
        mine.body["status"], "waiting",
        "bob's attempts left alice's place alone"
    );
    assert_eq!(as_user(&app, "DELETE", &path, "alice").await.status, 204);
}

#[tokio::test]
async fn where_allowed_on_purpose_the_body_names_the_user_and_a_jwt_still_binds() {
    let app = TestApp::spawn(&[("ALLOW_BODY_USER_ID", "unsafe")]).await;
    let reply = join(&app, "show", "ana").await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.body["userId"], "ana");
    let token = reply.token();
    assert_eq!(status(&app, "show", &token).await.status, 200);
    let path = format!("/queues/show/tokens/{token}");
    as_user(&app, "GET", &path, "bob").await.assert_problem(403);
    assert_eq!(as_user(&app, "GET", &path, "ana").await.status, 200);
}
