//! First-come coupons (`coupon-api`, `coupon-publisher`): exactly `quantity` numbered claims
//! under a crowd, one per buyer, every answer's status, and every claim on the bus at least
//! once however EventBridge fails.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Utc};
use futures::future::join_all;
use lineup::publish::Publisher;
use lineup_tests::queue::join;
use lineup_tests::{
    api_request, api_request_from, api_request_with_claims, aws_config_for, Moto, Reply, TestApp,
    ThrottlingEndpoint,
};
use rand::Rng;
use redis::AsyncCommands;
use serde_json::{json, Value};

/// `PUT /coupons/{coupon}` with `body`.
async fn put_campaign(app: &TestApp, coupon: &str, body: &Value) -> Reply {
    app.coupon_api(api_request(
        "PUT",
        &format!("/coupons/{coupon}"),
        Some(&body.to_string()),
    ))
    .await
}

/// `POST /coupons/{coupon}/claims` for `user` (the body names the buyer).
async fn claim(app: &TestApp, coupon: &str, user: &str) -> Reply {
    claim_with(app, coupon, &json!({ "userId": user })).await
}

async fn claim_with(app: &TestApp, coupon: &str, body: &Value) -> Reply {
    app.coupon_api(api_request(
        "POST",
        &format!("/coupons/{coupon}/claims"),
        Some(&body.to_string()),
    ))
    .await
}

/// `GET /coupons/{coupon}`.
async fn read(app: &TestApp, coupon: &str) -> Reply {
    app.coupon_api(api_request("GET", &format!("/coupons/{coupon}"), None))
        .await
}

fn at(offset: chrono::Duration) -> String {
    (Utc::now() + offset).to_rfc3339()
}

/// The proof: 5,000 claims in flight at once from 2,000 buyers (each 1–4 times, in a
/// shuffled order, over eight containers' connections) against 500 coupons. Exactly 500
/// succeed, numbered 1…500 without gap or repeat, each buyer holds at most one number (a
/// winner asking again gets the same number), and every other answer is 410 sold out.
#[tokio::test]
async fn five_thousand_claims_from_two_thousand_buyers_take_exactly_five_hundred_numbers() {
    const QUANTITY: u64 = 500;
    const BUYERS: usize = 2000;
    const CLAIMS: usize = 5000;
    let app = TestApp::spawn(&[
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        // 5,000 requests share eight connections (a Lambda container has one request at a
        // time): the last in a pipeline waits for all before it, and none is shed.
        ("REDIS_RESPONSE_TIMEOUT_MS", "30000"),
        ("REDIS_MAX_IN_FLIGHT", "10000"),
    ])
    .await;
    assert_eq!(
        put_campaign(&app, "drop", &json!({"quantity": QUANTITY}))
            .await
            .status,
        201
    );
    // Every buyer once, then 3,000 more claims from buyers drawn at random, at most four each.
    let mut rng = rand::rng();
    let mut per_buyer = vec![1usize; BUYERS];
    let mut users: Vec<usize> = (0..BUYERS).collect();
    while users.len() < CLAIMS {
        let buyer = rng.random_range(0..BUYERS);
        if per_buyer[buyer] < 4 {
            per_buyer[buyer] += 1;
            users.push(buyer);
        }
    }
    for i in (1..users.len()).rev() {
        users.swap(i, rng.random_range(0..=i));
    }
    let mut containers = vec![app.stack.clone()];
    for _ in 1..8 {
        containers.push(app.another_container().await);
    }
    let replies = join_all(users.iter().enumerate().map(|(i, buyer)| {
        let deps = containers[i % containers.len()].coupon_api.clone();
        let body = json!({ "userId": format!("u{buyer}") }).to_string();
        async move {
            let request = api_request("POST", "/coupons/drop/claims", Some(&body));
            let reply = Reply::from(
                coupon_api::handle(request, &deps)
                    .await
                    .expect("infallible"),
            );
            (*buyer, reply)
        }
    }))
    .await;

    let mut numbers: BTreeMap<u64, usize> = BTreeMap::new();
    let mut held: HashMap<usize, u64> = HashMap::new();
    let (mut created, mut sold_out) = (0, 0);
    for (buyer, reply) in &replies {
        match reply.status {
            201 | 200 => {
                let number = reply.body["claimNumber"].as_u64().expect("claimNumber");
                assert_eq!(reply.body["userId"], format!("u{buyer}"));
                if let Some(before) = held.insert(*buyer, number) {
                    assert_eq!(before, number, "u{buyer} holds one number");
                }
                if reply.status == 201 {
                    created += 1;
                    assert!(
                        numbers.insert(number, *buyer).is_none(),
                        "number {number} given twice"
                    );
                }
            }
            410 => {
                reply.assert_problem(410);
                assert_eq!(reply.body["type"], "https://lineup.dev/problems/sold-out");
                sold_out += 1;
            }
            other => panic!("u{buyer}: unexpected {other}: {}", reply.body),
        }
    }
    assert_eq!(created, QUANTITY as usize, "exactly the quantity succeeds");
    assert_eq!(
        numbers.keys().copied().collect::<Vec<_>>(),
        (1..=QUANTITY).collect::<Vec<_>>(),
        "numbers 1…500, no gap, no repeat"
    );
    assert_eq!(held.len(), QUANTITY as usize, "500 buyers hold a number");
    // Nobody without a number was told anything but sold out.
    for (buyer, reply) in &replies {
        if !held.contains_key(buyer) {
            assert_eq!(reply.status, 410);
        }
    }
    assert_eq!(created + sold_out + (CLAIMS - created - sold_out), CLAIMS);
    let campaign = read(&app, "drop").await;
    assert_eq!(campaign.body["claimed"], QUANTITY);
    assert_eq!(campaign.body["remaining"], 0);
    let mut inspect = app.inspect.clone();
    let prefix = &app.config.key_prefix;
    let outbox: u64 = inspect
        .zcard(format!("{prefix}:{{c:drop}}:outbox"))
        .await
        .expect("ZCARD");
    assert_eq!(outbox, QUANTITY, "every claim waits in the outbox");
    let repeats = replies.iter().filter(|(_, r)| r.status == 200).count();
    println!(
        "RELIABILITY: coupon concurrency: {CLAIMS} claims from {BUYERS} buyers, quantity \
         {QUANTITY}: {created} claimed (numbers 1..{QUANTITY}), {repeats} repeats answered 200, \
         {sold_out} sold out"
    );
}

