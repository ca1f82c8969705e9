//! The striped line served by the functions (`LINE_STRIPES`): buyers take places, poll, are
//! admitted in order by the promoter's tick, pass the gatekeeper, leave and pay, through the
//! same handlers the Lambdas run, with a test clock the functions take their time from. What
//! the line does not do yet is refused, never ignored.

use std::sync::Arc;

use lineup::clock::Clock;
use lineup::ranking::Outcome;
use lineup_tests::{authorizer_request, MovedClock, Reply, TestApp};
use serde_json::{json, Value};

pub(crate) const STRIPES: &str = "4";

/// A stack on the striped line, and the clock its functions take their time from.
pub(crate) struct Served {
    pub(crate) app: TestApp,
    pub(crate) clock: Arc<MovedClock>,
}

impl Served {
    /// The stack, its clock standing 100 ms into the next second: never behind the server's,
    /// which times the settings.
    pub(crate) async fn start() -> Served {
        Served::with(&[("QUEUE_CREATION", "operator")]).await
    }

    /// [`Served::start`], with `vars` besides `LINE_STRIPES`.
    pub(crate) async fn with(vars: &[(&str, &str)]) -> Served {
        let mut all = vec![("LINE_STRIPES", STRIPES)];
        all.extend_from_slice(vars);
        let mut app = TestApp::spawn(&all).await;
        let now = chrono::Utc::now().timestamp_millis();
        let clock = MovedClock::at(now - now % 1000 + 1100);
        app.move_line_clock(clock.clone());
        Served { app, clock }
    }

    /// Creates `queue` with `settings`.
    pub(crate) async fn create(&self, queue: &str, settings: &str) {
        let set = self.settings(queue, settings).await;
        assert_eq!(set.status, 200, "{:?}", set.body);
    }

    pub(crate) async fn settings(&self, queue: &str, settings: &str) -> Reply {
        let path = format!("/queues/{queue}/settings");
        self.app.http("PUT", &path, Some(settings)).await
    }

    /// `buyer-<i>` asks for a place in `queue`.
    pub(crate) async fn join(&self, queue: &str, i: usize) -> Reply {
        let body = json!({ "userId": format!("buyer-{i}") }).to_string();
        let path = format!("/queues/{queue}/tokens");
        self.app.http("POST", &path, Some(&body)).await
    }

    /// `buyers` new places in `queue`, `apart_ms` apart by the clock; their tokens.
    pub(crate) async fn joined(&self, queue: &str, buyers: usize, apart_ms: i64) -> Vec<String> {
        let mut tokens = Vec::new();
        for i in 0..buyers {
            let joined = self.join(queue, i).await;
            assert_eq!(joined.status, 201, "{:?}", joined.body);
            tokens.push(joined.token());
            self.clock.advance(apart_ms);
        }
        tokens
    }

    pub(crate) async fn status(&self, queue: &str, token: &str) -> Reply {
        let path = format!("/queues/{queue}/tokens/{token}");
        self.app.http("GET", &path, None).await
    }

    /// Whether the gatekeeper lets `token` into `queue`, and its context.
    pub(crate) async fn gate(&self, queue: &str, token: &str) -> (bool, Value) {
        let request = authorizer_request(Some(token), Some(queue), None);
        self.app.authorize(request).await
    }

    /// How many stripes are halted.
    pub(crate) async fn halts(&self) -> usize {
        let keys = self.app.keys_with_ttl().await;
        keys.iter()
            .filter(|(key, _)| key.ends_with(":halt"))
            .count()
    }

    /// One promoter tick, as the Lambda's loop runs it.
    pub(crate) async fn tick(&self) -> lineup::queue::PromotionReport {
        queue_promoter::tick(&self.app.stack.promoter)
            .await
            .expect("tick")
    }

    /// `event` through `event-applier`, as EventBridge delivers it.
    pub(crate) async fn deliver(&self, event: Value) -> Vec<Outcome> {
        event_applier::apply_events(std::slice::from_ref(&event), &self.app.stack.event_applier)
            .await
    }
}

