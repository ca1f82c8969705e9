//! `lineup pool`, `coupon`, `health send` and `rankings top` against the local stack.

use super::*;

#[tokio::test]
async fn pool_set_show_and_delete_act_on_the_pool() {
    let local = Local::start().await;
    let ran = local
        .lineup(&[
            "pool",
            "set",
            "cli-arena",
            "--capacity",
            "10",
            "--weight",
            "cli-p1=3",
            "--weight",
            "cli-p2=1",
        ])
        .await
        .expect(0);
    assert_eq!(pairs(&ran.stdout)["capacity"], "10", "{}", ran.stdout);
    let (status, pool) = local.get("/pools/cli-arena").await;
    assert_eq!(status, 200, "{pool}");
    assert_eq!(pool["capacity"], 10);
    assert_eq!(pool["weights"], json!({ "cli-p1": 3, "cli-p2": 1 }));

    let shown = local.lineup(&["pool", "show", "cli-arena"]).await.expect(0);
    let rows = cells(&shown.stdout);
    assert!(
        rows.contains(&row(&["pool", "cli-arena"])),
        "{}",
        shown.stdout
    );
    assert!(
        rows.contains(&row(&["cli-p1", "3", "-"])),
        "{}",
        shown.stdout
    );
    assert!(
        rows.contains(&row(&["cli-p2", "1", "-"])),
        "{}",
        shown.stdout
    );
    let shown = local
        .lineup(&["--json", "pool", "show", "cli-arena"])
        .await
        .expect(0)
        .json();
    assert_eq!(shown, pool);

    // The whole pool each time: weights left out are gone.
    local
        .lineup(&["pool", "set", "cli-arena", "--capacity", "4"])
        .await
        .expect(0);
    let (_, pool) = local.get("/pools/cli-arena").await;
    assert_eq!(
        (pool["capacity"].clone(), pool["weights"].clone()),
        (json!(4), json!({}))
    );
    for bad in ["cli-p1", "cli-p1=x", "bad queue=1"] {
        local
            .lineup(&[
                "pool",
                "set",
                "cli-arena",
                "--capacity",
                "5",
                "--weight",
                bad,
            ])
            .await
            .expect(2);
    }
    assert_eq!(local.get("/pools/cli-arena").await.1["capacity"], 4);

    let ran = local
        .lineup(&["pool", "delete", "cli-arena"])
        .await
        .expect(5);
    assert!(one_line(&ran).contains("--yes"), "{ran:#?}");
    assert_eq!(local.get("/pools/cli-arena").await.0, 200);
    let ran = local
        .lineup(&["pool", "delete", "cli-arena", "--yes"])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "pool cli-arena: deleted");
    assert_eq!(local.get("/pools/cli-arena").await.0, 404);
    let ran = local.lineup(&["pool", "show", "cli-arena"]).await.expect(1);
    assert!(one_line(&ran).contains("(404)"), "{ran:#?}");
}

