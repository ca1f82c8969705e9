//! The scheduled opening: the pre-queue, its draw (each place recomputed from the seed the
//! summary reveals, against the commitment it published first), the gates before the
//! pre-queue opens and after closesAt, and what re-issuing or leaving can change, against a
//! real Redis with real clocks and concurrent callers.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::Utc;
use futures::{stream, StreamExt};
use lineup::ids::{QueueId, UserId};
use lineup::queue::{Issued, PromotionReport, QueueEventKind, Standing};
use lineup_tests::draw::{
    draw_order, draw_value_hex, in_seconds, placing, revealed_seed, rfc, until,
};
use lineup_tests::queue::{assert_kind, join, leave, promote, put_settings, status, summary};
use lineup_tests::{sleep, Reply, TestApp};
use serde_json::json;
use sha2::{Digest, Sha256};

/// 2^52: a draw ticket is at most this, a later arrival's above it.
const DRAW_BASE: u64 = 1 << 52;

/// How many events of `kind` a promotion tick reports.
fn events_of(report: &PromotionReport, kind: QueueEventKind) -> usize {
    report.events().filter(|e| e.kind == kind).count()
}

/// `users` join `queue` through the waiting room itself, `parallel` at a time.
async fn join_all(app: &TestApp, queue: &str, users: &[String], parallel: usize) -> Vec<Issued> {
    let room = app.room();
    let queue = QueueId::parse(queue).unwrap();
    let queue = &queue;
    stream::iter(users.iter().cloned())
        .map(|user| async move {
            let user = UserId::parse(&user).unwrap();
            room.issue(queue, &user, None).await.expect("issue")
        })
        .buffered(parallel)
        .collect()
        .await
}

/// Each issued token's position now (0 for an active one).
async fn positions(app: &TestApp, issued: &[Issued]) -> Vec<u64> {
    let room = app.room();
    stream::iter(issued)
        .map(|i| async move {
            match room.status(&i.claims).await.expect("status").standing {
                Standing::Waiting { position } => position,
                Standing::Active { .. } => 0,
                other => panic!("{other:?}"),
            }
        })
        .buffered(32)
        .collect()
        .await
}

/// An opening far enough ahead for `fill` to join first on this machine as it is now: a
/// tenth of the joins, `parallel` at a time, timed on a scratch queue of their own, then
/// the whole at three times that pace, and at least `floor` seconds. A slow or busy machine
/// moves the opening later, never the verdict.
async fn opening_after(
    app: &TestApp,
    fill: usize,
    parallel: usize,
    floor: i64,
) -> chrono::DateTime<Utc> {
    let sample: Vec<String> = (0..fill.div_ceil(10))
        .map(|i| format!("lead{i:05}"))
        .collect();
    let started = std::time::Instant::now();
    join_all(app, "lead-sample", &sample, parallel).await;
    let whole = started.elapsed().as_secs_f64() * fill as f64 / sample.len() as f64;
    in_seconds(floor.max((3.0 * whole).ceil() as i64 + 2))
}

