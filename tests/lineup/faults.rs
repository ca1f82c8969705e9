//! Faults: Redis killed under load and started again from its append-only file, a server
//! that stalls without closing its connections, one that is slow but answers, a network
//! partition, a replication group's failover, and a script cache flushed under the
//! functions' feet. Prints `RELIABILITY:` lines.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use lambda_runtime::{Context, LambdaEvent};
use lineup::queue::keys::QueueKeys;
use lineup::queue::PRIMARY_GUARD_EVERY;
use lineup::ranking::Outcome;
use lineup_local::Stack;
use lineup_tests::outage::{
    answer_until, assert_unavailable_in_time, join_until_served, OUTAGE_BOUND, QUICK_TO_GIVE_UP,
    RECOVERY,
};
use lineup_tests::queue::{join, leave, promote, status, summary};
use lineup_tests::rankings::paid;
use lineup_tests::{api_request_from, authorizer_request, sleep, OldPrimary, TestApp};
use serde_json::{json, Value};

#[derive(Default)]
struct Ledger {
    /// Users who were told they hold a place (201/200): user, token, ticket.
    placed: Mutex<Vec<(String, String, u64)>>,
    /// Payments answered `applied`.
    applied: Mutex<Vec<String>>,
    /// Payments answered `failed`, to be redelivered as EventBridge would.
    failed: Mutex<Vec<Value>>,
    unavailable: AtomicU64,
    requests: AtomicU64,
}

