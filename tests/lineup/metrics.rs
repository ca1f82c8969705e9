//! The promoter, reaper and updater write valid CloudWatch Embedded Metric Format lines.

use chrono::Utc;
use lambda_runtime::{Context, LambdaEvent};
use lineup_tests::queue::{join, promote};
use lineup_tests::rankings::{envelope, paid};
use lineup_tests::TestApp;
use serde_json::{json, Value};

const UNITS: [&str; 3] = ["Count", "Count/Second", "None"];

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
            assert!(
                record[name].is_number(),
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
async fn scheduled_functions_and_the_updater_write_valid_emf() {
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
    ranking_updater::apply_events(
        &[
            paid("p1", "c1", 1, &[], &now),
            paid("p1", "c1", 1, &[], &now),
            paid("p2", "c1", 1, &[], &yesterday),
            envelope("PaymentCompleted", json!({"paymentId": "p3"})),
        ],
        &app.stack.ranking_updater,
    )
    .await;

    let records: Vec<Value> = app.metrics.lines().iter().map(|l| valid_emf(l)).collect();
    let queue_records: Vec<&Value> = records.iter().filter(|r| r["queueId"] == "show").collect();
    // One from the promoter, one from the reaper.
    assert_eq!(queue_records.len(), 2, "{records:?}");
    assert_eq!(queue_records[0]["waiting"], 1);
    assert_eq!(queue_records[0]["active"], 1);
    assert_eq!(queue_records[0]["admitted"], 0);
    let rankings = records
        .iter()
        .find(|r| r["service"] == "rankings")
        .expect("the updater's record");
    assert_eq!(rankings["eventsApplied"], 2);
    assert_eq!(rankings["eventsDuplicate"], 1);
    assert_eq!(rankings["eventsLate"], 1);
    assert_eq!(rankings["eventsRejected"], 1);
}
