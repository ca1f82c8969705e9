//! The door: a queue whose setting `challenge` is on asks each new arrival for a solved ALTCHA
//! challenge (PoW v2). Solutions here come from the ALTCHA project's own solver (Node's
//! `altcha/lib`), never lineup's. A join without one is 403 `challenge-required`; a replayed,
//! expired, foreign, forged, unsolved or malformed one is 403 `challenge-failed`; each links
//! a fresh challenge and writes nothing but the rate-limit counters. A buyer who holds a place
//! needs no new solution.

use chrono::Utc;
use lambda_http::http::HeaderValue;
use lineup::door::{DoorKey, Scope};
use lineup::ids::{QueueId, UserId};
use lineup::queue::keys::QueueKeys;
use lineup_tests::door::{solve, solver_ready};
use lineup_tests::queue::{assert_kind, join, leave, put_settings, summary};
use lineup_tests::{api_request, Reply, TestApp};
use redis::AsyncCommands;
use serde_json::{json, Value};

/// `GET /queues/{queue}/challenge?userId={user}`.
async fn challenge(app: &TestApp, queue: &str, user: &str) -> Reply {
    app.queue_api(api_request(
        "GET",
        &format!("/queues/{queue}/challenge?userId={user}"),
        None,
    ))
    .await
}

/// `POST /queues/{queue}/tokens` for `user` with `payload` in `x-altcha`.
async fn join_with(app: &TestApp, queue: &str, user: &str, payload: &str) -> Reply {
    let body = json!({ "userId": user }).to_string();
    let mut request = api_request("POST", &format!("/queues/{queue}/tokens"), Some(&body));
    request.headers_mut().insert(
        "x-altcha",
        HeaderValue::from_str(payload).expect("a header value"),
    );
    app.queue_api(request).await
}

/// A solution, by ALTCHA's own solver, of a fresh challenge for `user` in `queue`.
async fn solved(app: &TestApp, queue: &str, user: &str) -> String {
    let reply = challenge(app, queue, user).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    solve(&reply.body).await
}

/// A door refusal: 403 of `kind`, linking a fresh challenge for the queue.
fn assert_refused(reply: &Reply, queue: &str, kind: &str) {
    let link = format!("/queues/{queue}/challenge");
    assert_refused_at(reply, &link, kind);
    assert_eq!(
        reply.headers.get("link").and_then(|v| v.to_str().ok()),
        Some(format!("<{link}>; rel=\"challenge\"").as_str())
    );
}

/// Every key, and the value of each but the rate-limit counters and meta (whose bookkeeping
/// any call may renew), with the queue's ticket counter: what a refusal must leave as it was.
async fn state_but_rate(app: &TestApp) -> Vec<(String, String)> {
    let mut conn = app.inspect.clone();
    let mut out = Vec::new();
    for (key, _) in app.keys_with_ttl().await {
        if key.contains(":rate:") {
            continue;
        }
        if key.ends_with(":meta") {
            let seq: Option<String> = conn.hget(&key, "seq").await.unwrap();
            out.push((key, format!("seq {seq:?}")));
            continue;
        }
        let dump: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, format!("{dump:?}")));
    }
    out.sort();
    out
}

async fn door_on(app: &TestApp, queue: &str, settings: Value) {
    let reply = put_settings(app, queue, &settings).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
}

