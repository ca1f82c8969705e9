//! Presence of waiters: a buyer who polls as told keeps its place at the shortest idle
//! period allowed, one who stops is dropped within the documented bound. Prints
//! `RELIABILITY:` lines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lineup::bounds::WAITING_IDLE_SECONDS;
use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::queue::{QueueEventKind, IDLE_WINDOWS};
use lineup_tests::queue::{join, leave, promote, status, summary};
use lineup_tests::{sleep, Reply, TestApp};

/// The shortest idle period a queue may have, as a string for the environment.
fn shortest_idle() -> (u64, String) {
    let idle = WAITING_IDLE_SECONDS.min;
    (idle, idle.to_string())
}

/// At the shortest idle period allowed (5 s), a client sleeps exactly `pollAfterSeconds` (1 s)
/// between polls for three idle periods. A promoter tick and a reaper run every 0.15 s beside it.
/// The client must never be dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_polling_as_told_is_never_dropped_at_the_shortest_idle_period() {
    let (idle, idle_var) = shortest_idle();
    let app = Arc::new(
        TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", &idle_var)]).await,
    );
    assert_eq!(join(&app, "show", "holder").await.body["status"], "active");
    let waiter = join(&app, "show", "waiter").await;
    assert_eq!(waiter.body["status"], "waiting");
    let stop = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let housekeeping = {
        let (app, stop, dropped) = (app.clone(), stop.clone(), dropped.clone());
        tokio::spawn(async move {
            let mut runs = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let tick = promote(&app).await;
                let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
                dropped.fetch_add(tick.abandoned + reaped.abandoned(), Ordering::Relaxed);
                runs += 1;
                sleep(Duration::from_millis(150)).await;
            }
            runs
        })
    };
    // The client as a buyer's browser runs it: poll, then sleep exactly pollAfterSeconds.
    let token = waiter.token();
    let until = Instant::now() + Duration::from_secs(3 * idle);
    let mut polls = 0;
    let mut longest = Duration::ZERO;
    let mut last = Instant::now();
    let mut poll_after = waiter.body["pollAfterSeconds"].as_u64().unwrap();
    while Instant::now() < until {
        sleep(Duration::from_secs(poll_after)).await;
        let reply = status(&app, "show", &token).await;
        longest = longest.max(last.elapsed());
        last = Instant::now();
        assert_eq!(
            reply.status, 200,
            "dropped after {polls} polls every {poll_after} s (idle {idle} s): {}",
            reply.body
        );
        assert_eq!(reply.body["status"], "waiting");
        poll_after = reply.body["pollAfterSeconds"].as_u64().unwrap();
        assert!(poll_after >= 1 && poll_after <= idle / 3, "{poll_after}");
        polls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let runs = housekeeping.await.unwrap();
    assert_eq!(dropped.load(Ordering::Relaxed), 0);
    assert!(runs > 5, "{runs} promoter and reaper runs");
    println!(
        "RELIABILITY: presence: idle {idle} s, a client sleeping pollAfterSeconds ({poll_after} s) \
         polled {polls} times (longest gap {longest:?}) beside {runs} promoter ticks and reaper \
         runs; dropped 0"
    );
}