#[tokio::test]
async fn ten_thousand_in_the_prequeue_are_placed_in_the_order_the_revealed_seed_gives() {
    const MEMBERS: usize = 10_000;
    const LATER: usize = 20;
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "5")]).await;
    let opens = opening_after(&app, MEMBERS, 32, 15).await;
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["opensAt"], rfc(opens));
    // The commitment is public from the moment the schedule is set; the seed is not.
    let before = summary(&app, "gig").await;
    let commitment = before.body["draw"]["seedSha256"]
        .as_str()
        .expect("commitment")
        .to_owned();
    assert_eq!(commitment.len(), 64);
    assert!(before.body["draw"]["seed"].is_null(), "{}", before.body);
    assert_eq!(before.body["opensAt"], rfc(opens));
    assert_eq!(before.body["settings"]["opensAt"], rfc(opens));

    let users: Vec<String> = (0..MEMBERS).map(|i| format!("fan{i:05}")).collect();
    let members = join_all(&app, "gig", &users, 32).await;
    assert!(
        Utc::now() < opens,
        "the pre-queue took too long to fill; raise the lead"
    );
    for issued in &members {
        assert!(issued.created);
        assert_eq!(
            issued.state.standing,
            Standing::Prequeue { opens_at: opens }
        );
        assert!((1..=DRAW_BASE).contains(&issued.claims.ticket));
    }
    // Told to come back just after the opening, within a third of the idle period (120 s
    // here), spread by the draw: not all in the same second.
    let now = Utc::now();
    let mut per_second: HashMap<i64, usize> = HashMap::new();
    for issued in &members {
        let back = now + chrono::Duration::seconds(issued.state.poll_after_seconds(now) as i64);
        assert!(back >= opens - chrono::Duration::seconds(1), "{back}");
        assert!(back <= opens + chrono::Duration::seconds(41), "{back}");
        *per_second.entry(back.timestamp()).or_default() += 1;
    }
    let busiest = per_second.values().max().copied().unwrap_or(0);
    assert!(per_second.len() >= 30, "{} seconds", per_second.len());
    assert!(busiest < MEMBERS / 10, "{busiest} in one second");
    // Nobody is admitted before the opening, whatever the capacity.
    promote(&app).await;
    assert_eq!(summary(&app, "gig").await.body["active"], 0);

    until(opens + chrono::Duration::milliseconds(50)).await;
    let mut later = Vec::new();
    for i in 0..LATER {
        let reply = join(&app, "gig", &format!("late{i:02}")).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        assert_eq!(reply.body["status"], "waiting");
        assert!(reply.body.get("draw").is_none(), "{}", reply.body);
        later.push(reply.token());
    }

    let after = summary(&app, "gig").await;
    let seed = revealed_seed(&after.body["draw"], &commitment);
    let order = draw_order(&seed, &users);
    // Members with equal draw values go by arrival, which the test does not fix: each may
    // stand anywhere among those with its value.
    let values: Vec<u64> = order.iter().map(|u| placing(&seed, u)).collect();
    let ranks = |user: &str| {
        let value = placing(&seed, user);
        let first = values.partition_point(|v| *v < value) as u64 + 1;
        let last = values.partition_point(|v| *v <= value) as u64;
        first..=last
    };
    let placed = positions(&app, &members).await;
    let unique: BTreeSet<u64> = placed.iter().copied().collect();
    assert_eq!(unique.len(), MEMBERS, "every position is unique");
    for (issued, position) in members.iter().zip(&placed) {
        let user = issued.claims.user.as_str();
        assert!(ranks(user).contains(position), "{user} at {position}");
    }
    // Every later arrival stands behind the whole draw, first come, first served.
    for (i, token) in later.iter().enumerate() {
        let reply = status(&app, "gig", token).await;
        assert_eq!(reply.body["position"], (MEMBERS + i + 1) as u64);
    }
    // A member's status shows the value that placed them, as the recipe computes it.
    let first = join(&app, "gig", &order[0]).await;
    assert!(ranks(&order[0]).contains(&first.body["position"].as_u64().unwrap()));
    assert_eq!(
        first.body["draw"]["value"],
        draw_value_hex(&seed, &order[0])
    );

    // The first tick admits in draw order and records how many the draw placed.
    promote(&app).await;
    let drawn = summary(&app, "gig").await;
    assert_eq!(drawn.body["draw"]["members"], MEMBERS as u64);
    assert_eq!(drawn.body["active"], 5);
    for user in &order[..5] {
        assert_eq!(join(&app, "gig", user).await.body["status"], "active");
    }
}

/// Pearson's chi-square of a 10 × 10 table of arrival decile against place decile, pooled
/// over draws: `places[d][i]` is the 1-based place of the `i`-th arrival in draw `d`.
fn chi_square(places: &[Vec<u64>]) -> f64 {
    let mut table = [[0f64; 10]; 10];
    let mut total = 0f64;
    for draw in places {
        let n = draw.len() as u64;
        for (arrival, place) in draw.iter().enumerate() {
            table[arrival * 10 / n as usize][((place - 1) * 10 / n) as usize] += 1.0;
            total += 1.0;
        }
    }
    let rows: Vec<f64> = table.iter().map(|r| r.iter().sum()).collect();
    let cols: Vec<f64> = (0..10).map(|c| table.iter().map(|r| r[c]).sum()).collect();
    let mut chi = 0.0;
    for r in 0..10 {
        for c in 0..10 {
            let expected = rows[r] * cols[c] / total;
            chi += (table[r][c] - expected).powi(2) / expected;
        }
    }
    chi
}

