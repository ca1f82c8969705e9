//! The promoter, reaper and event applier write valid CloudWatch Embedded Metric Format lines.

use std::time::{Duration, Instant};

use chrono::Utc;
use lambda_runtime::{Context, LambdaEvent};
use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup_tests::queue::{join, promote};
use lineup_tests::rankings::{envelope, paid};
use lineup_tests::{sleep, TestApp};
use serde_json::{json, Value};

const UNITS: [&str; 4] = ["Count", "Count/Second", "None", "Seconds"];

/// Checks `line` against the EMF specification; returns the record.
fn valid_emf(line: &str) -> Value {
    let record: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let aws = &record["_aws"];
    assert!(aws["Timestamp"].is_u64(), "{line}");
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics");
    assert!(!directives.is_empty());
    for directive in directives {
        assert!(directive["Namespace"]
            .as_str()
            .is_some_and(|n| !n.is_empty()));
        for set in directive["Dimensions"].as_array().expect("Dimensions") {
            let names = set.as_array().expect("a dimension set");
            assert!(names.len() <= 30);
            for name in names {
                let name = name.as_str().expect("dimension name");
                assert!(
                    record[name].is_string(),
                    "dimension {name} has no value: {line}"
                );
            }
        }
        let metrics = directive["Metrics"].as_array().expect("Metrics");
        assert!(!metrics.is_empty() && metrics.len() <= 100);
        for metric in metrics {
            let name = metric["Name"].as_str().expect("metric name");
            // One value, or an array of 1 to 100 values.
            let value = &record[name];
            assert!(
                value.is_number()
                    || value.as_array().is_some_and(|values| {
                        (1..=100).contains(&values.len()) && values.iter().all(Value::is_number)
                    }),
                "metric {name} has no value: {line}"
            );
            if let Some(unit) = metric.get("Unit") {
                assert!(UNITS.contains(&unit.as_str().unwrap()), "{unit}");
            }
        }
    }
    record
}

#[tokio::test]
async fn scheduled_functions_and_the_event_applier_write_valid_emf() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    join(&app, "show", "u1").await;
    join(&app, "show", "u2").await;
    join(&app, "other", "u3").await;
    promote(&app).await;
    queue_reaper::handle(
        LambdaEvent::new(json!({}), Context::default()),
        &app.stack.reaper,
    )
    .await
    .unwrap();
    let now = Utc::now().to_rfc3339();
    let yesterday = (Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    event_applier::apply_events(
        &[
            paid("p1", "c1", 1, &[], &now),
            paid("p1", "c1", 1, &[], &now),
            paid("p2", "c1", 1, &[], &yesterday),
            envelope("PaymentCompleted", json!({"paymentId": "p3"})),
        ],
        &app.stack.event_applier,
    )
    .await;

    let records: Vec<Value> = app.metrics.lines().iter().map(|l| valid_emf(l)).collect();
    let queue_records: Vec<&Value> = records.iter().filter(|r| r["queueId"] == "show").collect();
    // One from the promoter, one from the reaper.
    assert_eq!(queue_records.len(), 2, "{records:?}");
    assert_eq!(queue_records[0]["waiting"], 1);
    assert_eq!(queue_records[0]["active"], 1);
    assert_eq!(queue_records[0]["admitted"], 0);
    // The pace in force beside the configured one, for the dashboard.
    assert_eq!(queue_records[0]["capacityInForce"], 1.0);
    assert_eq!(queue_records[0]["capacityConfigured"], 1.0);
    assert_eq!(
        queue_records[0]["admitPerTickInForce"].as_f64(),
        queue_records[0]["admitPerTickConfigured"].as_f64()
    );
    assert_eq!(queue_records[0]["healthLevel"], 1.0);
    let rankings = records
        .iter()
        .find(|r| r["service"] == "rankings")
        .expect("the event applier's record");
    assert_eq!(rankings["eventsApplied"], 2);
    assert_eq!(rankings["eventsDuplicate"], 1);
    assert_eq!(rankings["eventsLate"], 1);
    assert_eq!(rankings["eventsRejected"], 1);
}

/// The wait of each buyer the promoter admits, as `waitSeconds` values of the queue: Ben joins,
/// Carl joins 1.2 s later, both wait behind two sessions of 2 s, and one tick admits both. Each
/// value lies between the time the buyer surely waited and that plus the clock's second. The
/// clock is trimmed to what the line still needs.
#[tokio::test]
async fn the_promoter_reports_how_long_each_admitted_buyer_waited() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2"), ("SESSION_SECONDS", "2")]).await;
    for user in ["ana", "dan"] {
        assert_eq!(join(&app, "show", user).await.body["status"], "active");
    }
    let mut joined = Vec::new();
    for user in ["ben", "carl"] {
        let before = Instant::now();
        let reply = join(&app, "show", user).await;
        assert_eq!(reply.body["status"], "waiting", "{}", reply.body);
        joined.push((before, Instant::now()));
        sleep(Duration::from_millis(1_200)).await;
    }
    // The sessions have ended by now (2 s after the first join).
    let promoting = Instant::now();
    assert_eq!(promote(&app).await.admitted, 2);
    let promoted = Instant::now();

    let records: Vec<Value> = app.metrics.lines().iter().map(|l| valid_emf(l)).collect();
    let waits: Vec<&Value> = records
        .iter()
        .filter(|r| r["queueId"] == "show" && r.get("waitSeconds").is_some())
        .collect();
    assert_eq!(waits.len(), 1, "{records:?}");
    let definition = &waits[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0];
    assert_eq!(definition["Name"], "waitSeconds");
    assert_eq!(definition["Unit"], "Seconds");
    let values: Vec<f64> = waits[0]["waitSeconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(values.len(), 2, "{values:?}");
    // In ticket order: Ben, then Carl.
    for (value, (before, after)) in values.iter().zip(&joined) {
        let least = promoting.duration_since(*after).as_secs_f64();
        let most = promoted.duration_since(*before).as_secs_f64() + 1.0;
        assert!(
            (least - 0.01..=most + 0.01).contains(value),
            "waited {value} s, surely between {least} and {most}"
        );
    }
    assert!(values[0] > values[1] + 0.2, "{values:?}");

    // Nobody waits now: the clock keeps only the entry the next ticket needs.
    let clock = QueueKeys::new(&app.config.key_prefix, &QueueId::parse("show").unwrap()).clock;
    let entries: u64 = redis::cmd("ZCARD")
        .arg(&clock)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(entries, 1);
}