/// Five waiters stop polling, their last polls spread over one heartbeat window, with a reaper run
/// every 10 ms. Each must be dropped 1.0–1.1 idle periods after its last poll (5.0–5.5 s at the
/// shortest idle period): no run that began before the idle period drops it, and none that began
/// after the bound leaves it. How soon after the bound a run comes is the test's own pace on a
/// busy machine, not asserted. The `RELIABILITY:` line gives the times seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_who_stops_polling_is_dropped_between_one_and_one_and_a_tenth_idle_periods() {
    let (idle, idle_var) = shortest_idle();
    let idle_ms = idle * 1000;
    let window = Duration::from_millis(idle_ms / u64::from(IDLE_WINDOWS));
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", &idle_var)]).await;
    join(&app, "show", "holder").await;
    // Waiters whose last polls fall at different points of a heartbeat window.
    const WAITERS: usize = 5;
    let mut last_poll: HashMap<String, (Instant, Instant)> = HashMap::new();
    for i in 0..WAITERS {
        let user = format!("walker-{i}");
        let sent = Instant::now();
        let reply = join(&app, "show", &user).await;
        assert_eq!(reply.body["status"], "waiting");
        last_poll.insert(user, (sent, Instant::now()));
        sleep(window / WAITERS as u32).await;
    }
    let idle = Duration::from_millis(idle_ms);
    let bound = idle + window;
    // Per waiter: the earliest it can have been dropped, the latest, and how long after its
    // last poll the run before (which left it) began.
    let mut dropped_after: Vec<(Duration, Duration, Duration)> = Vec::new();
    let deadline = Instant::now() + bound + Duration::from_secs(30);
    let mut previous_run = Instant::now();
    while dropped_after.len() < WAITERS && Instant::now() < deadline {
        let sent = Instant::now();
        let report = queue_reaper::reap_all(&app.stack.reaper).await;
        let done = Instant::now();
        for event in report.events() {
            assert_eq!(event.kind, QueueEventKind::Abandoned);
            let (poll_sent, poll_done) = last_poll[event.user_id.as_deref().unwrap()];
            // At the earliest: the reply of the reaper run that dropped it, against the
            // moment its last poll was sent. At the latest: that run's start, against the
            // moment its last poll was answered.
            dropped_after.push((
                done - poll_sent,
                sent - poll_done,
                previous_run.saturating_duration_since(poll_done),
            ));
        }
        previous_run = sent;
        sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(dropped_after.len(), WAITERS, "all dropped by {deadline:?}");
    let slack = Duration::from_millis(250);
    for (earliest, _, left_by) in &dropped_after {
        assert!(
            *earliest >= idle,
            "dropped after {earliest:?}, before {idle:?}"
        );
        assert!(
            *left_by <= bound + slack,
            "a reaper run {left_by:?} after its last poll, past {bound:?}, left it"
        );
    }
    let min = dropped_after.iter().map(|d| d.0).min().unwrap();
    let max = dropped_after.iter().map(|d| d.1).max().unwrap();
    println!(
        "RELIABILITY: presence: {WAITERS} waiters who stopped polling (idle {idle:?}) were dropped \
         {min:?}–{max:?} after their last poll (bound {idle:?}–{bound:?})"
    );
}

/// A queue whose ticket counter is at 50 000 000. Four waiters are issued tickets 50 000 001–50 000
/// 031; some poll, one walks away. Their presence key must stay under 1 000 bytes (at most the
/// smallest span: 128 deadlines of 4 bytes). Presence must still work there: the walker is dropped and the
/// three who poll are kept.
#[tokio::test]
async fn presence_memory_follows_the_waiters_not_the_lifetime_tickets() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    let keys = QueueKeys::new(&app.config.key_prefix, &QueueId::parse("long").unwrap());
    let mut inspect = app.inspect.clone();
    assert_eq!(join(&app, "long", "holder").await.body["status"], "active");
    // A queue that has issued 50 million tickets in its life.
    let set_seq = async |seq: u64| {
        redis::cmd("HSET")
            .arg(&keys.meta)
            .arg("seq")
            .arg(seq)
            .query_async::<()>(&mut inspect.clone())
            .await
            .unwrap();
    };
    set_seq(50_000_000).await;
    let mut tokens = HashMap::new();
    for user in ["a", "walker", "c"] {
        let reply = join(&app, "long", user).await;
        assert_eq!(reply.body["status"], "waiting");
        tokens.insert(
            user,
            (reply.body["ticket"].as_u64().unwrap(), reply.token()),
        );
    }
    // The last ticket of a 32-ticket chunk, too.
    set_seq(50_000_030).await;
    let reply = join(&app, "long", "d").await;
    tokens.insert("d", (reply.body["ticket"].as_u64().unwrap(), reply.token()));
    assert_eq!(tokens["a"].0, 50_000_001);
    assert_eq!(tokens["d"].0, 50_000_031);

    let presence_bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(&keys.presence)
        .query_async::<Option<u64>>(&mut inspect)
        .await
        .unwrap()
        .unwrap_or(0);
    assert!(
        presence_bytes <= 1000,
        "presence of 4 waiters at ticket 50 million takes {presence_bytes} bytes"
    );

    // Presence still works at these tickets: the walker goes, the others stay.
    for _ in 0..6 {
        sleep(Duration::from_secs(1)).await;
        for user in ["a", "c", "d"] {
            let reply = status(&app, "long", &tokens[user].1).await;
            assert_eq!(reply.body["status"], "waiting", "{user}: {}", reply.body);
        }
    }
    let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
    let dropped: Vec<_> = reaped
        .events()
        .map(|e| e.user_id.as_deref().unwrap())
        .collect();
    assert_eq!(dropped, ["walker"]);
    lineup_tests::queue::assert_kind(
        &status(&app, "long", &tokens["walker"].1).await,
        410,
        "dropped-for-absence",
    );
    println!(
        "RELIABILITY: memory: the presence keys of 4 waiters at ticket 50 000 000 hold \
         {presence_bytes} bytes"
    );
}