/// `redis-server` (append-only file, `appendfsync always`) is SIGKILLed under load and restarted
/// 1.5 s later, while buyers, payments and a promoter keep going (about 2 000 requests and
/// payments). Every request during the outage must answer 503 with `Retry-After` within the bound
/// (connect 300 ms, response 500 ms). The promoter reports failed ticks instead of failing, and the
/// same processes serve again after the restart. Afterwards: every buyer told it holds a place
/// still does (or was admitted and its 1 s session ended); every applied payment is counted; every
/// payment answered "failed" counts exactly once when redelivered; every active buyer has its
/// ticket record; nobody is both waiting and active.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_crash_under_load_loses_nothing_and_the_same_processes_recover() {
    // Its load takes both cores: the real-clock on-sales wait their turn.
    let _turn = lineup_tests::CPU_HEAVY.write().await;
    let mut app = TestApp::spawn_durable(&[
        ("QUEUE_CAPACITY", "25"),
        // Sessions end quickly, so admissions go on through the outage and after it.
        ("SESSION_SECONDS", "1"),
        ("ADMIT_PER_TICK", "3"),
        ("REDIS_CONNECT_TIMEOUT_MS", "300"),
        ("REDIS_RESPONSE_TIMEOUT_MS", "500"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    let mut server = app.redis.take().expect("a private server");
    let app = Arc::new(app);
    let ledger = Arc::new(Ledger::default());
    let down = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));

    let buyers = {
        let (app, ledger, down, stop) = (app.clone(), ledger.clone(), down.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let user = format!("buyer-{n}");
                let body = json!({ "userId": user }).to_string();
                let started = Instant::now();
                let reply = app
                    .queue_api(api_request_from(
                        "POST",
                        "/queues/crash/tokens",
                        Some(&body),
                        "198.51.100.1",
                    ))
                    .await;
                ledger.requests.fetch_add(1, Ordering::Relaxed);
                match reply.status {
                    200 | 201 => {
                        let ticket = reply.body["ticket"].as_u64().unwrap();
                        ledger
                            .placed
                            .lock()
                            .unwrap()
                            .push((user, reply.token(), ticket))
                    }
                    503 => {
                        assert!(reply.headers.contains_key("retry-after"));
                        assert!(
                            started.elapsed() < OUTAGE_BOUND,
                            "hung for {:?}",
                            started.elapsed()
                        );
                        ledger.unavailable.fetch_add(1, Ordering::Relaxed);
                    }
                    other => panic!("{other}: {}", reply.body),
                }
                if down.load(Ordering::Relaxed) {
                    sleep(Duration::from_millis(20)).await;
                }
            }
        })
    };
    let payers = {
        let (app, ledger, stop) = (app.clone(), ledger.clone(), stop.clone());
        tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let id = format!("pay-{n}");
                let event = paid(&id, "crash-show", 1, &[], &Utc::now().to_rfc3339());
                let started = Instant::now();
                let verdicts = event_applier::apply_events(
                    std::slice::from_ref(&event),
                    &app.stack.event_applier,
                )
                .await;
                assert!(started.elapsed() < OUTAGE_BOUND);
                ledger.requests.fetch_add(1, Ordering::Relaxed);
                match &verdicts[0] {
                    Outcome::Applied => ledger.applied.lock().unwrap().push(id),
                    Outcome::Failed(_) => ledger.failed.lock().unwrap().push(event),
                    other => panic!("{other:?}"),
                }
                sleep(Duration::from_millis(5)).await;
            }
        })
    };
    let promoter = {
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move {
            let mut failed = 0;
            while !stop.load(Ordering::Relaxed) {
                let out = queue_promoter::handle(
                    LambdaEvent::new(json!({}), Context::default()),
                    &app.stack.promoter,
                )
                .await
                .expect("the promoter reports failures instead of failing");
                failed += out.failed_ticks;
                sleep(Duration::from_millis(10)).await;
            }
            failed
        })
    };

    sleep(Duration::from_millis(700)).await;
    let placed_before = ledger.placed.lock().unwrap().len();
    server.stop().await; // SIGKILL, as a crash
    down.store(true, Ordering::Relaxed);
    sleep(Duration::from_millis(1500)).await;
    let unavailable = ledger.unavailable.load(Ordering::Relaxed);
    server
        .restart()
        .await
        .expect("restart from the append-only file");
    down.store(false, Ordering::Relaxed);
    sleep(Duration::from_millis(1500)).await;
    stop.store(true, Ordering::Relaxed);
    buyers.await.unwrap();
    payers.await.unwrap();
    let failed_ticks = promoter.await.unwrap();

    assert!(
        placed_before > 0 && unavailable > 0,
        "{placed_before} placed before, {unavailable} 503s"
    );
    assert!(failed_ticks > 0, "the promoter met the outage");
    let placed = ledger.placed.lock().unwrap().clone();
    assert!(
        placed.len() > placed_before,
        "served again after the restart, without a new process"
    );

    // Every buyer ever told they hold a place still holds it, unless they were admitted
    // and their one-second session has since ended.
    let admitted_through = summary(&app, "crash").await.body["admittedThrough"]
        .as_u64()
        .unwrap();
    let mut still_placed = 0;
    for (user, token, ticket) in &placed {
        let reply = status(&app, "crash", token).await;
        if reply.status == 200 {
            still_placed += 1;
        } else {
            assert!(
                *ticket <= admitted_through,
                "{user} (ticket {ticket}) lost their place"
            );
        }
    }
    // No half-done promotion: every active buyer has its ticket record, nobody is both
    // waiting and active, and the admission counter matches.
    let keys = QueueKeys::new(
        &app.config.key_prefix,
        &lineup::ids::QueueId::parse("crash").unwrap(),
    );
    // The inspection connection died with the server; open a new one.
    let mut inspect = redis::Client::open(server.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let (active, held, both, seq): (Vec<String>, Vec<String>, u64, u64) = redis::pipe()
        .atomic()
        .zrange(&keys.active, 0, -1)
        .hkeys(&keys.active_tickets)
        .cmd("ZINTERCARD")
        .arg(2)
        .arg(&keys.waiting)
        .arg(&keys.active)
        .hget(&keys.meta, "seq")
        .query_async(&mut inspect)
        .await
        .unwrap();
    let (mut active, mut held) = (active, held);
    active.sort();
    held.sort();
    assert_eq!(active, held);
    assert_eq!(both, 0);
    // Every ticket handed out was answered to its buyer, and no more were handed out than
    // requests that could have reached Redis.
    assert!(seq >= placed.len() as u64 && admitted_through <= seq);

    // No applied payment is lost; the failed ones, redelivered, count exactly once.
    let applied = ledger.applied.lock().unwrap().len() as u64;
    let failed: Vec<Value> = ledger.failed.lock().unwrap().clone();
    let score = |reply: Value| reply["score"].as_u64().unwrap_or(0);
    let before_redelivery = score(concert_score(&app.stack, "crash-show").await);
    assert!(
        before_redelivery >= applied,
        "{before_redelivery} counted, {applied} applied"
    );
    for event in &failed {
        let verdict =
            event_applier::apply_events(std::slice::from_ref(event), &app.stack.event_applier)
                .await;
        assert!(
            matches!(verdict[0], Outcome::Applied | Outcome::Duplicate),
            "{verdict:?}"
        );
    }
    assert_eq!(
        score(concert_score(&app.stack, "crash-show").await),
        applied + failed.len() as u64
    );

    println!(
        "RELIABILITY: faults: redis-server SIGKILLed under load (AOF, fsync always) and restarted; \
         {} requests and payments, {unavailable} answered 503 with Retry-After within {OUTAGE_BOUND:?}, \
         {failed_ticks} promoter ticks failed and recovered; {} places and {applied} applied payments \
         all present after restart ({still_placed} still waiting or active, the rest admitted and \
         expired; {} failed payments redelivered, counted once); lost: 0",
        ledger.requests.load(Ordering::Relaxed),
        placed.len(),
        failed.len()
    );
}

