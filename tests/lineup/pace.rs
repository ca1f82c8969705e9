//! The pace a queue admits at beyond its `capacity`: the scheduled capacity ramp. The capacity
//! in force is the lower of `capacity` and the ramp's step, on every admission path (an
//! arrival admitted at once, the promotion tick, a leave's hand-over), and each step the tick
//! sees is published once as `QueuePaceChanged`.

use chrono::Utc;
use lineup::ids::QueueId;
use lineup::queue::{PromotionReport, QueueEvent, QueueEventKind};
use lineup_tests::draw::{in_seconds, rfc, until};
use lineup_tests::queue::{join, leave, put_settings, summary};
use lineup_tests::TestApp;
use serde_json::json;

/// The `QueuePaceChanged` events of a tick, as `(capacity in force, what limits it)`.
fn pace_changes(report: &PromotionReport) -> Vec<(u32, &'static str)> {
    report
        .events()
        .filter(|e: &&QueueEvent| e.kind == QueueEventKind::PaceChanged)
        .map(|e| (e.capacity.unwrap(), e.reason.unwrap()))
        .collect()
}

#[tokio::test]
async fn a_capacity_ramp_is_checked_shown_and_starts_from_the_opening() {
    let app = TestApp::spawn(&[]).await;
    for bad in [
        json!({ "from": 0, "step": 1, "everySeconds": 60, "to": 5 }),
        json!({ "from": 5, "step": 1, "everySeconds": 60, "to": 4 }),
        json!({ "from": 1, "step": 0, "everySeconds": 60, "to": 5 }),
        json!({ "from": 1, "step": 1, "everySeconds": 0, "to": 5 }),
        json!({ "from": 1, "step": 1, "everySeconds": 60 }),
        json!({ "from": 1, "step": 1, "everySeconds": 60, "to": 5, "extra": 1 }),
    ] {
        let reply = put_settings(&app, "gig", &json!({ "capacityRamp": bad })).await;
        reply.assert_problem(400);
    }
    // With an opening an hour away, the ramp starts there: until then, its `from`.
    let ramp = json!({ "from": 2, "step": 3, "everySeconds": 60, "to": 20 });
    let set = put_settings(
        &app,
        "gig",
        &json!({ "capacity": 10, "opensAt": rfc(in_seconds(3600)), "capacityRamp": ramp }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["capacityRamp"], ramp);
    let seen = summary(&app, "gig").await;
    assert_eq!(seen.body["settings"]["capacity"], 10);
    assert_eq!(seen.body["settings"]["capacityRamp"], ramp);
    assert_eq!(
        (
            &seen.body["pace"]["capacity"],
            &seen.body["pace"]["limitedBy"]
        ),
        (&json!(2), &json!("ramp"))
    );
    // Removed: the queue's own capacity again.
    let set = put_settings(&app, "gig", &json!({ "capacityRamp": null })).await;
    assert_eq!(set.body["capacityRamp"], json!(null));
    let seen = summary(&app, "gig").await;
    assert_eq!(
        (
            &seen.body["pace"]["capacity"],
            &seen.body["pace"]["limitedBy"]
        ),
        (&json!(10), &json!("capacity"))
    );
}

#[tokio::test]
async fn a_capacity_ramp_opens_up_on_schedule_on_every_admission_path() {
    let app = TestApp::spawn(&[]).await;
    let queue = QueueId::parse("ramp").unwrap();
    let tick = || async {
        app.room()
            .promote(std::slice::from_ref(&queue))
            .await
            .unwrap()
    };
    let set_at = Utc::now();
    let set = put_settings(
        &app,
        "ramp",
        &json!({
            "capacity": 10, "sessionSeconds": 600, "admitPerTick": 10,
            "capacityRamp": { "from": 1, "step": 1, "everySeconds": 2, "to": 3 },
        }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    // An arrival is admitted at once only within the ramp's first step.
    let mut buyers = Vec::new();
    for user in ["ana", "ben", "cid", "dee", "eve"] {
        buyers.push(join(&app, "ramp", user).await);
    }
    let states: Vec<_> = buyers.iter().map(|b| b.body["status"].clone()).collect();
    assert_eq!(
        states,
        ["active", "waiting", "waiting", "waiting", "waiting"]
    );
    let first = tick().await;
    assert_eq!(first.admitted(), 0);
    assert_eq!(pace_changes(&first), [(1, "ramp")], "the first step, once");
    assert_eq!(pace_changes(&tick().await), []);

    // Each step lets the tick admit one more, and is published once.
    until(set_at + chrono::Duration::milliseconds(2_300)).await;
    let second = tick().await;
    assert_eq!(second.admitted(), 1);
    assert_eq!(pace_changes(&second), [(2, "ramp")]);
    until(set_at + chrono::Duration::milliseconds(4_300)).await;
    let third = tick().await;
    assert_eq!(third.admitted(), 1);
    assert_eq!(pace_changes(&third), [(3, "ramp")]);
    let seen = summary(&app, "ramp").await;
    assert_eq!(seen.body["active"], 3);
    assert_eq!(
        (
            &seen.body["pace"]["capacity"],
            &seen.body["pace"]["limitedBy"]
        ),
        (&json!(3), &json!("ramp"))
    );

    // At `to` it stays: no more admitted, nothing more published.
    until(set_at + chrono::Duration::milliseconds(6_300)).await;
    let held = tick().await;
    assert_eq!(held.admitted(), 0);
    assert_eq!(pace_changes(&held), []);
    // A leave hands its place on within the ramp: one out, one in.
    assert_eq!(leave(&app, "ramp", &buyers[0].token()).await.status, 204);
    let seen = summary(&app, "ramp").await;
    assert_eq!(
        (seen.body["active"].clone(), seen.body["waiting"].clone()),
        (json!(3), json!(1))
    );

    // The ramp removed, the queue's own capacity governs, and the change is published.
    assert_eq!(
        put_settings(&app, "ramp", &json!({ "capacityRamp": null }))
            .await
            .status,
        200
    );
    let freed = tick().await;
    assert_eq!(freed.admitted(), 1);
    assert_eq!(pace_changes(&freed), [(10, "capacity")]);
    assert_eq!(pace_changes(&tick().await), []);
}

/// In a queue without an opening, the ramp starts when it is set. Sending it again, or with
/// only `to` changed, keeps that start; any other change starts it again.
#[tokio::test]
async fn a_ramp_sent_again_or_with_only_its_to_changed_keeps_its_climb() {
    let app = TestApp::spawn(&[]).await;
    let ramp = |from: u32, step: u32, to: u32| json!({ "from": from, "step": step, "everySeconds": 1, "to": to });
    let pace = |body: &serde_json::Value| body["pace"]["capacity"].as_u64().unwrap();
    let set = put_settings(
        &app,
        "climb",
        &json!({ "capacity": 100, "capacityRamp": ramp(1, 1, 50) }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    lineup_tests::sleep(std::time::Duration::from_millis(1_200)).await;
    let climbed = pace(&summary(&app, "climb").await.body);
    assert!(climbed >= 2, "a step up after a second: {climbed}");

    for (again, what) in [
        (ramp(1, 1, 50), "the same ramp"),
        (ramp(1, 1, 80), "only `to` changed"),
    ] {
        let set = put_settings(&app, "climb", &json!({ "capacityRamp": again })).await;
        assert_eq!(set.status, 200, "{}", set.body);
        assert_eq!(set.body["capacityRamp"], again);
        let seen = pace(&summary(&app, "climb").await.body);
        assert!(
            seen >= climbed,
            "{what} keeps the climb: {seen} after {climbed}"
        );
    }

    // Another step starts the ramp again, from its `from`.
    let set = put_settings(&app, "climb", &json!({ "capacityRamp": ramp(1, 2, 80) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let seen = summary(&app, "climb").await;
    assert_eq!(
        (
            &seen.body["pace"]["capacity"],
            &seen.body["pace"]["limitedBy"]
        ),
        (&json!(1), &json!("ramp")),
        "a new step restarts"
    );
}
