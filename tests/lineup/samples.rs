//! Every sample in `events/` goes through its real handler, in a realistic order, with the
//! secret and settings of `events/env.json`, so no sample can rot.

use std::path::Path;

use lambda_runtime::{Context, LambdaEvent};
use lineup::http::answer_lambda_event;
use lineup_tests::{json_files, TestApp};
use serde_json::{json, Value};

/// Each sample, in the order a buyer's and a payment's life would send them, with the
/// status (HTTP) or result (events) it must produce.
const EXPECTED: [(&str, &str); 39] = [
    // A booking API (and API Gateway's JWT authorizer) reads the admission issuer's
    // discovery document and keys.
    ("queue-api.openid-configuration.json", "200"),
    ("queue-api.jwks.json", "200"),
    // An operator creates the queue first.
    ("queue-api.settings.json", "200"),
    ("queue-api.issue.json", "201"),
    ("queue-api.issue-jwt.json", "201"),
    // A door challenge for the JWT's buyer (answered whatever the queue's setting).
    ("queue-api.challenge.json", "200"),
    ("queue-api.status.json", "200"),
    ("queue-api.summary.json", "200"),
    // The buyer's page, HTML.
    ("queue-api.wait-page.json", "200"),
    ("queue-authorizer.request.json", "allowed"),
    ("queue-api.admission.json", "200"),
    // The sample browse route, with the admission claims API Gateway verified: this queue's.
    ("queue-api.seats.json", "200"),
    ("queue-api.leave.json", "204"),
    // An operator schedules the next on-sale: an opening with a pre-queue and a draw.
    ("queue-api.schedule.json", "200"),
    // An operator closes last season's queue, which nobody is in.
    ("queue-api.close.json", "204"),
    // An operator puts a fan club on a presale's access list.
    ("queue-api.access-upload.json", "200"),
    ("queue-promoter.schedule.json", "ticked"),
    ("queue-reaper.schedule.json", "reaped"),
    ("event-applier.payment-completed.json", "applied"),
    // The concert's details and capacity, dated before its first payment, arriving after it:
    // its rates are written then.
    ("event-applier.concert-scheduled.json", "applied"),
    // A payment naming the session (ticket) it was made in.
    ("event-applier.payment-completed-ticket.json", "applied"),
    ("event-applier.payment-refunded.json", "applied"),
    ("event-applier.sqs-batch.json", "no failures"),
    // Dead letters read back from the dead-letter queue, one of them pay-1001 again: the
    // concert sample below still finds it counted once.
    ("event-applier.dlq-replay.json", "no failures"),
    // The schedule's tick slides the rolling windows.
    ("event-applier.schedule.json", "ticked"),
    ("ranking-api.top.json", "200"),
    ("ranking-api.concert.json", "200"),
    ("ranking-api.concerts.json", "200"),
    ("ranking-api.page.json", "200"),
    ("ranking-api.live.json", "200"),
    ("event-applier.concert-cancelled.json", "applied"),
    // The booking system's health for the on-sale's queue. Sent now, it would halve the
    // queue's pace; the sample is dated, so its level lapsed long ago: ignored.
    ("event-applier.booking-health.json", "ignored"),
    // A CloudWatch alarm's state change, kept for the queues that name it (healthAlarms).
    (
        "event-applier.cloudwatch-alarm-state-change.json",
        "applied",
    ),
    // The booking system has sold every ticket of the on-sale: its queue admits nobody more.
    ("event-applier.inventory-sold-out.json", "applied"),
    // An operator's coupon campaign, a buyer's claim (the JWT's sub), its read, and the
    // publisher's schedule (no bus in the samples: it sends nothing).
    ("coupon-api.put.json", "201"),
    ("coupon-api.challenge.json", "200"),
    ("coupon-api.claim.json", "201"),
    ("coupon-api.read.json", "200"),
    ("coupon-publisher.schedule.json", "drained"),
];