async fn concert_score(stack: &Stack, concert: &str) -> Value {
    let reply = ranking_api::handle(
        lineup_tests::api_request(
            "GET",
            &format!("/rankings/all-time/concerts/{concert}"),
            None,
        ),
        &stack.ranking_api,
    )
    .await
    .unwrap();
    lineup_tests::Reply::from(reply).body
}

/// The gatekeeper's verdict on `token` for `queue`, from the container `stack`.
async fn gate(stack: &Stack, token: &str, queue: &str) -> bool {
    queue_authorizer::handle(
        LambdaEvent::new(
            authorizer_request(Some(token), Some(queue), None),
            Context::default(),
        ),
        &stack.authorizer,
    )
    .await
    .expect("infallible")
    .is_authorized
}

/// `SCRIPT FLUSH` before each of issue, status, promotion tick, payment, leave and summary: each
/// call reloads its script and succeeds.
#[tokio::test]
async fn a_flushed_script_cache_is_reloaded_transparently() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "a").await.token();
    let second = join(&app, "show", "b").await.token();
    event_applier::apply_events(
        &[paid("p0", "c", 1, &[], &Utc::now().to_rfc3339())],
        &app.stack.event_applier,
    )
    .await;
    let flush = || async {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async::<()>(&mut app.inspect.clone())
            .await
            .unwrap();
    };
    flush().await;
    assert_eq!(join(&app, "show", "c").await.status, 201);
    flush().await;
    assert_eq!(
        status(&app, "show", &second).await.body["status"],
        "waiting"
    );
    flush().await;
    assert_eq!(promote(&app).await.failed_ticks, 0);
    flush().await;
    let verdicts = event_applier::apply_events(
        &[paid("p1", "c", 1, &[], &Utc::now().to_rfc3339())],
        &app.stack.event_applier,
    )
    .await;
    assert_eq!(verdicts, [Outcome::Applied]);
    flush().await;
    assert_eq!(
        lineup_tests::queue::leave(&app, "show", &first)
            .await
            .status,
        204
    );
    flush().await;
    assert_eq!(summary(&app, "show").await.status, 200);
}

/// A script the server lacks costs one round trip more, not two: the call that finds it
/// missing, then the call sent again with the script's text (`EVAL`), which the server runs
/// and caches. A status poll and a summary after `SCRIPT FLUSH` each take two client commands.
#[tokio::test]
async fn a_script_the_server_lacks_costs_two_round_trips_in_all() {
    let app = TestApp::spawn(&[]).await;
    let token = join(&app, "show", "a").await.token();
    let flush = || async {
        redis::cmd("SCRIPT")
            .arg("FLUSH")
            .query_async::<()>(&mut app.inspect.clone())
            .await
            .unwrap();
    };
    flush().await;
    let (reply, calls) = app
        .client_commands_during(status(&app, "show", &token))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(calls, [("evalsha", 1), ("eval", 1)].into());
    let (reply, calls) = app
        .client_commands_during(status(&app, "show", &token))
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(calls, [("evalsha", 1)].into(), "cached by the EVAL");
    flush().await;
    let (reply, calls) = app.client_commands_during(summary(&app, "show")).await;
    assert_eq!(reply.status, 200);
    assert_eq!(calls, [("evalsha", 1), ("eval", 1)].into());
}

/// A batch whose scripts are cached in part: after a flush, only the ranking script is loaded
/// again (by a payment without a buyer). The next payment with a buyer stages the ranking
/// script (cached, so it runs) and the release (NOSCRIPT). Only the release may be sent again:
/// the payment counts once and is reported `applied`, and the buyer's session ends.
#[tokio::test]
async fn after_a_partial_noscript_only_the_missing_scripts_run_again() {
    let app = TestApp::spawn(&[]).await;
    let buyer = join(&app, "show", "buyer").await.token();
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let warm = [paid("warm", "c", 1, &[], &Utc::now().to_rfc3339())];
    let verdicts = event_applier::apply_events(&warm, &app.stack.event_applier).await;
    assert_eq!(verdicts, [Outcome::Applied]);

    let verdicts = event_applier::apply_events(
        &[lineup_tests::rankings::payment("pay-1", "show", "buyer")],
        &app.stack.event_applier,
    )
    .await;
    assert_eq!(verdicts, [Outcome::Applied], "counted once, not run twice");
    assert_eq!(status(&app, "show", &buyer).await.status, 410);
}