#[tokio::test]
async fn coupon_create_show_and_close_and_a_claim_after_close_is_refused() {
    let local = Local::start().await;
    let app = &local.app;
    local
        .lineup(&["queue", "set", "cli-cq", "--capacity", "5"])
        .await
        .expect(0);
    let opened = (chrono::Utc::now() - chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let created = local
        .lineup(&[
            "--json",
            "coupon",
            "create",
            "cli-drop",
            "--quantity",
            "3",
            "--queue",
            "cli-cq",
            "--opens-at",
            &opened,
        ])
        .await
        .expect(0)
        .json();
    assert_eq!(created["quantity"], 3, "{created}");
    assert_eq!(created["queueId"], "cli-cq");
    assert_eq!(created["closesAt"], Value::Null);
    let read = || async {
        app.coupon_api(api_request("GET", "/coupons/cli-drop", None))
            .await
    };
    assert_eq!(read().await.body, created);

    let ana = join(app, "cli-cq", "ana").await;
    let ben = join(app, "cli-cq", "ben").await;
    assert_eq!(ben.body["status"], "active", "{}", ben.body);
    let claimed = claim(
        app,
        "cli-drop",
        json!({ "userId": "ana", "token": ana.token() }),
    )
    .await;
    assert_eq!(claimed.status, 201, "{}", claimed.body);

    let shown = local
        .lineup(&["coupon", "show", "cli-drop"])
        .await
        .expect(0);
    let rows = pairs(&shown.stdout);
    assert_eq!(rows["quantity"], "3", "{}", shown.stdout);
    assert_eq!(rows["claimed"], "1");
    assert_eq!(rows["remaining"], "2");
    assert_eq!(rows["queue"], "cli-cq");
    assert_eq!(rows["closes at"], "-");

    // Close: closesAt becomes the moment of the command, the rest of the campaign stays.
    let before = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0).unwrap();
    let closed = local
        .lineup(&["--json", "coupon", "close", "cli-drop"])
        .await
        .expect(0)
        .json();
    let after = chrono::Utc::now();
    let closes_at = chrono::DateTime::parse_from_rfc3339(closed["closesAt"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert!(before <= closes_at && closes_at <= after, "{closed}");
    let campaign = read().await.body;
    assert_eq!(campaign, closed);
    assert_eq!(campaign["quantity"], 3);
    assert_eq!(campaign["claimed"], 1);
    assert_eq!(campaign["queueId"], "cli-cq");
    assert_eq!(campaign["opensAt"], created["opensAt"]);
    let refused = claim(
        app,
        "cli-drop",
        json!({ "userId": "ben", "token": ben.token() }),
    )
    .await;
    assert_eq!(refused.status, 409, "closed: {}", refused.body);
    assert_eq!(read().await.body["claimed"], 1);

    // Bad input never reaches the API; an unknown campaign is the API's 404.
    local
        .lineup(&[
            "coupon",
            "create",
            "cli-drop",
            "--quantity",
            "3",
            "--opens-at",
            "soon",
        ])
        .await
        .expect(2);
    let ran = local
        .lineup(&["coupon", "close", "cli-nothing"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(404)"), "{ran:#?}");
}

#[tokio::test]
async fn health_send_sets_the_booking_health_the_queue_paces_by() {
    let local = Local::start().await;
    for queue in ["cli-health", "cli-health-2"] {
        local
            .lineup(&["queue", "set", queue, "--admit-per-tick", "10"])
            .await
            .expect(0);
    }
    let ran = local
        .lineup(&["health", "send", "cli-health", "--level", "0.5"])
        .await
        .expect(0);
    assert!(
        ran.stdout.starts_with("health 0.5 sent for cli-health"),
        "{}",
        ran.stdout
    );
    let pace = summary(&local.app, "cli-health").await.body["pace"].clone();
    assert_eq!(
        pace["health"],
        json!({ "level": 0.5, "reason": "booking" }),
        "{pace}"
    );
    assert_eq!(pace["admitPerTick"], 5.0);

    // Stop, sent straight after (most often within the same second): the later signal wins.
    let ran = local
        .lineup(&[
            "--json",
            "health",
            "send",
            "cli-health",
            "cli-health-2",
            "--level",
            "0",
        ])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["result"], "applied", "{ran}");
    assert_eq!(
        ran["detail"],
        json!({ "queueIds": ["cli-health", "cli-health-2"], "level": 0.0 })
    );
    for queue in ["cli-health", "cli-health-2"] {
        assert_eq!(
            summary(&local.app, queue).await.body["pace"]["health"]["level"],
            0.0
        );
    }
    // A queue nobody made takes no level: refused, on one line. A level out of range is
    // bad usage, and the level in force stays.
    let ran = local
        .lineup(&["health", "send", "cli-nowhere", "--level", "1"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("no such queue"), "{ran:#?}");
    local
        .lineup(&["health", "send", "cli-health", "--level", "1.5"])
        .await
        .expect(2);
    assert_eq!(
        summary(&local.app, "cli-health").await.body["pace"]["health"]["level"],
        0.0
    );
}

#[tokio::test]
async fn rankings_top_lists_the_board_in_order() {
    let local = Local::start().await;
    let at = chrono::Utc::now().to_rfc3339();
    let events: Vec<Value> = [("cli-a", 5), ("cli-b", 9), ("cli-c", 2)]
        .iter()
        .enumerate()
        .map(|(i, (concert, seats))| {
            let mut event = lineup_tests::rankings::paid(
                &format!("cli-pay-{i}"),
                concert,
                *seats,
                &["rock"],
                &at,
            );
            event["id"] = json!(format!("cli-evt-{i}"));
            event
        })
        .collect();
    let (status, _, body) = send(
        local.addr,
        "POST",
        "/events",
        Some(&Value::Array(events).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The tick's fold, as the local stack's schedule runs it.
    let fold = local.app.stack.event_applier.rankings.fold().await.unwrap();
    assert_eq!(fold.left, 0, "{fold:?}");

    let ran = local
        .lineup(&["rankings", "top", "all-time"])
        .await
        .expect(0);
    let rows = cells(&ran.stdout);
    assert!(rows[0][0].starts_with("all-time"), "{}", ran.stdout);
    assert_eq!(rows[1], row(&["rank", "concert", "title", "seats", "rate"]));
    let board: Vec<(String, String, String)> = rows[2..]
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[3].clone()))
        .collect();
    let expected = [
        ("1", "cli-b", "9"),
        ("2", "cli-a", "5"),
        ("3", "cli-c", "2"),
    ]
    .map(|(rank, concert, seats)| (rank.to_owned(), concert.to_owned(), seats.to_owned()));
    assert_eq!(board, expected, "{}", ran.stdout);

    let ran = local
        .lineup(&[
            "--json", "rankings", "top", "all-time", "--genre", "rock", "--limit", "2",
        ])
        .await
        .expect(0)
        .json();
    let items: Vec<(Value, Value, Value)> = ran["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["rank"].clone(),
                i["concertId"].clone(),
                i["score"].clone(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            (json!(1), json!("cli-b"), json!(9)),
            (json!(2), json!("cli-a"), json!(5))
        ]
    );
    assert_eq!(ran["total"], 3);
    assert_eq!(ran["genre"], "rock");
    local.lineup(&["rankings", "top", "yearly"]).await.expect(2);
    let ran = local
        .lineup(&["rankings", "top", "daily", "--by", "popularity"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(400)"), "{ran:#?}");
}
