//! The operator changes the plan while buyers wait: the opening brought forward or put back,
//! the idle period changed, capacity changed, admissions paused and resumed, the schedule
//! removed. A buyer who polls when told keeps its place, whatever the operator changes
//! afterwards; nobody is admitted before the opening in force; and the draw, once revealed,
//! stays checkable (docs/draw.md, docs/waiting-room.md). Through the queue API's handlers,
//! with real clocks.

use std::future::Future;
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::join_all;
use lineup::ids::QueueId;
use lineup::queue::{PromotionReport, QueueEvent, QueueEventKind};
use lineup_tests::draw::{
    draw_order, draw_value, draw_value_hex, in_seconds, revealed_seed, rfc, until,
};
use lineup_tests::queue::{join, leave, put_settings, status, summary};
use lineup_tests::{sleep, TestApp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// A pre-queue member as its join left it: who, its token and when it was told to poll.
struct Member {
    user: String,
    token: String,
    poll_after: u64,
}

/// `count` buyers join `queue` at once before its opening; each is in the pre-queue.
async fn prequeue(app: &TestApp, queue: &str, count: usize) -> Vec<Member> {
    let users: Vec<String> = (0..count).map(|i| format!("fan{i:02}")).collect();
    let joined = join_all(users.iter().map(|user| join(app, queue, user))).await;
    users
        .into_iter()
        .zip(joined)
        .map(|(user, joined)| {
            assert_eq!(joined.status, 201, "{}", joined.body);
            assert_eq!(joined.body["status"], "prequeue", "{}", joined.body);
            Member {
                user,
                token: joined.token(),
                poll_after: joined.body["pollAfterSeconds"].as_u64().expect("told"),
            }
        })
        .collect()
}

/// How an obedient buyer's polling ended.
#[derive(Debug)]
enum Obeyed {
    /// Admitted: the status that said so, and the draw value it showed (if any).
    Admitted(Value),
    /// Still in line at the deadline.
    Waiting,
}

/// `member` sleeps exactly as told and polls again, until it is admitted (and then leaves, when
/// `leave_when_admitted`) or `deadline` passes.
/// Every answer must be 200 `prequeue`, `waiting` or `active`, or a 503 whose `Retry-After` it
/// follows; anything else (410 `dropped-for-absence` above all) is returned as the error, with
/// when it came.
async fn obey(
    app: &TestApp,
    queue: &str,
    member: &Member,
    deadline: DateTime<Utc>,
    leave_when_admitted: bool,
) -> Result<Obeyed, String> {
    let mut after = member.poll_after;
    loop {
        sleep(Duration::from_secs(after)).await;
        if Utc::now() > deadline {
            return Ok(Obeyed::Waiting);
        }
        let reply = status(app, queue, &member.token).await;
        let state = reply.body["status"].as_str().unwrap_or("");
        match (reply.status, state) {
            (200, "active") => {
                if leave_when_admitted {
                    assert_eq!(leave(app, queue, &member.token).await.status, 204);
                }
                return Ok(Obeyed::Admitted(reply.body));
            }
            (200, "prequeue" | "waiting") => {
                after = reply.body["pollAfterSeconds"].as_u64().expect("told");
            }
            // Redis shed the poll (many buyers told the same second): try again when told.
            (503, _) => {
                after = reply
                    .headers
                    .get("retry-after")
                    .and_then(|v| v.to_str().ok()?.parse().ok())
                    .expect("Retry-After on a 503");
            }
            _ => {
                return Err(format!(
                    "{} polled as told and got {} at {}: {}",
                    member.user,
                    reply.status,
                    rfc(Utc::now()),
                    reply.body
                ))
            }
        }
    }
}

/// Every member of `members` obeys until `deadline`, while the promoter ticks twice a second;
/// returns each one's ending and every event the ticks reported.
async fn obey_all(
    app: &TestApp,
    queue: &str,
    members: &[Member],
    deadline: DateTime<Utc>,
) -> (Vec<Result<Obeyed, String>>, Vec<QueueEvent>) {
    let mut events = Vec::new();
    let polls = join_all(members.iter().map(|m| obey(app, queue, m, deadline, false)));
    let endings = ticking(app, queue, polls, |report| {
        events.extend(report.events().cloned());
    })
    .await;
    (endings, events)
}

/// Runs `work` while a promotion tick runs for `queue` every half second, each tick's report
/// handed to `seen`.
async fn ticking<T>(
    app: &TestApp,
    queue: &str,
    work: impl Future<Output = T>,
    mut seen: impl FnMut(&PromotionReport),
) -> T {
    let queue = QueueId::parse(queue).expect("queue id");
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = sleep(Duration::from_millis(500)) => {
                let report = app.room().promote(std::slice::from_ref(&queue)).await.expect("tick");
                seen(&report);
            }
        }
    }
}