/// A stalled server (connected, answering nothing: `CLIENT PAUSE`) is an outage too. Every
/// request answers 503 with `Retry-After` within the bound instead of waiting for it, a new
/// connection serves once it wakes, and work that timed out on the client but
/// may have run on the server afterwards is never doubled: the buyer's retry finds one
/// place, the payment's redelivery counts once.
///
/// The stall lasts 2 s (`CLIENT PAUSE ALL`) while a buyer joins, another polls and a payment
/// arrives. Each answers after the 500 ms response timeout, not after the stall. The stalled work
/// may then run on the server, as it usually does; the test accepts either way.
#[tokio::test]
async fn a_stalled_redis_answers_503_in_time_and_what_timed_out_is_never_doubled() {
    // A private server always: the test stalls all of it.
    let app =
        TestApp::spawn_durable(&[&[("QUEUE_CAPACITY", "1")], QUICK_TO_GIVE_UP].concat()).await;
    let early = join(&app, "stall", "early").await;
    assert_eq!(early.status, 201);
    let payment = paid("pay-stall", "crash-show", 1, &[], &Utc::now().to_rfc3339());
    // Both scripts are cached before the stall, so what the server finds waiting when it
    // wakes really runs (a script it had never seen would only answer NOSCRIPT, unheard).
    let warm_up = paid(
        "pay-warm-up",
        "another-show",
        1,
        &[],
        &Utc::now().to_rfc3339(),
    );
    assert_eq!(
        event_applier::apply_events(&[warm_up], &app.stack.event_applier).await,
        [Outcome::Applied]
    );

    redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(STALL.as_millis() as u64)
        .arg("ALL")
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let early_token = early.token();
    let stalled_at = Instant::now();
    outage_is_answered_in_time(&app, "stall", &early_token, &payment).await;
    assert!(stalled_at.elapsed() < STALL, "the stall ended first");

    // When the server wakes, the same processes serve again.
    sleep(STALL.saturating_sub(stalled_at.elapsed())).await;
    let (retry, _, _) = join_until_served(&app, "stall", "ana").await;
    // 200 if the stalled issue ran once the server woke, 201 if it never did: one place
    // either way, behind the one buyer admitted before the stall. Likewise the payment is
    // a duplicate if its stalled delivery ran, applied if not, and counted once.
    assert!([200, 201].contains(&retry.status), "{}", retry.body);
    assert_eq!(retry.body["status"], "waiting");
    assert_eq!(retry.body["ticket"], 2);
    assert_eq!(retry.body["position"], 1);
    assert_eq!(
        status(&app, "stall", &early_token).await.body["status"],
        "active"
    );
    let again =
        event_applier::apply_events(std::slice::from_ref(&payment), &app.stack.event_applier).await;
    assert!(
        matches!(again[0], Outcome::Applied | Outcome::Duplicate),
        "{again:?}"
    );
    assert_eq!(concert_score(&app.stack, "crash-show").await["score"], 1);
}

/// A network partition: bytes dropped on the way, no connection closed or reset, so only a
/// timeout can tell. A replaced node, or a failover that moves the endpoint to a new
/// address, looks the same to the connection a warm container holds: its peer is gone for
/// good. Every request answers 503 with `Retry-After` within the bound meanwhile, and once a
/// new connection reaches the server, the same processes serve again within a second or so,
/// although the connection they held before never comes back.
///
/// The partition lasts three rounds of an issue, a status and a payment, then heals for new
/// connections only. Every request answers 503 (the payment `failed`) never hanging. Service comes
/// back on a new connection, after one more 503: the connection in hand when it healed has to fail
/// its probe first. Nothing sent during the partition reaches the server: the buyer's place is
/// ticket 2 and the payment counts once. Without the replacement, the old connection would time out
/// every request for good (in production, until the kernel gives up on it, about 15 minutes).
#[tokio::test]
async fn a_partition_answers_503_in_time_and_the_same_processes_reconnect_once_it_heals() {
    let app = TestApp::spawn_behind_link(
        &[&[("QUEUE_CAPACITY", "1")], QUICK_TO_GIVE_UP].concat(),
        Duration::ZERO,
    )
    .await;
    let early = join(&app, "split", "early").await;
    assert_eq!(early.status, 201);
    let early_token = early.token();
    let payment = paid("pay-split", "split-show", 1, &[], &Utc::now().to_rfc3339());

    app.link().partition();
    // Three rounds, so that connections opened during the partition are refused too.
    for _ in 0..3 {
        outage_is_answered_in_time(&app, "split", &early_token, &payment).await;
    }

    app.link().heal();
    let (retry, recovered_in, unavailable) = join_until_served(&app, "split", "ana").await;
    // Nothing sent during the partition reached the server: the buyer's first place is
    // made now, behind the one admitted before, and the payment counts on redelivery.
    assert_eq!(
        retry.status, 201,
        "still {} after {RECOVERY:?}: {}",
        retry.status, retry.body
    );
    assert_eq!(retry.body["ticket"], 2);
    assert_eq!(retry.body["position"], 1);
    assert_eq!(
        status(&app, "split", &early_token).await.body["status"],
        "active"
    );
    assert_eq!(
        event_applier::apply_events(std::slice::from_ref(&payment), &app.stack.event_applier).await,
        [Outcome::Applied]
    );
    assert_eq!(concert_score(&app.stack, "split-show").await["score"], 1);
    println!(
        "RELIABILITY: partition: 3 rounds of an issue, a status and a payment, each 503 or \
         failed within {OUTAGE_BOUND:?}; served again {recovered_in:?} after it healed \
         ({unavailable} more 503s), on a new connection; nothing lost or doubled"
    );
}