/// Polls `token` as a buyer's browser does until `until`: after an answer, sleeps
/// `pollAfterSeconds`; after a 503, its `Retry-After`. Returns the 503s met, or the
/// answer that dropped it.
async fn poll_as_told(app: &TestApp, token: &str, until: Instant) -> Result<u64, Reply> {
    let mut unavailable = 0;
    while Instant::now() < until {
        let reply = status(app, "show", token).await;
        let wait = match reply.status {
            200 => reply.body["pollAfterSeconds"].as_u64().unwrap(),
            503 => {
                unavailable += 1;
                reply.headers["retry-after"]
                    .to_str()
                    .unwrap()
                    .parse()
                    .unwrap()
            }
            _ => return Err(reply),
        };
        sleep(Duration::from_secs(wait)).await;
    }
    Ok(unavailable)
}

/// At the shortest idle period (5 s), `redis-server` is SIGKILLed for 7.5 s (1.5 idle periods;
/// append-only file) while 3 wait. A promoter tick and a reaper run every 0.15 s. Two waiters keep
/// polling as told, getting 503s with `Retry-After`; one never comes back. Both who polled must
/// keep their places. The one who never came back must be dropped one idle period after the
/// restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_outage_longer_than_the_idle_period_costs_no_place() {
    let (idle, idle_var) = shortest_idle();
    let mut app = TestApp::spawn_durable(&[
        ("QUEUE_CAPACITY", "1"),
        ("WAITING_IDLE_SECONDS", &idle_var),
        ("REDIS_CONNECT_TIMEOUT_MS", "300"),
        ("REDIS_RESPONSE_TIMEOUT_MS", "500"),
    ])
    .await;
    let mut server = app.redis.take().expect("a private server");
    let app = Arc::new(app);
    join(&app, "show", "holder").await;
    let mut tokens = Vec::new();
    for user in ["back-1", "gone", "back-2"] {
        let reply = join(&app, "show", user).await;
        assert_eq!(reply.body["status"], "waiting");
        tokens.push(reply.token());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let housekeeping = {
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move {
            let mut dropped: Vec<(String, Instant)> = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                promote(&app).await;
                let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
                let now = Instant::now();
                dropped.extend(reaped.events().map(|e| (e.user_id.clone().unwrap(), now)));
                sleep(Duration::from_millis(150)).await;
            }
            dropped
        })
    };
    let outage = Duration::from_millis(idle * 1000 * 3 / 2);
    let back_at = Instant::now() + Duration::from_secs(2) + outage;
    // Polled through the outage and a little more than two idle periods after it: the
    // grace, then one idle period and its tenth in which "gone" is dropped.
    let until = back_at + Duration::from_millis(idle * 2300);
    let clients: Vec<_> = [&tokens[0], &tokens[2]]
        .into_iter()
        .map(|token| {
            let (app, token) = (app.clone(), token.clone());
            tokio::spawn(async move { poll_as_told(&app, &token, until).await })
        })
        .collect();

    sleep(Duration::from_secs(2)).await;
    server.stop().await; // SIGKILL, as a crash
    sleep(outage).await;
    server
        .restart()
        .await
        .expect("restart from the append-only file");
    let restarted = Instant::now();
    let mut unavailable = 0;
    for client in clients {
        match client.await.unwrap() {
            Ok(n) => unavailable += n,
            Err(reply) => panic!("a waiter polling as told was dropped: {}", reply.body),
        }
    }
    stop.store(true, Ordering::Relaxed);
    let dropped = housekeeping.await.unwrap();
    assert!(unavailable > 0, "the clients met the outage");
    let users: Vec<_> = dropped.iter().map(|(u, _)| u.as_str()).collect();
    assert_eq!(
        users,
        ["gone"],
        "only the waiter who never came back is dropped"
    );
    let gone_after = dropped[0].1 - restarted;
    lineup_tests::queue::assert_kind(
        &status(&app, "show", &tokens[1]).await,
        410,
        "dropped-for-absence",
    );
    for token in [&tokens[0], &tokens[2]] {
        assert_eq!(status(&app, "show", token).await.body["status"], "waiting");
    }
    println!(
        "RELIABILITY: presence: redis-server SIGKILLed for {outage:?} (idle {idle} s) while 3 \
         waited; the 2 who polled as told through it ({unavailable} 503s) kept their places; \
         the one who never came back was dropped {gone_after:?} after the restart"
    );
}

