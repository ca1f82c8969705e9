//! Abuse: rate limits on token issue, tokens that cannot be guessed or borrowed, ids that
//! cannot reach outside their keys, and tokens that never reach a log.

use lineup::ids::{QueueId, UserId};
use lineup::token::{TokenClaims, TokenKey};
use lineup_tests::queue::{join, leave, promote, status, summary};
use lineup_tests::{api_request, api_request_from, authorizer_request, Reply, TestApp};
use serde_json::json;

async fn join_from(app: &TestApp, queue: &str, user: &str, ip: &str) -> Reply {
    let body = json!({ "userId": user }).to_string();
    app.queue_api(api_request_from(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
        ip,
    ))
    .await
}

/// One user asks for a token past `RATE_LIMIT_USER_PER_MINUTE`. The next request is 429 with a
/// `Retry-After` of 1–60 s. Another user is still served, the limited user's place is intact, and
/// the limit is per queue as well.
#[tokio::test]
async fn a_user_hammering_the_issue_route_is_limited_and_others_are_not() {
    let app = TestApp::spawn(&[("RATE_LIMIT_USER_PER_MINUTE", "5"), ("QUEUE_CAPACITY", "1")]).await;
    join(&app, "show", "holder").await;
    for _ in 0..5 {
        assert!(join(&app, "show", "script").await.status < 300);
    }
    let limited = join(&app, "show", "script").await;
    limited.assert_problem(429);
    let retry: u64 = limited.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    // The limit is per user: someone else is served, and the script's place is intact.
    assert_eq!(join(&app, "show", "person").await.status, 201);
    assert_eq!(summary(&app, "show").await.body["waiting"], 2);
    // Per queue as well.
    assert_eq!(join(&app, "other-show", "script").await.status, 201);
}

/// Thirty clicks in a row from one person, under the default limits: none is refused.
#[tokio::test]
async fn a_person_clicking_fast_is_never_limited_by_the_defaults() {
    let app = TestApp::spawn(&[]).await;
    for _ in 0..30 {
        assert!(join(&app, "show", "eager").await.status < 300);
    }
}

/// Many users behind one address (API Gateway's `sourceIp`): past `RATE_LIMIT_IP_PER_MINUTE` the
/// next is 429, and another address is still served. With both limits at 0, 200 requests from one
/// user and address all pass.
#[tokio::test]
async fn one_source_address_is_limited_across_users_and_zero_turns_limits_off() {
    let app = TestApp::spawn(&[("RATE_LIMIT_IP_PER_MINUTE", "3")]).await;
    for user in ["a", "b", "c"] {
        assert_eq!(
            join_from(&app, "show", user, "203.0.113.9").await.status,
            201
        );
    }
    join_from(&app, "show", "d", "203.0.113.9")
        .await
        .assert_problem(429);
    assert_eq!(
        join_from(&app, "show", "d", "2001:db8::1").await.status,
        201
    );
    let shown = summary(&app, "show").await.body;
    assert_eq!(
        shown["waiting"].as_u64().unwrap() + shown["active"].as_u64().unwrap(),
        4
    );

    let open = TestApp::spawn(&[
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    for _ in 0..200 {
        assert!(join_from(&open, "show", "bot", "203.0.113.9").await.status < 300);
    }
}

/// Every single-character alteration of a token, and a token signed with another key, is 404 on
/// status and leave. A token on another queue's path is 404 too. The real token still works.
#[tokio::test]
async fn a_token_cannot_be_forged_altered_or_borrowed() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let alice = join(&app, "show", "alice").await.token();
    join(&app, "show", "bob").await;
    let queue = QueueId::parse("show").unwrap();
    let forged = TokenClaims {
        queue: queue.clone(),
        user: UserId::parse("bob").unwrap(),
        ticket: 2,
    }
    .sign(&TokenKey::random());
    // Every byte of Alice's token matters.
    let mut altered: Vec<String> = Vec::new();
    for i in 0..alice.len() {
        let mut bytes = alice.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        altered.push(String::from_utf8(bytes).unwrap());
    }
    for token in altered.iter().chain([&forged]) {
        assert_eq!(status(&app, "show", token).await.status, 404, "{token}");
        assert_eq!(leave(&app, "show", token).await.status, 404, "{token}");
    }
    // Alice's own token on another queue's path is not found either.
    assert_eq!(status(&app, "other", &alice).await.status, 404);
    assert_eq!(status(&app, "show", &alice).await.body["status"], "active");
}

/// Hostile queue ids (braces, spaces, encoded slashes, newlines, NUL, unicode, `*`, `?`, empty) and
/// user ids (braces, newlines, unicode, 65 characters, empty) are 4xx and write nothing. Valid ids
/// that look like key parts (`a:b`, `u:waiting`) still get keys of their own, inside their queue's
/// hash tag.
#[tokio::test]
async fn ids_cannot_reach_outside_their_own_keys() {
    let app = TestApp::spawn(&[]).await;
    let hostile = [
        "a}b", "{x}", "a b", "..%2F..", "a%0Ab", "%C3%A9", "a%00b", "*", "a?b", "",
    ];
    for queue in hostile {
        let reply = app
            .queue_api(api_request(
                "POST",
                &format!("/queues/{queue}/tokens"),
                Some(r#"{"userId":"u"}"#),
            ))
            .await;
        assert!(
            (400..500).contains(&reply.status),
            "{queue}: {}",
            reply.status
        );
    }
    if app.redis.is_some() {
        // A private server: nothing at all was written.
        assert_eq!(
            app.info_number("persistence", "rdb_changes_since_last_save")
                .await,
            0
        );
    }
    for user in ["a}b", "{x}", "a b", "a\nb", "é", &"u".repeat(65), ""] {
        let body = json!({ "userId": user }).to_string();
        app.queue_api(api_request("POST", "/queues/show/tokens", Some(&body)))
            .await
            .assert_problem(400);
    }
    // Ids that are valid but look like key parts still get keys of their own.
    join(&app, "a:b", "u").await;
    join(&app, "a", "u:waiting").await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let prefix = &app.config.key_prefix;
    for key in &keys {
        let rest = key.strip_prefix(&format!("{prefix}:")).unwrap();
        let ok = rest == "queues" || rest.starts_with("{q:a:b}:") || rest.starts_with("{q:a}:");
        assert!(ok, "unexpected key {key}");
    }
    assert!(keys
        .iter()
        .any(|k| k.ends_with("{q:a:b}:waiting") || k.ends_with("{q:a:b}:active")));
}

/// The whole flow (issue, status, a bad token, the gatekeeper, leave, a tick, a reaper run) with
/// logs captured at TRACE. No token, nor its last 16 characters, appears in any log line.
#[tokio::test]
async fn no_token_reaches_any_log_line() {
    let (captured, _guard) = lineup_tests::logs::capture();

    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "alice").await.token();
    let second = join(&app, "show", "bob").await.token();
    status(&app, "show", &second).await;
    status(&app, "show", &format!("{second}x")).await;
    status(&app, "other", &first).await;
    for token in [&first, &second] {
        app.authorize(authorizer_request(Some(token), Some("show"), None))
            .await;
    }
    leave(&app, "show", &first).await;
    promote(&app).await;
    queue_reaper::reap_all(&app.stack.reaper).await;

    let logs = captured.text();
    assert!(logs.contains("denied"), "the flow was logged: {logs}");
    for token in [&first, &second] {
        assert!(!logs.contains(token.as_str()), "a token in the log");
        // Nor any long piece of one.
        assert!(!logs.contains(&token[token.len() - 16..]));
    }
}