/// A container that starts during a partition, its cold-start connection and, in `auto`
/// mode, its check of what kind of Redis it reached going nowhere, answers 503 in time and
/// serves once the partition heals, without a restart.
///
/// It runs with `REDIS_MODE=auto`, so its first step is asking the server what it is. The bound is
/// `OUTAGE_BOUND`: no hang.
#[tokio::test]
async fn a_container_started_during_a_partition_serves_once_it_heals() {
    let mut app = TestApp::spawn_behind_link(
        &[&[("REDIS_MODE", "auto")], QUICK_TO_GIVE_UP].concat(),
        Duration::ZERO,
    )
    .await;
    app.link().partition();
    app.new_container().await;
    for _ in 0..3 {
        let (reply, took) = timed(join(&app, "late-start", "ana")).await;
        assert_unavailable_in_time(&reply, took);
    }

    app.link().heal();
    let (reply, recovered_in, _) = join_until_served(&app, "late-start", "ana").await;
    assert_eq!(
        reply.status, 201,
        "still {} after {RECOVERY:?}: {}",
        reply.status, reply.body
    );
    assert_eq!(reply.body["ticket"], 1);
    println!(
        "RELIABILITY: partition at cold start (REDIS_MODE=auto): 503 within {OUTAGE_BOUND:?}; \
         served {recovered_in:?} after it healed"
    );
}

/// A failover of a non-cluster replication group (ElastiCache with cluster mode off): the
/// replica is promoted, the primary endpoint moves to it, and the old primary becomes its
/// replica. A warm container's connection still reaches the old primary, which refuses
/// writes (`READONLY`) without closing anything: the first request it sends there answers
/// 503, the connection is replaced, and from then on the same processes serve from the new
/// primary, whose script cache starts empty. Every place, admission and payment that was
/// acknowledged and replicated before the failover is still there.
///
/// The functions reach the primary through a proxy that stands for the group's primary endpoint.
/// First 3 buyers, an admission and a payment, all replicated. Then the failover. The old primary
/// replicates from the new one. The first write on the old connection answers 503 (`READONLY`); the
/// next is served by the new primary. Tickets go on from 4, and every place, the admission and the
/// payment record are kept (the redelivered payment is a duplicate).
#[tokio::test]
async fn a_replication_group_failover_costs_one_503_and_keeps_every_replicated_write() {
    let app = TestApp::spawn_on_replication_group(
        &[&[("QUEUE_CAPACITY", "1")], QUICK_TO_GIVE_UP].concat(),
    )
    .await;
    let mut tokens = Vec::new();
    for user in ["ana", "ben", "cleo"] {
        let reply = join(&app, "moved", user).await;
        assert_eq!(reply.status, 201, "{}", reply.body);
        tokens.push(reply.token());
    }
    let payment = paid("pay-moved", "moved-show", 2, &[], &Utc::now().to_rfc3339());
    assert_eq!(
        event_applier::apply_events(std::slice::from_ref(&payment), &app.stack.event_applier).await,
        [Outcome::Applied]
    );
    // Replication is asynchronous, so a failover can lose the last writes before it; that is
    // the server's side. The client's side is tested from a replica that has them all.
    app.until_replica_caught_up().await;

    app.fail_over(OldPrimary::Follows).await;

    let (reply, recovered_in, unavailable) = join_until_served(&app, "moved", "dora").await;
    assert_eq!(
        reply.status, 201,
        "still {} after {RECOVERY:?}: {}",
        reply.status, reply.body
    );
    assert_eq!(unavailable, 1, "only the request the old primary refused");
    // Tickets go on from the replicated counter: nobody jumps ahead of those already waiting.
    assert_eq!(reply.body["ticket"], 4);
    assert_eq!(reply.body["position"], 3);
    assert_eq!(
        status(&app, "moved", &tokens[0]).await.body["status"],
        "active"
    );
    for (token, position) in [(&tokens[1], 1), (&tokens[2], 2)] {
        let reply = status(&app, "moved", token).await;
        assert_eq!(reply.body["position"], position, "{}", reply.body);
    }
    assert!(
        gate(&app.stack, &tokens[0], "moved").await,
        "the admitted buyer still passes the gate"
    );
    assert_eq!(
        event_applier::apply_events(std::slice::from_ref(&payment), &app.stack.event_applier).await,
        [Outcome::Duplicate],
        "the payment's record moved with the data"
    );
    assert_eq!(concert_score(&app.stack, "moved-show").await["score"], 2);
    // Writes land on the new primary: leaving admits the next in line there.
    assert_eq!(leave(&app, "moved", &tokens[0]).await.status, 204);
    assert_eq!(
        status(&app, "moved", &tokens[1]).await.body["status"],
        "active"
    );
    println!(
        "RELIABILITY: replication group failover: {unavailable} request answered 503 (READONLY \
         from the demoted primary); served by the new primary {recovered_in:?} after the \
         endpoint moved; places, admissions and the payment record all kept"
    );
}

