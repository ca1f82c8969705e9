//! Who may take a place on the striped line served by the functions (`LINE_STRIPES`), and
//! where: a presale's access list and its access codes, the door's challenge (solved by
//! ALTCHA's own solver), and the priority lane, through the same handlers the Lambdas run.

use lambda_http::http::HeaderValue;
use lineup::clock::Clock;
use lineup_tests::door::{solve, solver_ready};
use lineup_tests::{api_request, Reply};
use serde_json::{json, Value};

use super::line_served::Served;

#[tokio::test]
async fn a_presale_takes_only_the_listed_each_on_its_own_stripe() {
    let served = Served::start().await;
    let app = &served.app;
    // The list belongs to a queue an operator created.
    let upload = json!({"userIds": ["buyer-0", "buyer-1"]}).to_string();
    app.http("PUT", "/queues/pre/access", Some(&upload))
        .await
        .assert_problem(404);
    served
        .create("pre", r#"{"capacity": 5, "access": "list"}"#)
        .await;
    let listed = app.http("PUT", "/queues/pre/access", Some(&upload)).await;
    assert_eq!(listed.body["size"], 2, "{:?}", listed.body);
    let first = served.join("pre", 0).await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    // One not on the list is refused, with nothing written.
    let before = app.keys_with_ttl().await.len();
    let refused = served.join("pre", 2).await;
    refused.assert_problem(403);
    assert!(refused.body["type"]
        .as_str()
        .unwrap()
        .ends_with("/access-denied"));
    assert_eq!(
        app.keys_with_ttl().await.len(),
        before,
        "nothing was written"
    );
    // Put on the list, they join; taken off before joining, they cannot; one who holds a
    // place keeps it.
    let added = app.http("PUT", "/queues/pre/access/buyer-2", None).await;
    assert_eq!(added.body["size"], 3, "{:?}", added.body);
    assert_eq!(served.join("pre", 2).await.status, 201);
    for user in ["buyer-1", "buyer-0"] {
        let path = format!("/queues/pre/access/{user}");
        app.http("DELETE", &path, None).await;
    }
    served.join("pre", 1).await.assert_problem(403);
    assert_eq!(served.join("pre", 0).await.status, 200);
    // Closed once empty, the list goes with the queue: it has no TTL, its owner is the queue.
    let access_lists = || async {
        app.keys_with_ttl()
            .await
            .into_iter()
            .filter(|(key, ttl)| key.contains("{l:pre") && key.ends_with(":access") && *ttl == -1)
            .count()
    };
    assert!(access_lists().await > 0);
    for token in [first.token(), served.join("pre", 2).await.token()] {
        let path = format!("/queues/pre/tokens/{token}");
        assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    }
    assert_eq!(
        app.http("DELETE", "/queues/pre/settings", None)
            .await
            .status,
        204
    );
    assert_eq!(access_lists().await, 0);
}

/// `buyer` joins `queue` with `code` in `accessCode`.
async fn join_with_code(
    served: &Served,
    queue: &str,
    buyer: &str,
    code: &str,
) -> lineup_tests::Reply {
    let body = json!({ "userId": buyer, "accessCode": code }).to_string();
    let path = format!("/queues/{queue}/tokens");
    served.app.http("POST", &path, Some(&body)).await
}

/// A presale by code: the codes spread over the stripes, and each lets in the first buyer
/// who brings it, and only that buyer. A buyer who holds a place keeps it, code or none, and
/// a code it brings then stays free. The codes go with the queue.
#[tokio::test]
async fn a_presale_by_code_lets_each_code_in_once() {
    let served = Served::start().await;
    let app = &served.app;
    // The codes belong to a queue an operator created.
    let mint = |count: u64| async move {
        let body = json!({ "count": count }).to_string();
        app.http("POST", "/queues/pre/access-codes", Some(&body))
            .await
    };
    mint(4).await.assert_problem(404);
    served
        .create("pre", r#"{"capacity": 5, "access": "code"}"#)
        .await;
    let minted = mint(40).await;
    assert_eq!(minted.status, 201, "{:?}", minted.body);
    let codes: Vec<String> = minted.body["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(codes.len(), 40);
    // Spread: the codes lie on more than one stripe, and no key holds them in clear.
    let code_keys: Vec<String> = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, ttl)| key.contains("{l:pre") && key.ends_with(":codes") && *ttl == -1)
        .map(|(key, _)| key)
        .collect();
    assert!(code_keys.len() > 1, "{code_keys:?}");

    // No code, an unknown code, a malformed one: nobody new is let in, and nothing written.
    let before = app.keys_with_ttl().await.len();
    served.join("pre", 0).await.assert_problem(403);
    let unknown = join_with_code(&served, "pre", "buyer-0", "0123456789abcdef").await;
    unknown.assert_problem(403);
    assert!(unknown.body["type"]
        .as_str()
        .unwrap()
        .ends_with("/access-denied"));
    join_with_code(&served, "pre", "buyer-0", "not a code")
        .await
        .assert_problem(400);
    assert_eq!(
        app.keys_with_ttl().await.len(),
        before,
        "nothing was written"
    );

    // A code lets its first buyer in, and again; another buyer with it is refused.
    let first = join_with_code(&served, "pre", "buyer-0", &codes[0]).await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    assert_eq!(
        join_with_code(&served, "pre", "buyer-0", &codes[0])
            .await
            .status,
        200
    );
    join_with_code(&served, "pre", "buyer-1", &codes[0])
        .await
        .assert_problem(403);
    // One who holds a place keeps it without a code, and a code it brings stays free.
    assert_eq!(served.join("pre", 0).await.status, 200);
    assert_eq!(
        join_with_code(&served, "pre", "buyer-0", &codes[1])
            .await
            .status,
        200
    );
    assert_eq!(
        join_with_code(&served, "pre", "buyer-1", &codes[1])
            .await
            .status,
        201
    );

    // Two buyers racing for one code: exactly one gets in.
    let (a, b) = tokio::join!(
        join_with_code(&served, "pre", "buyer-2", &codes[2]),
        join_with_code(&served, "pre", "buyer-3", &codes[2]),
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert_eq!(statuses, [201, 403]);

    // Closed once empty, the codes go with the queue.
    for token in [first.token(), served.join("pre", 1).await.token()] {
        let path = format!("/queues/pre/tokens/{token}");
        assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    }
    let winner = if a.status == 201 { a } else { b };
    let path = format!("/queues/pre/tokens/{}", winner.token());
    assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    assert_eq!(
        app.http("DELETE", "/queues/pre/settings", None)
            .await
            .status,
        204
    );
    let left = app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(key, _)| key.ends_with(":codes"))
        .count();
    assert_eq!(left, 0);
}

/// `GET /queues/{queue}/challenge?userId={buyer}`.
async fn challenge(served: &Served, queue: &str, buyer: &str) -> Reply {
    let path = format!("/queues/{queue}/challenge?userId={buyer}");
    served.app.queue_api(api_request("GET", &path, None)).await
}

/// `buyer` joins `queue` with `payload` in `x-altcha`.
async fn join_through_door(served: &Served, queue: &str, buyer: &str, payload: &str) -> Reply {
    let body = json!({ "userId": buyer }).to_string();
    let path = format!("/queues/{queue}/tokens");
    let mut request = api_request("POST", &path, Some(&body));
    request
        .headers_mut()
        .insert("x-altcha", HeaderValue::from_str(payload).unwrap());
    served.app.queue_api(request).await
}

/// A 403 of problem `kind`, linking a fresh challenge.
fn assert_turned(reply: &Reply, kind: &str) {
    reply.assert_problem(403);
    let found = reply.body["type"].as_str().unwrap();
    assert!(found.ends_with(&format!("/{kind}")), "{:?}", reply.body);
    assert!(
        reply.body["challenge"].as_str().is_some(),
        "{:?}",
        reply.body
    );
}

/// Every key but the rate-limit counters, with its value: what a refusal leaves as it was.
async fn state(served: &Served) -> Vec<(String, String)> {
    let mut conn = served.app.inspect.clone();
    let mut out = Vec::new();
    for (key, _) in served.app.keys_with_ttl().await {
        let dump: Option<Vec<u8>> = redis::cmd("DUMP")
            .arg(&key)
            .query_async(&mut conn)
            .await
            .unwrap();
        out.push((key, format!("{dump:?}")));
    }
    out.sort();
    out
}

/// The door on the line: a new arrival brings a challenge solved by ALTCHA's own solver,
/// numbered on its own stripe, and the join redeems it as the place is made. None, a bad one
/// or a replayed one is refused, with nothing written; one who holds a place needs none.
#[tokio::test]
async fn the_door_takes_each_solved_challenge_once_on_the_buyers_stripe() {
    if !solver_ready() {
        return;
    }
    let served = Served::start().await;
    // A queue nobody created has no door.
    challenge(&served, "gig", "ann").await.assert_problem(404);
    served
        .create(
            "gig",
            r#"{"capacity": 5, "challenge": "on", "challengeCostMin": 200}"#,
        )
        .await;
    let issued = challenge(&served, "gig", "ann").await;
    assert_eq!(issued.status, 200, "{:?}", issued.body);
    let parameters = &issued.body["parameters"];
    assert_eq!(parameters["cost"], 200);
    assert_eq!(parameters["data"]["queue"], "gig");
    assert_eq!(parameters["data"]["buyer"], "ann");
    let serial = parameters["data"]["serial"].as_u64().unwrap();
    // Each stripe numbers its own: the same buyer's next challenge is the next serial.
    let next = challenge(&served, "gig", "ann").await;
    assert_eq!(next.body["parameters"]["data"]["serial"], serial + 1);
    let payload = solve(&issued.body).await;

    // Without a solution, or with another buyer's: refused, and nothing written.
    let before = state(&served).await;
    let body = json!({ "userId": "ann" }).to_string();
    let bare = served
        .app
        .queue_api(api_request("POST", "/queues/gig/tokens", Some(&body)))
        .await;
    assert_turned(&bare, "challenge-required");
    assert_turned(
        &join_through_door(&served, "gig", "ben", &payload).await,
        "challenge-failed",
    );
    assert_eq!(state(&served).await, before, "a refusal wrote something");

    // Solved: ann takes a place, and needs no solution to find it again.
    let joined = join_through_door(&served, "gig", "ann", &payload).await;
    assert_eq!(joined.status, 201, "{:?}", joined.body);
    let again = served
        .app
        .queue_api(api_request("POST", "/queues/gig/tokens", Some(&body)))
        .await;
    assert_eq!(again.status, 200, "{:?}", again.body);
    // Once left, the same solution takes no second place.
    let path = format!("/queues/gig/tokens/{}", joined.token());
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    let replayed = join_through_door(&served, "gig", "ann", &payload).await;
    assert_turned(&replayed, "challenge-failed");
    let detail = replayed.body["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("used already"), "{detail}");
    // A fresh one does.
    let fresh = solve(&challenge(&served, "gig", "ann").await.body).await;
    assert_eq!(
        join_through_door(&served, "gig", "ann", &fresh)
            .await
            .status,
        201
    );
}

/// With `adaptive`, a challenge's cost rises with the challenges the line hands out: each
/// stripe counts its own, times the stripes.
#[tokio::test]
async fn an_adaptive_door_costs_more_as_challenges_come_faster() {
    let served = Served::start().await;
    served
        .create(
            "rush",
            r#"{"challenge": "adaptive", "challengeCostMin": 100, "challengeCostMax": 5000}"#,
        )
        .await;
    let cost = |reply: &Reply| -> u64 {
        let cost: &Value = &reply.body["parameters"]["cost"];
        cost.as_u64().unwrap_or_else(|| panic!("{:?}", reply.body))
    };
    assert_eq!(cost(&challenge(&served, "rush", "ann").await), 100);
    let mut last = 0;
    for _ in 0..40 {
        last = cost(&challenge(&served, "rush", "ann").await);
    }
    // 41 challenges on one stripe within a minute: at least 41 × 4 stripes a minute, 100 more
    // than the floor's step, so at least twice the floor.
    assert!(last >= 200, "cost {last}");
    assert!(last <= 5000);
}

/// `buyer-<i>`'s status in `queue`: its `status` and `position`.
async fn standing(served: &Served, queue: &str, token: &str) -> (String, Value) {
    let reply = served.status(queue, token).await;
    let status = reply.body["status"].as_str().unwrap_or_default().to_owned();
    (status, reply.body["position"].clone())
}

/// The priority lane on the line: a buyer on the operator's list takes its place in the lane,
/// ahead of the whole main line whatever its stripe, the lane in order of arrival; one who
/// joins the lane after the main line has been walked still goes first, and is told so.
#[tokio::test]
async fn the_priority_lane_goes_ahead_of_the_main_line_across_stripes() {
    let served = Served::start().await;
    let clock = &served.clock;
    let app = &served.app;
    // The list belongs to a queue an operator created.
    app.http("PUT", "/queues/vip/priority/buyer-10", None)
        .await
        .assert_problem(404);
    served.create("vip", r#"{"capacity": 2}"#).await;
    let main = served.joined("vip", 6, 1000).await;
    for (user, size) in [("buyer-10", 1), ("buyer-11", 2), ("buyer-12", 3)] {
        let path = format!("/queues/vip/priority/{user}");
        let listed = app.http("PUT", &path, None).await;
        assert_eq!(listed.body["size"], size, "{:?}", listed.body);
    }
    // Taken off before joining: the main line.
    let removed = app
        .http("DELETE", "/queues/vip/priority/buyer-12", None)
        .await;
    assert_eq!(removed.body["size"], 2, "{:?}", removed.body);
    let mut lane = Vec::new();
    for i in [10, 11] {
        let joined = served.join("vip", i).await;
        assert_eq!(joined.status, 201, "{:?}", joined.body);
        let ticket = joined.body["ticket"].as_u64().unwrap();
        assert!(ticket > (1 << 52) + (1 << 50), "a lane ticket: {ticket}");
        lane.push(joined.token());
    }
    let twelfth = served.join("vip", 12).await;
    assert!(twelfth.body["ticket"].as_u64().unwrap() < (1 << 52) + (1 << 50));
    clock.advance(2000);

    // The lane first: both of it, though the main line arrived before.
    assert_eq!(served.tick().await.admitted(), 2);
    clock.advance(1000);
    for token in &lane {
        assert_eq!(standing(&served, "vip", token).await.0, "active");
    }
    assert_eq!(
        standing(&served, "vip", &main[0]).await,
        ("waiting".to_owned(), json!(1))
    );

    // The main line is walked; then one more joins the lane, and still goes first.
    for token in &lane {
        let path = format!("/queues/vip/tokens/{token}");
        assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    }
    assert_eq!(served.tick().await.admitted(), 2);
    clock.advance(1000);
    assert_eq!(standing(&served, "vip", &main[1]).await.0, "active");
    app.http("PUT", "/queues/vip/priority/buyer-13", None).await;
    let late = served.join("vip", 13).await;
    assert_eq!(late.status, 201, "{:?}", late.body);
    // Twice: the second poll takes the stripe's state the first read, whose main line's head
    // lies past the new lane place.
    for _ in 0..2 {
        let (status, _) = standing(&served, "vip", &late.token()).await;
        assert_eq!(
            status, "waiting",
            "a new lane place is not taken for walked"
        );
    }
    clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 0, "no room");
    clock.advance(1000);
    let (status, position) = standing(&served, "vip", &late.token()).await;
    assert_eq!((status.as_str(), position), ("waiting", json!(1)));
    assert_eq!(
        standing(&served, "vip", &main[2]).await,
        ("waiting".to_owned(), json!(2))
    );
    let path = format!("/queues/vip/tokens/{}", main[0]);
    assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    assert_eq!(standing(&served, "vip", &late.token()).await.0, "active");
    assert_eq!(standing(&served, "vip", &main[2]).await.1, json!(1));
}

/// With `laneBeforeOpening`, the lane is admitted before the opening; the draw waits for it.
/// Without it, a lane place waits for the opening, and sees its position and a wait counted
/// from the opening meanwhile.
#[tokio::test]
async fn the_lane_goes_before_the_opening_where_the_queue_says_so() {
    let served = Served::start().await;
    let clock = &served.clock;
    let opens_at = chrono::DateTime::from_timestamp_millis(clock.now_ms() + 60_000).unwrap();
    let settings = json!({"capacity": 5, "opensAt": lineup_tests::draw::rfc(opens_at),
        "laneBeforeOpening": true});
    served.create("early", &settings.to_string()).await;
    served
        .app
        .http("PUT", "/queues/early/priority/buyer-1", None)
        .await;
    let member = served.join("early", 0).await;
    assert_eq!(member.body["status"], "prequeue", "{:?}", member.body);
    let listed = served.join("early", 1).await;
    assert_eq!(listed.status, 201, "{:?}", listed.body);
    clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 1);
    clock.advance(1000);
    assert_eq!(
        standing(&served, "early", &listed.token()).await.0,
        "active"
    );
    assert_eq!(
        standing(&served, "early", &member.token()).await.0,
        "prequeue"
    );
    // Without it, the lane waits for the opening too.
    served
        .create("early", r#"{"laneBeforeOpening": false}"#)
        .await;
    served
        .app
        .http("PUT", "/queues/early/priority/buyer-2", None)
        .await;
    let waits = served.join("early", 2).await;
    clock.advance(2000);
    assert_eq!(served.tick().await.admitted(), 0);
    clock.advance(1000);
    // It sees its place in the lane, and its wait counts from the opening.
    let told = served.status("early", &waits.token()).await;
    assert_eq!(told.body["status"], "waiting", "{:?}", told.body);
    assert_eq!(told.body["position"], 1, "{:?}", told.body);
    let until_opening = ((opens_at.timestamp_millis() - clock.now_ms()) / 1000) as u64;
    let low = told.body["estimatedWaitRange"]["low"].as_u64().unwrap_or(0);
    assert!(
        low >= until_opening,
        "a lane place waits for the opening ({until_opening} s): {:?}",
        told.body
    );
    assert!(told.body["estimatedWaitSeconds"].as_u64() >= Some(low));
    assert_eq!(
        standing(&served, "early", &member.token()).await.0,
        "prequeue"
    );
}