fn assert_nobody_dropped(endings: &[Result<Obeyed, String>], events: &[QueueEvent]) {
    let dropped: Vec<&String> = endings.iter().filter_map(|e| e.as_ref().err()).collect();
    assert!(
        dropped.is_empty(),
        "{} obedient buyers lost their place: {dropped:#?}",
        dropped.len()
    );
    let abandoned: Vec<&QueueEvent> = events
        .iter()
        .filter(|e| e.kind == QueueEventKind::Abandoned)
        .collect();
    assert!(abandoned.is_empty(), "{abandoned:?}");
}

/// `endings`, with each member still `Waiting` read once more: one the ticks admitted after its
/// last poll before the deadline is `Admitted` by what that read shows.
async fn settled(
    app: &TestApp,
    queue: &str,
    members: &[Member],
    endings: Vec<Result<Obeyed, String>>,
) -> Vec<Result<Obeyed, String>> {
    let mut settled = Vec::with_capacity(endings.len());
    for (member, ending) in members.iter().zip(endings) {
        settled.push(match ending {
            Ok(Obeyed::Waiting) => {
                let reply = status(app, queue, &member.token).await;
                if reply.status == 200 && reply.body["status"] == "active" {
                    Ok(Obeyed::Admitted(reply.body))
                } else {
                    Ok(Obeyed::Waiting)
                }
            }
            other => other,
        });
    }
    settled
}

fn commitment(summary: &Value) -> String {
    summary["draw"]["seedSha256"]
        .as_str()
        .expect("commitment")
        .to_owned()
}

/// docs/draw.md: moving a pending opening keeps the seed, and a member who polls as told is
/// never dropped. Brought forward by 12 s (idle period 6 s), the members come back when they
/// were told, at the old opening, after the new opening's idle period has passed.
#[tokio::test]
async fn bringing_the_opening_forward_keeps_every_member_who_polls_as_told() {
    let app = TestApp::spawn(&[("WAITING_IDLE_SECONDS", "6"), ("QUEUE_CAPACITY", "2")]).await;
    let opens = in_seconds(14);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let committed = commitment(&summary(&app, "gig").await.body);
    let members = prequeue(&app, "gig", 20).await;
    assert!(members.iter().all(|m| m.poll_after >= 12));

    let earlier = in_seconds(1);
    let moved = put_settings(&app, "gig", &json!({ "opensAt": rfc(earlier) })).await;
    assert_eq!(moved.status, 200, "{}", moved.body);
    assert_eq!(commitment(&summary(&app, "gig").await.body), committed);

    let (endings, events) = obey_all(&app, "gig", &members, opens + secs(10)).await;
    assert_nobody_dropped(&endings, &events);
    // The first two were admitted at the new opening, before they came back.
    let admitted = endings
        .iter()
        .filter(|e| matches!(e, Ok(Obeyed::Admitted(_))))
        .count();
    assert_eq!(admitted, 2, "{endings:?}");
    assert_eq!(summary(&app, "gig").await.body["waiting"], 18);
}