#[tokio::test]
async fn every_status_a_buyer_and_an_operator_rely_on() {
    let app = TestApp::spawn(&[("RATE_LIMIT_USER_PER_MINUTE", "5")]).await;

    claim(&app, "nothing", "u1").await.assert_problem(404);
    read(&app, "nothing").await.assert_problem(404);

    let put = put_campaign(&app, "spring", &json!({"quantity": 2})).await;
    assert_eq!(put.status, 201, "{}", put.body);
    assert_eq!(put.body["remaining"], 2);
    assert_eq!(put.body["couponId"], "spring");
    let first = claim(&app, "spring", "u1").await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.body["claimNumber"], 1);
    assert_eq!(first.body["couponId"], "spring");
    let claimed_at =
        DateTime::parse_from_rfc3339(first.body["claimedAt"].as_str().unwrap()).expect("claimedAt");
    let age = Utc::now().signed_duration_since(claimed_at);
    assert!(age >= chrono::Duration::zero() && age < chrono::Duration::seconds(5));
    let again = claim(&app, "spring", "u1").await;
    assert_eq!(again.status, 200);
    assert_eq!(again.body, first.body, "the same claim again");
    assert_eq!(claim(&app, "spring", "u2").await.body["claimNumber"], 2);
    let sold = claim(&app, "spring", "u3").await;
    sold.assert_problem(410);
    assert_eq!(
        claim(&app, "spring", "u1").await.status,
        200,
        "a winner still gets its claim once sold out"
    );
    let shown = read(&app, "spring").await;
    assert_eq!(shown.status, 200);
    assert_eq!(shown.body["remaining"], 0);
    assert!(shown.headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age=1"));

    // Raised while running: the next buyer gets number 3. Lowered below 3: refused.
    let raised = put_campaign(&app, "spring", &json!({"quantity": 3})).await;
    assert_eq!(raised.status, 200);
    assert_eq!(raised.body["remaining"], 1);
    assert_eq!(claim(&app, "spring", "u3").await.body["claimNumber"], 3);
    put_campaign(&app, "spring", &json!({"quantity": 2}))
        .await
        .assert_problem(409);
    assert_eq!(read(&app, "spring").await.body["quantity"], 3);

    // The window.
    let later = json!({"quantity": 5, "opensAt": at(chrono::Duration::hours(1))});
    assert_eq!(put_campaign(&app, "later", &later).await.status, 201);
    claim(&app, "later", "u1").await.assert_problem(409);
    let over = json!({
        "quantity": 5,
        "opensAt": at(-chrono::Duration::hours(2)),
        "closesAt": at(-chrono::Duration::hours(1)),
    });
    assert_eq!(put_campaign(&app, "over", &over).await.status, 201);
    claim(&app, "over", "u1").await.assert_problem(409);

    // A sold-out campaign's answers are not counted by the rate limit (five a minute).
    put_campaign(&app, "small", &json!({"quantity": 1})).await;
    assert_eq!(claim(&app, "small", "winner").await.status, 201);
    for _ in 0..8 {
        claim(&app, "small", "eager").await.assert_problem(410);
    }
    // A queue token that does not verify counts as none: a campaign without a queue needs
    // none.
    put_campaign(&app, "busy", &json!({"quantity": 100})).await;
    let forged = claim_with(&app, "busy", &json!({"userId": "u9", "token": "forged"})).await;
    assert_eq!(forged.status, 201, "{}", forged.body);

    // Bad input.
    put_campaign(&app, "bad", &json!({"quantity": 0}))
        .await
        .assert_problem(400);
    put_campaign(&app, "bad", &json!({"quantity": 1, "closesAt": "soon"}))
        .await
        .assert_problem(400);
    put_campaign(&app, "a{b}", &json!({"quantity": 1}))
        .await
        .assert_problem(400);
    claim_with(&app, "spring", &json!({}))
        .await
        .assert_problem(400);
}

