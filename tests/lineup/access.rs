//! Presale access: the setting `access` (`open`, `list`, `code`), the operator's access list
//! and access codes, and the check inside issue's one round trip. Those not let in get 403
//! `access-denied` and write nothing; a code binds to the first buyer who uses it; codes are
//! stored only as their hashes; lists and codes go with the queue.

use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup_tests::queue::{assert_kind, join, put_settings, summary};
use lineup_tests::{api_request, Reply, TestApp};
use redis::AsyncCommands;
use serde_json::json;
use sha2::{Digest, Sha256};

/// `POST /queues/{queue}/tokens` for `user` with `code` in `accessCode`.
async fn join_with(app: &TestApp, queue: &str, user: &str, code: &str) -> Reply {
    let body = json!({ "userId": user, "accessCode": code }).to_string();
    app.queue_api(api_request(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
    ))
    .await
}

async fn put_access(app: &TestApp, queue: &str, user: &str) -> Reply {
    app.http("PUT", &format!("/queues/{queue}/access/{user}"), None)
        .await
}

async fn delete_access(app: &TestApp, queue: &str, user: &str) -> Reply {
    app.http("DELETE", &format!("/queues/{queue}/access/{user}"), None)
        .await
}

async fn upload(app: &TestApp, queue: &str, users: &[String]) -> Reply {
    let body = json!({ "userIds": users }).to_string();
    app.http("PUT", &format!("/queues/{queue}/access"), Some(&body))
        .await
}

async fn mint(app: &TestApp, queue: &str, count: serde_json::Value) -> Reply {
    let body = json!({ "count": count }).to_string();
    app.http(
        "POST",
        &format!("/queues/{queue}/access-codes"),
        Some(&body),
    )
    .await
}

fn keys(app: &TestApp, queue: &str) -> QueueKeys {
    QueueKeys::new(&app.config.key_prefix, &QueueId::parse(queue).unwrap())
}

/// Every key name but the rate-limit counters' (which a refusal may count in).
async fn keys_but_rate(app: &TestApp) -> Vec<String> {
    app.keys_with_ttl()
        .await
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| !key.contains(":rate:"))
        .collect()
}

/// The queue's ticket counter and lines: what a new place would change.
async fn places(app: &TestApp, queue: &str) -> (Option<u64>, u64, u64) {
    let keys = keys(app, queue);
    let mut conn = app.inspect.clone();
    let seq: Option<u64> = conn.hget(&keys.meta, "seq").await.unwrap();
    let waiting: u64 = conn.zcard(&keys.waiting).await.unwrap();
    let active: u64 = conn.zcard(&keys.active).await.unwrap();
    (seq, waiting, active)
}

/// Every string Redis holds under this app's prefix: key names, and each key's members,
/// fields, values and strings.
async fn everything_stored(app: &TestApp) -> Vec<String> {
    let mut conn = app.inspect.clone();
    let mut out = Vec::new();
    for (key, _) in app.keys_with_ttl().await {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        let values: Vec<Vec<u8>> = match kind.as_str() {
            "hash" => conn.hgetall::<_, Vec<Vec<u8>>>(&key).await.unwrap(),
            "set" => conn.smembers(&key).await.unwrap(),
            "zset" => conn.zrange(&key, 0, -1).await.unwrap(),
            "list" => conn.lrange(&key, 0, -1).await.unwrap(),
            "string" => vec![conn.get::<_, Vec<u8>>(&key).await.unwrap()],
            other => panic!("{key} is a {other}"),
        };
        out.extend(
            values
                .into_iter()
                .map(|v| String::from_utf8_lossy(&v).into_owned()),
        );
        out.push(key);
    }
    out
}

fn sha256_hex(code: &str) -> String {
    hex::encode(Sha256::digest(code.as_bytes()))
}

/// `access` is a setting like any other: set, read back in the settings and the summary,
/// reset with `null`; anything else is a 400.
#[tokio::test]
async fn the_access_setting_round_trips() {
    let app = TestApp::spawn(&[]).await;
    let created = put_settings(&app, "show", &json!({ "capacity": 2 })).await;
    assert_eq!(created.body["access"], "open", "{}", created.body);
    for access in ["list", "code", "open"] {
        let set = put_settings(&app, "show", &json!({ "access": access })).await;
        assert_eq!(set.status, 200, "{}", set.body);
        assert_eq!(set.body["access"], access);
        assert_eq!(
            summary(&app, "show").await.body["settings"]["access"],
            access
        );
    }
    put_settings(&app, "show", &json!({ "access": "code" })).await;
    let reset = put_settings(&app, "show", &json!({ "access": null })).await;
    assert_eq!(reset.body["access"], "open");
    let stored: Option<String> = app
        .inspect
        .clone()
        .hget(&keys(&app, "show").settings, "access")
        .await
        .unwrap();
    assert_eq!(stored, None, "the default is not stored");
    for bad in [json!("everyone"), json!(1), json!("LIST")] {
        let refused = put_settings(&app, "show", &json!({ "access": bad })).await;
        assert_kind(&refused, 400, "invalid-request");
    }
}