#[tokio::test]
async fn the_summary_stops_counting_a_walked_away_waiter_within_the_documented_bound() {
    let (idle, idle_var) = shortest_idle();
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", &idle_var)]).await;
    join(&app, "show", "holder").await;
    let walked = Instant::now();
    join(&app, "show", "walker").await;
    let polling = join(&app, "show", "patient").await.token();
    assert_eq!(summary(&app, "show").await.body["waiting"], 2);
    // The bound without the reaper's interval: the idle period and one window after the
    // walker's last poll. The other waiter polls as told meanwhile.
    let bound = Duration::from_millis(idle * 1000 + idle * 1000 / u64::from(IDLE_WINDOWS));
    while walked.elapsed() < bound {
        assert_eq!(status(&app, "show", &polling).await.status, 200);
        sleep((bound - walked.elapsed()).min(Duration::from_secs(1))).await;
    }
    // One reaper run examines the whole line.
    let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
    let dropped: Vec<_> = reaped
        .events()
        .map(|e| e.user_id.as_deref().unwrap())
        .collect();
    assert_eq!(dropped, ["walker"]);
    assert_eq!(summary(&app, "show").await.body["waiting"], 1);
}

/// The longest a poll keeps a waiter present (`LONG_IDLE_MS` in `common.lua`), in idle
/// periods: a waiter is told at most a third of it.
const LONG_IDLES: u64 = 8;

/// Measures a mean session of about `session` in queue `queue` of capacity 1: a holder joins,
/// stays `session` and leaves; its leave admits the first waiter, which counts the length.
/// Returns the waiters' tokens, in line order, the first of them now active.
async fn line_behind_a_measured_session(
    app: &TestApp,
    queue: &str,
    waiters: usize,
    session: Duration,
) -> Vec<String> {
    let holder = join(app, queue, "holder").await;
    assert_eq!(holder.body["status"], "active");
    let mut tokens = Vec::new();
    for i in 0..waiters {
        let reply = join(app, queue, &format!("ahead-{i}")).await;
        assert_eq!(reply.body["status"], "waiting");
        tokens.push(reply.token());
    }
    sleep(session).await;
    assert_eq!(leave(app, queue, &holder.token()).await.status, 204);
    tokens
}