#[tokio::test]
async fn a_buyer_past_the_rate_limit_is_told_when_to_retry() {
    let app = TestApp::spawn(&[
        ("RATE_LIMIT_USER_PER_MINUTE", "3"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    put_campaign(&app, "gate", &json!({"quantity": 10, "queueId": "show"})).await;
    // A buyer in the line, not yet active, keeps asking with its waiting token.
    app.queue_api(api_request(
        "PUT",
        "/queues/show/settings",
        Some(&json!({"capacity": 1}).to_string()),
    ))
    .await;
    let active = join(&app, "show", "first").await;
    assert_eq!(active.body["status"], "active");
    let waiting = join(&app, "show", "second").await;
    assert_eq!(waiting.body["status"], "waiting");
    // Sold-out and window answers are not counted; a buyer hammering without an active
    // session is, before its session is even looked at.
    let body = json!({"userId": "second", "token": waiting.token()});
    for _ in 0..3 {
        claim_with(&app, "gate", &body).await.assert_problem(403);
    }
    let limited = claim_with(&app, "gate", &body).await;
    limited.assert_problem(429);
    assert!(limited.headers.contains_key("retry-after"));
    let body = json!({"userId": "first", "token": active.token()});
    let ok = claim_with(&app, "gate", &body).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    for _ in 0..5 {
        assert_eq!(claim_with(&app, "gate", &body).await.status, 200);
    }

    // Per IP: five buyers from one address, limit 3 a minute.
    let app = TestApp::spawn(&[
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "3"),
    ])
    .await;
    put_campaign(&app, "burst", &json!({"quantity": 100})).await;
    let mut statuses = Vec::new();
    for i in 0..5 {
        let reply = app
            .coupon_api(api_request_from(
                "POST",
                "/coupons/burst/claims",
                Some(&json!({"userId": format!("b{i}")}).to_string()),
                "198.51.100.9",
            ))
            .await;
        if reply.status == 429 {
            reply.assert_problem(429);
            let retry: u64 = reply.headers["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=60).contains(&retry), "Retry-After {retry}");
        }
        statuses.push(reply.status);
    }
    assert_eq!(statuses, [201, 201, 201, 429, 429]);
}

/// A campaign with a queue: only a buyer whose token of that queue is active right now may
/// claim. A waiting token, a token of the buyer's earlier session, another buyer's token,
/// and no token are 403; the active one claims. The campaign's keys share the queue's tag.
#[tokio::test]
async fn a_campaign_with_a_queue_takes_only_active_tokens_of_that_queue() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let put = put_campaign(&app, "vip", &json!({"quantity": 5, "queueId": "show"})).await;
    assert_eq!(put.status, 201, "{}", put.body);
    assert_eq!(put.body["queueId"], "show");
    let active = join(&app, "show", "a").await;
    assert_eq!(active.body["status"], "active");
    let waiting = join(&app, "show", "w").await;
    assert_eq!(waiting.body["status"], "waiting");

    claim(&app, "vip", "a").await.assert_problem(403);
    claim_with(
        &app,
        "vip",
        &json!({"userId": "w", "token": waiting.token()}),
    )
    .await
    .assert_problem(403);
    claim_with(
        &app,
        "vip",
        &json!({"userId": "w", "token": active.token()}),
    )
    .await
    .assert_problem(403);
    let ok = claim_with(
        &app,
        "vip",
        &json!({"userId": "a", "token": active.token()}),
    )
    .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.body["claimNumber"], 1);
    let shown = read(&app, "vip").await;
    assert_eq!(shown.body["claimed"], 1);
    assert_eq!(shown.body["queueId"], "show");

    // The queue cannot change, nor be added to a campaign made without one.
    put_campaign(&app, "vip", &json!({"quantity": 5, "queueId": "other"}))
        .await
        .assert_problem(409);
    put_campaign(&app, "vip", &json!({"quantity": 5}))
        .await
        .assert_problem(409);
    put_campaign(&app, "plain", &json!({"quantity": 5})).await;
    put_campaign(&app, "plain", &json!({"quantity": 5, "queueId": "show"}))
        .await
        .assert_problem(409);
    // A token shown for a campaign without a queue is not needed, and does no harm.
    let plain = claim_with(
        &app,
        "plain",
        &json!({"userId": "a", "token": active.token()}),
    )
    .await;
    assert_eq!(plain.status, 201, "{}", plain.body);

    let prefix = &app.config.key_prefix;
    let mut inspect = app.inspect.clone();
    let claims: HashMap<String, String> = inspect
        .hgetall(format!("{prefix}:{{q:show}}:coupon:vip:claims"))
        .await
        .expect("HGETALL");
    assert!(claims.contains_key("a"), "{claims:?}");
}

/// In AWS the buyer is the JWT's `sub`: no JWT is 401, a body naming someone else is 403.
#[tokio::test]
async fn deployed_the_buyer_is_the_jwt_subject() {
    let app = TestApp::spawn(&[("ALLOW_BODY_USER_ID", "no")]).await;
    put_campaign(&app, "jwt", &json!({"quantity": 5})).await;
    claim(&app, "jwt", "u1").await.assert_problem(401);
    let as_other = app
        .coupon_api(api_request_with_claims(
            "POST",
            "/coupons/jwt/claims",
            Some(&json!({"userId": "someone-else"}).to_string()),
            Some(json!({"sub": "u1"})),
        ))
        .await;
    as_other.assert_problem(403);
    let ok = app
        .coupon_api(api_request_with_claims(
            "POST",
            "/coupons/jwt/claims",
            None,
            Some(json!({"sub": "u1"})),
        ))
        .await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    assert_eq!(ok.body["userId"], "u1");
}

/// Every key a campaign writes ends: campaign, claims and outbox expire 7 days after
/// `closesAt`, the rate-limit hashes within two minutes, the registry with its last campaign.
#[tokio::test]
async fn every_coupon_key_expires() {
    let app = TestApp::spawn(&[]).await;
    let closes = Utc::now() + chrono::Duration::hours(1);
    put_campaign(
        &app,
        "ends",
        &json!({"quantity": 5, "closesAt": closes.to_rfc3339()}),
    )
    .await;
    put_campaign(&app, "queued", &json!({"quantity": 5, "queueId": "q"})).await;
    claim(&app, "ends", "u1").await;
    let keys = app.keys_with_ttl().await;
    let week = 7 * 24 * 3600;
    let coupon_keys: Vec<_> = keys
        .iter()
        .filter(|(key, _)| {
            key.contains("{c:") || key.contains("coupon") || key.ends_with(":coupons")
        })
        .collect();
    assert!(coupon_keys.len() >= 6, "{coupon_keys:?}");
    for (key, ttl) in &coupon_keys {
        assert!(*ttl > 0, "{key} has no TTL");
        if key.contains("{c:ends}") && !key.contains(":rate:") {
            let expected = closes.timestamp() + week - Utc::now().timestamp();
            assert!(
                (*ttl - expected).abs() < 60,
                "{key} expires 7 days after closesAt: {ttl} vs {expected}"
            );
        }
        if key.contains(":rate:") {
            assert!(*ttl <= 120, "{key}: {ttl}");
        }
    }
}

async fn drain(deps: &coupon_publisher::Deps) -> coupon_publisher::Output {
    coupon_publisher::drain(deps).await.expect("drain")
}

/// EventBridge refuses some entries (throttled), then is unreachable altogether, then comes
/// back. Every claim reaches the bus at least once, and an entry leaves the outbox only once
/// EventBridge took it. A claim made while EventBridge is down is published when it returns.
#[tokio::test]
async fn every_claim_reaches_the_bus_however_eventbridge_fails() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let bus = moto.bus("lineup-coupons").await;
    let app = TestApp::spawn(&[("RATE_LIMIT_IP_PER_MINUTE", "0")]).await;
    put_campaign(&app, "a", &json!({"quantity": 100})).await;
    put_campaign(&app, "b", &json!({"quantity": 100, "queueId": "show"})).await;
    let mut expected = HashSet::new();
    for i in 0..25 {
        assert_eq!(claim(&app, "a", &format!("u{i}")).await.status, 201);
        expected.insert(("a".to_owned(), format!("u{i}")));
    }
    let coupons = app.stack.coupon_publisher.coupons.clone();
    let with = |publisher: Publisher| coupon_publisher::Deps {
        coupons: coupons.clone(),
        publisher,
    };

    // Down: a dead endpoint takes nothing, and the outbox keeps every entry.
    let dead = {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("http://127.0.0.1:{port}")
    };
    let down = with(Publisher::new(
        aws_sdk_eventbridge::Client::new(&aws_config_for(&dead)),
        bus,
    ));
    let pass = drain(&down).await;
    assert_eq!(pass.published, 0);
    assert!(pass.refused > 0);
    let prefix = &app.config.key_prefix;
    let mut inspect = app.inspect.clone();
    let waiting: u64 = inspect
        .zcard(format!("{prefix}:{{c:a}}:outbox"))
        .await
        .unwrap();
    assert_eq!(waiting, 25);
    // A buyer whose claim is not published yet asks again: the same claim, never a second.
    let again = claim(&app, "a", "u0").await;
    assert_eq!(again.status, 200, "{}", again.body);
    assert_eq!(again.body["claimNumber"], 1);

    // Claims made while it is down, in the queue's campaign too.
    let active = join(&app, "show", "v").await;
    let ok = claim_with(&app, "b", &json!({"userId": "v", "token": active.token()})).await;
    assert_eq!(ok.status, 201, "{}", ok.body);
    expected.insert(("b".to_owned(), "v".to_owned()));
    for i in 25..30 {
        claim(&app, "a", &format!("u{i}")).await;
        expected.insert(("a".to_owned(), format!("u{i}")));
    }

    // Back, but throttling: every other entry of the first three calls is refused.
    let throttling = ThrottlingEndpoint::start(moto.eventbridge(), 3).await;
    let back = with(Publisher::new(
        aws_sdk_eventbridge::Client::new(&aws_config_for(&throttling.endpoint)),
        bus,
    ));
    let pass = drain(&back).await;
    assert!(throttling.refused() > 0, "some entries were refused");
    assert_eq!(pass.published, expected.len() as u64, "{pass:?}");
    let taken: Vec<Value> = throttling.taken();
    let mut seen = HashSet::new();
    for detail in &taken {
        let key = (
            detail["couponId"].as_str().unwrap().to_owned(),
            detail["userId"].as_str().unwrap().to_owned(),
        );
        assert!(detail["claimNumber"].as_u64().unwrap() >= 1);
        assert!(detail["claimedAt"].as_str().is_some());
        seen.insert(key);
    }
    assert_eq!(seen, expected, "every claim reached the bus");
    for key in [
        format!("{prefix}:{{c:a}}:outbox"),
        format!("{prefix}:{{q:show}}:coupon:b:outbox"),
    ] {
        let left: u64 = inspect.zcard(&key).await.unwrap();
        assert_eq!(left, 0, "{key} drained");
    }
    assert_eq!(drain(&back).await.published, 0, "nothing left to send");
    println!(
        "RELIABILITY: coupon outbox: {} claims, a dead endpoint then {} entries throttled: \
         {} reached the bus, 0 missing",
        expected.len(),
        throttling.refused(),
        seen.len()
    );
}

