//! Bad input, generated: hostile ids in every path, malformed bodies, query strings, tokens,
//! events and authorizer requests. Every answer is a 4xx problem, a rejected or ignored
//! event, or a deny: never a 5xx, a panic or a write to Redis. Prints a `RELIABILITY:` line.

use std::sync::atomic::{AtomicU64, Ordering};

use lambda_runtime::{Context, LambdaEvent};
use lineup::ranking::Outcome;
use lineup_tests::{authorizer_request, Reply, TestApp};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

const CASES: u32 = 400;

/// Ids that break the id rules: a character outside `[A-Za-z0-9._:-]`, or too long.
fn hostile_id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[A-Za-z0-9]{0,5}[^A-Za-z0-9._:-][A-Za-z0-9{}]{0,5}",
        "[A-Za-z0-9._:-]{65,90}",
        Just(String::new()),
        Just("{q:x}".to_owned()),
        Just("a\u{0}b".to_owned()),
        Just("é".repeat(10)),
    ]
}

/// Any JSON, nested up to a few levels, with awkward leaves.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,20}".prop_map(Value::from),
        hostile_id().prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::hash_map("[a-zA-Z]{1,10}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Bodies that are not JSON objects of the right shape: raw text included.
fn hostile_raw_body() -> impl Strategy<Value = String> {
    prop_oneof![
        ".{0,64}",
        any_json().prop_map(|v| v.to_string()),
        (1usize..2000).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth))),
        (0usize..3).prop_map(|_| format!(r#"{{"userId":"{}"}}"#, "x".repeat(1 << 20))),
        Just(r#"{"capacity": 1e400}"#.to_owned()),
        Just("{\"userId\": \"a\"".to_owned()),
    ]
}

#[derive(Debug, Clone)]
enum Input {
    /// Any route, with a hostile queue id in its path.
    HostilePath { template: usize, id: String },
    /// `POST …/tokens` with a body whose `userId` is wrong, or that is no object at all.
    IssueBody(String),
    /// `PUT …/settings` with a wrong field, type or range.
    SettingsBody(String),
    /// A token that was never issued, on status and leave.
    Token(String),
    /// A ranking read with one wrong parameter.
    RankingQuery { period: String, query: String },
    /// An event for the event applier.
    Event(Value),
    /// An authorizer request with junk headers.
    Authorizer { token: String, queue: String },
}

fn input() -> impl Strategy<Value = Input> {
    let issue_body = prop_oneof![
        any_json()
            .prop_filter("not a valid id", |v| {
                v.as_str()
                    .is_none_or(|s| lineup::ids::UserId::parse(s).is_err())
            })
            .prop_map(|user| json!({ "userId": user }).to_string()),
        hostile_raw_body().prop_filter("not a valid issue body", |b| {
            serde_json::from_str::<Value>(b).ok().and_then(|v| {
                v.get("userId")
                    .and_then(Value::as_str)
                    .map(|u| lineup::ids::UserId::parse(u).is_ok())
            }) != Some(true)
        }),
    ];
    let settings_body = prop_oneof![
        (
            prop::sample::select(vec![
                "capacity",
                "sessionSeconds",
                "admitPerTick",
                "waitingIdleSeconds"
            ]),
            prop_oneof![
                (1_000_001i64..i64::MAX).prop_map(Value::from),
                (i64::MIN..1).prop_map(Value::from),
                any::<f64>()
                    .prop_filter("fractional", |f| f.fract() != 0.0 && f.is_finite())
                    .prop_map(Value::from),
                ".{0,10}".prop_map(Value::from),
                any::<bool>().prop_map(Value::from),
                any_json().prop_filter("not a number or null", |v| !v.is_number() && !v.is_null()),
            ]
        )
            .prop_map(|(field, value)| json!({ field: value }).to_string()),
        any_json()
            .prop_filter("not bool or null", |v| !v.is_boolean() && !v.is_null())
            .prop_map(|v| json!({ "paused": v }).to_string()),
        "[a-z]{1,12}"
            .prop_filter("unknown field", |f| !["capacity", "paused"]
                .contains(&f.as_str()))
            .prop_map(|f| json!({ f: 1 }).to_string()),
        hostile_raw_body().prop_filter("no object", |b| !b.trim_start().starts_with('{')),
    ];
    let ranking_query = (
        prop_oneof![
            Just("daily".to_owned()),
            Just("all-time".to_owned()),
            "[a-z]{1,10}".prop_filter("no period", |p| !["daily", "weekly", "monthly"]
                .contains(&p.as_str())),
        ],
        prop_oneof![
            (prop_oneof![Just(0u64), 101u64..u64::MAX]).prop_map(|n| format!("limit={n}")),
            ".{1,10}"
                .prop_filter("not a number", |s| s.parse::<u64>().is_err())
                .prop_map(|s| format!("offset={}", utf8_percent_encode(&s, NON_ALPHANUMERIC))),
            ".{1,12}"
                .prop_filter("not a date", |s| chrono::NaiveDate::parse_from_str(
                    s, "%Y-%m-%d"
                )
                .is_err())
                .prop_map(|s| format!("date={}", utf8_percent_encode(&s, NON_ALPHANUMERIC))),
            hostile_id()
                .prop_filter("non-empty", |s| !s.is_empty())
                .prop_map(|s| format!("genre={}", utf8_percent_encode(&s, NON_ALPHANUMERIC))),
            Just("limit=1&limit=2".to_owned()),
        ],
    )
        .prop_map(|(period, query)| Input::RankingQuery { period, query });
    let detail = prop_oneof![
        any_json(),
        (hostile_id(), hostile_id()).prop_map(|(p, c)| json!({"paymentId": p, "concertId": c})),
        prop_oneof![
            Just(json!(0)),
            Just(json!(-1)),
            Just(json!(100_001)),
            Just(json!("2")),
            Just(json!(1.5))
        ]
        .prop_map(|seats| json!({"paymentId": "p", "concertId": "c", "seats": seats})),
        ".{0,20}".prop_map(|at| json!({"paymentId": "p", "concertId": "c", "completedAt": at})),
        prop::collection::vec(".{0,5}", 17..20)
            .prop_map(|g| json!({"paymentId": "p", "concertId": "c", "genres": g})),
        Just(json!({"paymentId": "p", "concertId": "c", "surprise": true})),
        prop_oneof![
            Just(json!(0)),
            Just(json!(-1)),
            Just(json!(1_000_001)),
            Just(json!("9"))
        ]
        .prop_map(|capacity| json!({"concertId": "c", "title": "t", "capacity": capacity,
                                    "startsAt": "2027-01-01T19:00:00Z", "updatedAt": "2026-11-01T00:00:00Z"})),
        "[a-z ]{201,230}|[ ]{0,3}".prop_map(|title| json!({"concertId": "c", "title": title, "capacity": 10,
                                    "startsAt": "2027-01-01T19:00:00Z", "updatedAt": "2026-11-01T00:00:00Z"})),
    ];
    let event = prop_oneof![
        any_json(),
        (
            prop::sample::select(vec![
                "PaymentCompleted",
                "PaymentRefunded",
                "ConcertCancelled",
                "ConcertScheduled",
                "ConcertUpdated"
            ]),
            detail
        )
            .prop_filter("an invalid detail", |(kind, detail)| {
                // Keep only details the event applier must refuse (a bare {} cancel is invalid too).
                let event = envelope(kind, detail.clone());
                lineup::ranking::parse_event(&event, "lineup.payments").is_err()
            })
            .prop_map(|(kind, detail)| envelope(kind, detail)),
    ];
    prop_oneof![
        (0usize..hostile_routes().len(), hostile_id())
            .prop_map(|(template, id)| Input::HostilePath { template, id }),
        issue_body.prop_map(Input::IssueBody),
        settings_body.prop_map(Input::SettingsBody),
        "[A-Za-z0-9_-]{0,300}".prop_map(Input::Token),
        ranking_query,
        event.prop_map(Input::Event),
        (
            ".{0,100}",
            prop_oneof![hostile_id(), Just("show".to_owned())]
        )
            .prop_map(|(token, queue)| Input::Authorizer { token, queue }),
    ]
}

/// The routes whose ids a hostile path fills: the queue API's and the coupon API's that take
/// an id (the discovery documents take none).
fn hostile_routes() -> Vec<(&'static str, &'static str)> {
    queue_api::ROUTES
        .iter()
        .map(|r| r.pair())
        .chain(coupon_api::ROUTES.iter().map(|r| r.pair()))
        .filter(|(_, path)| path.contains('{'))
        .collect()
}

fn envelope(kind: &str, detail: Value) -> Value {
    json!({"version": "0", "id": "e", "detail-type": kind, "source": "lineup.payments", "account": "1",
           "time": "2026-11-22T10:00:00Z", "region": "us-east-1", "resources": [], "detail": detail})
}

fn client_error(reply: &Reply, what: &str) {
    assert!(
        (400..500).contains(&reply.status),
        "{what}: {} {}",
        reply.status,
        reply.body
    );
    assert_eq!(reply.content_type, "application/problem+json", "{what}");
}

async fn check(app: &TestApp, input: Input) {
    match input {
        Input::HostilePath { template, id } => {
            let (method, template) = hostile_routes()[template];
            let id = utf8_percent_encode(&id, NON_ALPHANUMERIC).to_string();
            let path = template
                .replace("{queueId}", &id)
                .replace("{couponId}", &id)
                .replace("{token}", "AAAA");
            client_error(
                &app.http(method, &path, Some(r#"{"userId":"u"}"#)).await,
                &path,
            );
        }
        Input::IssueBody(body) => client_error(
            &app.http("POST", "/queues/show/tokens", Some(&body)).await,
            "issue body",
        ),
        Input::SettingsBody(body) => client_error(
            &app.http("PUT", "/queues/show/settings", Some(&body)).await,
            &body,
        ),
        Input::Token(token) => {
            for method in ["GET", "DELETE"] {
                let path = format!("/queues/show/tokens/{token}");
                client_error(&app.http(method, &path, None).await, &path);
            }
        }
        Input::RankingQuery { period, query } => {
            let path = format!("/rankings/{period}?{query}");
            let reply = app.http("GET", &path, None).await;
            client_error(&reply, &path);
        }
        Input::Event(event) => {
            let verdicts =
                event_applier::apply_events(std::slice::from_ref(&event), &app.stack.event_applier)
                    .await;
            assert!(
                matches!(verdicts[0], Outcome::Rejected(_) | Outcome::Ignored(_)),
                "{event}: {verdicts:?}"
            );
            // The same event straight from EventBridge: an error or an ignore, never a panic.
            let _ = event_applier::handle(
                LambdaEvent::new(event, Context::default()),
                &app.stack.event_applier,
            )
            .await;
        }
        Input::Authorizer { token, queue } => {
            let request = authorizer_request(Some(&token), Some(&queue), None);
            assert!(!app.authorize(request).await.0);
        }
    }
}

/// About 2 800 generated inputs: hostile ids (forbidden characters, braces, NUL, unicode, 65–90
/// characters, empty) in every queue route; issue and settings bodies of wrong types, out-of-range
/// and huge numbers, unknown fields, 1 MB strings, nesting 2 000 deep, truncated JSON; never-issued
/// tokens; ranking queries with bad periods, limits, offsets, dates, genres and repeated
/// parameters; malformed payment, refund and cancellation events and arbitrary JSON; authorizer
/// requests with junk headers. Every answer must be a 4xx `application/problem+json`, a rejected or
/// ignored event, or a deny: no 5xx, no panic. `rdb_changes_since_last_save` must not move: nothing
/// written.
#[test]
fn generated_bad_input_never_gets_a_5xx_a_panic_or_a_write() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let app = runtime.block_on(TestApp::spawn(&[]));
    if app.redis.is_none() {
        eprintln!("skipped: needs a private server to prove nothing was written");
        return;
    }
    let writes = || runtime.block_on(app.info_number("persistence", "rdb_changes_since_last_save"));
    let before = writes();
    let tried = AtomicU64::new(0);
    let mut runner = TestRunner::new(Config {
        cases: CASES * 7,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&input(), |input| {
            tried.fetch_add(1, Ordering::Relaxed);
            runtime.block_on(check(&app, input));
            Ok(())
        })
        .unwrap();
    assert_eq!(writes(), before, "bad input wrote to Redis");
    println!(
        "RELIABILITY: bad input: {} generated inputs (hostile ids in every queue route, issue and \
         settings bodies incl. 1 MB and deeply nested, unknown tokens, ranking queries, events, \
         authorizer requests): all 4xx problem+json, rejected/ignored or denied; 0 writes to Redis",
        tried.load(Ordering::Relaxed)
    );
}