/// docs/waiting-room.md: changing the idle period gives every waiter one whole new idle period
/// to poll. Lowered from 60 s to 5 s before the opening, the pre-queue members come back when
/// told under 60 s: the opening plus a jitter of up to 20 s.
#[tokio::test]
async fn lowering_the_idle_period_before_the_opening_keeps_the_prequeue() {
    let app = TestApp::spawn(&[("WAITING_IDLE_SECONDS", "60"), ("QUEUE_CAPACITY", "1")]).await;
    let opens = in_seconds(8);
    put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    let members = prequeue(&app, "gig", 20).await;
    let latest = members.iter().map(|m| m.poll_after).max().unwrap_or(0);
    assert!(latest >= 12, "the jitter spreads them over 20 s: {latest}");

    let lowered = put_settings(&app, "gig", &json!({ "waitingIdleSeconds": 5 })).await;
    assert_eq!(lowered.status, 200, "{}", lowered.body);

    let (endings, events) = obey_all(&app, "gig", &members, opens + secs(30)).await;
    assert_nobody_dropped(&endings, &events);
    assert_eq!(summary(&app, "gig").await.body["waiting"], 19);
}

/// Lowered after the opening (60 s to 5 s), a waiter told to poll in up to 20 s under the old
/// idle period keeps its place when it does.
#[tokio::test]
async fn lowering_the_idle_period_keeps_waiters_told_a_longer_poll() {
    let app = TestApp::spawn(&[("WAITING_IDLE_SECONDS", "60"), ("QUEUE_CAPACITY", "1")]).await;
    let mut members = Vec::new();
    for i in 0..200 {
        let user = format!("fan{i:03}");
        let joined = join(&app, "gig", &user).await;
        assert!(joined.status == 201, "{}", joined.body);
        members.push(Member {
            user,
            token: joined.token(),
            poll_after: joined.body["pollAfterSeconds"].as_u64().expect("told"),
        });
        // The first session has lasted 1.5 s when the others join: their waits are at least
        // that per place ahead.
        if i == 0 {
            sleep(Duration::from_millis(1500)).await;
        }
    }
    // Those told 10 s or more (a quarter of the low end of their wait, up to a third of 60 s).
    members.retain(|m| m.poll_after >= 10);
    assert!(members.len() >= 50, "{}", members.len());

    let lowered = put_settings(&app, "gig", &json!({ "waitingIdleSeconds": 5 })).await;
    assert_eq!(lowered.status, 200, "{}", lowered.body);
    // Each polls once, when told (the deadline stops them after that poll).
    let deadline = Utc::now() + secs(22);
    let (endings, events) = obey_all(&app, "gig", &members, deadline).await;
    assert_nobody_dropped(&endings, &events);
    assert_eq!(summary(&app, "gig").await.body["waiting"], 199);
}

/// docs/draw.md's trust model: anyone can check the revealed seed against the commitment.
/// Removing the schedule just after the opening keeps the drawn members' places, the draw in
/// the summary while any of them waits, and `QueueOpened` carries the draw.
#[tokio::test]
async fn removing_the_schedule_after_the_opening_keeps_the_draw_and_its_members() {
    let app = TestApp::spawn(&[("WAITING_IDLE_SECONDS", "30"), ("QUEUE_CAPACITY", "1")]).await;
    let opens = in_seconds(8);
    put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    let committed = commitment(&summary(&app, "gig").await.body);
    let members = prequeue(&app, "gig", 20).await;

    until(opens + chrono::Duration::milliseconds(200)).await;
    let removed = put_settings(&app, "gig", &json!({ "opensAt": null })).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert!(removed.body["opensAt"].is_null(), "{}", removed.body);
    let after = summary(&app, "gig").await.body;
    assert!(after["opensAt"].is_null(), "{after}");
    let seed = revealed_seed(&after["draw"], &committed);
    assert_eq!(after["draw"]["members"], 20, "{after}");

    let (endings, events) = obey_all(&app, "gig", &members, opens + secs(20)).await;
    assert_nobody_dropped(&endings, &events);
    let opened: Vec<&QueueEvent> = events
        .iter()
        .filter(|e| e.kind == QueueEventKind::Opened)
        .collect();
    assert_eq!(opened.len(), 1, "{opened:?}");
    let detail = serde_json::to_value(opened[0]).expect("detail");
    assert_eq!(revealed_seed(&detail["draw"], &committed), seed);
    assert_eq!(detail["draw"]["members"], 20, "{detail}");
    // The member admitted is the draw's first, and shows the value that placed it.
    let users: Vec<String> = members.iter().map(|m| m.user.clone()).collect();
    let first = &draw_order(&seed, &users)[0];
    let admitted: Vec<&Value> = endings
        .iter()
        .filter_map(|e| match e {
            Ok(Obeyed::Admitted(body)) => Some(body),
            _ => None,
        })
        .collect();
    assert_eq!(admitted.len(), 1, "{endings:?}");
    assert_eq!(admitted[0]["draw"]["value"], draw_value_hex(&seed, first));
    assert_eq!(
        summary(&app, "gig").await.body["draw"]["seed"],
        after["draw"]["seed"],
        "the draw stays while its members wait"
    );
}