/// Redis is killed (SIGKILL) while buyers claim, and restarted from its append-only file
/// (fsync on every write). Claims during the outage are 503 with Retry-After, in time; the
/// same processes serve again after the restart. Every claim ever answered 201 is still held
/// with its number and still in the outbox; the numbers have no gap or repeat, and the
/// campaign's count matches its claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_crash_mid_claims_loses_no_acknowledged_claim() {
    use lineup_tests::outage::{OUTAGE_BOUND, QUICK_TO_GIVE_UP};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    const QUANTITY: u64 = 100_000;
    let mut app = TestApp::spawn_durable(QUICK_TO_GIVE_UP).await;
    put_campaign(&app, "crash", &json!({"quantity": QUANTITY})).await;
    let mut server = app.redis.take().expect("a private server");
    let app = Arc::new(app);
    let acknowledged: Arc<Mutex<Vec<(String, u64)>>> = Arc::default();
    let unavailable = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let buyers: Vec<_> = (0..4)
        .map(|lane| {
            let (app, acknowledged, unavailable, stop) = (
                app.clone(),
                acknowledged.clone(),
                unavailable.clone(),
                stop.clone(),
            );
            tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let user = format!("b{lane}-{n}");
                    let started = Instant::now();
                    let reply = claim(&app, "crash", &user).await;
                    match reply.status {
                        201 => acknowledged
                            .lock()
                            .unwrap()
                            .push((user, reply.body["claimNumber"].as_u64().unwrap())),
                        503 => {
                            assert!(reply.headers.contains_key("retry-after"));
                            assert!(started.elapsed() < OUTAGE_BOUND);
                            unavailable.fetch_add(1, Ordering::Relaxed);
                            lineup_tests::sleep(Duration::from_millis(20)).await;
                        }
                        other => panic!("{user}: {other} {}", reply.body),
                    }
                }
            })
        })
        .collect();
    lineup_tests::sleep(Duration::from_millis(500)).await;
    let before = acknowledged.lock().unwrap().len();
    server.stop().await;
    lineup_tests::sleep(Duration::from_millis(1000)).await;
    server
        .restart()
        .await
        .expect("restart from the append-only file");
    lineup_tests::sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    for buyer in buyers {
        buyer.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(before > 0, "claims before the crash");
    assert!(unavailable.load(Ordering::Relaxed) > 0, "the crash was met");
    assert!(
        acknowledged.len() > before,
        "served again after the restart"
    );

    let client = redis::Client::open(server.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let prefix = &app.config.key_prefix;
    let claims: HashMap<String, String> = conn
        .hgetall(format!("{prefix}:{{c:crash}}:claims"))
        .await
        .unwrap();
    let outbox: HashMap<String, u64> = conn
        .zrange_withscores(format!("{prefix}:{{c:crash}}:outbox"), 0, -1)
        .await
        .map(|pairs: Vec<(String, u64)>| pairs.into_iter().collect())
        .unwrap();
    let claimed: u64 = conn
        .hget(format!("{prefix}:{{c:crash}}:campaign"), "claimed")
        .await
        .unwrap();
    for (user, number) in &acknowledged {
        let held = claims.get(user).unwrap_or_else(|| panic!("{user} lost"));
        assert!(held.starts_with(&format!("{number}:")), "{user}: {held}");
        assert_eq!(outbox.get(user), Some(number), "{user} in the outbox");
    }
    let mut numbers: Vec<u64> = outbox.values().copied().collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (1..=claimed).collect::<Vec<_>>(),
        "no gap, no repeat"
    );
    assert_eq!(claims.len() as u64, claimed);
    println!(
        "RELIABILITY: coupon crash: {} claims acknowledged ({before} before the kill), {} \
         answered 503, {claimed} claims held after the restart, 0 acknowledged lost",
        acknowledged.len(),
        unavailable.load(Ordering::Relaxed)
    );
}