/// At the shortest idle period (5 s), a buyer whose honest wait is about eighteen idle periods is
/// told to poll after a quarter of it (past the idle period), and sleeps exactly that. A promoter tick and
/// a reaper run every 0.15 s beside it, and the buyers ahead poll every half second. After two such
/// polls, the buyers ahead pay one by one, so the line moves. The buyer must never be dropped, and
/// must see its admission within the idle period of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_told_to_poll_past_the_idle_period_keeps_its_place_and_is_admitted() {
    let (idle, idle_var) = shortest_idle();
    let app = Arc::new(
        TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", &idle_var)]).await,
    );
    // A mean session of 3 s: 29 ahead make an honest wait of about 90 s, over 12 × 5 s.
    let mut ahead = line_behind_a_measured_session(&app, "far", 29, Duration::from_secs(3)).await;
    let buyer = join(&app, "far", "far-buyer").await;
    assert_eq!(buyer.body["status"], "waiting");
    let stop = Arc::new(AtomicBool::new(false));
    let drain = Arc::new(AtomicBool::new(false));
    let dropped = Arc::new(AtomicU64::new(0));
    let housekeeping = {
        let (app, stop, drain, dropped) =
            (app.clone(), stop.clone(), drain.clone(), dropped.clone());
        tokio::spawn(async move {
            let mut runs = 0u64;
            let mut last_leave = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                let tick = promote(&app).await;
                let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
                dropped.fetch_add(tick.abandoned + reaped.abandoned(), Ordering::Relaxed);
                // The buyers ahead poll often; once the line is to move, the active one leaves
                // every half second.
                if runs.is_multiple_of(3) {
                    let mut kept = Vec::new();
                    for token in ahead.drain(..) {
                        let reply = status(&app, "far", &token).await;
                        assert_eq!(reply.status, 200, "{}", reply.body);
                        if reply.body["status"] == "active"
                            && drain.load(Ordering::Relaxed)
                            && last_leave.elapsed() >= Duration::from_millis(500)
                        {
                            assert_eq!(leave(&app, "far", &token).await.status, 204);
                            last_leave = Instant::now();
                        } else {
                            kept.push(token);
                        }
                    }
                    ahead = kept;
                }
                runs += 1;
                sleep(Duration::from_millis(150)).await;
            }
            runs
        })
    };
    let token = buyer.token();
    let mut poll_after = buyer.body["pollAfterSeconds"].as_u64().unwrap();
    let mut stretched = Vec::new();
    let mut longest = Duration::ZERO;
    let mut last = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(120);
    let admitted_after = loop {
        assert!(Instant::now() < deadline, "not admitted in 120 s");
        sleep(Duration::from_secs(poll_after)).await;
        let sent = Instant::now();
        let reply = status(&app, "far", &token).await;
        longest = longest.max(sent - last);
        last = sent;
        assert_eq!(
            reply.status, 200,
            "dropped after polls at {stretched:?} s past the idle period: {}",
            reply.body
        );
        if reply.body["status"] == "active" {
            let until: chrono::DateTime<chrono::Utc> =
                reply.body["activeUntil"].as_str().unwrap().parse().unwrap();
            let admitted = until - chrono::Duration::seconds(600);
            break (chrono::Utc::now() - admitted).to_std().unwrap_or_default();
        }
        assert_eq!(reply.body["status"], "waiting", "{}", reply.body);
        poll_after = reply.body["pollAfterSeconds"].as_u64().unwrap();
        assert!(poll_after <= LONG_IDLES * idle / 3, "{poll_after}");
        if poll_after > idle {
            stretched.push(poll_after);
        }
        if stretched.len() >= 2 {
            drain.store(true, Ordering::Relaxed);
        }
    };
    stop.store(true, Ordering::Relaxed);
    let runs = housekeeping.await.unwrap();
    assert!(
        stretched.len() >= 2,
        "told to poll past the idle period {} times",
        stretched.len()
    );
    assert!(longest > Duration::from_secs(idle), "{longest:?}");
    assert_eq!(dropped.load(Ordering::Relaxed), 0);
    assert!(
        admitted_after <= Duration::from_secs(idle),
        "saw its admission {admitted_after:?} after it"
    );
    println!(
        "RELIABILITY: presence: idle {idle} s, a far buyer told to poll every {stretched:?} s \
         (longest gap {longest:?}) kept its place beside {runs} promoter ticks and reaper runs, \
         and saw its admission {admitted_after:?} after it"
    );
}