#[tokio::test]
async fn every_sample_event_runs_through_its_handler() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
    let env: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("env.json")).unwrap()).unwrap();
    let sample_env = &env["QueueApiFunction"];
    let setting = |name: &str| sample_env[name].as_str().unwrap();
    let app = TestApp::spawn(&[
        ("TOKEN_SECRET", setting("TOKEN_SECRET")),
        // The admission issuer of env.json, signing with its key set.
        ("ADMISSION_ISSUER", setting("ADMISSION_ISSUER")),
        ("ADMISSION_AUDIENCE", setting("ADMISSION_AUDIENCE")),
        ("ADMISSION_KEYS", setting("ADMISSION_KEYS")),
        // As deployed: the buyer is the JWT's sub, and only an operator creates a queue.
        ("ALLOW_BODY_USER_ID", "no"),
        ("QUEUE_CREATION", "operator"),
        // The samples are dated; keep their boards open whenever the test runs.
        ("RANKING_DAILY_RETENTION_DAYS", "3650"),
        ("RANKING_WEEKLY_RETENTION_WEEKS", "520"),
        ("RANKING_MONTHLY_RETENTION_MONTHS", "120"),
        ("RANKING_DEDUPE_DAYS", "3660"),
    ])
    .await;
    let files = json_files(&dir);
    let names: Vec<&str> = files
        .iter()
        .map(|(n, _)| n.as_str())
        .filter(|n| *n != "env.json")
        .collect();
    let mut listed: Vec<&str> = EXPECTED.iter().map(|(n, _)| *n).collect();
    listed.sort();
    assert_eq!(
        names, listed,
        "every sample is listed here, and every listed sample exists"
    );

    for (name, expected) in EXPECTED {
        let text = &files.iter().find(|(n, _)| n == name).unwrap().1;
        let payload: Value = serde_json::from_str(text).unwrap();
        let event = || LambdaEvent::new(payload.clone(), Context::default());
        let got = match name.split('.').next().unwrap() {
            "queue-api" => {
                let answer =
                    answer_lambda_event(event(), |r| queue_api::handle(r, &app.stack.queue_api))
                        .await
                        .unwrap();
                if answer.status_code == 200 {
                    check_admission_answer(name, &answer_text(&answer), &payload, sample_env);
                }
                answer.status_code.to_string()
            }
            "ranking-api" => {
                let answer = answer_lambda_event(event(), |r| {
                    ranking_api::handle(r, &app.stack.ranking_api)
                })
                .await
                .unwrap();
                if answer.status_code == 200 && name.contains("concert") {
                    let body: Value = serde_json::from_str(&answer_text(&answer)).unwrap();
                    // The concert's own read, or its standing among the concerts read.
                    let score = match body["concerts"].as_array() {
                        Some(concerts) => &concerts[0]["score"],
                        None => &body["score"],
                    };
                    assert_eq!(score, &json!(1), "2 seats paid, 1 refunded");
                }
                answer.status_code.to_string()
            }
            "queue-authorizer" => {
                let answer = queue_authorizer::handle(event(), &app.stack.authorizer)
                    .await
                    .unwrap();
                if answer.is_authorized {
                    "allowed"
                } else {
                    "denied"
                }
                .into()
            }
            "queue-promoter" => {
                let out = queue_promoter::handle(event(), &app.stack.promoter)
                    .await
                    .unwrap();
                assert_eq!(out.failed_ticks, 0);
                "ticked".into()
            }
            "queue-reaper" => {
                queue_reaper::handle(event(), &app.stack.reaper)
                    .await
                    .unwrap();
                "reaped".into()
            }
            "coupon-api" => {
                let answer =
                    answer_lambda_event(event(), |r| coupon_api::handle(r, &app.stack.coupon_api))
                        .await;
                answer.unwrap().status_code.to_string()
            }
            "coupon-publisher" => {
                let out = coupon_publisher::handle(event(), &app.stack.coupon_publisher)
                    .await
                    .unwrap();
                assert_eq!(out.failed_passes, 0);
                "drained".into()
            }
            "event-applier" => {
                let out = event_applier::handle(event(), &app.stack.event_applier)
                    .await
                    .unwrap();
                match out.get("batchItemFailures").and_then(Value::as_array) {
                    Some(failures) if failures.is_empty() => "no failures".into(),
                    Some(failures) => format!("{failures:?}"),
                    None if out.get("processed").is_some() => "ticked".into(),
                    None => out["result"].as_str().unwrap_or_default().to_owned(),
                }
            }
            other => panic!("no handler for {other}"),
        };
        assert_eq!(got, expected, "{name}");
    }
}

/// What the admission samples answer agrees with `events/env.json` and with the sample itself:
/// the discovery document names its issuer, the JWKS holds only the public half of its key,
/// the browse route shows the claims API Gateway handed on, and an active buyer's status
/// carries an admission JWT.
fn check_admission_answer(name: &str, text: &str, payload: &Value, sample_env: &Value) {
    const CHECKED: [&str; 4] = [
        "queue-api.openid-configuration.json",
        "queue-api.jwks.json",
        "queue-api.seats.json",
        "queue-api.status.json",
    ];
    if !CHECKED.contains(&name) {
        return; // the page samples answer HTML
    }
    let body: &Value = &serde_json::from_str(text).unwrap();
    let issuer = &sample_env["ADMISSION_ISSUER"];
    match name {
        "queue-api.openid-configuration.json" => {
            assert_eq!(&body["issuer"], issuer, "{name}");
            let jwks = format!("{}/.well-known/jwks.json", issuer.as_str().unwrap());
            assert_eq!(body["jwks_uri"], jwks.as_str(), "{name}");
        }
        "queue-api.jwks.json" => {
            let keys: Value =
                serde_json::from_str(sample_env["ADMISSION_KEYS"].as_str().unwrap()).unwrap();
            let published = body["keys"].as_array().unwrap();
            assert_eq!(published.len(), 1, "{name}: {body}");
            assert_eq!(published[0]["kid"], keys["keys"][0]["kid"], "{name}");
            assert_eq!(published[0]["n"], keys["keys"][0]["n"], "{name}");
            assert!(published[0].get("d").is_none(), "{name}: no private member");
        }
        "queue-api.seats.json" => {
            let claims = &payload["requestContext"]["authorizer"]["jwt"]["claims"];
            assert_eq!(body, claims, "{name}");
            assert_eq!(&claims["iss"], issuer, "{name}");
            assert_eq!(claims["aud"], sample_env["ADMISSION_AUDIENCE"], "{name}");
            assert_eq!(
                claims["qid"], payload["pathParameters"]["queueId"],
                "{name}"
            );
        }
        // The sample's buyer was the first in line: active, so admitted.
        "queue-api.status.json" => {
            assert_eq!(body["status"], "active", "{name}: {body}");
            let admission = body["admission"].as_str().unwrap_or_default();
            assert_eq!(admission.split('.').count(), 3, "{name}: {body}");
        }
        _ => {}
    }
}

fn answer_text(answer: &aws_lambda_events::event::apigw::ApiGatewayV2httpResponse) -> String {
    let body: &[u8] = answer.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
    String::from_utf8_lossy(body).into_owned()
}
