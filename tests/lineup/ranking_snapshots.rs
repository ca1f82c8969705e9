//! Movement on the live boards (issue 58): each hour the tick keeps a snapshot of the top K
//! rows of every last-24h, last-7d and trending board, overall and per genre, by seats and
//! by sell-through; a read compares each row with it and says when it was taken.

use chrono::{DateTime, Utc};
use lineup::ranking::{Outcome, Period};
use lineup_tests::rankings::{paid, pay, read, schedule, sell_at, tick};
use lineup_tests::{Reply, TestApp};
use serde_json::{json, Value};

const HOUR_MS: i64 = 3_600_000;

/// `GET path` through the ranking API `api`.
async fn read_via(api: &ranking_api::Deps, path: &str) -> Reply {
    let reply = Reply::from(
        ranking_api::handle(lineup_tests::api_request("GET", path, None), api)
            .await
            .expect("infallible"),
    );
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply
}

/// `(concertId, rank, previousRank, movement, previousAt)` of each row.
fn moves(rows: &Value) -> Vec<(String, u64, Value, Value, Value)> {
    rows.as_array()
        .expect("rows")
        .iter()
        .map(|i| {
            (
                i["concertId"].as_str().unwrap().to_owned(),
                i["rank"].as_u64().unwrap(),
                i["previousRank"].clone(),
                i["movement"].clone(),
                i["previousAt"].clone(),
            )
        })
        .collect()
}

fn page(reply: &Reply) -> Vec<(String, u64, Value, Value, Value)> {
    assert_eq!(reply.status, 200, "{}", reply.body);
    moves(&reply.body["items"])
}

/// A row compared with the snapshot taken at `at`.
fn row(
    concert: &str,
    rank: u64,
    previous: Value,
    movement: Value,
    at: &Value,
) -> (String, u64, Value, Value, Value) {
    let at = if movement.is_null() {
        Value::Null
    } else {
        at.clone()
    };
    (concert.to_owned(), rank, previous, movement, at)
}

fn same() -> Value {
    json!({"kind": "same"})
}

fn down(by: u64) -> Value {
    json!({"kind": "down", "by": by})
}

/// The time every row compared shows, from a read: they all agree.
fn taken_at(reply: &Reply) -> Value {
    let times: Vec<&Value> = reply.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["previousAt"])
        .filter(|at| !at.is_null())
        .collect();
    assert!(!times.is_empty(), "no row compared: {}", reply.body);
    assert!(times.iter().all(|at| *at == times[0]), "{times:?}");
    times[0].clone()
}