/// The chi-square with 81 degrees of freedom exceeded with probability 1e-4
/// (Wilson–Hilferty: k (1 − 2/(9k) + z √(2/(9k)))³ with z = 3.719).
fn critical_81() -> f64 {
    let k = 81.0f64;
    let a = 2.0 / (9.0 * k);
    k * (1.0 - a + 3.719 * a.sqrt()).powi(3)
}

#[tokio::test]
async fn arrival_order_does_not_predict_the_drawn_place() {
    // The recipe over a fixed set of seeds: many draws, no randomness in the test.
    let users: Vec<String> = (0..1000).map(|i| format!("fan{i:05}")).collect();
    let recipe: Vec<Vec<u64>> = (0..100u32)
        .map(|s| {
            let seed = Sha256::digest(format!("fixed seed {s}").as_bytes()).to_vec();
            let rank: HashMap<String, u64> = draw_order(&seed, &users)
                .into_iter()
                .enumerate()
                .map(|(i, u)| (u, i as u64 + 1))
                .collect();
            users.iter().map(|u| rank[u]).collect()
        })
        .collect();
    let critical = critical_81();
    assert!(
        chi_square(&recipe) < critical,
        "{} ≥ {critical}",
        chi_square(&recipe)
    );
    // The test can fail: first come, first served (place = arrival), and a draw that
    // merely favours early arrivals a little, are rejected.
    let fcfs: Vec<Vec<u64>> = (0..100).map(|_| (1..=1000).collect()).collect();
    assert!(chi_square(&fcfs) > critical);
    let nudged: Vec<Vec<u64>> = recipe
        .iter()
        .map(|draw| {
            let mut keyed: Vec<(u64, usize)> = draw
                .iter()
                .enumerate()
                .map(|(arrival, place)| (place + arrival as u64 / 4, arrival))
                .collect();
            keyed.sort();
            let mut placed = vec![0; draw.len()];
            for (i, (_, arrival)) in keyed.into_iter().enumerate() {
                placed[arrival] = i as u64 + 1;
            }
            placed
        })
        .collect();
    assert!(chi_square(&nudged) > critical, "{}", chi_square(&nudged));

    // Real draws through Redis, seeds from the function's CSPRNG: the same holds (the
    // chance of a false alarm is 1e-4), and every place is the recipe's.
    const DRAWS: usize = 8;
    const EACH: usize = 400;
    let app = TestApp::spawn(&[]).await;
    let opens = opening_after(&app, DRAWS * EACH, DRAWS, 10).await;
    let mut commitments = Vec::new();
    for d in 0..DRAWS {
        let queue = format!("show{d}");
        put_settings(&app, &queue, &json!({ "opensAt": rfc(opens) })).await;
        let before = summary(&app, &queue).await;
        commitments.push(
            before.body["draw"]["seedSha256"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let users: Vec<String> = users[..EACH].to_vec();
    let joined: Vec<Vec<Issued>> = stream::iter(0..DRAWS)
        .map(|d| {
            let users = &users;
            let app = &app;
            // In arrival order: one caller per queue.
            async move { join_all(app, &format!("show{d}"), users, 1).await }
        })
        .buffered(DRAWS)
        .collect()
        .await;
    assert!(Utc::now() < opens, "raise the lead");
    until(opens + chrono::Duration::milliseconds(50)).await;
    let mut places = Vec::new();
    for (d, issued) in joined.iter().enumerate() {
        let after = summary(&app, &format!("show{d}")).await;
        let seed = revealed_seed(&after.body["draw"], &commitments[d]);
        let order = draw_order(&seed, &users);
        let placed = positions(&app, issued).await;
        for (user, place) in users.iter().zip(&placed) {
            assert_eq!(order[*place as usize - 1], *user);
        }
        places.push(placed);
    }
    let chi = chi_square(&places);
    assert!(chi < critical, "{chi} ≥ {critical}");
}

#[tokio::test]
async fn arrivals_around_the_opening_land_on_one_side_never_lost_or_doubled() {
    const EARLY: usize = 20;
    const AROUND: usize = 300;
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let opens = in_seconds(3);
    put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    let early: Vec<String> = (0..EARLY).map(|i| format!("early{i:02}")).collect();
    let mut issued = join_all(&app, "gig", &early, 8).await;

    // Callers spread over 600 ms around the opening, each at its own instant.
    let room = app.room();
    let queue = QueueId::parse("gig").unwrap();
    let queue = &queue;
    let around: Vec<Issued> = futures::future::join_all((0..AROUND).map(|i| async move {
        until(opens + chrono::Duration::milliseconds(2 * i as i64 - 300)).await;
        let user = UserId::parse(&format!("around{i:03}")).unwrap();
        room.issue(queue, &user, None).await.expect("issue")
    }))
    .await;
    let mut before = 0;
    for i in &around {
        match i.state.standing {
            Standing::Prequeue { .. } => {
                before += 1;
                assert!(i.claims.ticket <= DRAW_BASE);
            }
            Standing::Waiting { .. } => assert!(i.claims.ticket > DRAW_BASE),
            ref other => panic!("{other:?}"),
        }
    }
    assert!(0 < before && before < AROUND, "both sides seen: {before}");
    assert_eq!(
        summary(&app, "gig").await.body["waiting"],
        (EARLY + AROUND) as u64
    );

    // Everyone holds one place: the pre-queue first, the later ones in ticket order after.
    issued.extend(around);
    let placed = positions(&app, &issued).await;
    let unique: BTreeSet<u64> = placed.iter().copied().collect();
    assert_eq!(unique, (1..=(EARLY + AROUND) as u64).collect());
    let drawn = EARLY + before;
    let mut later: Vec<(u64, u64)> = Vec::new();
    for (i, place) in issued.iter().zip(&placed) {
        if i.claims.ticket <= DRAW_BASE {
            assert!(*place <= drawn as u64, "{} at {place}", i.claims.user);
        } else {
            later.push((i.claims.ticket, *place));
        }
    }
    later.sort();
    let in_ticket_order: Vec<u64> = later.iter().map(|(_, p)| *p).collect();
    assert_eq!(
        in_ticket_order,
        ((drawn as u64 + 1)..=(EARLY + AROUND) as u64).collect::<Vec<_>>()
    );
    // The first tick after the opening records the draw and reports the opening, once.
    let opened = |report: &PromotionReport| events_of(report, QueueEventKind::Opened);
    let tick = room.promote(std::slice::from_ref(queue)).await.unwrap();
    assert_eq!(opened(&tick), 1);
    let tick = room.promote(std::slice::from_ref(queue)).await.unwrap();
    assert_eq!(opened(&tick), 0);
    assert_eq!(
        summary(&app, "gig").await.body["draw"]["members"],
        drawn as u64
    );
}

#[tokio::test]
async fn nobody_changes_their_draw_and_closes_at_keeps_the_line() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "30")]).await;
    let now = in_seconds(0);
    let prequeue_opens = now + chrono::Duration::seconds(1);
    let opens = now + chrono::Duration::seconds(4);
    let closes = now + chrono::Duration::seconds(7);
    // The times must agree with each other.
    assert_kind(
        &put_settings(
            &app,
            "gig",
            &json!({ "opensAt": rfc(opens), "closesAt": rfc(opens - chrono::Duration::seconds(1)) }),
        )
        .await,
        400,
        "invalid-request",
    );
    assert_kind(
        &put_settings(
            &app,
            "gig",
            &json!({ "opensAt": rfc(opens), "prequeueOpensAt": rfc(opens) }),
        )
        .await,
        400,
        "invalid-request",
    );
    let set = put_settings(
        &app,
        "gig",
        &json!({ "opensAt": rfc(opens), "closesAt": rfc(closes),
            "prequeueOpensAt": rfc(prequeue_opens) }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(set.body["prequeueOpensAt"], rfc(prequeue_opens));

    // Before the pre-queue opens: refused, told when to come back; nothing published yet.
    let early = join(&app, "gig", "u1").await;
    assert_kind(&early, 409, "queue-not-open");
    assert_eq!(early.headers["retry-after"], "1");
    assert!(summary(&app, "gig").await.body["draw"].is_null());

    until(prequeue_opens).await;
    let commitment = summary(&app, "gig").await.body["draw"]["seedSha256"]
        .as_str()
        .expect("published once the pre-queue opens")
        .to_owned();
    let first = join(&app, "gig", "u1").await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.body["status"], "prequeue");
    assert_eq!(first.body["opensAt"], rfc(opens));
    assert!(first.body["position"].is_null());
    let poll = first.body["pollAfterSeconds"].as_u64().unwrap();
    assert!((2..=3 + 10).contains(&poll), "{poll}");
    let token = first.token();
    // Re-issue gives the same token. Leaving and joining again before the opening gives a
    // new token, with the same draw value.
    let again = join(&app, "gig", "u1").await;
    assert_eq!((again.status, again.token()), (200, token.clone()));
    assert_eq!(leave(&app, "gig", &token).await.status, 204);
    let back = join(&app, "gig", "u1").await;
    assert_eq!(back.status, 201);
    assert_ne!(back.token(), token);
    let ticket = |reply: &Reply| reply.body["ticket"].as_u64().expect("ticket");
    assert_eq!(ticket(&back) >> 24, ticket(&first) >> 24);
    let token = back.token();
    assert_eq!(status(&app, "gig", &token).await.body["status"], "prequeue");
    let others: Vec<String> = (2..=30).map(|i| format!("u{i}")).collect();
    for user in &others {
        assert_eq!(join(&app, "gig", user).await.status, 201);
    }

    // The opening cannot be removed under a pre-queue; postponing it keeps the seed.
    assert_kind(
        &put_settings(&app, "gig", &json!({ "opensAt": null })).await,
        409,
        "conflict",
    );
    let opens = opens + chrono::Duration::seconds(1);
    let postponed = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(postponed.status, 200, "{}", postponed.body);
    assert_eq!(
        summary(&app, "gig").await.body["draw"]["seedSha256"],
        commitment
    );

    until(opens + chrono::Duration::milliseconds(50)).await;
    let seed = revealed_seed(&summary(&app, "gig").await.body["draw"], &commitment);
    let mut all = vec!["u1".to_owned()];
    all.extend(others.iter().cloned());
    let order = draw_order(&seed, &all);
    let place = order.iter().position(|u| u == "u1").unwrap() as u64 + 1;
    let drawn = status(&app, "gig", &token).await;
    assert_eq!(drawn.body["position"], place, "{}", drawn.body);
    assert_eq!(drawn.body["draw"]["value"], draw_value_hex(&seed, "u1"));
    assert_eq!(join(&app, "gig", "u1").await.token(), token);
    // Leaving after the opening puts the buyer at the back, with no draw value.
    assert_eq!(leave(&app, "gig", &token).await.status, 204);
    let rejoined = join(&app, "gig", "u1").await;
    assert_eq!(rejoined.status, 201);
    assert_ne!(rejoined.token(), token);
    assert_eq!(rejoined.body["position"], 30);
    assert!(rejoined.body.get("draw").is_none());

    // After closesAt: no new arrivals, the line keeps its places.
    until(closes).await;
    assert_kind(&join(&app, "gig", "u99").await, 409, "queue-closed");
    let u2 = join(&app, "gig", "u2").await;
    assert_eq!(u2.status, 200);
    let place = order.iter().position(|u| u == "u2").unwrap() as u64 + 1;
    let expected = if place > order.iter().position(|u| u == "u1").unwrap() as u64 + 1 {
        place - 1
    } else {
        place
    };
    assert_eq!(u2.body["position"], expected);
}

