//! The local stack over real HTTP: the same handlers behind a TCP listener on port 0.

use lineup::cold_start::{Publishing, Started};
use lineup::config::{Config, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup_local::embedded_redis::EmbeddedRedis;
use lineup_tests::{reaping_every_second, TestApp};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Serves the app's stack on a free loopback port, as `lineup-local` does.
pub(crate) async fn serve(
    app: &TestApp,
) -> (
    std::net::SocketAddr,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(lineup_local::serve(
        listener,
        app.stack.clone(),
        std::future::pending(),
    ));
    (addr, server)
}

/// Sends one HTTP/1.1 request and returns the status, headers and body.
pub(crate) async fn send(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String, String) {
    send_with_headers(addr, method, path, body, &[]).await
}

pub(crate) async fn send_with_headers(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = body.unwrap_or("");
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_owned())
}

/// `lineup-local` as its `main` starts it, with `env` for the process environment: listening
/// on a free loopback port, its settings from `lineup_local::local_settings`. The stack's
/// construction is what stops the process on a bad setting.
async fn start_local_stack(
    redis: &EmbeddedRedis,
    env: &[(&str, &str)],
) -> Result<std::net::SocketAddr, lineup::config::ConfigError> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    env.push(("REDIS_URL".into(), redis.url()));
    let settings = lineup_local::local_settings(addr, move |name| {
        env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    })
    .expect("the admission defaults");
    let config = Config::from_lookup(settings, SecretPolicy::GenerateIfMissing)?;
    let started = Started::connect(config, &redis.url(), Publishing::Nothing)
        .await
        .expect("connect");
    let stack = lineup_local::Stack::new(&started, MetricsSink::memory())?;
    tokio::spawn(lineup_local::serve(listener, stack, std::future::pending()));
    Ok(addr)
}

#[tokio::test]
async fn an_empty_admission_issuer_starts_the_local_stack_with_admission_off() {
    let redis = EmbeddedRedis::start().await.expect("redis-server");
    let join = |addr, queue: &'static str| async move {
        let (status, _, body) = send(
            addr,
            "POST",
            &format!("/queues/{queue}/tokens"),
            Some(r#"{"userId":"ana"}"#),
        )
        .await;
        assert_eq!(status, 201, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()
    };

    // By default the stack is its own issuer, at its own address.
    let on = start_local_stack(&redis, &[]).await.expect("starts");
    let ana = join(on, "on").await;
    assert_eq!(ana["status"], "active");
    assert!(ana["admission"].is_string(), "{ana}");
    let (status, _, discovery) = send(on, "GET", "/.well-known/openid-configuration", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&discovery).unwrap()["issuer"],
        format!("http://{on}")
    );

    // `ADMISSION_ISSUER=` alone: the stack starts, and issues no admission.
    let off = start_local_stack(&redis, &[("ADMISSION_ISSUER", "")])
        .await
        .expect("an empty ADMISSION_ISSUER starts the stack");
    let ana = join(off, "off").await;
    assert_eq!(ana["status"], "active");
    assert!(ana.get("admission").is_none(), "{ana}");
    for path in [
        "/.well-known/jwks.json",
        "/.well-known/openid-configuration",
    ] {
        assert_eq!(send(off, "GET", path, None).await.0, 404, "{path}");
    }

    // An audience without an issuer is still a mistake the stack names.
    let named = start_local_stack(
        &redis,
        &[("ADMISSION_ISSUER", ""), ("ADMISSION_AUDIENCE", "booking")],
    )
    .await
    .expect_err("an audience without an issuer");
    assert_eq!(named.variable, "ADMISSION_AUDIENCE");
}