fn secs(s: i64) -> chrono::Duration {
    chrono::Duration::seconds(s)
}

/// What the operator has set that decides whether anyone may be admitted.
#[derive(Debug, Clone, Copy)]
struct Gates {
    /// The opening in force, if any.
    opens: Option<DateTime<Utc>>,
    paused: bool,
}

impl Gates {
    fn admit_at(&self, at: DateTime<Utc>) -> bool {
        !self.paused && self.opens.is_none_or(|opens| at >= opens)
    }
}

/// One change of the gates: sent at `sent`, answered at `answered`, in force from some instant
/// between them.
#[derive(Debug)]
struct Change {
    sent: DateTime<Utc>,
    answered: DateTime<Utc>,
    before: Gates,
    after: Gates,
}

/// The operator's plan as the test has set it: the gates now and every change of them.
struct Plan {
    design: Design,
    queue: String,
    gates: Gates,
    changes: Vec<Change>,
    /// When admissions were last paused.
    paused_at: DateTime<Utc>,
    /// The latest a postponed opening may be: early enough before the plan's deadline that
    /// the line opens and admits (a pause ends within 4 s), so the plan checks admissions.
    latest_opening: DateTime<Utc>,
    /// Every request, with its answer, for a failure's message.
    log: Vec<String>,
}

impl Plan {
    fn pending(&self) -> bool {
        self.gates.opens.is_some_and(|opens| Utc::now() < opens)
    }

    /// Whether the gates in force at `at` let anyone in: those of the last change answered
    /// before it, or, within a change, those on either side of it.
    fn admits_at(&self, initial: Gates, at: DateTime<Utc>) -> bool {
        let mut gates = vec![initial];
        for change in &self.changes {
            if change.answered <= at {
                gates = vec![change.after];
            } else if change.sent <= at {
                gates = vec![change.before, change.after];
            }
        }
        gates.iter().any(|g| g.admit_at(at))
    }

    /// PUTs `body`; asserts the answer is `expected`, and follows what it set.
    async fn put(&mut self, app: &TestApp, body: Value, expected: u16) {
        let sent = Utc::now();
        let reply = put_settings(app, &self.queue, &body).await;
        let answered = Utc::now();
        self.log
            .push(format!("{} {body} → {}", rfc(sent), reply.status));
        assert_eq!(
            reply.status, expected,
            "{body}: {}\n{:#?}",
            reply.body, self.log
        );
        if reply.status != 200 {
            return;
        }
        let before = self.gates;
        if let Some(opens) = body.get("opensAt") {
            self.gates.opens = opens.as_str().map(|at| at.parse().expect("RFC 3339"));
        }
        if let Some(paused) = body["paused"].as_bool() {
            self.gates.paused = paused;
            self.paused_at = answered;
        }
        self.changes.push(Change {
            sent,
            answered,
            before,
            after: self.gates,
        });
    }