/// In mode `list` only those on the list take a place; the others are 403 `access-denied` and
/// write nothing. Taken off the list, a buyer cannot join, but one already holding a place
/// keeps it and re-joins.
#[tokio::test]
async fn list_mode_lets_in_only_the_listed() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    put_settings(&app, "show", &json!({ "access": "list" })).await;
    for user in ["ana", "ben", "cid"] {
        let listed = put_access(&app, "show", user).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
    }
    assert_eq!(put_access(&app, "show", "ana").await.body["size"], 3);
    assert_eq!(join(&app, "show", "ana").await.status, 201);
    assert_eq!(join(&app, "show", "ben").await.status, 201);

    let before = (keys_but_rate(&app).await, places(&app, "show").await);
    let refused = join(&app, "show", "zed").await;
    assert_kind(&refused, 403, "access-denied");
    assert_eq!(
        (keys_but_rate(&app).await, places(&app, "show").await),
        before,
        "a refusal writes nothing"
    );

    let removed = delete_access(&app, "show", "cid").await;
    assert_eq!(removed.body["size"], 2, "{}", removed.body);
    assert_kind(&join(&app, "show", "cid").await, 403, "access-denied");
    // Ana, taken off the list while she holds her place, keeps it.
    assert_eq!(delete_access(&app, "show", "ana").await.body["size"], 1);
    let again = join(&app, "show", "ana").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["status"], "active");
    // Back to open: anyone joins.
    put_settings(&app, "show", &json!({ "access": "open" })).await;
    assert_eq!(join(&app, "show", "zed").await.status, 201);
}

