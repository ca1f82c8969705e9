//! Every real AWS event sample, given to every function, is handled normally: a 4xx problem,
//! an ignored event or a reported failure, never an invocation error or a 5xx. The samples
//! are in `tests/fixtures/aws-lambda-events/` (their README says where they come from).

use std::path::Path;

use lambda_runtime::{Context, LambdaEvent};
use lineup::http::answer_lambda_event;
use lineup_tests::{json_files, TestApp};
use serde_json::Value;

/// How many samples `tests/fixtures/aws-lambda-events/` holds at least; fewer means the
/// folder moved or emptied, and the tests below would check nothing.
const SAMPLES_AT_LEAST: usize = 10;

fn aws_samples() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/aws-lambda-events");
    let samples = json_files(&dir);
    assert!(
        samples.len() >= SAMPLES_AT_LEAST,
        "{}: {} samples, expected at least {SAMPLES_AT_LEAST}",
        dir.display(),
        samples.len()
    );
    samples
}

#[tokio::test]
async fn http_functions_answer_every_sample_with_a_client_error() {
    let app = TestApp::spawn(&[]).await;
    for (name, text) in aws_samples() {
        let payload: Value = serde_json::from_str(&text).unwrap();
        let event = || LambdaEvent::new(payload.clone(), Context::default());
        // Through the same entry the Lambda runtime calls, so non-HTTP events are covered too.
        let answers = [
            answer_lambda_event(event(), |r| queue_api::handle(r, &app.stack.queue_api)).await,
            answer_lambda_event(event(), |r| ranking_api::handle(r, &app.stack.ranking_api)).await,
            answer_lambda_event(event(), |r| coupon_api::handle(r, &app.stack.coupon_api)).await,
        ];
        for answer in answers {
            let answer = serde_json::to_value(answer.unwrap()).unwrap();
            let status = answer["statusCode"].as_u64().unwrap();
            assert!((400..500).contains(&status), "{name}: {answer}");
            assert_eq!(
                answer["headers"]["content-type"], "application/problem+json",
                "{name}"
            );
            let body: Value = serde_json::from_str(answer["body"].as_str().unwrap()).unwrap();
            assert_eq!(body["status"], status, "{name}");
        }
    }
}

#[tokio::test]
async fn event_functions_handle_any_sample_without_failing() {
    let app = TestApp::spawn(&[]).await;
    for (name, text) in aws_samples() {
        let payload: Value = serde_json::from_str(&text).unwrap();
        let event = || LambdaEvent::new(payload.clone(), Context::default());
        queue_promoter::handle(event(), &app.stack.promoter)
            .await
            .unwrap_or_else(|e| panic!("promoter on {name}: {e}"));
        queue_reaper::handle(event(), &app.stack.reaper)
            .await
            .unwrap_or_else(|e| panic!("reaper on {name}: {e}"));
        coupon_publisher::handle(event(), &app.stack.coupon_publisher)
            .await
            .unwrap_or_else(|e| panic!("coupon-publisher on {name}: {e}"));
        // None of the samples is a lineup payment event: each is ignored, or (SQS bodies
        // that are not EventBridge events) reported as batch item failures.
        let out = event_applier::handle(event(), &app.stack.event_applier)
            .await
            .unwrap_or_else(|e| panic!("event-applier on {name}: {e}"));
        if let Some(records) = payload.get("Records").and_then(Value::as_array) {
            let failures = out["batchItemFailures"].as_array().expect("batch response");
            assert_eq!(failures.len(), records.len(), "{name}");
        }
    }
}

#[tokio::test]
async fn the_authorizer_denies_every_sample() {
    let app = TestApp::spawn(&[]).await;
    for (name, text) in aws_samples() {
        let payload: Value = serde_json::from_str(&text).unwrap();
        let answer = queue_authorizer::handle(
            LambdaEvent::new(payload, Context::default()),
            &app.stack.authorizer,
        )
        .await
        .unwrap();
        assert!(!answer.is_authorized, "{name}");
    }
}