#[tokio::test]
async fn a_queue_with_the_door_on_takes_a_solution_made_by_altchas_own_solver() {
    if !solver_ready() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    door_on(
        &app,
        "gig",
        json!({ "capacity": 1, "challenge": "on", "challengeCostMin": 200 }),
    )
    .await;
    let settings = summary(&app, "gig").await;
    assert_eq!(
        settings.body["settings"]["challenge"], "on",
        "{}",
        settings.body
    );
    assert_eq!(settings.body["settings"]["challengeCostMin"], 200);
    assert_eq!(settings.body["settings"]["challengeCostMax"], 20000);

    // Without a solution: refused, pointing at a challenge.
    assert_refused(&join(&app, "gig", "ann").await, "gig", "challenge-required");

    // The challenge: ALTCHA v2, signed, for this queue and buyer, expiring in five minutes.
    let reply = challenge(&app, "gig", "ann").await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let parameters = &reply.body["parameters"];
    assert_eq!(parameters["algorithm"], "PBKDF2/SHA-256");
    assert_eq!(parameters["cost"], 200);
    assert_eq!(parameters["data"]["queue"], "gig");
    assert_eq!(parameters["data"]["buyer"], "ann");
    let expires = parameters["expiresAt"].as_i64().expect("expiresAt");
    let left = expires - Utc::now().timestamp();
    assert!((290..=301).contains(&left), "expires in {left} s");
    assert!(reply.body["signature"]
        .as_str()
        .is_some_and(|s| s.len() == 64));

    // Solved by ALTCHA's solver: ann takes a place, and needs no solution to get it again.
    let payload = solve(&reply.body).await;
    let first = join_with(&app, "gig", "ann", &payload).await;
    assert_eq!(first.status, 201, "{}", first.body);
    let again = join(&app, "gig", "ann").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.token(), first.token());

    // The solution may come in the body's `altcha` too. The join stays one round trip: one
    // script call.
    let payload = solved(&app, "gig", "ben").await;
    let body = json!({ "userId": "ben", "altcha": payload }).to_string();
    let (ben, sent) = app
        .client_commands_during(app.queue_api(api_request(
            "POST",
            "/queues/gig/tokens",
            Some(&body),
        )))
        .await;
    assert_eq!(ben.status, 201, "{}", ben.body);
    assert_eq!(ben.body["status"], "waiting");
    assert_eq!(sent, [("evalsha", 1)].into_iter().collect(), "{sent:?}");

    // Each is counted per queue in EMF: three challenges issued, two solved, one refused.
    let counted = |metric: &str| {
        app.metrics
            .lines()
            .iter()
            .filter(|line| {
                line.contains(&format!("\"{metric}\":1")) && line.contains("\"queueId\":\"gig\"")
            })
            .count()
    };
    assert_eq!(
        (
            counted("challengesIssued"),
            counted("challengesSolved"),
            counted("challengesRefused")
        ),
        (2, 2, 1),
        "{:?}",
        app.metrics.lines()
    );

    // The redemption bitmap ends: a TTL past the challenge's expiry, one bit a serial.
    let keys = app.keys_with_ttl().await;
    let (bitmap, ttl) = keys
        .iter()
        .find(|(key, _)| key.contains(":redeemed:"))
        .expect("a redemption bitmap");
    assert!(
        *ttl > 300_000 / 1000 && *ttl <= 600,
        "{bitmap}: TTL {ttl} s"
    );
    let door = keys.iter().find(|(key, _)| key.ends_with(":door"));
    assert!(
        door.is_some_and(|(_, ttl)| *ttl > 0 && *ttl <= 600),
        "{keys:?}"
    );
}

#[tokio::test]
async fn replayed_expired_foreign_forged_unsolved_and_malformed_solutions_are_refused_and_write_nothing(
) {
    if !solver_ready() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    door_on(
        &app,
        "gig",
        json!({ "challenge": "on", "challengeCostMin": 100 }),
    )
    .await;
    door_on(
        &app,
        "other",
        json!({ "challenge": "on", "challengeCostMin": 100 }),
    )
    .await;

    // Replayed: ann joins, leaves, and brings the same solution again.
    let payload = solved(&app, "gig", "ann").await;
    let joined = join_with(&app, "gig", "ann", &payload).await;
    assert_eq!(joined.status, 201, "{}", joined.body);
    assert_eq!(leave(&app, "gig", &joined.token()).await.status, 204);

    let other_queue = solved(&app, "other", "ben").await;
    let other_buyer = solved(&app, "gig", "cat").await;
    let good = solved(&app, "gig", "ben").await;
    let decoded: Value = serde_json::from_slice(&base64_decode(&good)).expect("an ALTCHA payload");
    let mut forged = decoded.clone();
    forged["challenge"]["parameters"]["cost"] = json!(100_000);
    let mut unsolved = decoded.clone();
    let counter = unsolved["solution"]["counter"].as_u64().unwrap();
    unsolved["solution"]["counter"] = json!(counter + 1);
    // Signed with this deployment's key, but expired a second ago.
    let key = DoorKey::derive(&app.config.token_key);
    let expired_challenge = key
        .challenge(
            Scope::Queue(&QueueId::parse("gig").unwrap()),
            &UserId::parse("ben").unwrap(),
            Some(999),
            100,
            Utc::now().timestamp() - 1,
        )
        .unwrap();
    let expired = solve(&serde_json::to_value(&expired_challenge).unwrap()).await;

    let cases: [(&str, String, &str); 7] = [
        ("replayed", payload, "ann"),
        ("another queue's", other_queue, "ben"),
        ("another buyer's", other_buyer, "ben"),
        ("forged", base64_encode(&forged), "ben"),
        ("unsolved", base64_encode(&unsolved), "ben"),
        ("expired", expired, "ben"),
        ("malformed", "bm90IGEgcGF5bG9hZA==".to_owned(), "ben"),
    ];
    for (case, payload, user) in cases {
        let before = state_but_rate(&app).await;
        let reply = join_with(&app, "gig", user, &payload).await;
        assert_refused(&reply, "gig", "challenge-failed");
        assert_eq!(
            state_but_rate(&app).await,
            before,
            "{case}: wrote something"
        );
    }
    // The good one still works: nothing above redeemed it.
    let ben = join_with(&app, "gig", "ben", &good).await;
    assert_eq!(ben.status, 201, "{}", ben.body);
}