/// A `PaymentCompleted` for `user`'s session in `queue`, completed at `at_ms`, naming `ticket`
/// when given.
fn payment(id: &str, user: &str, at_ms: i64, ticket: Option<u64>) -> Value {
    let at = chrono::DateTime::from_timestamp_millis(at_ms).unwrap();
    let mut detail = json!({"paymentId": id, "concertId": "c1", "seats": 2, "queueId": "show",
        "userId": user, "completedAt": at.to_rfc3339()});
    if let Some(ticket) = ticket {
        detail["ticket"] = json!(ticket);
    }
    lineup_tests::rankings::envelope("PaymentCompleted", detail)
}

/// Asserts a 410 of problem type `kind`.
pub(crate) fn assert_gone(reply: &Reply, kind: &str) {
    reply.assert_problem(410);
    let found = reply.body["type"].as_str().unwrap();
    assert!(found.ends_with(&format!("/{kind}")), "{:?}", reply.body);
}

#[tokio::test]
async fn buyers_wait_are_admitted_in_order_pass_the_gate_and_leave() {
    let served = Served::start().await;
    let clock = &served.clock;
    // The line takes places only in a queue an operator created.
    served.join("sale", 0).await.assert_problem(404);
    assert_eq!(served.app.keys_with_ttl().await, [], "nothing was written");
    served.create("sale", r#"{"capacity": 3}"#).await;

    // Six buyers, a second apart: the line's order is theirs, whatever stripe each is on. No
    // tick has counted a new place's second yet: no position, and when to come back for one.
    let first = served.join("sale", 0).await;
    assert_eq!(first.body["status"], "waiting");
    assert!(first.body["position"].is_null(), "{:?}", first.body);
    assert!(first.body["pollAfterSeconds"].as_u64().unwrap() >= 1);
    clock.advance(1000);
    let mut tokens = vec![first.token()];
    // A new place's join is one call, the join script: no poll after it.
    let before = served.app.command_calls().await;
    let second = served.join("sale", 1).await;
    let after = served.app.command_calls().await;
    let sent =
        |name: &str| after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0);
    assert_eq!((sent("evalsha"), sent("zrank"), sent("pexpire")), (1, 0, 0));
    assert!(second.body["position"].is_null(), "{:?}", second.body);
    tokens.push(second.token());
    clock.advance(1000);
    for i in 2..6 {
        let joined = served.join("sale", i).await;
        assert_eq!(joined.status, 201, "{:?}", joined.body);
        tokens.push(joined.token());
        clock.advance(1000);
    }
    // A second join keeps the place and the token.
    let again = served.join("sale", 2).await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    assert_eq!(again.token(), tokens[2]);

    // Once the last second is sealed, the tick admits the first three, in order.
    clock.advance(1000);
    let report = served.tick().await;
    let admitted: Vec<String> = report.events().filter_map(|e| e.user_id.clone()).collect();
    assert_eq!(admitted, ["buyer-0", "buyer-1", "buyer-2"], "{report:?}");
    clock.advance(1000);
    for token in &tokens[..3] {
        let active = served.status("sale", token).await;
        assert_eq!(active.body["status"], "active", "{:?}", active.body);
        assert!(active.body["admission"].is_string(), "{:?}", active.body);
    }
    for (i, token) in tokens.iter().enumerate().skip(3) {
        let waiting = served.status("sale", token).await;
        assert_eq!(waiting.body["status"], "waiting");
        assert_eq!(waiting.body["position"], i - 2, "{:?}", waiting.body);
    }

    // The gatekeeper lets the admitted through and tells the others why not.
    let (allowed, context) = served.gate("sale", &tokens[0]).await;
    assert!(allowed, "{context}");
    assert_eq!(context["userId"], "buyer-0");
    let (allowed, context) = served.gate("sale", &tokens[3]).await;
    assert!(!allowed);
    assert_eq!(context["reason"], "waiting");

    // The first gives up the session: its token says so, the gate shuts, and the next tick
    // admits the next buyer into the freed place.
    let path = format!("/queues/sale/tokens/{}", tokens[0]);
    let left = served.app.http("DELETE", &path, None).await;
    assert_eq!(left.status, 204, "{:?}", left.body);
    assert_gone(&served.status("sale", &tokens[0]).await, "left");
    let (allowed, context) = served.gate("sale", &tokens[0]).await;
    assert!(!allowed);
    assert_eq!(context["reason"], "left");
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    assert_eq!(
        served.status("sale", &tokens[3]).await.body["status"],
        "active"
    );
    assert_eq!(served.status("sale", &tokens[4]).await.body["position"], 1);
    // The summary counts as the last tick left the line: two waiting, three sessions.
    let summary = served.app.http("GET", "/queues/sale", None).await;
    assert_eq!(summary.body["waiting"], 2, "{:?}", summary.body);
    assert_eq!(summary.body["active"], 3, "{:?}", summary.body);
}