/// A failover whose new address takes a while to reach DNS: for that while, a new
/// connection to the primary endpoint still reaches the demoted node, which refuses every
/// write. Each request answers 503 at once, and the connection is replaced at most once a
/// response timeout, not once a request, so the demoted node is not also sent a
/// reconnection (TCP, TLS, AUTH) for every buyer. Once the endpoint moves, service resumes
/// within that interval.
///
/// The endpoint stays on the demoted node for 1.2 s. Requests answer 503 at once, with about one
/// reconnection per response timeout. Service resumes soon after the endpoint moves, with the place
/// made before kept.
#[tokio::test]
async fn a_failover_whose_endpoint_lags_reconnects_once_a_timeout_not_once_a_request() {
    let app = TestApp::spawn_on_replication_group(QUICK_TO_GIVE_UP).await;
    assert_eq!(join(&app, "lagging", "ana").await.status, 201);
    app.until_replica_caught_up().await;
    let opened_before = app.link().connections_accepted();
    app.fail_over_without_moving_the_endpoint().await;
    let started = Instant::now();
    let mut refused = 0;
    while started.elapsed() < Duration::from_millis(1200) {
        let (reply, took) = timed(join(&app, "lagging", &format!("buyer-{refused}"))).await;
        assert_unavailable_in_time(&reply, took);
        refused += 1;
        sleep(Duration::from_millis(20)).await;
    }
    let reconnections = app.link().connections_accepted() - opened_before;
    // One replacement at once, then at most one per 500 ms response timeout.
    let allowed = 1 + started.elapsed().as_millis() as usize / 500;
    assert!(refused >= 20, "only {refused} requests were sent");
    assert!(
        reconnections <= allowed,
        "{reconnections} reconnections for {refused} refused requests (at most {allowed})"
    );

    app.link().retarget(app.replica.as_ref().unwrap().port());
    let (reply, recovered_in, unavailable) = join_until_served(&app, "lagging", "bo").await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(
        reply.body["ticket"], 2,
        "the place made before the failover was kept"
    );
    println!(
        "RELIABILITY: failover with the endpoint lagging 1.2 s: {refused} requests answered 503 \
         at once, {reconnections} reconnections to the demoted node; served {recovered_in:?} \
         after the endpoint moved ({unavailable} more 503s)"
    );
}