#[tokio::test]
async fn a_refusal_counts_against_the_rate_limit_and_a_queue_without_the_door_ignores_solutions() {
    let app = TestApp::spawn(&[("RATE_LIMIT_USER_PER_MINUTE", "3")]).await;
    door_on(&app, "gig", json!({ "challenge": "on" })).await;
    for _ in 0..3 {
        assert_refused(&join(&app, "gig", "ann").await, "gig", "challenge-required");
    }
    assert_kind(&join(&app, "gig", "ann").await, 429, "rate-limited");

    // Off: a join needs nothing, and a bad solution is not looked at.
    door_on(&app, "open", json!({ "capacity": 5 })).await;
    let reply = join_with(&app, "open", "ben", "garbage").await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    // One longer than any solution is refused whatever the queue asks.
    let long = "A".repeat(4097);
    assert_kind(
        &join_with(&app, "open", "cat", &long).await,
        400,
        "invalid-request",
    );
    let keys = QueueKeys::new(&app.config.key_prefix, &QueueId::parse("open").unwrap());
    let mut conn = app.inspect.clone();
    let settings: std::collections::HashMap<String, String> =
        conn.hgetall(&keys.settings).await.unwrap();
    assert!(!settings.contains_key("challenge"), "{settings:?}");
}

#[tokio::test]
async fn adaptive_raises_the_cost_with_the_arrivals_of_the_last_minute() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let cost = |reply: &Reply| reply.body["parameters"]["cost"].as_u64().expect("a cost");
    door_on(
        &app,
        "gig",
        json!({ "challenge": "adaptive", "challengeCostMin": 100, "challengeCostMax": 5000 }),
    )
    .await;
    // A quiet queue: the floor.
    assert_eq!(cost(&challenge(&app, "gig", "ann").await), 100);
    // 300 arrivals within seconds (the door off meanwhile, so they need no solution): about
    // 1 800 a minute, the current window counted over at least ten seconds.
    door_on(&app, "gig", json!({ "challenge": null })).await;
    for i in 0..300 {
        assert_eq!(join(&app, "gig", &format!("b{i}")).await.status, 201);
    }
    door_on(&app, "gig", json!({ "challenge": "adaptive" })).await;
    let surge = cost(&challenge(&app, "gig", "ann").await);
    assert!(
        surge > 100 && surge <= 5000 && surge % 100 == 0,
        "cost {surge}"
    );
    // The ceiling holds.
    door_on(&app, "gig", json!({ "challengeCostMax": 300 })).await;
    assert_eq!(cost(&challenge(&app, "gig", "ann").await), 300);
}

#[tokio::test]
async fn the_page_gets_the_solver_from_its_own_origin() {
    let app = TestApp::spawn(&[]).await;
    let reply = app.http("GET", "/queues/gig/wait/altcha.js", None).await;
    assert_eq!(reply.status, 200);
    assert!(reply.content_type.starts_with("text/javascript"));
    assert_eq!(reply.body, lineup::pages::ALTCHA_WORKER);
    let page = app.http("GET", "/queues/gig/wait", None).await;
    let csp = page.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("worker-src 'self'"), "{csp}");
}