    /// One of the operator's changes, at random, with the answer the docs promise for it.
    async fn change(&mut self, app: &TestApp, rng: &mut StdRng) {
        let (body, expected) = match rng.random_range(0..6) {
            // Postpone or bring forward a pending opening (keeping it ahead, past the
            // pre-queue's opening); after the opening a new one is refused while buyers wait.
            0 | 1 => {
                // Brought forward close to now as often as put back.
                let ahead = if rng.random_bool(0.5) {
                    rng.random_range(1..=3)
                } else {
                    rng.random_range(4..=12)
                };
                let at = in_seconds(ahead).min(self.latest_opening);
                if at < in_seconds(1) {
                    return;
                }
                let opens = json!({ "opensAt": rfc(at) });
                if self.pending() {
                    (opens, 200)
                } else if summary(app, &self.queue).await.body["waiting"].as_u64() > Some(0) {
                    (opens, 409)
                } else {
                    // An empty line may start a new draw: not this plan's.
                    return;
                }
            }
            2 => (
                json!({ "waitingIdleSeconds": rng.random_range(5..=20) }),
                200,
            ),
            3 => (json!({ "capacity": rng.random_range(1..=5) }), 200),
            4 => (json!({ "paused": !self.gates.paused }), 200),
            // Removing the schedule: refused while the pre-queue waits, allowed after the
            // opening; on the line, where the draw decides each buyer's stripe, never.
            _ => {
                let expected = if self.pending() || self.design == Design::Line {
                    409
                } else {
                    200
                };
                (json!({ "opensAt": null }), expected)
            }
        };
        self.put(app, body, expected).await;
    }
}

/// The property behind docs/draw.md and docs/waiting-room.md: pre-queue members poll exactly
/// as told, and leave once admitted (as a buyer who pays does), while the operator, at random
/// moments, postpones or brings forward the opening, changes the idle period and capacity,
/// pauses and resumes, and removes the schedule where that is allowed. Nobody who obeys is
/// dropped; nobody is admitted before the opening in force or while paused (by a tick or by a
/// leave's promotion); the draw stays checkable in the summary while its members wait; and
/// the admissions follow the draw. `LINEUP_REPLAN_SEED` replays one plan's choices.
#[tokio::test]
async fn whatever_the_operator_changes_an_obedient_buyer_keeps_its_place() {
    plans(Design::Tag).await;
}

/// The same property on the striped line (`LINE_STRIPES`), its 24 members spread over four
/// stripes: an opening there is moved while pending and never removed
/// (docs/striped-line.md), and each admitted member shows its draw value.
#[tokio::test]
async fn whatever_the_operator_changes_on_the_line_an_obedient_buyer_keeps_its_place() {
    plans(Design::Line).await;
}

/// Where a queue's buyers are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Design {
    /// Under the queue's one hash tag.
    Tag,
    /// On the striped line.
    Line,
}