/// After a failover, a container that only reads (the gatekeeper, the ranking reads)
/// follows the primary endpoint as well, rather than reading the demoted primary for as long
/// as the container lives: cut off from the new primary, that one would go on admitting
/// who left and turning away who was admitted since. The read scripts are refused there
/// like writes, so the first read fails (a board 503) and the connection is replaced; every
/// read after that is the new primary's. The gatekeeper's check carries a write (the primary
/// guard) once a second: it reads the demoted primary for at most that long, then its
/// guarded check fails (the gate closed) and it reads the new primary.
///
/// Here the old primary is cut off from the new one and serves the reads it had. Two warm
/// containers only read: a gatekeeper and a ranking reader. Each fails one read there, then reads
/// the new primary: the buyer admitted since passes the gate, the one who left does not, and the
/// board shows both payments.
#[tokio::test]
async fn after_a_failover_a_container_that_only_reads_follows_the_primary_endpoint() {
    let app = TestApp::spawn_on_replication_group(
        &[&[("QUEUE_CAPACITY", "1")], QUICK_TO_GIVE_UP].concat(),
    )
    .await;
    // Two warm containers that only read: a gatekeeper, and a ranking-api.
    let gatekeeper = app.another_container().await;
    let boards = app.another_container().await;
    let ana = join(&app, "watched", "ana").await.token();
    let ben = join(&app, "watched", "ben").await.token();
    let first = paid(
        "pay-watched-1",
        "watched-show",
        2,
        &[],
        &Utc::now().to_rfc3339(),
    );
    let second = paid(
        "pay-watched-2",
        "watched-show",
        3,
        &[],
        &Utc::now().to_rfc3339(),
    );
    assert_eq!(
        event_applier::apply_events(&[first], &app.stack.event_applier).await,
        [Outcome::Applied]
    );
    assert!(gate(&gatekeeper, &ana, "watched").await);
    assert!(!gate(&gatekeeper, &ben, "watched").await);
    assert_eq!(concert_score(&boards, "watched-show").await["score"], 2);
    app.until_replica_caught_up().await;

    app.fail_over(OldPrimary::CutOff).await;
    // The new primary moves on: ana leaves, ben is admitted, another payment counts.
    let (served, _, _) = join_until_served(&app, "watched", "cleo").await;
    assert_eq!(served.status, 201, "{}", served.body);
    assert_eq!(leave(&app, "watched", &ana).await.status, 204);
    assert_eq!(
        event_applier::apply_events(&[second], &app.stack.event_applier).await,
        [Outcome::Applied]
    );

    let (admitted, turned_away) =
        answer_until(|| gate(&gatekeeper, &ben, "watched"), |allowed| *allowed).await;
    assert!(
        admitted,
        "the gatekeeper still turns ben away after {RECOVERY:?}"
    );
    // Checked every 100 ms: the checks of the demoted primary within a guard period, then
    // the guarded one it refused.
    let most = 1 + PRIMARY_GUARD_EVERY.as_millis() / 100 + 1;
    assert!(
        (1..=most).contains(&u128::from(turned_away)),
        "turned away {turned_away} times: the demoted primary read for more than a guard period"
    );
    assert!(!gate(&gatekeeper, &ana, "watched").await, "ana left");
    let (score, unavailable) = answer_until(
        || concert_score(&boards, "watched-show"),
        |score| score.get("score").is_some(),
    )
    .await;
    assert_eq!(score["score"], 5, "{score}");
    assert_eq!(unavailable, 1, "only the read the demoted primary refused");
    println!(
        "RELIABILITY: failover with the old primary cut off: a ranking reader failed one read \
         there, a gatekeeper turned ben away {turned_away} times in its guard period; both then \
         read the new primary"
    );
}

/// A Redis that falls behind, every reply coming later than the response timeout but
/// coming, keeps the connections it has. Each request answers 503 in time, and a probe's
/// late answer shows the server is there, so no container adds a reconnection (TCP, TLS,
/// AUTH) on every timeout to the load that slowed it. Once it catches up, the same
/// connection serves again at once.
///
/// After a first request is served, a proxy holds every byte back 350 ms each way: each reply comes
/// 700 ms after its request, past the 500 ms response timeout but within a probe's 1.5 s. Then 6
/// buyers call one after another, as a Lambda container sends them, and the delay is removed. Each
/// must answer 503 with `Retry-After`, never hanging, with no new connection opened. Without the
/// probe, each timeout would replace the connection.
#[tokio::test]
async fn a_redis_too_slow_for_the_timeout_is_not_also_flooded_with_reconnections() {
    let app = TestApp::spawn_behind_link(QUICK_TO_GIVE_UP, Duration::ZERO).await;
    assert_eq!(join(&app, "behind", "ana").await.status, 201);
    let opened_before = app.link().connections_accepted();
    // Every reply 700 ms after its request: past the 500 ms timeout, within a probe's 1.5 s.
    app.link().set_delay(Duration::from_millis(350));
    for round in 0..6 {
        let (reply, took) = timed(join(&app, "behind", &format!("buyer-{round}"))).await;
        assert_unavailable_in_time(&reply, took);
    }
    app.link().set_delay(Duration::ZERO);
    let caught_up = join(&app, "behind", "bo").await;
    assert_eq!(caught_up.status, 201, "{}", caught_up.body);
    let reconnections = app.link().connections_accepted() - opened_before;
    assert_eq!(
        reconnections, 0,
        "no new connection to a Redis that answers, however late"
    );
    println!(
        "RELIABILITY: Redis behind (replies 700 ms late, timeout 500 ms): 6 requests answered \
         503 in time, {reconnections} reconnections; served at once on the same connection \
         once it caught up"
    );
}