#[tokio::test]
async fn a_member_who_polls_as_told_is_never_dropped_across_the_opening() {
    // The shortest idle period: presence starts at the opening and is tight after it.
    let app = TestApp::spawn(&[("WAITING_IDLE_SECONDS", "5"), ("QUEUE_CAPACITY", "1")]).await;
    let opens = in_seconds(2);
    put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    let users: Vec<String> = (0..40).map(|i| format!("fan{i:02}")).collect();
    let issued = join_all(&app, "gig", &users, 8).await;
    let ghost = join_all(&app, "gig", &["ghost".to_owned()], 1)
        .await
        .remove(0);
    let room = app.room();
    // Each member sleeps exactly as told and polls again, until well past the opening.
    let until_ms = opens + chrono::Duration::seconds(9);
    let polls = futures::future::join_all(issued.iter().map(|member| async move {
        let mut after = member.state.poll_after_seconds(Utc::now());
        let mut polls = 0;
        while Utc::now() < until_ms {
            sleep(Duration::from_secs(after)).await;
            let state = room.status(&member.claims).await.expect("never dropped");
            assert!(
                matches!(
                    state.standing,
                    Standing::Prequeue { .. } | Standing::Waiting { .. }
                ),
                "{:?}",
                state.standing
            );
            after = state.poll_after_seconds(Utc::now());
            polls += 1;
        }
        polls
    }))
    .await;
    assert!(polls.iter().all(|p| *p >= 2), "{polls:?}");
    // The one who never came back is dropped once the idle period after the opening passed.
    room.reap(&QueueId::parse("gig").unwrap()).await.unwrap();
    assert!(room.status(&ghost.claims).await.is_err());
    assert_eq!(summary(&app, "gig").await.body["waiting"], 40);
}

