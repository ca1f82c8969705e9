//! The waiting room through the queue API handler, against a real Redis.

use std::collections::HashSet;
use std::time::Duration;

use futures::future::join_all;
use lineup_tests::queue::{join, leave, promote, status, summary};
use lineup_tests::{api_request, api_request_with_claims, sleep, Inspect, Reply, TestApp};
use serde_json::json;

#[tokio::test]
async fn first_arrivals_are_admitted_until_capacity_then_wait_in_ticket_order() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2")]).await;
    let mut tickets = Vec::new();
    for (i, user) in ["u1", "u2", "u3", "u4"].iter().enumerate() {
        let reply = join(&app, "show", user).await;
        assert_eq!(reply.status, 201);
        let expected = if i < 2 { "active" } else { "waiting" };
        assert_eq!(reply.body["status"], expected, "{user}: {}", reply.body);
        tickets.push(reply.body["ticket"].as_u64().unwrap());
        if i >= 2 {
            assert_eq!(reply.body["position"], (i - 1) as u64);
            assert!(reply.body["activeUntil"].is_null());
            // A number and a range from the first poll, before any session has ended.
            let estimate = reply.body["estimatedWaitSeconds"]
                .as_u64()
                .expect("a number");
            let range = &reply.body["estimatedWaitRange"];
            assert!(range["low"].as_u64().unwrap() <= estimate, "{}", reply.body);
            assert!(
                estimate <= range["high"].as_u64().unwrap(),
                "{}",
                reply.body
            );
        } else {
            assert!(reply.body["position"].is_null());
            let until = reply.body["activeUntil"].as_str().unwrap();
            chrono::DateTime::parse_from_rfc3339(until).expect("RFC 3339");
            assert!(until.ends_with('Z'));
        }
    }
    assert!(tickets.windows(2).all(|w| w[0] < w[1]), "{tickets:?}");
    let s = summary(&app, "show").await;
    assert_eq!(s.status, 200);
    assert_eq!(s.body["waiting"], 2);
    assert_eq!(s.body["active"], 2);
    assert_eq!(s.body["admittedThrough"], 2);
    assert_eq!(s.body["settings"]["capacity"], 2);
    assert_eq!(s.body["settings"]["sessionSeconds"], 600);
    assert_eq!(s.body["settings"]["paused"], false);
    assert!(s.body["admissionRatePerMinute"].is_null());
    assert!(s.headers["cache-control"]
        .to_str()
        .unwrap()
        .contains("max-age="));
}

#[tokio::test]
async fn concurrent_requests_from_one_user_all_get_the_one_token() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    join(&app, "show", "someone-else").await;
    let replies = join_all((0..25).map(|_| join(&app, "show", "clicker"))).await;
    let tokens: HashSet<String> = replies.iter().map(Reply::token).collect();
    assert_eq!(tokens.len(), 1, "one token for one user");
    let created = replies.iter().filter(|r| r.status == 201).count();
    let repeated = replies.iter().filter(|r| r.status == 200).count();
    assert_eq!((created, repeated), (1, 24));
    assert_eq!(summary(&app, "show").await.body["waiting"], 1);
}

#[tokio::test]
async fn a_user_holds_one_place_per_queue_and_separate_queues_are_independent() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let a = join(&app, "show-a", "fan").await;
    let b = join(&app, "show-b", "fan").await;
    assert_eq!((a.status, b.status), (201, 201));
    assert_ne!(a.token(), b.token());
    // A token shown on another queue's path is not found there.
    status(&app, "show-b", &a.token()).await.assert_problem(404);
    leave(&app, "show-b", &a.token()).await.assert_problem(404);
    assert_eq!(status(&app, "show-a", &a.token()).await.status, 200);
}