#[tokio::test]
async fn live_rows_move_against_the_hourly_snapshot_of_the_top_k_and_say_when_it_was_taken() {
    let app = TestApp::spawn(&[("RANKING_SNAPSHOT_TOP", "3")]).await;
    let rankings = app.stack.event_applier.rankings.clone();
    // a 5, b and c 3 (both 2nd), d 1; a and b are rock.
    sell_at(
        &app,
        Utc::now(),
        &[
            ("p-a", "a", 5, &["rock"]),
            ("p-b", "b", 3, &["rock"]),
            ("p-c", "c", 3, &[]),
            ("p-d", "d", 1, &[]),
        ],
    )
    .await;
    // The first hour: no snapshot yet, so no movement and no time.
    let first = read(&app, "/rankings/last-24h").await;
    assert!(
        page(&first)
            .iter()
            .all(|(_, _, was, moved, at)| was.is_null() && moved.is_null() && at.is_null()),
        "{}",
        first.body
    );

    // The tick keeps the hour's snapshots: five boards overall and five for rock.
    let before = Utc::now();
    let ticked = tick(&app).await;
    let after = Utc::now();
    assert_eq!(ticked["snapshots"], json!(10), "{ticked}");
    assert_eq!(ticked["more"], json!(false), "{ticked}");
    // The rest of the hour, the tick finds the round done.
    assert_eq!(tick(&app).await["snapshots"], json!(0));

    // Nothing moved since: the same ranks, with the snapshot's time. d ranks below the top 3,
    // so its movement is unknown.
    let now = read(&app, "/rankings/last-24h").await;
    let at = taken_at(&now);
    let taken: DateTime<Utc> = at.as_str().unwrap().parse().unwrap();
    assert!(
        before - chrono::Duration::milliseconds(1) <= taken && taken <= after,
        "{taken} outside the tick"
    );
    assert_eq!(
        page(&now),
        vec![
            row("a", 1, json!(1), same(), &at),
            row("b", 2, json!(2), same(), &at),
            row("c", 2, json!(2), same(), &at),
            row("d", 4, Value::Null, Value::Null, &at),
        ]
    );

    // d sells 10 and leads, and e arrives: neither was in the top 3 of a full snapshot, so
    // both are unknown; b and c fell below the top 3. On rock, whose snapshot held fewer
    // rows than 3, e is new.
    sell_at(
        &app,
        Utc::now(),
        &[("p-d2", "d", 10, &[]), ("p-e", "e", 4, &["rock"])],
    )
    .await;
    let moved = read(&app, "/rankings/last-24h").await;
    assert_eq!(
        page(&moved),
        vec![
            row("d", 1, Value::Null, Value::Null, &at),
            row("a", 2, json!(1), down(1), &at),
            row("e", 3, Value::Null, Value::Null, &at),
            row("b", 4, Value::Null, Value::Null, &at),
            row("c", 4, Value::Null, Value::Null, &at),
        ]
    );
    // The kept page says the same.
    assert_eq!(page(&read(&app, "/rankings/last-24h").await), page(&moved));
    let rock = read(&app, "/rankings/last-7d?genre=rock").await;
    assert_eq!(
        page(&rock),
        vec![
            row("a", 1, json!(1), same(), &at),
            row("e", 2, Value::Null, json!({"kind": "new"}), &at),
            row("b", 3, json!(2), down(1), &at),
        ]
    );
    let trending = read(&app, "/rankings/trending").await;
    assert_eq!(trending.status, 200, "{}", trending.body);
    let trending_rows = page(&trending);
    assert_eq!(trending_rows[0].0, "d");
    assert_eq!(trending_rows[1], row("a", 2, json!(1), down(1), &at));

    // A concert's own read and the many-concerts read carry the same.
    let own = read(&app, "/rankings/last-24h/concerts/a").await;
    assert_eq!(
        (
            &own.body["previousRank"],
            &own.body["movement"],
            &own.body["previousAt"]
        ),
        (&json!(1), &down(1), &at)
    );
    let many = read(&app, "/rankings/last-24h/concerts?ids=d,a,zz").await;
    assert_eq!(many.status, 200, "{}", many.body);
    let standings: Vec<_> = many.body["concerts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["concertId"].clone(),
                c["movement"].clone(),
                c["previousAt"].clone(),
            )
        })
        .collect();
    assert_eq!(
        standings,
        vec![
            (json!("a"), down(1), at.clone()),
            (json!("d"), Value::Null, Value::Null),
            (json!("zz"), Value::Null, Value::Null),
        ]
    );

    // By sell-through: the rate boards have their own snapshots.
    for (concert, capacity) in [("a", 10), ("b", 6), ("c", 30), ("d", 1000), ("e", 8)] {
        schedule(
            &app,
            concert,
            capacity,
            concert,
            None,
            "2027-01-15T18:30:00+09:00",
        )
        .await;
    }
    let next_hour = Utc::now().timestamp_millis() + HOUR_MS;
    let round = rankings
        .snapshot(&next_hour)
        .await
        .expect("the next hour's round");
    assert_eq!((round.boards, round.more), (10, false), "{round:?}");
    // Rates: a 0.5, b 0.5, e 0.5, c 0.1, d 0.011: all same since the snapshot just taken.
    let rate = read(&app, "/rankings/last-24h?by=rate").await;
    let next_at = taken_at(&rate);
    assert_ne!(next_at, at);
    assert_eq!(
        page(&rate),
        vec![
            row("a", 1, json!(1), same(), &next_at),
            row("b", 1, json!(1), same(), &next_at),
            row("e", 1, json!(1), same(), &next_at),
            row("c", 4, Value::Null, Value::Null, &next_at),
            row("d", 5, Value::Null, Value::Null, &next_at),
        ]
    );
    // b sells 3 more (1.0): up... it was first already, tied; a and e fall to a shared 2nd.
    sell_at(&app, Utc::now(), &[("p-b2", "b", 3, &["rock"])]).await;
    let rate = read(&app, "/rankings/last-24h?by=rate").await;
    assert_eq!(
        page(&rate)[..3],
        vec![
            row("b", 1, json!(1), same(), &next_at),
            row("a", 2, json!(1), down(1), &next_at),
            row("e", 2, json!(1), down(1), &next_at),
        ]
    );
}