#[tokio::test]
async fn learning_the_seed_costs_a_container_a_round_trip_but_not_a_rate_limit_count() {
    let mut app = TestApp::spawn(&[("RATE_LIMIT_USER_PER_MINUTE", "2")]).await;
    put_settings(&app, "gig", &json!({ "opensAt": rfc(in_seconds(60)) })).await;
    // The queue's first buyer registers it.
    let u0 = join(&app, "gig", "u0").await;
    assert_eq!(u0.status, 201, "{}", u0.body);
    // A fresh container knows no seed: two calls for its first pre-queue join, counted once.
    app.new_container().await;
    let (first, commands) = app.client_commands_during(join(&app, "gig", "u1")).await;
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(commands.get("evalsha"), Some(&2), "{commands:?}");
    assert_eq!(join(&app, "gig", "u1").await.status, 200);
    assert_kind(&join(&app, "gig", "u1").await, 429, "rate-limited");
    // Now it knows the seed: one call.
    let (second, commands) = app.client_commands_during(join(&app, "gig", "u2")).await;
    assert_eq!(second.status, 201);
    assert_eq!(commands.get("evalsha"), Some(&1), "{commands:?}");
    // Another container places the same buyer the same.
    app.new_container().await;
    assert_eq!(join(&app, "gig", "u2").await.token(), second.token());
    assert_eq!(join(&app, "gig", "u0").await.token(), u0.token());
}