/// A buyer told to poll past the idle period (a quarter of its wait being more than that) walks
/// away. Its poll kept it present for three times what it was told, which is more than the
/// idle period and less than the long period. With a reaper run every half second, it must be
/// dropped from then to an idle period after, and the buyers ahead who also stopped (told to
/// poll every second when they joined) within two idle periods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_far_waiter_who_walks_away_is_dropped_three_intervals_after_its_last_poll() {
    let (idle, idle_var) = shortest_idle();
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", &idle_var)]).await;
    line_behind_a_measured_session(&app, "walk", 39, Duration::from_secs(2)).await;
    let sent = Instant::now();
    let buyer = join(&app, "walk", "walker").await;
    let answered = Instant::now();
    assert_eq!(buyer.body["status"], "waiting");
    let told = buyer.body["pollAfterSeconds"].as_u64().unwrap();
    assert!(told > idle, "{}", buyer.body);
    // A quarter of the low end of its wait in whole seconds, up to a third of the long period.
    let low = buyer.body["estimatedWaitRange"]["low"].as_u64().unwrap();
    assert_eq!(told, (low / 4).min(LONG_IDLES * idle / 3), "{}", buyer.body);
    let present = Duration::from_secs(3 * told);
    assert!(
        present < Duration::from_secs(LONG_IDLES * idle),
        "{present:?}"
    );
    let bound = present + Duration::from_secs(idle);
    let deadline = answered + bound + Duration::from_secs(30);
    let (mut others, mut walker) = (0, None);
    let mut previous_run = Instant::now();
    while walker.is_none() && Instant::now() < deadline {
        let run = Instant::now();
        let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
        for event in reaped.events() {
            assert_eq!(event.kind, QueueEventKind::Abandoned);
            if event.user_id.as_deref() == Some("walker") {
                // The earliest it can have been dropped, and how long after its join was
                // answered the run before (which left it) began: the test's own pace on a
                // busy machine decides when the next run comes, not the bound.
                walker = Some((
                    Instant::now() - sent,
                    previous_run.saturating_duration_since(answered),
                ));
            } else {
                others += 1;
                // No run begun two idle periods after the walker joined left it.
                assert!(
                    previous_run.saturating_duration_since(sent) < Duration::from_secs(idle) * 2,
                    "{:?}",
                    event
                );
            }
        }
        previous_run = run;
        sleep(Duration::from_millis(500)).await;
    }
    let (earliest, latest) = walker.expect("the walker dropped");
    assert!(
        earliest >= present,
        "dropped after {earliest:?}, before {present:?}"
    );
    assert!(latest <= bound, "{latest:?}");
    // Every waiter but the first (admitted) stopped too.
    assert_eq!(others, 38);
    lineup_tests::queue::assert_kind(
        &status(&app, "walk", &buyer.token()).await,
        410,
        "dropped-for-absence",
    );
    println!(
        "RELIABILITY: presence: a far buyer told to poll late who walked away was dropped \
         {earliest:?} or more after its last poll, and a run {latest:?} after it left it, told \
         {told} s (bound {present:?}–{bound:?})"
    );
}
