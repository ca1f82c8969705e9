//! Health pacing: the booking system's `BookingHealth` level and the CloudWatch alarms a queue
//! names slow admission on every path (the tick, an arrival admitted at once, a leave's
//! hand-over) and stop it at level 0; a rise climbs back over `healthRecoverySeconds`; a level
//! not renewed lapses. Events go through event-applier's handler and the local stack's
//! `POST /events`; ticks through the promoter's handler.

use chrono::{DateTime, Duration, Utc};
use lineup::queue::{PromotionReport, QueueEventKind};
use lineup::ranking::Outcome;
use lineup_tests::draw::until;
use lineup_tests::queue::{assert_kind, join, leave, put_settings, summary};
use lineup_tests::rankings::{alarm, booking_health as health};
use lineup_tests::TestApp;
use serde_json::{json, Value};

use crate::local_stack::{post_events, serve};

async fn apply(app: &TestApp, events: &[Value]) -> Vec<Outcome> {
    event_applier::apply_events(events, &app.stack.event_applier).await
}

/// One tick of the promoter's handler.
async fn tick(app: &TestApp) -> PromotionReport {
    queue_promoter::tick(&app.stack.promoter)
        .await
        .expect("tick")
}

/// The `QueuePaceChanged` events of a tick, as `(admissions a tick, health level, reason)`.
fn paced(report: &PromotionReport) -> Vec<(f64, f64, Option<&'static str>)> {
    report
        .events()
        .filter(|e| e.kind == QueueEventKind::PaceChanged)
        .map(|e| {
            (
                e.admit_per_tick.unwrap(),
                e.health_level.unwrap(),
                e.health_reason,
            )
        })
        .collect()
}