/// A leave just after the opening admits the pre-queue's first (and records the draw) before
/// any promotion tick: the next tick still reports the opening, once, and the draw's count
/// includes the member the leave admitted.
#[tokio::test]
async fn the_opening_is_reported_once_even_when_a_leave_admits_first() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "30")]).await;
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "active", "{}", ana.body);
    // Within the fast tier's longest sleep, with time to join before it.
    let opens = in_seconds(1) + chrono::Duration::milliseconds(700);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(bob.body["status"], "prequeue", "{}", bob.body);

    until(opens + chrono::Duration::milliseconds(100)).await;
    assert_eq!(leave(&app, "gig", &ana.token()).await.status, 204);
    assert_eq!(
        status(&app, "gig", &bob.token()).await.body["status"],
        "active"
    );

    let room = app.room();
    let queue = QueueId::parse("gig").unwrap();
    let opened = |report: &PromotionReport| events_of(report, QueueEventKind::Opened);
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(
        opened(&tick),
        1,
        "the opening is reported by the first tick"
    );
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(opened(&tick), 0, "and only once");
    assert_eq!(summary(&app, "gig").await.body["draw"]["members"], 1);
}

/// A new schedule draws a new line: while buyers wait in the line it has, one is refused
/// (they would be placed around the draw by accident: ahead of it with a draw's numbers, or
/// behind it though they came first), and taken once the line has emptied.
#[tokio::test]
async fn a_new_schedule_waits_for_an_empty_line() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "30")]).await;
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "active", "{}", ana.body);
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(bob.body["status"], "waiting", "{}", bob.body);
    let opens = in_seconds(60);
    let refused = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_kind(&refused, 409, "conflict");
    assert!(summary(&app, "gig").await.body["draw"].is_null());
    assert_eq!(status(&app, "gig", &bob.token()).await.body["position"], 1);

    assert_eq!(leave(&app, "gig", &bob.token()).await.status, 204);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let carl = join(&app, "gig", "carl").await;
    assert_eq!(carl.body["status"], "prequeue", "{}", carl.body);
}