#[tokio::test]
async fn promotion_admits_strictly_in_arrival_order() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("SESSION_SECONDS", "1")]).await;
    let mut tokens = Vec::new();
    for i in 0..6 {
        tokens.push(join(&app, "show", &format!("buyer-{i}")).await.token());
    }
    for (i, token) in tokens.iter().enumerate().skip(1) {
        // Keep everyone present while the line moves.
        for t in &tokens[i..] {
            status(&app, "show", t).await;
        }
        sleep(Duration::from_millis(1050)).await;
        promote(&app).await;
        let now = status(&app, "show", token).await;
        assert_eq!(
            now.body["status"], "active",
            "buyer-{i} is next: {}",
            now.body
        );
        for (j, later) in tokens.iter().enumerate().skip(i + 1) {
            let reply = status(&app, "show", later).await;
            assert_eq!(reply.body["status"], "waiting");
            assert_eq!(reply.body["position"], (j - i) as u64);
        }
    }
}

#[tokio::test]
async fn a_newcomer_waits_behind_the_line_even_when_a_place_is_free() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("SESSION_SECONDS", "1")]).await;
    join(&app, "show", "first").await;
    let second = join(&app, "show", "second").await;
    assert_eq!(second.body["status"], "waiting");
    sleep(Duration::from_millis(1100)).await;
    // The first session has expired, so a place is free, but "second" is waiting.
    let third = join(&app, "show", "third").await;
    assert_eq!(third.body["status"], "waiting", "{}", third.body);
    assert_eq!(third.body["position"], 2);
    promote(&app).await;
    assert_eq!(
        status(&app, "show", &second.token()).await.body["status"],
        "active"
    );
    assert_eq!(
        status(&app, "show", &third.token()).await.body["position"],
        1
    );
}

#[tokio::test]
async fn sessions_expire_per_token_before_any_reaper_runs() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "2"), ("SESSION_SECONDS", "2")]).await;
    let early = join(&app, "show", "early").await;
    sleep(Duration::from_millis(1000)).await;
    let late = join(&app, "show", "late").await;
    assert_eq!(late.body["status"], "active");
    sleep(Duration::from_millis(1100)).await;
    // "early" was activated 2.1 s ago, "late" 1.1 s ago.
    status(&app, "show", &early.token())
        .await
        .assert_problem(410);
    assert_eq!(
        status(&app, "show", &late.token()).await.body["status"],
        "active"
    );
    assert_eq!(summary(&app, "show").await.body["active"], 1);
    // The expired buyer can rejoin, with a new ticket.
    let again = join(&app, "show", "early").await;
    assert_eq!(again.status, 201);
    assert_ne!(again.token(), early.token());
}

#[tokio::test]
async fn racing_promoters_never_push_active_above_capacity() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "5"), ("ADMIT_PER_TICK", "3")]).await;
    for i in 0..60 {
        join(&app, "show", &format!("b{i}")).await;
    }
    for _ in 0..4 {
        let outputs = join_all((0..8).map(|_| promote(&app))).await;
        let admitted: u64 = outputs.iter().map(|o| o.admitted).sum();
        assert_eq!(admitted, 0, "all places were already taken at arrival");
    }
    // Free all five places at once, then race eight promoters over them.
    let actives: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{}:{{q:show}}:active", app.config.key_prefix))
        .arg(0)
        .arg(-1)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(actives.len(), 5);
    redis::cmd("DEL")
        .arg(format!("{}:{{q:show}}:active", app.config.key_prefix))
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let outputs = join_all((0..8).map(|_| promote(&app))).await;
    let admitted: u64 = outputs.iter().map(|o| o.admitted).sum();
    assert_eq!(admitted, 5, "exactly the free places are filled");
    assert!(
        outputs.iter().all(|o| o.admitted <= 3),
        "admitPerTick holds per tick"
    );
    assert_eq!(summary(&app, "show").await.body["active"], 5);
}

