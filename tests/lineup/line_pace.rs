//! The pace of the striped line served by the functions (`LINE_STRIPES`): the wait a waiter
//! is told, the booking system's health and alarms, the capacity ramp, a full line and the
//! end of arrivals, through the same handlers the Lambdas run, with the moved clock of
//! [`super::line_served`].

use lineup::clock::Clock;
use lineup::ranking::Outcome;
use lineup_tests::rankings::alarm;
use lineup_tests::Reply;
use serde_json::{json, Value};

use super::line_served::{mark_ttl, Served, STRIPES};

/// A waiter's `estimatedWaitSeconds` and its range's ends.
fn wait_of(reply: &Reply) -> (u64, u64, u64) {
    let range = &reply.body["estimatedWaitRange"];
    let second = |v: &Value| v.as_u64().unwrap_or_else(|| panic!("{:?}", reply.body));
    (
        second(&reply.body["estimatedWaitSeconds"]),
        second(&range["low"]),
        second(&range["high"]),
    )
}

#[tokio::test]
async fn a_waiter_is_told_its_wait_from_how_fast_the_line_moves() {
    let served = Served::start().await;
    let clock = &served.clock;
    served.create("sale", r#"{"capacity": 2}"#).await;
    let tokens = served.joined("sale", 30, 1000).await;
    clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 2);
    clock.advance(1000);
    // Before any session has ended the line has no speed: a waiter's wait is every session
    // ahead of it running out, 600 s each, two places a session.
    let third = served.status("sale", &tokens[2]).await;
    assert_eq!(third.body["position"], 1, "{:?}", third.body);
    assert_eq!(wait_of(&third), (600, 600, 600));
    let sixth = served.status("sale", &tokens[5]).await;
    assert_eq!(sixth.body["position"], 4);
    assert_eq!(wait_of(&sixth), (1200, 1200, 1200));

    // A session ends each second and the next tick fills its place: 12 ticks.
    for (i, token) in tokens.iter().take(12).enumerate() {
        let path = format!("/queues/sale/tokens/{token}");
        assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
        assert_eq!(served.tick().await.admitted(), 1, "tick {i}");
        clock.advance(1000);
    }
    // The last tick had seen 11 places go in 12 s (55 a minute), the best ten seconds 10 (60
    // a minute). Position 4: 4.36 s expected, 4 s at best, 1200 s at worst.
    let waiter = served.status("sale", &tokens[17]).await;
    assert_eq!(waiter.body["position"], 4, "{:?}", waiter.body);
    assert_eq!(wait_of(&waiter), (5, 4, 1200));
    // Poll again at a quarter of the low end, at least 1 s.
    assert_eq!(waiter.body["pollAfterSeconds"], 1);

    // A paused line gives no estimate: nobody is admitted until it resumes.
    served.create("sale", r#"{"paused": true}"#).await;
    assert_eq!(served.tick().await.admitted(), 0);
    clock.advance(1000);
    let paused = served.status("sale", &tokens[17]).await;
    assert_eq!(paused.body["paused"], true, "{:?}", paused.body);
    assert!(paused.body["estimatedWaitSeconds"].is_null());
    assert!(paused.body["estimatedWaitRange"].is_null());
}

/// A `BookingHealth` event for `queue` at `level`, sent `ms_ago` ms before now (real time:
/// the level's lapse and climb are timed by the server).
fn booking_health(queue: &str, level: f64, ms_ago: i64) -> Value {
    lineup_tests::rankings::booking_health(&[queue], level, ago(ms_ago))
}

/// `ms` ms before now, by the real clock.
fn ago(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() - chrono::Duration::milliseconds(ms)
}

#[tokio::test]
async fn the_booking_systems_health_paces_the_line_and_0_halts_it_at_once() {
    let served = Served::start().await;
    let clock = &served.clock;
    served.create("sale", r#"{"capacity": 10}"#).await;
    let tokens = served.joined("sale", 24, 100).await;
    clock.advance(2000);

    // Level 0: every stripe halts in the event applier's round trip; the tick admits nobody, and a
    // waiter is told admissions are paused, with no estimate.
    assert_eq!(
        served.deliver(booking_health("sale", 0.0, 3)).await,
        [Outcome::Applied]
    );
    assert_eq!(served.halts().await, STRIPES.parse::<usize>().unwrap());
    assert_eq!(served.tick().await.admitted(), 0);
    clock.advance(1000);
    let waiter = served.status("sale", &tokens[0]).await;
    assert_eq!(waiter.body["paused"], true, "{:?}", waiter.body);
    assert!(waiter.body["estimatedWaitSeconds"].is_null());

    // Level 0.5: the level climbs back from 0 by 1 a minute (healthRecoverySeconds), so 30 s
    // on it holds 5 sessions of the 10. The first tick clears the stripes' halt, the next
    // admits within the level.
    assert_eq!(
        served.deliver(booking_health("sale", 0.5, 2)).await,
        [Outcome::Applied]
    );
    assert_eq!(served.tick().await.admitted(), 0);
    assert_eq!(served.halts().await, 0);
    clock.advance(40_000);
    assert_eq!(served.tick().await.admitted(), 5);
    clock.advance(1000);
    assert_eq!(served.tick().await.admitted(), 0, "5 is the level's room");
    let summary = served.app.http("GET", "/queues/sale", None).await;
    assert_eq!(summary.body["active"], 5, "{:?}", summary.body);
    // A waiter's high end counts the 5 places the level leaves: position 5, one session.
    let waiter = served.status("sale", &tokens[9]).await;
    assert_eq!(waiter.body["position"], 5, "{:?}", waiter.body);
    assert_eq!(waiter.body["estimatedWaitRange"]["high"], 600);

    // The operator's pause is not the health's to lift: level 0 and then 1 leave it paused.
    served.create("sale", r#"{"paused": true}"#).await;
    served.deliver(booking_health("sale", 0.0, 1)).await;
    served.deliver(booking_health("sale", 1.0, 0)).await;
    clock.advance(120_000);
    assert_eq!(served.tick().await.admitted(), 0);
    assert_eq!(served.tick().await.admitted(), 0);
    served.create("sale", r#"{"paused": false}"#).await;
    assert_eq!(
        served.tick().await.admitted(),
        5,
        "the whole capacity, at level 1"
    );
}

#[tokio::test]
async fn a_capacity_ramp_paces_the_line_from_when_it_is_set() {
    let served = Served::start().await;
    let clock = &served.clock;
    served
        .create(
            "sale",
            r#"{"capacity": 10, "capacityRamp": {"from": 2, "step": 3, "everySeconds": 20, "to": 8}}"#,
        )
        .await;
    served.joined("sale", 20, 100).await;
    clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 2);
    clock.advance(20_000);
    assert_eq!(served.tick().await.admitted(), 3);
    clock.advance(40_000);
    assert_eq!(served.tick().await.admitted(), 3, "the ramp ends at 8");
    let summary = served.app.http("GET", "/queues/sale", None).await;
    assert_eq!(
        summary.body["settings"]["capacityRamp"]["to"], 8,
        "{:?}",
        summary.body
    );
}

/// The line computes the pace in Rust (`striped_pace`), the summary in Lua (`common.lua`):
/// the tick admits exactly the summary's capacity in force times its health level.
#[tokio::test]
async fn the_lines_pace_is_the_one_the_summary_shows() {
    let served = Served::start().await;
    let clock = &served.clock;
    served
        .create(
            "sale",
            r#"{"capacity": 10, "capacityRamp": {"from": 6, "step": 2, "everySeconds": 3600, "to": 10}}"#,
        )
        .await;
    // A fall takes effect at once: 0.5 from now, for two minutes.
    served.deliver(booking_health("sale", 0.5, 0)).await;
    served.joined("sale", 12, 100).await;
    clock.advance(2000);
    let report = served.tick().await;
    let admitted = report.admitted();
    // The tick publishes the pace it admits at, once.
    let paced = |report: &lineup::queue::PromotionReport| -> Vec<Value> {
        report
            .events()
            .filter(|e| e.kind == lineup::queue::QueueEventKind::PaceChanged)
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    };
    let changed = paced(&report);
    assert_eq!(changed.len(), 1, "{report:?}");
    assert_eq!(
        (&changed[0]["capacity"], &changed[0]["reason"]),
        (&json!(6), &json!("ramp"))
    );
    assert_eq!(changed[0]["healthLevel"], 0.5, "{changed:?}");
    clock.advance(1000);
    assert_eq!(paced(&served.tick().await), Vec::<Value>::new());
    let summary = served.app.http("GET", "/queues/sale", None).await;
    let pace = &summary.body["pace"];
    assert_eq!(pace["capacity"], 6, "{:?}", summary.body);
    assert_eq!(pace["limitedBy"], "ramp");
    assert_eq!(pace["health"]["level"], 0.5);
    let in_force = pace["capacity"].as_f64().unwrap() * pace["health"]["level"].as_f64().unwrap();
    assert_eq!(admitted, in_force.floor() as u64, "{:?}", summary.body);
}

#[tokio::test]
async fn closes_at_ends_arrivals_and_the_tick_says_so_once() {
    let served = Served::start().await;
    let clock = &served.clock;
    let closes = chrono::DateTime::from_timestamp_millis(clock.now_ms() + 10_000).unwrap();
    let settings = json!({"capacity": 1, "closesAt": lineup_tests::draw::rfc(closes)});
    served.create("sale", &settings.to_string()).await;
    let tokens = served.joined("sale", 2, 1000).await;
    clock.advance(2000);
    let closed = |report: &lineup::queue::PromotionReport| {
        report
            .events()
            .filter(|e| e.kind == lineup::queue::QueueEventKind::Closed)
            .count()
    };
    let report = served.tick().await;
    assert_eq!((report.admitted(), closed(&report)), (1, 0));
    // Past closesAt: no new place; those in line keep theirs; the tick publishes QueueClosed
    // once.
    clock.advance(7000);
    served.join("sale", 9).await.assert_problem(409);
    let report = served.tick().await;
    assert_eq!(closed(&report), 1, "{report:?}");
    assert_eq!(closed(&served.tick().await), 0);
    let waiter = served.status("sale", &tokens[1]).await;
    assert_eq!(waiter.body["status"], "waiting", "{:?}", waiter.body);
}

#[tokio::test]
async fn an_alarm_the_queue_names_halts_the_line_until_it_clears() {
    let served = Served::start().await;
    let clock = &served.clock;
    served
        .create(
            "sale",
            r#"{"capacity": 4, "healthAlarms": ["booking-5xx"]}"#,
        )
        .await;
    let tokens = served.joined("sale", 8, 1000).await;
    clock.advance(2000);
    // The first tick learns the alarm's name; the alarm goes off before the next.
    assert_eq!(served.tick().await.admitted(), 4);
    assert_eq!(
        served.deliver(alarm("booking-5xx", "ALARM", ago(2))).await,
        [Outcome::Applied]
    );
    let path = format!("/queues/sale/tokens/{}", tokens[0]);
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    clock.advance(1000);
    // That tick reads it: every stripe halts, and the freed place stays empty.
    assert_eq!(served.tick().await.admitted(), 0);
    assert_eq!(served.halts().await, STRIPES.parse::<usize>().unwrap());
    clock.advance(1000);
    let waiter = served.status("sale", &tokens[4]).await;
    assert_eq!(waiter.body["paused"], true, "{:?}", waiter.body);
    // Cleared: the level climbs back over a minute; the halt goes, and the place is filled.
    served.deliver(alarm("booking-5xx", "OK", ago(1))).await;
    clock.advance(61_000);
    served.tick().await;
    assert_eq!(served.tick().await.admitted(), 1);
    assert_eq!(served.halts().await, 0);
}

#[tokio::test]
async fn a_full_line_refuses_new_arrivals_and_keeps_those_in_it() {
    let served = Served::start().await;
    let clock = &served.clock;
    served
        .create(
            "sale",
            r#"{"capacity": 1, "maxWaiting": 3, "message": "Full, sorry"}"#,
        )
        .await;
    let tokens = served.joined("sale", 5, 1000).await;
    clock.advance(1000);
    // The tick admits one and counts four on the line: the next arrival is turned away, once
    // this container reads the count (with the settings, at most a second old).
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    let full = served.join("sale", 9).await;
    full.assert_problem(429);
    assert!(full.body["type"].as_str().unwrap().ends_with("/queue-full"));
    assert_eq!(full.body["detail"], "Full, sorry");
    assert_eq!(full.headers["retry-after"], "10");
    // Those in line keep their places, and their joins answer them.
    let again = served.join("sale", 4).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.token(), tokens[4]);
    // Two leave: room for one more once the tick has counted.
    for token in &tokens[3..5] {
        let path = format!("/queues/sale/tokens/{token}");
        assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    }
    served.tick().await;
    clock.advance(1000);
    assert_eq!(served.join("sale", 9).await.status, 201);
}

/// `reply`'s `activeUntil`, ms.
fn active_until(reply: &Reply) -> i64 {
    let until = reply.body["activeUntil"]
        .as_str()
        .unwrap_or_else(|| panic!("{:?}", reply.body));
    chrono::DateTime::parse_from_rfc3339(until)
        .unwrap()
        .timestamp_millis()
}

/// A queue's own session length, idle period and admissions a tick time its line, and a
/// change of them mid-sale times the calls after it.
#[tokio::test]
async fn a_queues_own_session_idle_period_and_admissions_a_tick_pace_its_line() {
    let served = Served::start().await;
    let clock = &served.clock;
    served
        .create(
            "own",
            r#"{"capacity": 10, "sessionSeconds": 60, "waitingIdleSeconds": 20, "admitPerTick": 2}"#,
        )
        .await;
    let tokens = served.joined("own", 8, 1000).await;
    // A waiter's mark lasts the queue's idle period (20 s), not the deployment's (120 s).
    let ttl = mark_ttl(&served, "own", "buyer-7").await;
    assert!(
        (19_000..=20_000).contains(&ttl),
        "the mark ends in {ttl} ms"
    );
    clock.advance(2000);

    // Two a tick, with room for ten.
    let admitted_at = clock.now_ms();
    assert_eq!(served.tick().await.admitted(), 2);
    clock.advance(1000);
    assert_eq!(served.tick().await.admitted(), 2);
    let first = served.status("own", &tokens[0]).await;
    assert_eq!(first.body["status"], "active", "{:?}", first.body);
    assert_eq!(active_until(&first), admitted_at + 60_000);
    // A waiter is polled for by the queue's idle period too.
    let waiter = served.status("own", &tokens[6]).await;
    assert_eq!(waiter.body["position"], 3, "{:?}", waiter.body);
    assert!((19_000..=20_000).contains(&mark_ttl(&served, "own", "buyer-6").await));

    // Mid-sale, the operator allows three a tick and sessions of 120 s: the next tick
    // admits three, each for 120 s.
    let changed = served
        .settings("own", r#"{"admitPerTick": 3, "sessionSeconds": 120}"#)
        .await;
    assert_eq!(changed.status, 200, "{:?}", changed.body);
    clock.advance(1000);
    let changed_at = clock.now_ms();
    assert_eq!(served.tick().await.admitted(), 3);
    clock.advance(1000);
    let fifth = served.status("own", &tokens[4]).await;
    assert_eq!(fifth.body["status"], "active", "{:?}", fifth.body);
    assert_eq!(active_until(&fifth), changed_at + 120_000);
    // A session begun before the change keeps its end: the gate lets the first in until
    // 60 s after its admission, and not after.
    let first = served.status("own", &tokens[0]).await;
    assert_eq!(active_until(&first), admitted_at + 60_000);
    clock.advance(admitted_at + 59_000 - clock.now_ms());
    assert!(served.gate("own", &tokens[0]).await.0);
    clock.advance(1000);
    assert!(!served.gate("own", &tokens[0]).await.0);
    assert!(served.gate("own", &tokens[4]).await.0);
}

/// Mode `passthrough` on the line: a new arrival is admitted at once while its stripe's
/// allowance lasts, else refused 429 `queue-full` with `Retry-After`. The tick allows the
/// stripes only the room left, so however many arrive at once the sessions never pass the
/// capacity; a session's end is allowed again at the next tick; those who waited from before
/// are admitted by the tick first; a pause stops admissions on arrival at once.
#[tokio::test]
async fn passthrough_admits_on_arrival_within_the_capacity() {
    let served = Served::start().await;
    let clock = &served.clock;
    served.create("pass", r#"{"capacity": 6}"#).await;
    served.joined("pass", 2, 1000).await;
    served.create("pass", r#"{"mode": "passthrough"}"#).await;
    clock.advance(1000);
    // The two waiting from before first; the 4 places left are allowed to the stripes.
    assert_eq!(served.tick().await.admitted(), 2);
    let arrivals =
        |from: usize| futures::future::join_all((from..from + 40).map(|i| served.join("pass", i)));
    let admitted_of = |replies: &[lineup_tests::Reply]| {
        let mut admitted = 0;
        for reply in replies {
            if reply.status == 201 {
                assert_eq!(reply.body["status"], "active", "{:?}", reply.body);
                admitted += 1;
            } else {
                reply.assert_problem(429);
                assert!(reply.body["type"]
                    .as_str()
                    .unwrap()
                    .ends_with("/queue-full"));
                let retry: u64 = reply.headers["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap();
                assert!((1..=10).contains(&retry), "Retry-After {retry}");
            }
        }
        admitted
    };
    let first = arrivals(2).await;
    assert_eq!(admitted_of(&first), 4, "the capacity of 6 holds");
    // Full: the next tick allows nothing more, and nobody more gets in.
    clock.advance(1000);
    assert_eq!(served.tick().await.admitted(), 0);
    assert_eq!(admitted_of(&arrivals(42).await), 0);
    // One leaves: the next tick allows its place again, and one arrival takes it.
    let token = first.iter().find(|r| r.status == 201).unwrap().token();
    let path = format!("/queues/pass/tokens/{token}");
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    clock.advance(1000);
    served.tick().await;
    assert_eq!(admitted_of(&arrivals(82).await), 1);
    let summary = served.app.http("GET", "/queues/pass", None).await;
    clock.advance(1000);
    served.tick().await;
    let summary_after = served.app.http("GET", "/queues/pass", None).await;
    assert_eq!(
        summary_after.body["active"], 6,
        "{:?} {:?}",
        summary.body, summary_after.body
    );

    // Paused: nobody is admitted on arrival, whatever the room.
    let path = format!(
        "/queues/pass/tokens/{}",
        first.iter().rfind(|r| r.status == 201).unwrap().token()
    );
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    served.create("pass", r#"{"paused": true}"#).await;
    clock.advance(1000);
    served.tick().await;
    assert_eq!(admitted_of(&arrivals(122).await), 0);
    // Back in queue mode, an arrival waits in line.
    served
        .create("pass", r#"{"paused": false, "mode": "queue"}"#)
        .await;
    clock.advance(1000);
    served.tick().await;
    let queued = served.join("pass", 500).await;
    assert_eq!(queued.status, 201, "{:?}", queued.body);
    assert_eq!(queued.body["status"], "waiting", "{:?}", queued.body);
}

/// A capacity pool on the line: two queues share the pool's capacity, each admitting only
/// within the allotment its pool's ledger granted, and the places move to where people wait.
#[tokio::test]
async fn a_pool_shares_its_capacity_between_two_lines() {
    let served = Served::start().await;
    let clock = &served.clock;
    let app = &served.app;
    let pool = app
        .http("PUT", "/pools/shared", Some(r#"{"capacity": 10}"#))
        .await;
    assert_eq!(pool.status, 200, "{:?}", pool.body);
    for queue in ["pa", "pb"] {
        served
            .create(queue, r#"{"pool": "shared", "capacity": 100}"#)
            .await;
    }
    let tokens_a = served.joined("pa", 15, 100).await;
    let tokens_b = served.joined("pb", 12, 100).await;
    clock.advance(2000);
    let active = |queue: &'static str| async move {
        let path = format!("/queues/{queue}");
        let summary = app.http("GET", &path, None).await;
        summary.body["active"].as_u64().unwrap_or(0)
    };
    // Report, grant, apply: a few ticks fill the pool, never past it.
    for _ in 0..5 {
        served.tick().await;
        clock.advance(1000);
        assert!(active("pa").await + active("pb").await <= 10);
    }
    let (in_a, in_b) = (active("pa").await, active("pb").await);
    assert_eq!(in_a + in_b, 10, "the whole capacity in use");
    assert!(in_a >= 3 && in_b >= 3, "shared: {in_a} and {in_b}");
    let shown = app.http("GET", "/pools/shared", None).await.body;
    assert!(shown["allotted"].as_u64().unwrap() <= 10, "{shown}");

    // Everyone in the first queue leaves: its places go to the second, within the pool.
    for token in &tokens_a {
        app.http("DELETE", &format!("/queues/pa/tokens/{token}"), None)
            .await;
    }
    for _ in 0..6 {
        served.tick().await;
        clock.advance(1000);
        assert!(active("pa").await + active("pb").await <= 10);
    }
    assert_eq!(active("pa").await, 0);
    assert_eq!(active("pb").await, 10);

    // The booking system says the whole pool is down: every stripe of both queues halts in
    // the event applier's round trip, and a place freed meanwhile stays empty. Level 1 lifts it.
    let pool_health = |level: f64, ms_ago: i64| {
        let mut event = booking_health("pa", level, ms_ago);
        event["detail"] = json!({"pool": "shared", "level": level});
        event
    };
    assert_eq!(
        served.deliver(pool_health(0.0, 2)).await,
        [Outcome::Applied]
    );
    let stripes = STRIPES.parse::<usize>().unwrap();
    assert_eq!(
        served.halts().await,
        2 * stripes,
        "every stripe of the pool"
    );
    let mut freed = false;
    for token in &tokens_b {
        if served.status("pb", token).await.body["status"] == "active" {
            let path = format!("/queues/pb/tokens/{token}");
            assert_eq!(app.http("DELETE", &path, None).await.status, 204);
            freed = true;
            break;
        }
    }
    assert!(freed, "one of pb's buyers holds a session");
    for _ in 0..2 {
        assert_eq!(served.tick().await.admitted(), 0);
        clock.advance(1000);
    }
    assert_eq!(
        served.deliver(pool_health(1.0, 1)).await,
        [Outcome::Applied]
    );
    // The level climbs back from 0 over a minute (healthRecoverySeconds).
    served.tick().await;
    assert_eq!(served.halts().await, 0);
    clock.advance(61_000);
    for _ in 0..4 {
        served.tick().await;
        clock.advance(1000);
    }
    assert_eq!(active("pb").await, 10, "the freed place is filled again");
}