/// When `closesAt` passes, the next promotion tick reports `QueueClosed`, once; those in line
/// keep their places. Moving `closesAt` later lets a later passing be reported again.
#[tokio::test]
async fn closes_at_passing_is_reported_once() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "30")]).await;
    let opens = in_seconds(1);
    let closes = opens + chrono::Duration::seconds(1);
    let set = put_settings(
        &app,
        "gig",
        &json!({ "opensAt": rfc(opens), "closesAt": rfc(closes) }),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
    let room = app.room();
    let queue = QueueId::parse("gig").unwrap();
    let closed = |report: &PromotionReport| events_of(report, QueueEventKind::Closed);
    until(opens).await;
    let ana = join(&app, "gig", "ana").await;
    assert_eq!(ana.body["status"], "active", "{}", ana.body);
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(bob.body["status"], "waiting", "{}", bob.body);
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(closed(&tick), 0, "not before closesAt");

    until(closes + chrono::Duration::milliseconds(50)).await;
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(closed(&tick), 1, "the first tick after closesAt reports it");
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(closed(&tick), 0, "once");
    assert_eq!(status(&app, "gig", &bob.token()).await.body["position"], 1);

    let later = in_seconds(1);
    let set = put_settings(&app, "gig", &json!({ "closesAt": rfc(later) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    assert_eq!(join(&app, "gig", "carl").await.body["status"], "waiting");
    until(later + chrono::Duration::milliseconds(50)).await;
    let tick = room.promote(std::slice::from_ref(&queue)).await.unwrap();
    assert_eq!(
        closed(&tick),
        1,
        "a new closesAt is reported when it passes"
    );
}

/// Mode `passthrough` has no line, so it cannot keep the draw's promise that later arrivals
/// stand behind the whole draw: with a schedule it is refused as a setting, both ways, and
/// while the draw's members still wait; each refusal writes nothing. Without passthrough, an
/// arrival just after the opening waits behind the drawn.
#[tokio::test]
async fn passthrough_and_a_draw_are_refused_together() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2"), ("WAITING_IDLE_SECONDS", "30")]).await;
    // Within the fast tier's longest sleep, with time to set and join before it.
    let opens = in_seconds(1) + chrono::Duration::milliseconds(700);
    let set = put_settings(&app, "gig", &json!({ "opensAt": rfc(opens) })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let refused = put_settings(&app, "gig", &json!({ "mode": "passthrough" })).await;
    assert_kind(&refused, 400, "invalid-request");
    assert!(
        refused.body["detail"].as_str().unwrap().contains("mode"),
        "{}",
        refused.body
    );
    assert_eq!(summary(&app, "gig").await.body["settings"]["mode"], "queue");

    // The other way round, and both in one change.
    let set = put_settings(&app, "solo", &json!({ "mode": "passthrough" })).await;
    assert_eq!(set.status, 200, "{}", set.body);
    let refused = put_settings(&app, "solo", &json!({ "opensAt": rfc(in_seconds(60)) })).await;
    assert_kind(&refused, 400, "invalid-request");
    assert!(
        refused.body["detail"].as_str().unwrap().contains("opensAt"),
        "{}",
        refused.body
    );
    let solo = summary(&app, "solo").await;
    assert!(solo.body["opensAt"].is_null(), "{}", solo.body);
    assert!(solo.body["draw"].is_null(), "{}", solo.body);
    assert_kind(
        &put_settings(
            &app,
            "duo",
            &json!({ "mode": "passthrough", "opensAt": rfc(in_seconds(60)) }),
        )
        .await,
        400,
        "invalid-request",
    );

    // The draw's members wait; the opening passes. A new arrival stands behind them.
    let bob = join(&app, "gig", "bob").await;
    assert_eq!(bob.body["status"], "prequeue", "{}", bob.body);
    until(opens + chrono::Duration::milliseconds(50)).await;
    assert_eq!(status(&app, "gig", &bob.token()).await.body["position"], 1);
    let dan = join(&app, "gig", "dan").await;
    assert_eq!(dan.body["status"], "waiting", "{}", dan.body);
    assert_eq!(dan.body["position"], 2, "{}", dan.body);
    // Removing the passed opening does not open passthrough while a drawn member waits.
    let removed = put_settings(&app, "gig", &json!({ "opensAt": null })).await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    assert_kind(
        &put_settings(&app, "gig", &json!({ "mode": "passthrough" })).await,
        409,
        "conflict",
    );
    assert_eq!(summary(&app, "gig").await.body["settings"]["mode"], "queue");
    // Once the draw is admitted, passthrough may follow.
    assert_eq!(promote(&app).await.admitted, 2);
    let set = put_settings(&app, "gig", &json!({ "mode": "passthrough" })).await;
    assert_eq!(set.status, 200, "{}", set.body);
}