/// 10 000 ids in one request go in script calls of at most 500 ids, one pipeline; each listed
/// buyer costs a measured number of bytes. Bad ids and more than 10 000 are 400, with nothing
/// stored.
#[tokio::test]
async fn a_bulk_upload_of_10_000_goes_in_calls_of_500() {
    let app = TestApp::spawn(&[]).await;
    put_settings(&app, "show", &json!({ "access": "list" })).await;
    let users: Vec<String> = (0..10_000).map(|i| format!("buyer-{i:06}")).collect();
    let used_before = app.info_number("memory", "used_memory").await;
    let (reply, calls) = app
        .client_commands_during(upload(&app, "show", &users))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["size"], 10_000);
    assert_eq!(calls.get("evalsha").copied(), Some(20), "{calls:?}");
    let used_after = app.info_number("memory", "used_memory").await;
    let key = keys(&app, "show").access;
    let usage: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    println!(
        "MEMORY: access list of 10 000 ids of 13 characters: MEMORY USAGE {usage} bytes \
         ({} a buyer); used_memory delta {} bytes",
        usage / 10_000,
        used_after - used_before
    );
    assert!(usage / 10_000 < 200, "{usage}");
    // The same ids again add nothing; the last id is admitted, an unlisted one is not.
    assert_eq!(upload(&app, "show", &users).await.body["size"], 10_000);
    assert_eq!(join(&app, "show", "buyer-009999").await.status, 201);
    assert_kind(&join(&app, "show", "buyer-x").await, 403, "access-denied");

    let too_many: Vec<String> = (0..10_001).map(|i| format!("more-{i}")).collect();
    assert_kind(
        &upload(&app, "show", &too_many).await,
        400,
        "invalid-request",
    );
    let bad = vec!["fine".to_owned(), "not fine".to_owned()];
    assert_kind(&upload(&app, "show", &bad).await, 400, "invalid-request");
    let card: u64 = app.inspect.clone().scard(&key).await.unwrap();
    assert_eq!(card, 10_000, "a refused upload stores nothing");
    assert_kind(
        &put_access(&app, "show", "a%20b").await,
        400,
        "invalid-request",
    );
    assert_kind(
        &delete_access(&app, "show", &"x".repeat(65)).await,
        400,
        "invalid-request",
    );
    let not_json = app
        .http("PUT", "/queues/show/access", Some(r#"{"userIds":"ana"}"#))
        .await;
    assert_kind(&not_json, 400, "invalid-request");
}

/// In mode `code` a code gives one place: it binds to the first buyer who uses it, who may
/// join with it again; anyone else with it, without a code or with an unknown code is 403
/// `access-denied`, and writes nothing. Redis holds only the codes' hashes.
#[tokio::test]
async fn code_mode_one_code_one_buyer() {
    let app = TestApp::spawn(&[]).await;
    put_settings(&app, "show", &json!({ "access": "code" })).await;
    let minted = mint(&app, "show", json!(3)).await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    let codes: Vec<String> = minted.body["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes.len(), 3);
    assert!(codes.iter().all(|c| c.len() == 32));

    assert_eq!(join_with(&app, "show", "ana", &codes[0]).await.status, 201);
    let again = join_with(&app, "show", "ana", &codes[0]).await;
    assert_eq!(again.status, 200, "{}", again.body);

    let before = (keys_but_rate(&app).await, places(&app, "show").await);
    let codes_key = keys(&app, "show").access_codes;
    let bound_before: Vec<(String, String)> =
        app.inspect.clone().hgetall(&codes_key).await.unwrap();
    assert_kind(
        &join_with(&app, "show", "ben", &codes[0]).await,
        403,
        "access-denied",
    );
    assert_kind(&join(&app, "show", "ben").await, 403, "access-denied");
    assert_kind(
        &join_with(&app, "show", "ben", "0123456789abcdef0123456789abcdef").await,
        403,
        "access-denied",
    );
    assert_eq!(
        (keys_but_rate(&app).await, places(&app, "show").await),
        before,
        "refusals write nothing"
    );
    let bound_after: Vec<(String, String)> = app.inspect.clone().hgetall(&codes_key).await.unwrap();
    assert_eq!(bound_before, bound_after);
    assert_eq!(join_with(&app, "show", "ben", &codes[1]).await.status, 201);

    // Only the hashes are stored; the codes themselves nowhere.
    let stored = everything_stored(&app).await;
    for code in &codes {
        assert!(
            !stored.iter().any(|s| s.contains(code.as_str())),
            "{code} is stored"
        );
        assert!(stored.contains(&sha256_hex(code)));
    }
    assert!(stored.contains(&"ana".to_owned()) && stored.contains(&"ben".to_owned()));

    // Bad input.
    for count in [json!(0), json!(10_001), json!(-1), json!("3"), json!(2.5)] {
        assert_kind(&mint(&app, "show", count).await, 400, "invalid-request");
    }
    // JSON has one number type: an integral 2.0 is the whole number 2.
    let whole = mint(&app, "show", json!(2.0)).await;
    assert_eq!(whole.status, 201, "{}", whole.body);
    assert_eq!(whole.body["codes"].as_array().map(Vec::len), Some(2));
    assert_kind(
        &join_with(&app, "show", "cid", "not a code").await,
        400,
        "invalid-request",
    );
    assert_kind(
        &join_with(&app, "show", "cid", &"a".repeat(65)).await,
        400,
        "invalid-request",
    );
}

/// Twenty buyers race for one code: exactly one takes the place.
#[tokio::test]
async fn buyers_racing_for_one_code_exactly_one_wins() {
    let app = TestApp::spawn(&[]).await;
    put_settings(&app, "show", &json!({ "access": "code" })).await;
    let minted = mint(&app, "show", json!(1)).await;
    let code = minted.body["codes"][0].as_str().unwrap().to_owned();
    let replies = futures::future::join_all((0..20).map(|i| {
        let (app, code) = (&app, &code);
        async move { join_with(app, "show", &format!("racer-{i}"), code).await }
    }))
    .await;
    let won = replies.iter().filter(|r| r.status == 201).count();
    let denied = replies
        .iter()
        .filter(|r| {
            r.status == 403 && r.body["type"] == "https://lineup.dev/problems/access-denied"
        })
        .count();
    assert_eq!((won, denied), (1, 19), "{replies:?}");
}

/// Lists and codes are the operator's, without a TTL like the settings, and go when the queue
/// is closed.
#[tokio::test]
async fn lists_and_codes_end_with_the_queue() {
    let app = TestApp::spawn(&[]).await;
    put_settings(&app, "show", &json!({ "access": "code" })).await;
    assert_eq!(put_access(&app, "show", "ana").await.status, 200);
    assert_eq!(mint(&app, "show", json!(5)).await.status, 201);
    let keys = keys(&app, "show");
    let held = app.keys_with_ttl().await;
    for key in [&keys.access, &keys.access_codes] {
        assert!(held.contains(&(key.clone(), -1)), "{key}: {held:?}");
    }
    let closed = app.http("DELETE", "/queues/show/settings", None).await;
    assert_eq!(closed.status, 204, "{}", closed.body);
    let left = app.keys_with_ttl().await;
    assert!(
        !left
            .iter()
            .any(|(key, _)| key == &keys.access || key == &keys.access_codes),
        "{left:?}"
    );
}

/// 10 000 codes, the most one request mints, in calls of 500 hashes; each code costs a
/// measured number of bytes until bound (a bound one holds its buyer's id besides).
#[tokio::test]
async fn minting_10_000_codes_goes_in_calls_of_500() {
    let app = TestApp::spawn(&[]).await;
    let (minted, calls) = app
        .client_commands_during(mint(&app, "show", json!(10_000)))
        .await;
    assert_eq!(minted.status, 201, "{}", minted.body);
    assert_eq!(minted.body["codes"].as_array().unwrap().len(), 10_000);
    assert_eq!(calls.get("evalsha").copied(), Some(20), "{calls:?}");
    let usage: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys(&app, "show").access_codes)
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    println!(
        "MEMORY: 10 000 unbound access codes: MEMORY USAGE {usage} bytes ({} a code)",
        usage / 10_000
    );
    assert!(usage / 10_000 < 250, "{usage}");
    // Minting made the queue, as a settings change does.
    let created: bool = app
        .inspect
        .clone()
        .hexists(&keys(&app, "show").settings, "created")
        .await
        .unwrap();
    assert!(created);
}