#[tokio::test]
async fn a_change_of_half_life_leaves_trending_movement_unknown_until_the_next_snapshot() {
    let app = TestApp::spawn(&[("RANKING_TRENDING_HALF_LIFE_HOURS", "6")]).await;
    sell_at(
        &app,
        Utc::now(),
        &[("p-a", "a", 5, &[]), ("p-b", "b", 3, &[])],
    )
    .await;
    tick(&app).await;
    let kept = read(&app, "/rankings/trending").await;
    assert!(!taken_at(&kept).is_null());

    // Redeployed with a half-life of 12 hours: the snapshot was ranked with 6.
    let redeployed = app
        .redeployed(&[("RANKING_TRENDING_HALF_LIFE_HOURS", "12")])
        .await;
    // The same sales on the new generation (a payment record keeps its weights per
    // generation; these are new payments).
    let at = Utc::now().to_rfc3339();
    let events = [
        paid("p-a2", "a", 5, &[], &at),
        paid("p-b2", "b", 3, &[], &at),
    ];
    event_applier::apply_events(&events, &redeployed.event_applier).await;
    redeployed
        .event_applier
        .rankings
        .fold()
        .await
        .expect("fold");
    let api = &redeployed.ranking_api;
    let unknown = read_via(api, "/rankings/trending").await;
    assert_eq!(unknown.status, 200, "{}", unknown.body);
    assert!(
        moves(&unknown.body["items"])
            .iter()
            .all(|(_, _, was, moved, at)| was.is_null() && moved.is_null() && at.is_null()),
        "{}",
        unknown.body
    );
    // The rolling boards do not decay: their movement stays.
    let rolling = read_via(api, "/rankings/last-24h").await;
    assert!(!taken_at(&rolling).is_null());

    // The next hour's snapshot, ranked with 12 hours, compares again.
    let next_hour = Utc::now().timestamp_millis() + HOUR_MS;
    let round = redeployed
        .event_applier
        .rankings
        .snapshot(&next_hour)
        .await
        .expect("the round");
    assert!(!round.more, "{round:?}");
    let again = read_via(api, "/rankings/trending").await;
    // The next hour may start the next generation: its board is empty until a sale, so the
    // snapshot holds no row and every row now is new to it.
    let rankings = &api.rankings;
    let next = DateTime::from_timestamp_millis(next_hour).unwrap();
    let same_generation = rankings.board_at(Period::Trending, Utc::now(), None)
        == rankings.board_at(Period::Trending, next, None);
    let (a, b) = if same_generation {
        ((json!(1), same()), (json!(2), same()))
    } else {
        (
            (Value::Null, json!({"kind": "new"})),
            (Value::Null, json!({"kind": "new"})),
        )
    };
    assert_eq!(
        moves(&again.body["items"])
            .iter()
            .map(|(c, _, was, moved, _)| (c.as_str(), was.clone(), moved.clone()))
            .collect::<Vec<_>>(),
        vec![("a", a.0, a.1), ("b", b.0, b.1)]
    );
}