#[tokio::test]
async fn the_door_settings_are_checked_and_a_challenge_needs_a_queue_and_a_buyer() {
    let app = TestApp::spawn(&[("QUEUE_CREATION", "operator")]).await;
    for bad in [
        json!({ "challenge": "sometimes" }),
        json!({ "challengeCostMin": 99 }),
        json!({ "challengeCostMax": 1_000_001 }),
        json!({ "challengeCostMin": 2.5 }),
    ] {
        assert_eq!(put_settings(&app, "gig", &bad).await.status, 400, "{bad}");
    }
    assert_kind(&challenge(&app, "nowhere", "ann").await, 404, "not-found");
    door_on(&app, "gig", json!({ "challenge": "on" })).await;
    let anonymous = app
        .queue_api(api_request("GET", "/queues/gig/challenge", None))
        .await;
    assert_kind(&anonymous, 400, "invalid-request");
    // Resetting puts the defaults back.
    door_on(
        &app,
        "gig",
        json!({ "challenge": null, "challengeCostMin": null }),
    )
    .await;
    let settings = summary(&app, "gig").await.body["settings"].clone();
    assert_eq!(settings["challenge"], "off");
    assert_eq!(settings["challengeCostMin"], 1000);
}

#[tokio::test]
async fn a_campaign_that_asks_for_it_takes_claims_with_a_solution_for_it_alone() {
    if !solver_ready() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let put = |body: Value| {
        let body = body.to_string();
        let app = &app;
        async move {
            app.coupon_api(api_request("PUT", "/coupons/fan-gift", Some(&body)))
                .await
        }
    };
    let claim = |user: &str, payload: Option<&str>| {
        let body = json!({ "userId": user }).to_string();
        let mut request = api_request("POST", "/coupons/fan-gift/claims", Some(&body));
        if let Some(payload) = payload {
            request.headers_mut().insert(
                "x-altcha",
                HeaderValue::from_str(payload).expect("a header value"),
            );
        }
        app.coupon_api(request)
    };
    let created = put(json!({ "quantity": 10, "challenge": "on", "challengeCost": 150 })).await;
    assert_eq!(created.status, 201, "{}", created.body);
    assert_eq!(created.body["challenge"], "on");
    assert_eq!(created.body["challengeCost"], 150);
    assert_eq!(
        put(json!({ "quantity": 10, "challenge": "adaptive" }))
            .await
            .status,
        400
    );

    assert_refused_at(
        &claim("ann", None).await,
        "/coupons/fan-gift/challenge",
        "challenge-required",
    );
    let reply = app
        .coupon_api(api_request(
            "GET",
            "/coupons/fan-gift/challenge?userId=ann",
            None,
        ))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.body["parameters"]["cost"], 150);
    assert_eq!(reply.body["parameters"]["data"]["coupon"], "fan-gift");
    let payload = solve(&reply.body).await;
    // Another buyer's solution, and a queue's challenge of the same id, do not hold here.
    assert_refused_at(
        &claim("ben", Some(&payload)).await,
        "/coupons/fan-gift/challenge",
        "challenge-failed",
    );
    door_on(
        &app,
        "fan-gift",
        json!({ "challenge": "on", "challengeCostMin": 100 }),
    )
    .await;
    let queue_payload = solved(&app, "fan-gift", "ann").await;
    assert_refused_at(
        &claim("ann", Some(&queue_payload)).await,
        "/coupons/fan-gift/challenge",
        "challenge-failed",
    );
    let claimed = claim("ann", Some(&payload)).await;
    assert_eq!(claimed.status, 201, "{}", claimed.body);
    // Her claim again needs no solution.
    assert_eq!(claim("ann", None).await.status, 200);

    // Off again: claims need nothing.
    put(json!({ "quantity": 10 })).await;
    assert_eq!(claim("cat", None).await.status, 201);

    // Counted per campaign in EMF.
    let counted = |metric: &str| {
        app.metrics
            .lines()
            .iter()
            .filter(|line| {
                line.contains(&format!("\"{metric}\":1"))
                    && line.contains("\"couponId\":\"fan-gift\"")
            })
            .count()
    };
    assert_eq!(
        (
            counted("challengesIssued"),
            counted("challengesSolved"),
            counted("challengesRefused")
        ),
        (1, 1, 3)
    );
}

fn assert_refused_at(reply: &Reply, link: &str, kind: &str) {
    assert_kind(reply, 403, kind);
    assert_eq!(reply.body["challenge"], link, "{}", reply.body);
}

fn base64_encode(value: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(value.to_string())
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("base64")
}