#[tokio::test]
async fn waiters_who_stop_polling_are_never_promoted_and_get_reaped() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    let active = join(&app, "show", "holder").await;
    let gone = join(&app, "show", "walked-away").await;
    let polling = join(&app, "show", "patient").await;
    let also_gone = join(&app, "show", "also-walked").await;
    for _ in 0..6 {
        sleep(Duration::from_millis(1000)).await;
        assert_eq!(status(&app, "show", &polling.token()).await.status, 200);
    }
    // 6 s without a poll, past 1.1 idle periods: the two walkers are absent. Leaving frees the place; the
    // absent head of the line is skipped, not admitted.
    leave(&app, "show", &active.token()).await;
    assert_eq!(
        status(&app, "show", &polling.token()).await.body["status"],
        "active"
    );
    // The walker behind the admitted buyer is left for the reaper.
    let report = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(report.abandoned(), 1, "{report:?}");
    status(&app, "show", &gone.token())
        .await
        .assert_problem(410);
    status(&app, "show", &also_gone.token())
        .await
        .assert_problem(410);
    assert_eq!(summary(&app, "show").await.body["waiting"], 0);
}

#[tokio::test]
async fn a_poll_within_the_idle_period_keeps_the_place() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("WAITING_IDLE_SECONDS", "5")]).await;
    join(&app, "show", "holder").await;
    let waiter = join(&app, "show", "waiter").await;
    for _ in 0..2 {
        sleep(Duration::from_millis(4700)).await;
        let reply = status(&app, "show", &waiter.token()).await;
        assert_eq!(reply.body["status"], "waiting");
        assert!(reply.body["pollAfterSeconds"].as_u64().unwrap() <= 1);
    }
    let report = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(report.abandoned(), 0);
}

#[tokio::test]
async fn leaving_frees_the_place_for_the_next_waiter_at_once() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "first").await;
    let second = join(&app, "show", "second").await;
    let third = join(&app, "show", "third").await;
    assert_eq!(second.body["status"], "waiting");

    // A waiter leaving moves those behind up.
    assert_eq!(leave(&app, "show", &second.token()).await.status, 204);
    assert_eq!(
        status(&app, "show", &third.token()).await.body["position"],
        1
    );
    status(&app, "show", &second.token())
        .await
        .assert_problem(410);

    // An active buyer leaving hands the place to the next waiter, without a promoter.
    let reply = leave(&app, "show", &first.token()).await;
    assert_eq!(reply.status, 204);
    assert!(reply.body.is_null());
    assert_eq!(
        status(&app, "show", &third.token()).await.body["status"],
        "active"
    );
    leave(&app, "show", &first.token())
        .await
        .assert_problem(410);
}

/// Before any session ends, sessions are expected to run out: the estimate is a number, with
/// a range from nothing known yet to every session running out. The first session to end
/// early lowers the estimate at once, though not to its own length alone: the live session
/// may yet run long.
#[tokio::test]
async fn wait_estimates_take_sessions_to_run_out_until_one_ends_early() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    let first = join(&app, "show", "first").await;
    let mut waiters = Vec::new();
    for i in 0..4 {
        waiters.push(join(&app, "show", &format!("w{i}")).await.token());
    }
    promote(&app).await;
    let before = status(&app, "show", &waiters[3]).await;
    let estimate = before.body["estimatedWaitSeconds"]
        .as_u64()
        .expect("a number before any session has ended");
    let (low, high) = (
        before.body["estimatedWaitRange"]["low"].as_u64().unwrap(),
        before.body["estimatedWaitRange"]["high"].as_u64().unwrap(),
    );
    // Four sessions of 600 s ahead, each place taken back at a tick (10 s by default).
    assert!(
        (2399..=2420).contains(&estimate) && low <= 1 && (2440..=2441).contains(&high),
        "{}",
        before.body
    );
    sleep(Duration::from_millis(1100)).await;
    // A session of 1.1 s ends (of the 600 s allowed) and w0 takes the place.
    leave(&app, "show", &first.token()).await;
    let last = status(&app, "show", &waiters[3]).await;
    assert_eq!(last.body["position"], 3);
    // A live session is expected to last yet the geometric mean of three quarters of what
    // its length leaves it (454 s of 605) and the ended mean (1.1 s): about 22 s. Sessions are
    // expected to last the mean of that and the one that ended, about 12 s: w0's, w1's and
    // w2's in turn come to about 35 s (58 s if a loaded machine stretched the ended session
    // to 3 s), far below the 2 400 s of sessions running out, and far above the 3 s of the
    // ended session's length alone.
    let estimate = last.body["estimatedWaitSeconds"]
        .as_u64()
        .expect("estimate");
    assert!((25..=90).contains(&estimate), "{}", last.body);
    assert!(last.body["estimatedWaitRange"]["low"].as_u64().unwrap() <= estimate);
    assert!(last.body["estimatedWaitRange"]["high"].as_u64().unwrap() >= 1800);
    let nearer = status(&app, "show", &waiters[1]).await;
    assert!(nearer.body["estimatedWaitSeconds"].as_u64().unwrap() < estimate);
    assert!(
        nearer.body["pollAfterSeconds"].as_u64().unwrap()
            <= last.body["pollAfterSeconds"].as_u64().unwrap()
    );
}