#[tokio::test]
async fn a_round_over_many_genres_goes_in_calls_of_a_bounded_budget_and_gone_genres_leave() {
    let app = TestApp::spawn(&[]).await;
    let rankings = app.stack.event_applier.rankings.clone();
    // 400 genres, 16 to a payment (the most one carries).
    let genres: Vec<String> = (0..400).map(|g| format!("g{g:03}")).collect();
    let at = Utc::now().to_rfc3339();
    let events: Vec<Value> = genres
        .chunks(16)
        .enumerate()
        .map(|(n, chunk)| {
            let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
            paid(&format!("p{n}"), &format!("c{n}"), 2, &chunk, &at)
        })
        .collect();
    assert!(pay(&app, &events)
        .await
        .iter()
        .all(|v| *v == Outcome::Applied));
    let live: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{}:{{rk}}:live-genres", app.config.key_prefix))
        .arg(0)
        .arg(-1)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(live, genres, "every genre a payment counted on is live");

    // A round of 401 × 5 boards needs more calls than a tick makes: it goes on in the next
    // ticks (each a `snapshot` call at the same hour) until it is done.
    let now = Utc::now().timestamp_millis();
    let rounds = |at: i64| {
        let rankings = rankings.clone();
        async move {
            let mut ticks = Vec::new();
            loop {
                let tick = rankings.snapshot(&at).await.expect("a tick's calls");
                ticks.push(tick);
                if !tick.more {
                    return ticks;
                }
                assert!(ticks.len() < 50, "the round never ends: {ticks:?}");
            }
        }
    };
    let ticks = rounds(now).await;
    let boards: u64 = ticks.iter().map(|t| t.boards).sum();
    let calls: u64 = ticks.iter().map(|t| u64::from(t.calls)).sum();
    // Five boards overall and five per genre, in calls of about SNAPSHOT_BUDGET rows each:
    // a board costs more than one row of a call's budget.
    assert_eq!(boards, 5 * 401, "{ticks:?}");
    assert!(ticks.len() > 1, "one tick took the whole round: {ticks:?}");
    assert_eq!(ticks[0].calls, lineup::ranking::SNAPSHOT_CALLS, "{ticks:?}");
    let budget = u64::from(lineup::ranking::SNAPSHOT_BUDGET);
    assert!(
        calls * budget >= boards,
        "{ticks:?}: more boards to a call than the budget allows"
    );
    let genre_snapshot = |genre: &str| {
        format!(
            "{}:{{rk}}:snapshot:last-24h:seats:genre:{genre}",
            app.config.key_prefix
        )
    };
    for genre in ["g000", "g399"] {
        let kept: Vec<(String, String)> = redis::cmd("HGETALL")
            .arg(genre_snapshot(genre))
            .query_async(&mut app.inspect.clone())
            .await
            .unwrap();
        assert!(
            kept.iter().any(|(f, v)| f.starts_with('c') && v == "1"),
            "{genre}: {kept:?}"
        );
        let ttl: i64 = redis::cmd("TTL")
            .arg(genre_snapshot(genre))
            .query_async(&mut app.inspect.clone())
            .await
            .unwrap();
        assert!(ttl > 0 && ttl <= 3 * 3600, "a snapshot ends: {ttl}");
    }
    let read_genre = read(&app, "/rankings/last-24h?genre=g399").await;
    assert_eq!(page(&read_genre)[0].3, same());

    // g000's boards end (as they would a week after its last sale): the next round drops it.
    let mut keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}:{{rk}}:*:genre:g000", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    keys.retain(|k| k.contains("{rk}:board:") || k.contains("{rk}:rate:"));
    assert!(!keys.is_empty());
    let _: () = redis::cmd("DEL")
        .arg(&keys)
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    let next: u64 = rounds(now + HOUR_MS).await.iter().map(|t| t.boards).sum();
    assert_eq!(next, 5 * 400);
    let gone: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{}:{{rk}}:live-genres", app.config.key_prefix))
        .arg("g000")
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert_eq!(gone, None, "a genre with no live board left leaves the set");
    // The live-genres set ends with its genres' boards.
    let ttl: i64 = redis::cmd("TTL")
        .arg(format!("{}:{{rk}}:live-genres", app.config.key_prefix))
        .query_async(&mut app.inspect.clone())
        .await
        .unwrap();
    assert!(ttl > 7 * 86_400, "{ttl}");
}

#[tokio::test]
async fn a_tie_at_the_cut_off_keeps_its_rank_and_a_board_of_exactly_k_rows_knows_its_newcomers() {
    let app = TestApp::spawn(&[("RANKING_SNAPSHOT_TOP", "3")]).await;
    // x 5, then w, y and z 3: z ties with the 3rd row, so the snapshot keeps it at rank 2.
    // On jazz, exactly 3 rows: the whole board.
    sell_at(
        &app,
        Utc::now(),
        &[
            ("p-x", "x", 5, &[]),
            ("p-w", "w", 3, &[]),
            ("p-y", "y", 3, &[]),
            ("p-z", "z", 3, &[]),
            ("p-a", "a", 5, &["jazz"]),
            ("p-b", "b", 3, &["jazz"]),
            ("p-c", "c", 1, &["jazz"]),
        ],
    )
    .await;
    tick(&app).await;
    let ties = read(&app, "/rankings/last-24h?limit=10").await;
    let at = taken_at(&ties);
    let overall: Vec<_> = page(&ties)
        .into_iter()
        .filter(|(concert, ..)| ["w", "x", "y", "z"].contains(&concert.as_str()))
        .collect();
    assert_eq!(
        overall,
        vec![
            row("x", 1, json!(1), same(), &at),
            row("w", 3, json!(3), same(), &at),
            row("y", 3, json!(3), same(), &at),
            row("z", 3, json!(3), same(), &at),
        ],
        "a, x 5; b, w, y, z 3: {}",
        ties.body
    );
    // e arrives on jazz, whose snapshot held every row it had: e is new.
    sell_at(&app, Utc::now(), &[("p-e", "e", 4, &["jazz"])]).await;
    let jazz = read(&app, "/rankings/last-24h?genre=jazz").await;
    assert_eq!(
        page(&jazz),
        vec![
            row("a", 1, json!(1), same(), &at),
            row("e", 2, Value::Null, json!({"kind": "new"}), &at),
            row("b", 3, json!(2), down(1), &at),
            row("c", 4, Value::Null, Value::Null, &at),
        ]
    );
}