async fn statuses(app: &TestApp, queue: &str, users: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for user in users {
        out.push(
            join(app, queue, user).await.body["status"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    out
}

#[tokio::test]
async fn health_settings_are_checked_and_shown() {
    let app = TestApp::spawn(&[]).await;
    for bad in [
        json!({"healthAlarms": [""]}),
        json!({"healthAlarms": ["two\nlines"]}),
        json!({"healthAlarms": ["x".repeat(256)]}),
        json!({"healthAlarms": (0..11).map(|i| format!("a{i}")).collect::<Vec<_>>()}),
        json!({"healthAlarms": "one"}),
        json!({"healthRecoverySeconds": 3601}),
        json!({"healthRecoverySeconds": -1}),
        json!({"healthTtlSeconds": 9}),
        json!({"healthTtlSeconds": 3601}),
    ] {
        put_settings(&app, "gig", &bad).await.assert_problem(400);
    }
    let fresh = put_settings(&app, "gig", &json!({"capacity": 5})).await;
    assert_eq!(
        (
            fresh.body["healthAlarms"].clone(),
            fresh.body["healthRecoverySeconds"].clone(),
            fresh.body["healthTtlSeconds"].clone()
        ),
        (json!([]), json!(60), json!(120))
    );
    let set = put_settings(
        &app,
        "gig",
        &json!({"healthAlarms": ["booking-5xx", "booking p99 > 2 s", "booking-5xx"],
            "healthRecoverySeconds": 0, "healthTtlSeconds": 30}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(
        set.body["healthAlarms"],
        json!(["booking p99 > 2 s", "booking-5xx"])
    );
    assert_eq!(set.body["healthRecoverySeconds"], 0);
    assert_eq!(set.body["healthTtlSeconds"], 30);
    let seen = summary(&app, "gig").await.body;
    assert_eq!(seen["settings"]["healthTtlSeconds"], 30);
    assert_eq!(
        seen["pace"],
        json!({"capacity": 5, "limitedBy": "capacity", "admitPerTick": 100.0,
            "health": {"level": 1.0}})
    );
    let reset = put_settings(&app, "gig", &json!({"healthAlarms": null})).await;
    assert_eq!(reset.body["healthAlarms"], json!([]));
}

#[tokio::test]
async fn the_booking_system_s_level_paces_every_path_and_zero_stops_them_all() {
    let app = TestApp::spawn(&[]).await;
    let set = put_settings(
        &app,
        "show",
        &json!({"capacity": 100, "admitPerTick": 10, "sessionSeconds": 600,
            "healthRecoverySeconds": 0}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    // Healthy: the first arrival is admitted at once.
    let first = join(&app, "show", "ana").await;
    assert_eq!(first.body["status"], "active");

    // Level 0: nobody is admitted on any path, though places are free.
    let down = Utc::now();
    assert_eq!(
        apply(&app, &[health(&["show"], 0.0, down)]).await,
        [Outcome::Applied]
    );
    let seen = summary(&app, "show").await.body;
    assert_eq!(seen["pace"]["admitPerTick"], 0.0);
    assert_eq!(
        seen["pace"]["health"],
        json!({"level": 0.0, "reason": "booking"})
    );
    let until_ms = DateTime::parse_from_rfc3339(seen["pace"]["healthUntil"].as_str().unwrap())
        .unwrap()
        .timestamp_millis();
    assert_eq!(until_ms, (down + Duration::seconds(120)).timestamp_millis());
    let users: Vec<String> = (0..20).map(|i| format!("w{i:02}")).collect();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    assert!(statuses(&app, "show", &users)
        .await
        .iter()
        .all(|s| s == "waiting"));
    let stopped = tick(&app).await;
    assert_eq!(stopped.admitted(), 0);
    assert_eq!(paced(&stopped), [(0.0, 0.0, Some("booking"))]);
    assert_eq!(leave(&app, "show", &first.token()).await.status, 204);
    assert_eq!(
        summary(&app, "show").await.body["active"],
        0,
        "no hand-over"
    );
    assert_eq!(tick(&app).await.admitted(), 0);

    // Redelivered, older, lapsed or for no queue: nothing changes.
    let verdicts = apply(
        &app,
        &[
            health(&["show"], 1.0, down),
            health(&["show"], 1.0, down - Duration::seconds(5)),
            health(&["nowhere"], 1.0, Utc::now()),
        ],
    )
    .await;
    assert_eq!(verdicts[..2], [Outcome::Duplicate, Outcome::Duplicate]);
    assert!(matches!(verdicts[2], Outcome::Ignored(_)), "{verdicts:?}");
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"]["level"],
        0.0
    );

    // Half: a tick admits half of admitPerTick, and only the tick admits.
    assert_eq!(
        apply(&app, &[health(&["show"], 0.5, Utc::now())]).await,
        [Outcome::Applied]
    );
    let half = tick(&app).await;
    assert_eq!(half.admitted(), 5);
    assert_eq!(paced(&half), [(5.0, 0.5, Some("booking"))]);
    assert_eq!(statuses(&app, "show", &["late"]).await, ["waiting"]);
    // A quarter: 2.5 a tick on average, the fraction carried by the clock.
    assert_eq!(
        apply(&app, &[health(&["show"], 0.25, Utc::now())]).await,
        [Outcome::Applied]
    );
    let mut quarter = Vec::new();
    for _ in 0..2 {
        quarter.push(tick(&app).await.admitted());
        lineup_tests::sleep(std::time::Duration::from_millis(1_000)).await;
    }
    assert!(
        quarter.iter().all(|n| (2..=3).contains(n)) && quarter.iter().sum::<u64>() >= 4,
        "{quarter:?}"
    );

    // Healthy again (no recovery ramp here): every path admits at once.
    assert_eq!(
        apply(&app, &[health(&["show"], 1.0, Utc::now())]).await,
        [Outcome::Applied]
    );
    let back = tick(&app).await;
    assert_eq!(back.admitted(), 10);
    assert_eq!(paced(&back), [(10.0, 1.0, None)]);
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"],
        json!({"level": 1.0})
    );
}

#[tokio::test]
async fn a_level_not_renewed_lapses_and_a_rise_climbs_over_the_recovery_time() {
    let app = TestApp::spawn(&[]).await;
    let set = put_settings(
        &app,
        "show",
        &json!({"capacity": 100, "admitPerTick": 10, "sessionSeconds": 600,
            "healthRecoverySeconds": 2, "healthTtlSeconds": 10}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let users: Vec<String> = (0..40).map(|i| format!("w{i:02}")).collect();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    // Sent 9 s ago with a 10 s TTL: it holds for one more second, then lapses.
    let sent = Utc::now() - Duration::seconds(9);
    assert_eq!(
        apply(&app, &[health(&["show"], 0.0, sent)]).await,
        [Outcome::Applied]
    );
    assert!(statuses(&app, "show", &users)
        .await
        .iter()
        .all(|s| s == "waiting"));
    assert_eq!(tick(&app).await.admitted(), 0);
    let lapsed = sent + Duration::seconds(10);
    // One sent before it is a duplicate.
    let old = apply(&app, &[health(&["show"], 1.0, sent - Duration::seconds(1))]).await;
    assert_eq!(old, [Outcome::Duplicate]);

    // Half a recovery after the lapse, the level has climbed half way: 5 a tick.
    until(lapsed + Duration::milliseconds(1_000)).await;
    // One sent after it, but longer ago than the TTL, would have lapsed too: not taken.
    let late = apply(
        &app,
        &[health(&["show"], 0.0, sent + Duration::milliseconds(500))],
    )
    .await;
    assert!(matches!(late[0], Outcome::Ignored(_)), "{late:?}");
    // The level climbs by 1 in 2 s from 0 at the lapse: checked against the instants each
    // request was sent and answered, so a slow machine moves the expectation, not the verdict.
    let climbed =
        |at: DateTime<Utc>| ((at - lapsed).num_milliseconds() as f64 / 2000.0).clamp(0.0, 1.0);
    let asked = Utc::now();
    let seen = summary(&app, "show").await.body["pace"].clone();
    let (low, high) = (climbed(asked) - 0.01, climbed(Utc::now()) + 0.01);
    assert_eq!(seen["health"]["reason"], "recovery");
    let level = seen["health"]["level"].as_f64().unwrap();
    assert!(
        (low..=high).contains(&level),
        "{seen}: not within {low:.3}–{high:.3}"
    );
    assert!(seen.get("healthUntil").is_none(), "{seen}");
    // A tick admits the level's share of 10, the fraction carried by the clock.
    let asked = Utc::now();
    let climbing = tick(&app).await.admitted() as f64;
    let (low, high) = (
        climbed(asked) * 10.0 - 1.0,
        climbed(Utc::now()) * 10.0 + 1.0,
    );
    assert!(
        (low..=high).contains(&climbing),
        "{climbing} admitted, not within {low:.1}–{high:.1}"
    );
    // After the whole recovery time: the configured pace.
    until(lapsed + Duration::milliseconds(2_100)).await;
    let seen = summary(&app, "show").await.body["pace"].clone();
    assert_eq!(seen["health"], json!({"level": 1.0}));
    assert_eq!(tick(&app).await.admitted(), 10);

    // A fall is at once; a signal that rises climbs from where the level stood.
    let fell = Utc::now();
    assert_eq!(
        apply(&app, &[health(&["show"], 0.2, fell)]).await,
        [Outcome::Applied]
    );
    assert_eq!(tick(&app).await.admitted(), 2);
    // Sent after the fall, whatever the wall clock did meanwhile (a later signal wins; one
    // CI run saw this one taken for older).
    let rose = Utc::now().max(fell + Duration::milliseconds(1));
    assert_eq!(
        apply(&app, &[health(&["show"], 1.0, rose)]).await,
        [Outcome::Applied]
    );
    let seen = summary(&app, "show").await.body["pace"].clone();
    // Climbing from 0.2 by 1 in 2 s since the rise, however long the requests took.
    let risen = 0.2 + (Utc::now() - rose).num_milliseconds() as f64 / 2000.0;
    if risen < 0.99 {
        assert_eq!(seen["health"]["reason"], "recovery", "{seen}");
        let level = seen["health"]["level"].as_f64().unwrap();
        assert!(
            (0.2..=risen + 0.01).contains(&level),
            "{seen}: over {risen:.3}"
        );
    }
    until(rose + Duration::milliseconds(1_700)).await;
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"],
        json!({"level": 1.0})
    );
}

#[tokio::test]
async fn passthrough_admits_while_the_level_is_above_zero_and_refuses_at_zero() {
    let app = TestApp::spawn(&[]).await;
    put_settings(
        &app,
        "door",
        &json!({"mode": "passthrough", "capacity": 10, "healthRecoverySeconds": 0}),
    )
    .await;
    apply(&app, &[health(&["door"], 0.5, Utc::now())]).await;
    assert_eq!(statuses(&app, "door", &["a"]).await, ["active"]);
    apply(&app, &[health(&["door"], 0.0, Utc::now())]).await;
    assert_kind(&join(&app, "door", "b").await, 429, "queue-full");
    // Sessions already active are untouched.
    assert_eq!(summary(&app, "door").await.body["active"], 1);
}

#[tokio::test]
async fn an_alarm_the_queue_names_stops_admission_until_it_is_ok_again() {
    let app = TestApp::spawn(&[]).await;
    put_settings(
        &app,
        "show",
        &json!({"capacity": 100, "admitPerTick": 3, "sessionSeconds": 600,
            "healthAlarms": ["booking-5xx"], "healthRecoverySeconds": 0}),
    )
    .await;
    put_settings(&app, "other", &json!({"capacity": 100, "admitPerTick": 3})).await;
    // The promoter learns which alarms its queues name from its ticks.
    statuses(&app, "show", &["a"]).await;
    statuses(&app, "other", &["z"]).await;
    tick(&app).await;
    let fired = Utc::now();
    let verdicts = apply(
        &app,
        &[
            alarm("booking-5xx", "ALARM", fired),
            alarm("booking-5xx", "ALARM", fired),
            alarm("unrelated", "ALARM", fired),
        ],
    )
    .await;
    assert_eq!(
        verdicts,
        [Outcome::Applied, Outcome::Duplicate, Outcome::Applied]
    );
    // One tick reads the alarm's state, the next hands it to the queue.
    let mut changes = Vec::new();
    for _ in 0..2 {
        changes.extend(paced(&tick(&app).await));
    }
    assert_eq!(changes, [(0.0, 0.0, Some("alarm"))]);
    assert_eq!(
        statuses(&app, "show", &["b", "c"]).await,
        ["waiting", "waiting"]
    );
    assert_eq!(
        statuses(&app, "other", &["y"]).await,
        ["active"],
        "names no alarm"
    );
    assert_eq!(tick(&app).await.admitted(), 0);
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"],
        json!({"level": 0.0, "reason": "alarm"})
    );

    // An older OK arriving late changes nothing; a newer one lets the line move again.
    let stale = apply(
        &app,
        &[alarm("booking-5xx", "OK", fired - Duration::seconds(60))],
    )
    .await;
    assert_eq!(stale, [Outcome::Duplicate]);
    assert_eq!(tick(&app).await.admitted(), 0);
    let ok = apply(&app, &[alarm("booking-5xx", "OK", Utc::now())]).await;
    assert_eq!(ok, [Outcome::Applied]);
    let mut admitted = 0;
    for _ in 0..2 {
        admitted += tick(&app).await.admitted();
    }
    assert_eq!(admitted, 2);

    // Dropped from the settings, the alarm no longer counts.
    apply(&app, &[alarm("booking-5xx", "ALARM", Utc::now())]).await;
    for _ in 0..2 {
        tick(&app).await;
    }
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"]["reason"],
        "alarm"
    );
    // Named no more: the alarm no longer counts, though the promoter last read it in ALARM.
    put_settings(&app, "show", &json!({"healthAlarms": ["booking-latency"]})).await;
    for _ in 0..3 {
        tick(&app).await;
        assert_eq!(
            summary(&app, "show").await.body["pace"]["health"],
            json!({"level": 1.0}),
            "a word about the old list is not taken"
        );
    }
    apply(&app, &[alarm("booking-5xx", "ALARM", Utc::now())]).await;
    put_settings(&app, "show", &json!({"healthAlarms": null})).await;
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"],
        json!({"level": 1.0})
    );
    assert_eq!(statuses(&app, "show", &["d"]).await, ["active"]);
    // Every key ends: the alarm's state has a TTL.
    let alarm_keys: Vec<(String, i64)> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.contains("{health}"))
        .collect();
    assert_eq!(alarm_keys.len(), 2, "{alarm_keys:?}");
    assert!(alarm_keys.iter().all(|(_, ttl)| *ttl > 0), "{alarm_keys:?}");
}

/// A queue that names an alarm is watched from its settings on, before its first buyer: with
/// the alarm already in ALARM, two promoter ticks after the settings nobody is admitted,
/// not even the first buyers.
#[tokio::test]
async fn an_alarm_named_before_the_first_buyer_holds_the_first_buyers() {
    let app = TestApp::spawn(&[]).await;
    // A promoter already running, with other queues to promote.
    put_settings(&app, "other", &json!({"capacity": 100})).await;
    statuses(&app, "other", &["z"]).await;
    tick(&app).await;
    let fired = apply(&app, &[alarm("booking-5xx", "ALARM", Utc::now())]).await;
    assert_eq!(fired, [Outcome::Applied]);
    let set = put_settings(
        &app,
        "show",
        &json!({"capacity": 100, "admitPerTick": 100, "sessionSeconds": 600,
            "healthAlarms": ["booking-5xx"]}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    for _ in 0..2 {
        tick(&app).await;
    }
    assert_eq!(
        summary(&app, "show").await.body["pace"]["health"],
        json!({"level": 0.0, "reason": "alarm"})
    );
    // The first buyer costs one round trip: the settings change registered the queue.
    let (first, commands) = app
        .client_commands_during(join(&app, "show", "buyer-0"))
        .await;
    assert_eq!(first.body["status"], "waiting", "{}", first.body);
    assert_eq!(
        commands,
        std::collections::HashMap::from([("evalsha", 1)]),
        "{commands:?}"
    );
    let buyers: Vec<String> = (1..5).map(|i| format!("buyer-{i}")).collect();
    let buyers: Vec<&str> = buyers.iter().map(String::as_str).collect();
    assert_eq!(statuses(&app, "show", &buyers).await, ["waiting"; 4]);
    assert_eq!(tick(&app).await.admitted(), 0);
    assert_eq!(summary(&app, "show").await.body["active"], 0);
}

#[tokio::test]
async fn the_local_stack_takes_health_and_alarm_events() {
    let app = TestApp::spawn(&[]).await;
    let (addr, server) = serve(&app).await;
    put_settings(
        &app,
        "local",
        &json!({"healthAlarms": ["booking-latency"], "healthRecoverySeconds": 0}),
    )
    .await;
    let batch = json!([
        health(&["local"], 0.0, Utc::now()),
        alarm("booking-latency", "ALARM", Utc::now()),
        health(&["local"], 2.0, Utc::now()),
        {"detail-type": "BookingHealth", "source": "lineup.payments", "time": Utc::now().to_rfc3339(),
            "detail": {"pool": "main", "queueIds": ["local"], "level": 1}},
    ]);
    let results = post_events(addr, &batch).await;
    let outcomes: Vec<&str> = results.iter().map(|(result, _)| result.as_str()).collect();
    assert_eq!(outcomes, ["applied", "applied", "rejected", "rejected"]);
    assert!(results[2].1.contains("level"), "{results:?}");
    assert!(results[3].1.contains("pool"), "{results:?}");
    assert_eq!(
        summary(&app, "local").await.body["pace"]["health"]["reason"],
        "booking"
    );
    server.abort();
}