/// How long the stalled server answers nothing: longer than `OUTAGE_BOUND`, so that every
/// answer given within the bound is given while it stalls.
const STALL: Duration = Duration::from_millis(6000);

/// What `future` gives, and how long it took.
async fn timed<T>(future: impl std::future::Future<Output = T>) -> (T, Duration) {
    let started = Instant::now();
    let out = future.await;
    (out, started.elapsed())
}

/// An issue, a status poll and a payment at once while Redis is out of reach: each is
/// answered as an outage (503, or a `failed` payment) within the bound.
async fn outage_is_answered_in_time(app: &TestApp, queue: &str, token: &str, payment: &Value) {
    let ((issue, issue_took), (poll, poll_took), (verdicts, payment_took)) = tokio::join!(
        timed(join(app, queue, "ana")),
        timed(status(app, queue, token)),
        timed(event_applier::apply_events(
            std::slice::from_ref(payment),
            &app.stack.event_applier,
        )),
    );
    assert_unavailable_in_time(&issue, issue_took);
    assert_unavailable_in_time(&poll, poll_took);
    assert!(matches!(verdicts[0], Outcome::Failed(_)), "{verdicts:?}");
    assert!(payment_took < OUTAGE_BOUND, "hung for {payment_took:?}");
}

/// A Redis that is slow but answers within the timeouts (75 ms each way, as from another
/// region) serves every caller, as many as arrive at once up to the connection's cap on
/// requests in flight (`REDIS_MAX_IN_FLIGHT`, here 300), from a cold script cache: the
/// requests share the container's one connection in a pipeline, so each waits a few round
/// trips, not for the others. Were they served one after another, most would pass the
/// response timeout and answer 503.
///
/// A proxy holds every byte back 75 ms each way (150 ms round trips), with the default 1 s response
/// timeout. 200 token requests and 100 payments arrive at once, from a cold script cache. All must
/// be served: tickets 1…200, capacity 50 held, all 100 payments counted. Served one after another
/// they would take at least 45 s.
#[tokio::test]
async fn a_slow_redis_serves_every_concurrent_caller_within_the_timeouts() {
    const BUYERS: usize = 200;
    const PAYMENTS: usize = 100;
    let delay = Duration::from_millis(75);
    let app = TestApp::spawn_behind_link(
        &[
            ("QUEUE_CAPACITY", "50"),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
            ("RATE_LIMIT_USER_PER_MINUTE", "0"),
            // All 300 in flight at once on the one connection, none shed.
            ("REDIS_MAX_IN_FLIGHT", "300"),
        ],
        delay,
    )
    .await;
    let started = Instant::now();
    let buyers = futures::future::join_all((0..BUYERS).map(|i| {
        let app = &app;
        async move { join(app, "slow", &format!("buyer-{i}")).await }
    }));
    let payments = futures::future::join_all((0..PAYMENTS).map(|i| {
        let event = paid(
            &format!("pay-{i}"),
            "slow-show",
            1,
            &[],
            &Utc::now().to_rfc3339(),
        );
        let deps = &app.stack.event_applier;
        async move { event_applier::apply_events(&[event], deps).await }
    }));
    let (replies, verdicts) = tokio::join!(buyers, payments);
    let took = started.elapsed();

    let mut tickets: Vec<u64> = replies
        .iter()
        .map(|reply| {
            assert_eq!(reply.status, 201, "{}", reply.body);
            reply.body["ticket"].as_u64().expect("ticket")
        })
        .collect();
    tickets.sort_unstable();
    assert_eq!(tickets, (1..=BUYERS as u64).collect::<Vec<_>>());
    for verdict in &verdicts {
        assert_eq!(verdict.as_slice(), [Outcome::Applied]);
    }
    assert_eq!(
        concert_score(&app.stack, "slow-show").await["score"],
        PAYMENTS
    );
    let active = replies
        .iter()
        .filter(|reply| reply.body["status"] == "active")
        .count();
    assert_eq!(active, 50, "capacity held");

    println!(
        "RELIABILITY: slow redis: {BUYERS} token requests and {PAYMENTS} payments at once, \
         through {delay:?} each way ({:?} round trips), cold script cache: all served in \
         {took:?} (one after another would be at least {:?}); 503s: 0",
        delay * 2,
        delay * 2 * (BUYERS + PAYMENTS) as u32,
    );
}