/// Three random plans at once, each in a queue of its own, on `design`.
async fn plans(design: Design) {
    let seed: u64 = std::env::var("LINEUP_REPLAN_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("the plans' seed: LINEUP_REPLAN_SEED={seed}");
    let session = PLAN_SESSION_SECONDS.to_string();
    let mut env = vec![
        ("WAITING_IDLE_SECONDS", "20"),
        ("QUEUE_CAPACITY", "3"),
        ("SESSION_SECONDS", session.as_str()),
        // The three plans' 72 members join at once; none is shed.
        ("REDIS_MAX_IN_FLIGHT", "100"),
    ];
    if design == Design::Line {
        env.extend([("LINE_STRIPES", "4"), ("QUEUE_CREATION", "operator")]);
    }
    let app = TestApp::spawn(&env).await;
    join_all((0..3).map(|i| one_plan(&app, design, format!("gig{i}"), seed.wrapping_add(i)))).await;
}

/// The length of a session in the plan test: longer than any poll a member is told.
const PLAN_SESSION_SECONDS: i64 = 30;

/// One random plan, from `seed`, in `queue`.
async fn one_plan(app: &TestApp, design: Design, queue: String, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let q = queue.as_str();
    let opens = in_seconds(rng.random_range(8..=14));
    let set = put_settings(app, q, &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let committed = commitment(&summary(app, q).await.body);
    let members = prequeue(app, q, 24).await;
    let users: Vec<String> = members.iter().map(|m| m.user.clone()).collect();

    let initial = Gates {
        opens: Some(opens),
        paused: false,
    };
    let deadline = Utc::now() + secs(40);
    let mut plan = Plan {
        design,
        queue: queue.clone(),
        gates: initial,
        changes: Vec::new(),
        paused_at: Utc::now(),
        latest_opening: deadline - secs(15),
        log: Vec::new(),
    };
    let mut events = Vec::new();
    let queue = QueueId::parse(q).expect("queue id");
    let polls = join_all(members.iter().map(|m| obey(app, q, m, deadline, true)));
    tokio::pin!(polls);
    let endings = loop {
        tokio::select! {
            endings = &mut polls => break endings,
            _ = sleep(Duration::from_millis(500)) => {}
        }
        // A pause ends within 4 s, so the line moves.
        if plan.gates.paused && Utc::now() - plan.paused_at > secs(4) {
            plan.put(app, json!({ "paused": false }), 200).await;
        } else if rng.random_ratio(1, 3) {
            plan.change(app, &mut rng).await;
        }
        let tick = app
            .room()
            .promote(std::slice::from_ref(&queue))
            .await
            .expect("tick");
        let after_tick = Utc::now();
        for event in tick.events() {
            if event.kind == QueueEventKind::Activated {
                assert!(
                    plan.gates.admit_at(after_tick),
                    "a tick admitted at {} through {:?}: {event:?}\n{:#?}",
                    rfc(after_tick),
                    plan.gates,
                    plan.log
                );
            }
        }
        events.extend(tick.events().cloned());
        // The draw: committed before the opening, revealed after it while its members wait.
        let now = summary(app, q).await.body;
        if plan.pending() {
            assert_eq!(commitment(&now), committed, "{now}");
            assert!(now["draw"]["seed"].is_null(), "{now}");
        } else if now["waiting"].as_u64() > Some(0) {
            revealed_seed(&now["draw"], &committed);
        }
    };
    eprintln!("{queue}: {:#?}", plan.log);
    assert_nobody_dropped(&endings, &events);
    // A member admitted after its last poll before the deadline never saw it: one more read of
    // each member still waiting, once nobody can be admitted any more, finds every admission.
    let endings = settled(app, q, &members, endings).await;

    // Each admission (a tick's or a leave's) came while the gates were open: its instant is
    // the session's end less its length.
    let mut admitted: Vec<(DateTime<Utc>, Value, &str)> = Vec::new();
    for (member, ending) in members.iter().zip(&endings) {
        if let Ok(Obeyed::Admitted(body)) = ending {
            let until: DateTime<Utc> = body["activeUntil"]
                .as_str()
                .expect("activeUntil")
                .parse()
                .expect("RFC 3339");
            let at = until - secs(PLAN_SESSION_SECONDS);
            assert!(
                plan.admits_at(initial, at),
                "{} admitted at {} through closed gates: {:#?}\n{:#?}",
                member.user,
                rfc(at),
                plan.changes,
                plan.log
            );
            admitted.push((at, body.clone(), &member.user));
        }
    }
    assert!(
        !admitted.is_empty(),
        "nobody was admitted in 40 s\n{:#?}",
        plan.log
    );

    // The opening was announced once, with the draw; the admissions follow the draw, and each
    // admitted member's value and ticket are the draw's.
    let opened: Vec<Value> = events
        .iter()
        .filter(|e| e.kind == QueueEventKind::Opened)
        .map(|e| serde_json::to_value(e).expect("detail"))
        .collect();
    assert_eq!(opened.len(), 1, "{opened:?}");
    let seed = revealed_seed(&opened[0]["draw"], &committed);
    // One tick's admissions share an instant: among them, the draw decides.
    admitted.sort_by_key(|(at, _, user)| (*at, draw_value(&seed, user)));
    let order: Vec<&str> = admitted.iter().map(|(_, _, user)| *user).collect();
    assert_eq!(order, draw_order(&seed, &users)[..order.len()]);
    for (_, body, user) in &admitted {
        let value = draw_value(&seed, user) >> 24;
        match design {
            Design::Tag => assert_eq!(body["ticket"].as_u64().map(|t| t >> 24), Some(value)),
            Design::Line => assert_eq!(body["draw"]["value"], format!("{value:07x}"), "{body}"),
        }
    }
}