#[tokio::test]
async fn the_local_stack_serves_the_queue_flow_over_http() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let (addr, server) = serve(&app).await;

    let (status, _, first) = send(
        addr,
        "POST",
        "/queues/live/tokens",
        Some(r#"{"userId":"ana"}"#),
    )
    .await;
    assert_eq!(status, 201);
    let (status, _, second) = send(
        addr,
        "POST",
        "/queues/live/tokens",
        Some(r#"{"userId":"ben"}"#),
    )
    .await;
    assert_eq!(status, 201);
    let first: Value = serde_json::from_str(&first).unwrap();
    let second: Value = serde_json::from_str(&second).unwrap();
    assert_eq!(second["status"], "waiting");

    // The sample protected route runs queue-authorizer first, as API Gateway would.
    let admission = |token: &str| {
        let token = token.to_owned();
        async move {
            send_with_headers(
                addr,
                "GET",
                "/queues/live/admission",
                None,
                &[("x-queue-token", &token)],
            )
            .await
        }
    };
    let (status, _, body) = admission(first["token"].as_str().unwrap()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["userId"],
        "ana"
    );
    let (status, head, _) = admission(second["token"].as_str().unwrap()).await;
    assert_eq!(status, 403, "a waiter is denied");
    assert!(head.contains("content-type: application/problem+json"));
    assert_eq!(
        send(addr, "GET", "/queues/live/admission", None).await.0,
        403
    );

    let token = first["token"].as_str().unwrap();
    let (status, _, _) = send(
        addr,
        "DELETE",
        &format!("/queues/live/tokens/{token}"),
        None,
    )
    .await;
    assert_eq!(status, 204);
    let token = second["token"].as_str().unwrap();
    let (status, _, body) = send(addr, "GET", &format!("/queues/live/tokens/{token}"), None).await;
    assert_eq!(status, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["status"],
        "active"
    );

    let (status, head, _) = send(addr, "GET", "/queues/bad%20id", None).await;
    assert_eq!(status, 400);
    assert!(head.contains("content-type: application/problem+json"));
    let big = format!(r#"{{"userId":"{}"}}"#, "x".repeat(10_000));
    let (status, _, _) = send(addr, "POST", "/queues/live/tokens", Some(&big)).await;
    assert_eq!(status, 413);
    server.abort();
}

/// `POST /events` with `batch`: each event's result and reason (`''` when none).
pub(crate) async fn post_events(
    addr: std::net::SocketAddr,
    batch: &Value,
) -> Vec<(String, String)> {
    let (status, _, body) = send(addr, "POST", "/events", Some(&batch.to_string())).await;
    assert_eq!(status, 200, "{body}");
    let results: Value = serde_json::from_str(&body).unwrap();
    results["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["result"].as_str().unwrap().to_owned(),
                r["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_local_stack_runs_the_schedules_and_takes_events() {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", "1"),
        ("SESSION_SECONDS", "1"),
        ("PROMOTE_TICK_SECONDS", "1"),
    ])
    .await;
    let (addr, server) = serve(&app).await;
    let schedules = lineup_local::spawn_schedules(&app.stack, &reaping_every_second());

    send(
        addr,
        "POST",
        "/queues/timed/tokens",
        Some(r#"{"userId":"first"}"#),
    )
    .await;
    let (_, _, waiting) = send(
        addr,
        "POST",
        "/queues/timed/tokens",
        Some(r#"{"userId":"next"}"#),
    )
    .await;
    let token = serde_json::from_str::<Value>(&waiting).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The first session ends after 1 s; the promoter timer admits the next buyer.
    let mut admitted = false;
    for _ in 0..30 {
        let (_, _, body) = send(addr, "GET", &format!("/queues/timed/tokens/{token}"), None).await;
        if serde_json::from_str::<Value>(&body).unwrap()["status"] == "active" {
            admitted = true;
            break;
        }
        lineup_tests::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(admitted, "the local promoter admitted the waiter");

    let event = |payment: &str| {
        serde_json::json!({"id": payment, "detail-type": "PaymentCompleted", "source": "lineup.payments",
            "time": chrono::Utc::now().to_rfc3339(), "detail": {"paymentId": payment, "concertId": "local-show", "seats": 2}})
    };
    let mut elsewhere = event("p3");
    elsewhere["source"] = serde_json::json!("aws.ec2");
    let batch = serde_json::json!([event("p1"), event("p1"), {"detail-type": "PaymentCompleted", "source": "lineup.payments", "detail": {}}, elsewhere]);
    let results = post_events(addr, &batch).await;
    let outcomes: Vec<&str> = results.iter().map(|(result, _)| result.as_str()).collect();
    assert_eq!(outcomes, ["applied", "duplicate", "rejected", "ignored"]);
    assert!(results[2].1.contains("paymentId"));
    // An ignored event is reported as the Lambda function answers an ignored invocation.
    assert!(results[3].1.contains("aws.ec2"));
    let (status, _, body) = send(addr, "POST", "/events", Some(&event("p2").to_string())).await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&body).unwrap()["results"][0]["result"].as_str()
        ),
        (200, Some("applied"))
    );
    let (status, _, body) = send(addr, "GET", "/rankings/all-time?limit=5", None).await;
    assert_eq!(status, 200);
    let board: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(board["items"][0]["concertId"], "local-show");
    assert_eq!(board["items"][0]["score"], 4);
    schedules.abort();
    server.abort();
}

/// `LINE_STRIPES=4 cargo run --release --bin lineup-local` (docs/striped-line.md): over real
/// HTTP, a buyer's first join creates the queue on the striped line, and the stack's own
/// promoter admits the waiter once the first buyer leaves.
#[tokio::test]
async fn the_local_stack_serves_the_striped_line_in_queues_its_buyers_create() {
    let app = TestApp::spawn(&[("LINE_STRIPES", "4"), ("QUEUE_CAPACITY", "1")]).await;
    let (addr, server) = serve(&app).await;
    let schedules = lineup_local::spawn_schedules(&app.stack, &reaping_every_second());
    let join = |user: &'static str| async move {
        let body = format!(r#"{{"userId":"{user}"}}"#);
        let (status, _, body) = send(addr, "POST", "/queues/striped/tokens", Some(&body)).await;
        assert_eq!(status, 201, "{body}");
        let body: Value = serde_json::from_str(&body).unwrap();
        body["token"].as_str().unwrap().to_owned()
    };
    let poll = |token: String| async move {
        let path = format!("/queues/striped/tokens/{token}");
        let (status, _, body) = send(addr, "GET", &path, None).await;
        assert_eq!(status, 200, "{body}");
        serde_json::from_str::<Value>(&body).unwrap()["status"].clone()
    };
    // Both come within one segment (1 s): either may be first (docs/striped-line.md, "How far
    // two arrivals can swap").
    let tokens = [join("ana").await, join("ben").await];
    let mut first = None;
    for _ in 0..50 {
        let statuses = [poll(tokens[0].clone()).await, poll(tokens[1].clone()).await];
        if let Some(i) = statuses.iter().position(|s| s == "active") {
            assert_eq!(statuses[1 - i], "waiting", "one place: {statuses:?}");
            first = Some(i);
            break;
        }
        lineup_tests::sleep(std::time::Duration::from_millis(200)).await;
    }
    let first = first.expect("the local promoter admitted the first buyer");
    let path = format!("/queues/striped/tokens/{}", tokens[first]);
    assert_eq!(send(addr, "DELETE", &path, None).await.0, 204);
    let next = tokens[1 - first].clone();
    let mut admitted = false;
    for _ in 0..50 {
        if poll(next.clone()).await == "active" {
            admitted = true;
            break;
        }
        lineup_tests::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert!(
        admitted,
        "the local promoter admitted the waiter on the line"
    );
    schedules.abort();
    server.abort();
}

/// Over real HTTP, an empty segment (`//`) anywhere or a trailing slash matches no route: every
/// route of every API, and the local stack's own `POST /events`, answers the 404 problem of no
/// route, never a 400 for an empty id, a 405, the gatekeeper's 403 or another route's answer.
#[tokio::test]
async fn the_local_stack_matches_no_route_with_an_empty_segment_or_a_trailing_slash() {
    use crate::contract::{
        assert_every_path_matched_no_route, filled, no_route_or, with_an_empty_segment,
    };
    let app = TestApp::spawn(&[]).await;
    let (addr, server) = serve(&app).await;
    let (_, _, issued) = send(
        addr,
        "POST",
        "/queues/show/tokens",
        Some(r#"{"userId":"alice"}"#),
    )
    .await;
    let token = serde_json::from_str::<Value>(&issued).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let routes = queue_api::ROUTES
        .iter()
        .map(|r| r.pair())
        .chain(ranking_api::ROUTES.iter().map(|r| r.pair()))
        .chain(coupon_api::ROUTES.iter().map(|r| r.pair()))
        .chain([("POST", "/events")]);
    let (mut tried, mut wrong) = (0, Vec::new());
    for (method, template) in routes {
        for path in with_an_empty_segment(&filled(template, &token)) {
            let (status, head, body) = send(addr, method, &path, Some(r#"{"userId":"bob"}"#)).await;
            let content_type = head
                .lines()
                .find_map(|line| line.strip_prefix("content-type: "))
                .unwrap_or_default();
            wrong.extend(no_route_or(method, &path, status, content_type, &body).err());
            tried += 1;
        }
    }
    assert_every_path_matched_no_route(tried, &wrong);
    server.abort();
}

/// Over real HTTP, the local stack takes the source address from the TCP peer, so the per-address
/// rate limit applies there too.
#[tokio::test]
async fn the_local_stack_limits_by_the_tcp_peer_address() {
    let app = TestApp::spawn(&[("RATE_LIMIT_IP_PER_MINUTE", "2")]).await;
    let (addr, server) = serve(&app).await;
    for user in ["a", "b"] {
        let body = format!(r#"{{"userId":"{user}"}}"#);
        assert_eq!(
            send(addr, "POST", "/queues/busy/tokens", Some(&body))
                .await
                .0,
            201
        );
    }
    let (status, head, _) = send(
        addr,
        "POST",
        "/queues/busy/tokens",
        Some(r#"{"userId":"c"}"#),
    )
    .await;
    assert_eq!(status, 429);
    assert!(head.contains("retry-after:"), "{head}");
    server.abort();
}

/// `lineup-local` over real HTTP with its Redis stopped: a `POST /events` payment, and the sample
/// protected route with a token that was active. Both must answer 503 with `Retry-After` as
/// `application/problem+json`, not 200 with a `failed` result and not 403. A request without a
/// token is still 403.
#[tokio::test]
async fn the_local_stack_answers_503_with_retry_after_while_redis_is_out_of_reach() {
    // A private server always: the test stops it.
    let mut app = TestApp::spawn_durable(lineup_tests::outage::QUICK_TO_GIVE_UP).await;
    let (addr, server) = serve(&app).await;
    let (status, _, issued) = send(
        addr,
        "POST",
        "/queues/live/tokens",
        Some(r#"{"userId":"ana"}"#),
    )
    .await;
    assert_eq!(status, 201);
    let token = serde_json::from_str::<Value>(&issued).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let event = lineup_tests::rankings::paid("p1", "c1", 1, &[], &chrono::Utc::now().to_rfc3339());

    app.redis.as_mut().expect("a private server").stop().await;
    let (status, head, body) = send(addr, "POST", "/events", Some(&event.to_string())).await;
    assert_eq!(status, 503, "{body}");
    assert!(head.contains("retry-after:"), "{head}");
    assert!(
        head.contains("content-type: application/problem+json"),
        "{head}"
    );
    let (status, head, body) = send_with_headers(
        addr,
        "GET",
        "/queues/live/admission",
        None,
        &[("x-queue-token", &token)],
    )
    .await;
    assert_eq!(status, 503, "the gate is closed, but as an outage: {body}");
    assert!(head.contains("retry-after:"), "{head}");
    assert!(
        head.contains("content-type: application/problem+json"),
        "{head}"
    );
    // A request the authorizer refuses on its own is still a 403.
    assert_eq!(
        send(addr, "GET", "/queues/live/admission", None).await.0,
        403
    );
    server.abort();
}

/// `lineup-local` over real HTTP with its Redis stopped: the waiting-room page and its theme
/// are still served, so a reload keeps the page and its polling (docs/pages.md), but without
/// the queue's settings: lineup's own theme, no logo, and no return URL, as none could be
/// checked against the allow-list. Neither may be kept by a cache.
#[tokio::test]
async fn the_local_stack_serves_the_waiting_room_without_its_settings_while_redis_is_out_of_reach()
{
    use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
    let mut app = TestApp::spawn_durable(lineup_tests::outage::QUICK_TO_GIVE_UP).await;
    let (addr, server) = serve(&app).await;
    let settings = r##"{"page": {"returnUrls": ["http://localhost/book/"],
        "theme": {"accent": "#c2410c", "logoUrl": "https://cdn.example.com/logo.png"}}}"##;
    let (status, _, body) = send(addr, "PUT", "/queues/live/settings", Some(settings)).await;
    assert_eq!(status, 200, "{body}");
    let back = "http://localhost/book/show-1";
    let page = format!(
        "/queues/live/wait?return={}",
        utf8_percent_encode(back, NON_ALPHANUMERIC)
    );
    let header = |head: &str, name: &str| {
        head.lines()
            .find_map(|line| line.strip_prefix(&format!("{name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    // With Redis, the page carries the checked return URL, the logo, and the theme.
    let (status, _, html) = send(addr, "GET", &page, None).await;
    assert_eq!(status, 200, "{html}");
    assert!(html.contains(&format!("data-return=\"{back}\"")), "{html}");
    assert!(html.contains("logo.png"), "{html}");
    let (_, _, css) = send(addr, "GET", "/queues/live/wait/theme.css", None).await;
    assert!(css.contains("#c2410c"), "{css}");

    app.redis.as_mut().expect("a private server").stop().await;
    let (status, head, html) = send(addr, "GET", &page, None).await;
    assert_eq!(status, 200, "the page, not a problem: {html}");
    assert!(
        header(&head, "content-type").starts_with("text/html"),
        "{head}"
    );
    assert_eq!(header(&head, "cache-control"), "no-store", "{head}");
    assert!(
        header(&head, "content-security-policy").starts_with("default-src 'self'; img-src 'self';"),
        "{head}"
    );
    assert!(!html.contains("show-1"), "an unchecked return URL: {html}");
    assert!(html.contains("data-return=\"\""), "{html}");
    assert!(!html.contains("logo.png"), "{html}");
    // The same for a return URL the allow-list would refuse: it cannot be checked yet.
    let (status, _, html) = send(
        addr,
        "GET",
        "/queues/live/wait?return=https%3A%2F%2Fevil.example%2F",
        None,
    )
    .await;
    assert_eq!(status, 200, "{html}");
    assert!(!html.contains("evil"), "{html}");
    let (status, head, css) = send(addr, "GET", "/queues/live/wait/theme.css", None).await;
    assert_eq!(status, 200, "lineup's own theme: {css}");
    assert!(
        header(&head, "content-type").starts_with("text/css"),
        "{head}"
    );
    assert_eq!(header(&head, "cache-control"), "no-store", "{head}");
    assert!(!css.contains("#c2410c"), "{css}");
    // A repeated `return` is still bad input, Redis or not.
    let (status, _, _) = send(addr, "GET", &format!("{page}&return=x"), None).await;
    assert_eq!(status, 400);
    server.abort();
}

/// Coupons over real HTTP, and the local stack's timer drains the claims' outbox into
/// EventBridge (moto, behind the recording endpoint) through `coupon-publisher`'s code.
#[tokio::test]
async fn the_local_stack_serves_coupons_and_publishes_claims_on_its_timer() {
    let Some(moto) = lineup_tests::Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let bus = moto.bus("lineup-local-coupons").await;
    let recording = lineup_tests::ThrottlingEndpoint::start(moto.eventbridge(), 0).await;
    let publisher = lineup::publish::Publisher::new(
        aws_sdk_eventbridge::Client::new(&lineup_tests::aws_config_for(&recording.endpoint)),
        bus,
    );
    let app = TestApp::spawn_publishing(&[], publisher).await;
    let (addr, server) = serve(&app).await;
    let schedules =
        lineup_local::spawn_schedules(&app.stack, &app.config.env.local().expect("the defaults"));

    let (status, _, body) = send(addr, "PUT", "/coupons/local", Some(r#"{"quantity":1}"#)).await;
    assert_eq!(status, 201, "{body}");
    let (status, _, claimed) = send(
        addr,
        "POST",
        "/coupons/local/claims",
        Some(r#"{"userId":"ana"}"#),
    )
    .await;
    assert_eq!(status, 201, "{claimed}");
    let (status, _, _) = send(
        addr,
        "POST",
        "/coupons/local/claims",
        Some(r#"{"userId":"ben"}"#),
    )
    .await;
    assert_eq!(status, 410);
    let claimed: Value = serde_json::from_str(&claimed).unwrap();
    let mut published = Vec::new();
    for _ in 0..50 {
        published = recording.taken();
        if !published.is_empty() {
            break;
        }
        lineup_tests::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(
        published,
        [claimed],
        "the claim, on the bus, as the buyer was told it"
    );
    schedules.abort();
    server.abort();
}

/// A booking front end on another origin renews the admission through status: the local
/// stack answers CORS as the template has API Gateway answer it (any origin by default).
#[tokio::test]
async fn the_local_stack_lets_another_origin_call_status_as_api_gateway_would() {
    let app = TestApp::spawn(&[]).await;
    let (addr, _server) = serve(&app).await;
    let (_, _, joined) = send(
        addr,
        "POST",
        "/queues/cors/tokens",
        Some(r#"{"userId":"ana"}"#),
    )
    .await;
    let token = serde_json::from_str::<Value>(&joined).unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/queues/cors/tokens/{token}");
    let origin = ("origin", "https://booking.example");
    let (status, head, _) = send_with_headers(
        addr,
        "OPTIONS",
        &path,
        None,
        &[
            origin,
            ("access-control-request-method", "GET"),
            ("access-control-request-headers", "authorization"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{head}");
    assert!(head.contains("access-control-allow-origin: *"), "{head}");
    assert!(head.contains("authorization"), "{head}");
    let (status, head, body) = send_with_headers(addr, "GET", &path, None, &[origin]).await;
    assert_eq!(status, 200, "{body}");
    assert!(head.contains("access-control-allow-origin: *"), "{head}");
    assert!(serde_json::from_str::<Value>(&body).unwrap()["admission"].is_string());
}