/// A change refused as a conflict leaves the campaign as it was, in the registry too: the
/// publisher keeps finding its outbox until its keys expire.
#[tokio::test]
async fn a_refused_change_keeps_the_campaign_in_the_registry_until_its_keys_expire() {
    let app = TestApp::spawn(&[]).await;
    let late = Utc::now() + chrono::Duration::days(30);
    let put = put_campaign(
        &app,
        "kept",
        &json!({"quantity": 2, "closesAt": late.to_rfc3339()}),
    )
    .await;
    assert_eq!(put.status, 201);
    claim(&app, "kept", "u1").await;
    claim(&app, "kept", "u2").await;
    // Lower below the claims and close sooner: refused, nothing changes.
    let soon = Utc::now() + chrono::Duration::hours(1);
    put_campaign(
        &app,
        "kept",
        &json!({"quantity": 1, "closesAt": soon.to_rfc3339()}),
    )
    .await
    .assert_problem(409);
    let shown = read(&app, "kept").await.body;
    assert_eq!(shown["expiresAt"], put.body["expiresAt"]);
    let expires = DateTime::parse_from_rfc3339(shown["expiresAt"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    let prefix = &app.config.key_prefix;
    let score: Option<f64> = app
        .inspect
        .clone()
        .zscore(format!("{prefix}:coupons"), "kept")
        .await
        .unwrap();
    assert_eq!(
        score,
        Some(expires as f64),
        "the registry keeps the campaign's expiry"
    );
}

/// A buyer who shows a queue token for a campaign without a queue still claims: the claim is
/// looked for under the token's queue and under the campaign's own tag in the same round
/// trip (two script calls, one pipeline). A token for another queue than the campaign's is
/// told which queue it needs.
#[tokio::test]
async fn a_token_shown_for_a_campaign_without_a_queue_still_claims_in_one_round_trip() {
    let app = TestApp::spawn(&[]).await;
    put_campaign(&app, "plain", &json!({"quantity": 5})).await;
    put_campaign(&app, "gated", &json!({"quantity": 5, "queueId": "other"})).await;
    let active = join(&app, "show", "ann").await;
    assert_eq!(active.body["status"], "active");
    let body = json!({"userId": "ann", "token": active.token()});
    claim_with(&app, "plain", &body).await; // loads the script
    put_campaign(&app, "plain2", &json!({"quantity": 5})).await;
    let (reply, calls) = app
        .client_commands_during(claim_with(&app, "plain2", &body))
        .await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(calls, [("evalsha", 2)].into(), "both calls, one pipeline");
    let wrong = claim_with(&app, "gated", &body).await;
    wrong.assert_problem(403);
    assert!(
        wrong.body["detail"].as_str().unwrap().contains("other"),
        "{}",
        wrong.body
    );
}

/// The answers come in the order docs/coupon.md lists them. A buyer who holds a claim on a
/// campaign with a queue gets it again (200) whatever its token says: none, one that does
/// not verify, another queue's, or its session's after leaving. Without a claim, a buyer
/// without a token hears 404, 409 and 410 before 403.
#[tokio::test]
async fn a_buyer_who_holds_a_claim_gets_it_again_whatever_its_token_says() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let put = put_campaign(&app, "vip", &json!({"quantity": 1, "queueId": "show"})).await;
    assert_eq!(put.status, 201, "{}", put.body);
    let active = join(&app, "show", "a").await;
    assert_eq!(active.body["status"], "active");
    let first = claim_with(
        &app,
        "vip",
        &json!({"userId": "a", "token": active.token()}),
    )
    .await;
    assert_eq!(first.status, 201, "{}", first.body);

    let elsewhere = join(&app, "other", "a").await;
    assert_eq!(elsewhere.body["status"], "active");
    for body in [
        json!({"userId": "a"}),
        json!({"userId": "a", "token": null}),
        json!({"userId": "a", "token": "forged"}),
        json!({"userId": "a", "token": elsewhere.token()}),
    ] {
        let again = claim_with(&app, "vip", &body).await;
        assert_eq!(again.status, 200, "{body}: {}", again.body);
        assert_eq!(again.body, first.body, "{body}: the same claim");
    }
    let left = lineup_tests::queue::leave(&app, "show", &active.token()).await;
    assert!(left.status < 300, "{}", left.body);
    let ended = claim_with(
        &app,
        "vip",
        &json!({"userId": "a", "token": active.token()}),
    )
    .await;
    assert_eq!(ended.status, 200, "{}", ended.body);
    assert_eq!(ended.body, first.body);

    // Without a claim and without a token: sold out (410) before the queue (403), the
    // window (409) before both, an unknown campaign (404) first of all.
    claim(&app, "vip", "b").await.assert_problem(410);
    let shut = json!({
        "quantity": 5,
        "queueId": "show",
        "opensAt": at(-chrono::Duration::hours(2)),
        "closesAt": at(-chrono::Duration::hours(1)),
    });
    assert_eq!(put_campaign(&app, "shut", &shut).await.status, 201);
    claim(&app, "shut", "b").await.assert_problem(409);
    claim_with(&app, "nothing", &json!({"userId": "b", "token": "forged"}))
        .await
        .assert_problem(404);
    // Where a coupon remains, a buyer without an active token of the queue is 403, told
    // which queue's token it needs.
    put_campaign(&app, "open", &json!({"quantity": 5, "queueId": "show"})).await;
    for body in [
        json!({"userId": "b"}),
        json!({"userId": "b", "token": "forged"}),
        json!({"userId": "a", "token": elsewhere.token()}),
    ] {
        let refused = claim_with(&app, "open", &body).await;
        refused.assert_problem(403);
        assert!(
            refused.body["detail"].as_str().unwrap().contains("show"),
            "{body}: {}",
            refused.body
        );
    }
}

/// A refused `PUT` (409) writes nothing: not the campaign registry's entry, nor a queue
/// campaign's locator. So no registry entry outlives its campaign or holds a place in the
/// 1,000 for a campaign that does not exist.
#[tokio::test]
async fn a_refused_change_writes_nothing() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2")]).await;
    let prefix = app.config.key_prefix.clone();
    let registry = format!("{prefix}:coupons");
    let mut inspect = app.inspect.clone();
    let soon = json!(at(chrono::Duration::hours(1)));
    let later = json!(at(chrono::Duration::days(30)));

    put_campaign(&app, "kept", &json!({"quantity": 2, "closesAt": soon})).await;
    claim(&app, "kept", "u1").await;
    claim(&app, "kept", "u2").await;
    put_campaign(
        &app,
        "vip",
        &json!({"quantity": 2, "queueId": "show", "closesAt": soon}),
    )
    .await;
    for user in ["a", "b"] {
        let joined = join(&app, "show", user).await;
        assert_eq!(joined.body["status"], "active");
        let body = json!({"userId": user, "token": joined.token()});
        assert_eq!(claim_with(&app, "vip", &body).await.status, 201);
    }
    put_campaign(&app, "plain", &json!({"quantity": 2})).await;

    let locator = format!("{prefix}:{{c:vip}}:campaign");
    let state = |mut inspect: lineup_tests::Inspect| {
        let (registry, locator) = (registry.clone(), locator.clone());
        async move {
            let members: Vec<(String, f64)> = inspect
                .zrange_withscores(&registry, 0, -1)
                .await
                .expect("ZRANGE");
            let registry_ends: i64 = redis::cmd("PEXPIRETIME")
                .arg(&registry)
                .query_async(&mut inspect)
                .await
                .expect("PEXPIRETIME");
            let locator_ends: i64 = redis::cmd("PEXPIRETIME")
                .arg(&locator)
                .query_async(&mut inspect)
                .await
                .expect("PEXPIRETIME");
            let locator_fields: HashMap<String, String> =
                inspect.hgetall(&locator).await.expect("HGETALL");
            (members, registry_ends, locator_ends, locator_fields)
        }
    };
    let before = state(inspect.clone()).await;
    assert_eq!(before.0.len(), 3, "{before:?}");

    for (coupon, body) in [
        // Below the claims, closing a month later.
        ("kept", json!({"quantity": 1, "closesAt": later})),
        (
            "vip",
            json!({"quantity": 1, "queueId": "show", "closesAt": later}),
        ),
        // Another queue, or none, for a campaign with a queue; one for a campaign without.
        (
            "vip",
            json!({"quantity": 5, "queueId": "other", "closesAt": later}),
        ),
        ("vip", json!({"quantity": 5, "closesAt": later})),
        (
            "plain",
            json!({"quantity": 5, "queueId": "show", "closesAt": later}),
        ),
    ] {
        let refused = put_campaign(&app, coupon, &body).await;
        refused.assert_problem(409);
        assert_eq!(state(inspect.clone()).await, before, "{coupon} {body}");
    }
    let shown = read(&app, "kept").await.body;
    let ends = DateTime::parse_from_rfc3339(shown["expiresAt"].as_str().unwrap()).unwrap();
    let kept: Option<f64> = inspect.zscore(&registry, "kept").await.unwrap();
    assert_eq!(kept, Some(ends.timestamp_millis() as f64));
}