#[tokio::test]
async fn jwt_claims_name_the_user_and_a_different_body_user_is_forbidden() {
    let app = TestApp::spawn(&[]).await;
    let claims = json!({"sub": "jwt-user", "scope": "buy"});
    let reply = app
        .queue_api(api_request_with_claims(
            "POST",
            "/queues/show/tokens",
            None,
            Some(claims.clone()),
        ))
        .await;
    assert_eq!(reply.status, 201);
    assert_eq!(reply.body["userId"], "jwt-user");
    let same = app
        .queue_api(api_request_with_claims(
            "POST",
            "/queues/show/tokens",
            Some(r#"{"userId":"jwt-user"}"#),
            Some(claims.clone()),
        ))
        .await;
    assert_eq!(same.status, 200);
    app.queue_api(api_request_with_claims(
        "POST",
        "/queues/show/tokens",
        Some(r#"{"userId":"someone-else"}"#),
        Some(claims),
    ))
    .await
    .assert_problem(403);
}

#[tokio::test]
async fn bad_input_gets_problem_json_with_the_right_status() {
    let app = TestApp::spawn(&[]).await;
    let cases: Vec<(lambda_http::Request, u16)> = vec![
        (
            api_request(
                "POST",
                "/queues/bad%7Bid%7D/tokens",
                Some(r#"{"userId":"u"}"#),
            ),
            400,
        ),
        (
            api_request(
                "POST",
                &format!("/queues/{}/tokens", "q".repeat(65)),
                Some(r#"{"userId":"u"}"#),
            ),
            400,
        ),
        (
            api_request(
                "POST",
                "/queues/show/tokens",
                Some(r#"{"userId":"white space"}"#),
            ),
            400,
        ),
        (
            api_request("POST", "/queues/show/tokens", Some(r#"{"userId":""}"#)),
            400,
        ),
        (
            api_request("POST", "/queues/show/tokens", Some(r#"{"userId":7}"#)),
            400,
        ),
        (api_request("POST", "/queues/show/tokens", Some("{}")), 400),
        (
            api_request("POST", "/queues/show/tokens", Some("not json")),
            400,
        ),
        (api_request("POST", "/queues/show/tokens", None), 400),
        (
            api_request(
                "POST",
                "/queues/show/tokens",
                Some(&format!(r#"{{"userId":"u","pad":"{}"}}"#, "x".repeat(9000))),
            ),
            413,
        ),
        (
            api_request("GET", "/queues/show/tokens/not-a-token", None),
            404,
        ),
        (
            api_request(
                "GET",
                "/queues/show/tokens/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                None,
            ),
            404,
        ),
        (
            api_request("DELETE", "/queues/show/tokens/%7B%7D", None),
            404,
        ),
        (api_request("GET", "/nowhere", None), 404),
        (api_request("PUT", "/queues/show/tokens", None), 405),
    ];
    for (request, expected) in cases {
        let path = request.uri().path().to_owned();
        let reply = app.queue_api(request).await;
        reply.assert_problem(expected);
        assert!(!reply.body["detail"].as_str().unwrap().is_empty(), "{path}");
    }
    let named = app
        .queue_api(api_request(
            "POST",
            "/queues/show/tokens",
            Some(r#"{"userId":"a/b"}"#),
        ))
        .await;
    assert!(named.body["detail"].as_str().unwrap().contains("userId"));
    // Nothing was written for any of them.
    assert_eq!(summary(&app, "show").await.body["waiting"], 0);
    assert_eq!(summary(&app, "show").await.body["active"], 0);
}

#[tokio::test]
async fn every_operation_costs_one_round_trip() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1")]).await;
    // A server gets a script on its first use (NOSCRIPT, then EVAL with the text); use each
    // once. On a cluster that is once per primary: eight queues spread over the primaries
    // (the local cluster's three are covered by warm-0, warm-2 and warm-3).
    for i in 0..8 {
        let queue = format!("warm-{i}");
        let warm = join(&app, &queue, "warm-up").await;
        status(&app, &queue, &warm.token()).await;
        summary(&app, &queue).await;
        leave(&app, &queue, &warm.token()).await;
    }
    let (first, calls) = app.client_commands_during(join(&app, "show", "a")).await;
    // A queue's first buyer is told it is unregistered, puts it in the registry (a script
    // that checks MAX_QUEUES, then SADD) and asks again; once per queue.
    assert_eq!(calls, [("evalsha", 3), ("sadd", 1)].into());
    let (second, calls) = app.client_commands_during(join(&app, "show", "b")).await;
    assert_eq!(calls, [("evalsha", 1)].into());
    let (_, calls) = app
        .client_commands_during(status(&app, "show", &second.token()))
        .await;
    assert_eq!(calls, [("evalsha", 1)].into());
    let (_, calls) = app.client_commands_during(summary(&app, "show")).await;
    assert_eq!(calls, [("evalsha", 1)].into());
    let (_, calls) = app
        .client_commands_during(leave(&app, "show", &first.token()))
        .await;
    assert_eq!(calls, [("evalsha", 1)].into());
    // A promotion tick: one registry read, then every queue's step in one pipeline.
    for i in 0..3 {
        join(&app, &format!("other-{i}"), "x").await;
    }
    promote(&app).await; // loads the promotion script
    let (_, calls) = app.client_commands_during(promote(&app)).await;
    // One step per registered queue: show, the three others and the eight warm ones.
    assert_eq!(calls, [("smembers", 1), ("evalsha", 12)].into());
}

#[tokio::test]
async fn redis_going_away_answers_503_and_the_same_process_recovers() {
    let mut app = TestApp::spawn(&[]).await;
    if app.redis.is_none() {
        eprintln!("skipped: REDIS_URL points at a shared server this test must not stop");
        return;
    }
    let before = join(&app, "show", "early").await;
    assert_eq!(before.status, 201);
    app.redis.as_mut().unwrap().stop().await;
    let started = std::time::Instant::now();
    let down = join(&app, "show", "during").await;
    down.assert_problem(503);
    assert!(down.headers.get("retry-after").is_some());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "503 comes quickly"
    );
    summary(&app, "show").await.assert_problem(503);
    let tick = promote(&app).await;
    assert_eq!(
        tick.failed_ticks, 1,
        "the promoter reports instead of failing"
    );

    // A restarted Redis has no script cache and no data; the warm handler recovers.
    let recovered = restart_redis_then_join(&mut app, "show", "after")
        .await
        .expect("recovered without a restart of the process");
    assert_eq!(recovered.body["status"], "active");
    assert_eq!(status(&app, "show", &recovered.token()).await.status, 200);
}

#[tokio::test]
async fn a_new_container_connects_during_cold_start_not_during_its_first_request() {
    let mut app = TestApp::spawn(&[]).await;
    let Inspect::Single(inspect) = &app.inspect else {
        eprintln!("skipped: counts the connections of one server");
        return;
    };
    // Read over one long-lived connection, so reading opens none.
    let mut inspect = inspect.clone();
    let mut connections_received = async || -> i64 {
        let info: String = redis::cmd("INFO")
            .arg("stats")
            .query_async(&mut inspect)
            .await
            .unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let before = connections_received().await;
    app.new_container().await;
    let after_start = connections_received().await;
    assert_eq!(after_start, before + 1, "cold start opened the connection");
    assert_eq!(join(&app, "cold", "first").await.status, 201);
    assert_eq!(
        connections_received().await,
        after_start,
        "the first request found it open"
    );
}

#[tokio::test]
async fn a_container_started_while_redis_is_down_starts_answers_503_and_connects_later() {
    let mut app = TestApp::spawn(&[("REDIS_CONNECT_TIMEOUT_MS", "300")]).await;
    if app.redis.is_none() {
        eprintln!("skipped: REDIS_URL points at a shared server this test must not stop");
        return;
    }
    app.redis.as_mut().unwrap().stop().await;
    let started = std::time::Instant::now();
    app.new_container().await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "cold start gives up on Redis after its connect timeout"
    );
    join(&app, "cold", "during").await.assert_problem(503);

    assert!(
        restart_redis_then_join(&mut app, "cold", "after")
            .await
            .is_some(),
        "connected once Redis was back"
    );
}

/// Restarts the test's Redis, then joins `queue` as `user` until the same process is served
/// again; `None` if it is not within two seconds.
async fn restart_redis_then_join(app: &mut TestApp, queue: &str, user: &str) -> Option<Reply> {
    app.redis
        .as_mut()
        .unwrap()
        .restart()
        .await
        .expect("restart");
    for _ in 0..20 {
        let reply = join(app, queue, user).await;
        if reply.status == 201 {
            return Some(reply);
        }
        sleep(Duration::from_millis(100)).await;
    }
    None
}

/// The server is turned into a replica (`READONLY`) mid-session. Requests answer 503 while it is
/// demoted. The connection is replaced and serves once a primary answers.
#[tokio::test]
async fn a_demoted_primary_answers_503_and_the_connection_is_replaced() {
    let app = TestApp::spawn(&[]).await;
    if app.redis.is_none() {
        eprintln!("skipped: REDIS_URL points at a shared server this test must not demote");
        return;
    }
    let other = lineup_local::embedded_redis::EmbeddedRedis::start()
        .await
        .unwrap();
    assert_eq!(join(&app, "show", "before").await.status, 201);
    // A failover demotes the node this process is connected to.
    redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(other.port())
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let before = app.info_number("stats", "total_connections_received").await;
    join(&app, "show", "during").await.assert_problem(503);
    // The READONLY answer made the process drop that connection; the next request opens a
    // new one (which, behind a real endpoint, reaches the new primary).
    redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let after_failover = join(&app, "show", "after").await;
    assert_eq!(after_failover.status, 201, "{:?}", after_failover.body);
    let after = app.info_number("stats", "total_connections_received").await;
    assert!(
        after > before,
        "a new connection was opened: {before} -> {after}"
    );
}

#[tokio::test]
async fn the_reaper_retires_idle_queues_and_a_live_queue_re_registers_itself() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "1"), ("QUEUE_RETIRE_AFTER_SECONDS", "1")]).await;
    let registry = format!("{}:queues", app.config.key_prefix);
    let members = |app: &TestApp| {
        let mut inspect = app.inspect.clone();
        let registry = registry.clone();
        async move {
            let mut m: Vec<String> = redis::cmd("SMEMBERS")
                .arg(registry)
                .query_async(&mut inspect)
                .await
                .unwrap();
            m.sort();
            m
        }
    };
    let done = join(&app, "finished", "only").await;
    leave(&app, "finished", &done.token()).await;
    join(&app, "busy", "holder").await;
    let waiter = join(&app, "busy", "waiter").await;
    sleep(Duration::from_millis(1100)).await;
    status(&app, "busy", &waiter.token()).await;
    let report = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(report.retired(), 1, "{report:?}");
    assert_eq!(members(&app).await, ["busy"]);

    // A reaper racing an arrival: it has taken the queue off the registry, and a buyer
    // arrives before its final check. The check sees the buyer and puts the queue back.
    redis::cmd("SREM")
        .arg(&registry)
        .arg("busy")
        .query_async::<()>(&mut app.inspect.clone())
        .await
        .unwrap();
    let busy = lineup::ids::QueueId::parse("busy").unwrap();
    assert!(!app.room().retire(&busy).await.unwrap());
    assert_eq!(members(&app).await, ["busy"]);
    // A retired queue comes back with its next arrival. Its meta went with the retirement,
    // so tickets start again: nobody held a place that an old ticket could name.
    let again = join(&app, "finished", "later").await;
    assert_eq!(again.status, 201, "{}", again.body);
    assert_eq!(again.body["ticket"], 1);
    assert_eq!(members(&app).await, ["busy", "finished"]);
}

#[tokio::test]
async fn one_promoter_invocation_ticks_until_its_budget_is_spent() {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", "1"),
        ("SESSION_SECONDS", "1"),
        ("PROMOTE_TICK_SECONDS", "1"),
        ("PROMOTE_BUDGET_SECONDS", "3"),
    ])
    .await;
    join(&app, "show", "first").await;
    let second = join(&app, "show", "second").await;
    let third = join(&app, "show", "third").await;
    // Ticks at 0, 1, 2 and 3 s; sessions last 1 s, so both waiters are admitted meanwhile.
    let polling = async {
        for _ in 0..8 {
            status(&app, "show", &second.token()).await;
            status(&app, "show", &third.token()).await;
            sleep(Duration::from_millis(400)).await;
        }
    };
    let (output, ()) = tokio::join!(promote(&app), polling);
    assert_eq!(output.ticks, 4);
    assert_eq!(output.admitted, 2, "{output:?}");
}

#[tokio::test]
async fn a_large_admission_is_split_into_short_script_calls_within_one_tick() {
    let app = TestApp::spawn(&[("QUEUE_CAPACITY", "250"), ("RATE_LIMIT_IP_PER_MINUTE", "0")]).await;
    lineup_tests::queue::put_settings(&app, "big", &json!({"paused": true})).await;
    for i in 0..300 {
        join(&app, "big", &format!("u{i:03}")).await;
    }
    lineup_tests::queue::put_settings(&app, "big", &json!({"paused": false})).await;
    promote(&app).await; // a first tick in this process reads the registry first
    lineup_tests::queue::put_settings(&app, "big", &json!({"paused": true})).await;
    let before = summary(&app, "big").await.body;
    assert_eq!(
        before["active"], 250,
        "the first tick admitted up to capacity: {before}"
    );
    assert_eq!(before["admittedThrough"], 250, "in ticket order");
    assert_eq!(before["waiting"], 50);
    // At most 32 admissions per script call (lineup's SLICE): 250 took eight calls.
    let app2 =
        TestApp::spawn(&[("QUEUE_CAPACITY", "250"), ("RATE_LIMIT_IP_PER_MINUTE", "0")]).await;
    lineup_tests::queue::put_settings(&app2, "big", &json!({"paused": true})).await;
    for i in 0..300 {
        join(&app2, "big", &format!("u{i:03}")).await;
    }
    promote(&app2).await; // loads the script; paused, so nothing moves
    lineup_tests::queue::put_settings(&app2, "big", &json!({"paused": false})).await;
    let (tick, calls) = app2.client_commands_during(promote(&app2)).await;
    assert_eq!(tick.admitted, 250);
    assert_eq!(calls.get("evalsha"), Some(&8), "{calls:?}");
}

#[tokio::test]
async fn one_reaper_run_removes_every_expired_session_in_short_chunks() {
    let app = TestApp::spawn(&[
        ("QUEUE_CAPACITY", "250"),
        ("SESSION_SECONDS", "1"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
    ])
    .await;
    for i in 0..250 {
        assert_eq!(
            join(&app, "short", &format!("u{i:03}")).await.body["status"],
            "active"
        );
    }
    sleep(Duration::from_millis(1100)).await;
    let report = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(report.expired(), 250, "{report:?}");
    assert!(report.script_calls() >= 5, "50 per call: {report:?}");
    assert_eq!(summary(&app, "short").await.body["active"], 0);
}