/// The TTL (ms) of `user`'s mark in `queue`, on whichever node holds it.
pub(crate) async fn mark_ttl(served: &Served, queue: &str, user: &str) -> i64 {
    let keys = served.app.keys_with_ttl().await;
    let suffix = format!(":mark:{user}");
    let (key, _) = keys
        .iter()
        .find(|(key, _)| key.contains(&format!("{{l:{queue}:")) && key.ends_with(&suffix))
        .unwrap_or_else(|| panic!("{user}'s mark: {keys:?}"));
    redis::cmd("PTTL")
        .arg(key)
        .query_async(&mut served.app.inspect.clone())
        .await
        .unwrap()
}

/// A poll that does not know yet that its buyer was admitted (its function holds the
/// stripe's state from before the tick) keeps the admission's mark as it is: the gate reads
/// it for the whole session.
#[tokio::test]
async fn a_poll_just_after_the_admission_keeps_the_session_at_the_gate() {
    let served = Served::start().await;
    let clock = &served.clock;
    served.create("sale", r#"{"capacity": 1}"#).await;
    let token = served.joined("sale", 1, 0).await.remove(0);
    clock.advance(2000);
    // The function reads and holds the stripe's state; the tick then admits the buyer.
    assert_eq!(
        served.status("sale", &token).await.body["status"],
        "waiting"
    );
    assert_eq!(served.tick().await.admitted(), 1);
    let active = served.status("sale", &token).await;
    assert_eq!(active.body["status"], "active", "{:?}", active.body);
    // The admission's mark lasts two sessions (600 s each): the gate reads it.
    let ttl = mark_ttl(&served, "sale", "buyer-0").await;
    assert!(
        ttl > 600_000,
        "the mark ends in {ttl} ms, before the session"
    );
    // Once left, the mark says so for the line's keep, whatever the polls.
    let path = format!("/queues/sale/tokens/{token}");
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    assert_gone(&served.status("sale", &token).await, "left");
    let ttl = mark_ttl(&served, "sale", "buyer-0").await;
    assert!(ttl > 600_000, "the mark ends in {ttl} ms");
}

#[tokio::test]
async fn sold_out_stops_admissions_and_arrivals_at_once() {
    let served = Served::start().await;
    served.create("show", r#"{"capacity": 1}"#).await;
    served.joined("show", 3, 0).await;
    served
        .create("show", r#"{"soldOut": true, "capacity": 10}"#)
        .await;
    served.clock.advance(2000);
    // Every stripe halted before the settings call returned: the tick admits nobody.
    assert_eq!(served.tick().await.admitted(), 0);
    // A new arrival is turned away, with nothing written; one who holds a place keeps it and
    // is told the queue sold out.
    served.clock.advance(1000);
    assert_gone(&served.join("show", 9).await, "sold-out");
    let held = served.join("show", 1).await;
    assert_eq!(held.status, 200, "{:?}", held.body);
    assert_eq!(held.body["status"], "soldout", "{:?}", held.body);
    // Reopened, the line admits again.
    served.create("show", r#"{"soldOut": false}"#).await;
    assert_eq!(served.tick().await.admitted(), 3);
}

#[tokio::test]
async fn the_booking_systems_sold_out_halts_every_stripe_in_its_round_trip() {
    let served = Served::start().await;
    served.create("show", r#"{"capacity": 5}"#).await;
    served.joined("show", 3, 0).await;
    let event = lineup_tests::rankings::envelope("InventorySoldOut", json!({"queueId": "show"}));
    assert_eq!(served.deliver(event).await, [Outcome::Applied]);
    served.clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 0);
    // A waiter's poll says the queue sold out.
    served.clock.advance(1000);
    let waiting = served.join("show", 0).await;
    assert_eq!(waiting.status, 200, "{:?}", waiting.body);
    assert_eq!(waiting.body["status"], "soldout", "{:?}", waiting.body);
}

/// A queue whose settings are gone from their shard while buyers wait (a failover that lost
/// them) admits nobody: the environment's defaults are nobody's settings. Once an operator
/// sets them again, the line moves within them.
#[tokio::test]
async fn a_tick_admits_nobody_in_a_queue_whose_settings_are_gone() {
    let served = Served::start().await;
    served.create("lost", r#"{"capacity": 2}"#).await;
    let tokens = served.joined("lost", 8, 100).await;
    served.clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 2);
    served.clock.advance(1000);
    let mut freed = false;
    for token in &tokens {
        if served.status("lost", token).await.body["status"] == "active" {
            let path = format!("/queues/lost/tokens/{token}");
            assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
            freed = true;
            break;
        }
    }
    assert!(freed);
    let queue = lineup::ids::QueueId::parse("lost").unwrap();
    let settings = lineup::queue::keys::QueueKeys::new(&served.app.config.key_prefix, &queue);
    let _: u64 = redis::cmd("DEL")
        .arg(&settings.settings)
        .query_async(&mut served.app.inspect.clone())
        .await
        .unwrap();
    served.clock.advance(1000);
    assert_eq!(
        served.tick().await.admitted(),
        0,
        "admitted by the defaults"
    );
    served.create("lost", r#"{"capacity": 2}"#).await;
    served.clock.advance(1000);
    assert_eq!(
        served.tick().await.admitted(),
        1,
        "the freed place, within the capacity"
    );
}

#[tokio::test]
async fn a_payment_ends_its_session_once_and_the_next_tick_fills_the_place() {
    let served = Served::start().await;
    let clock = &served.clock;
    served.create("show", r#"{"capacity": 1}"#).await;
    let tokens = served.joined("show", 2, 1000).await;
    clock.advance(1000);
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    let active = served.status("show", &tokens[0]).await;
    assert_eq!(active.body["status"], "active", "{:?}", active.body);
    let ticket = active.body["ticket"].as_u64().unwrap();
    // A payment for another place of the buyer ends nothing; nor does one dated ahead; and a
    // payment delivered again ends nothing, whatever it says the second time.
    let now = clock.now_ms();
    served
        .deliver(payment("p-0", "buyer-0", now, Some(ticket + 1)))
        .await;
    served
        .deliver(payment("p-1", "buyer-0", now + 3_600_000, None))
        .await;
    served
        .deliver(payment("p-0", "buyer-0", now, Some(ticket)))
        .await;
    assert_eq!(
        served.status("show", &tokens[0]).await.body["status"],
        "active"
    );
    // The payment for it ends it: the buyer is told, and the gate shuts.
    served
        .deliver(payment("p-2", "buyer-0", now, Some(ticket)))
        .await;
    assert_gone(&served.status("show", &tokens[0]).await, "session-ended");
    let (allowed, context) = served.gate("show", &tokens[0]).await;
    assert!(!allowed);
    assert_eq!(context["reason"], "session-ended");
    // The next tick fills the place.
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    assert_eq!(
        served.status("show", &tokens[1]).await.body["status"],
        "active"
    );
    // Every key of the line ends by itself: the marks, the payments' markers, the counts.
    let line_keys: Vec<(String, i64)> = served
        .app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.contains("{l:show") || key.ends_with(":line-counts"))
        .collect();
    assert!(line_keys.iter().any(|(key, _)| key.contains(":paid:")));
    assert!(line_keys
        .iter()
        .any(|(key, _)| key.ends_with(":line-counts")));
    for (key, ttl) in &line_keys {
        assert!(*ttl > 0, "{key} has no TTL");
    }
}

#[tokio::test]
async fn a_queue_closes_only_once_every_stripe_is_empty() {
    let served = Served::start().await;
    served.create("show", r#"{"capacity": 1}"#).await;
    let tokens = served.joined("show", 2, 1000).await;
    served.clock.advance(1000);
    assert_eq!(served.tick().await.admitted(), 1);
    // One holds a session and one waits, before any tick or after: no close.
    let close = || served.app.http("DELETE", "/queues/show/settings", None);
    close().await.assert_problem(409);
    for token in &tokens {
        let path = format!("/queues/show/tokens/{token}");
        assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
        if token == &tokens[0] {
            close().await.assert_problem(409);
        }
    }
    assert_eq!(close().await.status, 204);
    served.join("show", 3).await.assert_problem(404);
}

/// `queue`'s draw seed, as its settings keep it.
async fn seed_of(served: &Served, queue: &str) -> Vec<u8> {
    let key = lineup::queue::keys::QueueKeys::new(
        &served.app.config.key_prefix,
        &lineup::ids::QueueId::parse(queue).unwrap(),
    )
    .settings;
    let mut redis = served.app.inspect.clone();
    let seed: String = redis::cmd("HGET")
        .arg(key)
        .arg("draw-seed")
        .query_async(&mut redis)
        .await
        .unwrap();
    hex::decode(seed).unwrap()
}

#[tokio::test]
async fn the_pre_queue_is_placed_by_the_draw_across_stripes_at_the_opening() {
    let served = Served::start().await;
    let clock = &served.clock;
    let opens_at = clock.now_ms() + 10_000;
    let at = chrono::DateTime::from_timestamp_millis(opens_at).unwrap();
    let settings = json!({"capacity": 2, "opensAt": lineup_tests::draw::rfc(at)});
    served.create("show", &settings.to_string()).await;
    let seed = seed_of(&served, "show").await;
    let summary = served.app.http("GET", "/queues/show", None).await;
    assert_eq!(
        summary.body["draw"]["seedSha256"],
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&seed)),
        "the queue committed to its seed: {:?}",
        summary.body
    );

    // Six members join the pre-queue: no position, and back after the opening.
    let mut tokens = Vec::new();
    for i in 0..6 {
        let joined = served.join("show", i).await;
        assert_eq!(joined.status, 201, "{:?}", joined.body);
        assert_eq!(joined.body["status"], "prequeue", "{:?}", joined.body);
        assert!(joined.body["position"].is_null());
        assert!(
            joined.body["draw"].is_null(),
            "the value shows from the opening"
        );
        let until = (opens_at - clock.now_ms()).div_euclid(1000) as u64;
        assert!(joined.body["pollAfterSeconds"].as_u64().unwrap() >= until);
        tokens.push(joined.token());
        clock.advance(500);
    }
    // Nobody is admitted before the opening.
    assert_eq!(served.tick().await.admitted(), 0);

    // After the opening a new arrival takes a place behind the draw; the first tick seals
    // every stripe past the opening, and the next admits the two lowest draw values.
    clock.advance(opens_at + 1_000 - clock.now_ms());
    let late = served.join("show", 6).await;
    assert_eq!(late.status, 201, "{:?}", late.body);
    assert_eq!(late.body["status"], "waiting", "{:?}", late.body);
    assert!(late.body["draw"].is_null());
    clock.advance(500);
    assert_eq!(served.tick().await.admitted(), 0);
    clock.advance(1_500);
    let report = served.tick().await;
    let value = |i: usize| lineup_tests::draw::draw_value(&seed, &format!("buyer-{i}")) >> 24;
    let mut by_value: Vec<usize> = (0..6).collect();
    by_value.sort_by_key(|i| value(*i));
    let admitted: Vec<String> = report.events().filter_map(|e| e.user_id.clone()).collect();
    let first: Vec<String> = by_value[..2].iter().map(|i| format!("buyer-{i}")).collect();
    assert_eq!(admitted, first, "{report:?}");
    // That tick opened the draw: QueueOpened carries it, with its six members, once.
    let opened = |report: &lineup::queue::PromotionReport| -> Vec<Value> {
        report
            .events()
            .filter(|e| e.kind == lineup::queue::QueueEventKind::Opened)
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    };
    let announced = opened(&report);
    assert_eq!(announced.len(), 1, "{report:?}");
    assert_eq!(announced[0]["draw"]["members"], 6, "{announced:?}");
    assert_eq!(announced[0]["draw"]["seed"], hex::encode(&seed));
    // The summary's draw shows the count (it reads the opening by Redis's clock, which
    // this test's does not move).
    let show = lineup::ids::QueueId::parse("show").unwrap();
    let settings = lineup::queue::keys::QueueKeys::new(&served.app.config.key_prefix, &show);
    let members: Option<u64> = redis::cmd("HGET")
        .arg(&settings.settings)
        .arg("draw-members")
        .query_async(&mut served.app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(members, Some(6));
    // A promoter that takes the lease over finds the draw open again, and announces nothing.
    served
        .app
        .stack
        .promoter
        .room
        .lines()
        .unwrap()
        .forget(&show);
    assert_eq!(opened(&served.tick().await), Vec::<Value>::new());

    // Every member is placed by its value, whatever its stripe, and shows the value; the late
    // arrival comes after them all.
    clock.advance(1_000);
    for (rank, i) in by_value.iter().enumerate() {
        let polled = served.status("show", &tokens[*i]).await;
        assert_eq!(
            polled.body["draw"]["value"],
            format!("{:07x}", value(*i)),
            "{:?}",
            polled.body
        );
        match rank {
            0 | 1 => assert_eq!(polled.body["status"], "active", "{:?}", polled.body),
            _ => assert_eq!(polled.body["position"], rank - 1, "{:?}", polled.body),
        }
    }
    let late = served.status("show", &late.token()).await;
    assert_eq!(late.body["position"], 5, "{:?}", late.body);

    // The draw decides the stripes: the opening is not removed, nor set again once passed.
    served
        .settings("show", r#"{"opensAt": null}"#)
        .await
        .assert_problem(409);
    let again = json!({"opensAt": lineup_tests::draw::rfc(at + chrono::Duration::hours(1))});
    served
        .settings("show", &again.to_string())
        .await
        .assert_problem(409);
}

/// The draw decides each buyer's stripe: an opening is set with the queue, not after; the
/// refused change writes nothing.
#[tokio::test]
async fn an_opening_is_set_with_the_queue_and_a_refused_change_writes_nothing() {
    let served = Served::start().await;
    served.create("show", r#"{"capacity": 5}"#).await;
    served
        .settings(
            "show",
            r#"{"opensAt": "2030-01-01T00:00:00Z", "capacity": 9}"#,
        )
        .await
        .assert_problem(409);
    let summary = served.app.http("GET", "/queues/show", None).await;
    assert_eq!(
        summary.body["settings"]["capacity"], 5,
        "{:?}",
        summary.body
    );
    assert!(summary.body["draw"].is_null(), "{:?}", summary.body);
}

/// The reaper leaves a line's queue to its promoter: the line's places and sessions are not
/// the single-tag queue's, and its tick takes off what lapsed. Once closed, the queue leaves
/// the registry at the reaper's next run.
#[tokio::test]
async fn the_reaper_leaves_a_lines_queue_in_the_registry_until_it_closes() {
    let served = Served::start().await;
    served.create("kept", r#"{"capacity": 1}"#).await;
    let tokens = served.joined("kept", 2, 1000).await;
    served.clock.advance(2000);
    let registered = || async {
        let registry = format!("{}:queues", served.app.config.key_prefix);
        let members: Vec<String> = redis::cmd("SMEMBERS")
            .arg(&registry)
            .query_async(&mut served.app.inspect.clone())
            .await
            .unwrap();
        members.contains(&"kept".to_owned())
    };
    queue_reaper::reap_all(&served.app.stack.reaper).await;
    assert!(registered().await, "the reaper retired a live line's queue");
    assert_eq!(served.tick().await.admitted(), 1);
    for token in &tokens {
        let path = format!("/queues/kept/tokens/{token}");
        assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    }
    let closed = served
        .app
        .http("DELETE", "/queues/kept/settings", None)
        .await;
    assert_eq!(closed.status, 204, "{:?}", closed.body);
    queue_reaper::reap_all(&served.app.stack.reaper).await;
    assert!(!registered().await, "a closed queue stays in the registry");
}
