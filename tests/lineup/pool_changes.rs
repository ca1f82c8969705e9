//! Capacity pools through an operator's changes: a queue moved between pools, a pool lowered,
//! deleted and remade, passthrough asked for, against arrivals, leaves and ticks. Once a change
//! has had its ticks, nobody is admitted past the pool's capacity and above it the live sum
//! never rises. (This suite also runs on the local cluster, tests/cluster-suites.)

use lineup_tests::queue::{join, leave, put_settings, summary};
use lineup_tests::TestApp;
use serde_json::{json, Value};

use crate::pool::{active, pool, tick, two_queues_on_two_shards};

/// Ticks it takes an operator's change to reach every queue of the pool: the queue's report
/// (a move), the ledger's answer, the queue taking it.
const WORD_TICKS: usize = 3;

/// Sets `queue` to long sessions, a pace that admits a whole line at a tick, and `pool`
/// (`null`: none).
async fn pooled(app: &TestApp, queue: &str, pool: Value) {
    let set = put_settings(
        app,
        queue,
        &json!({"pool": pool, "capacity": 100, "admitPerTick": 100, "sessionSeconds": 600}),
    )
    .await;
    assert_eq!(set.status, 200, "{}", set.body);
}

/// `count` buyers named `<prefix><i>` join `queue`: their tokens.
async fn line(app: &TestApp, queue: &str, prefix: &str, count: usize) -> Vec<String> {
    let mut tokens = Vec::new();
    for i in 0..count {
        tokens.push(join(app, queue, &format!("{prefix}{i}")).await.token());
    }
    tokens
}

/// The pool's live sessions, the queues read one after the other between steps (nothing
/// else runs meanwhile).
async fn live(app: &TestApp, queues: &[&str]) -> Vec<u64> {
    let mut counts = Vec::new();
    for queue in queues {
        counts.push(active(app, queue).await);
    }
    counts
}

/// Each queue's waiters, read one after the other between steps.
async fn waiting(app: &TestApp, queues: &[&str]) -> Vec<u64> {
    let mut counts = Vec::new();
    for queue in queues {
        counts.push(summary(app, queue).await.body["waiting"].as_u64().unwrap());
    }
    counts
}

/// Runs `step` (nobody joins in it), then checks what a pool promises across it: nobody is
/// admitted (a waiter gone from a line) but into a place below `capacity` (what the step freed
/// counted), and above it the sum never rises.
async fn holds_across<F: std::future::Future<Output = ()>>(
    app: &TestApp,
    queues: &[&str],
    capacity: u64,
    what: &str,
    step: F,
) {
    let (before, waited) = (live(app, queues).await, waiting(app, queues).await);
    step.await;
    let (after, waits) = (live(app, queues).await, waiting(app, queues).await);
    let (sum_before, sum_after) = (before.iter().sum::<u64>(), after.iter().sum::<u64>());
    if waited != waits {
        assert!(
            sum_after <= capacity,
            "{what}: admitted to {sum_after} live of {capacity} ({before:?} → {after:?})"
        );
    }
    assert!(
        sum_after <= capacity.max(sum_before),
        "{what}: {sum_before} → {sum_after} live in a pool of {capacity}"
    );
}

/// A queue that moves from a full pool of 5 to a full pool of 2 takes nothing of its old
/// allotment along: once the new pool's word has reached it (the third tick), it admits
/// nobody, on any path, until the pool's sessions are below 2, and its leaves hand no place on.
#[tokio::test]
async fn a_queue_that_moves_to_a_smaller_full_pool_takes_no_old_allotment_along() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "big", Some(&json!({"capacity": 5}))).await;
    pool(&app, "PUT", "small", Some(&json!({"capacity": 2}))).await;
    pooled(&app, &a, json!("big")).await;
    pooled(&app, &b, json!("small")).await;
    let tokens_a = line(&app, &a, "a", 8).await;
    line(&app, &b, "b", 4).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [5, 2]);

    pooled(&app, &a, json!("small")).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    let queues = [a.as_str(), b.as_str()];
    let seen = summary(&app, &a).await.body;
    assert!(
        seen["pace"]["capacity"].as_u64().unwrap() < 5,
        "the old pool's allotment stayed: {seen}"
    );
    for (i, token) in tokens_a[..4].iter().enumerate() {
        holds_across(&app, &queues, 2, &format!("leave {i}"), async {
            leave(&app, &a, token).await;
        })
        .await;
        holds_across(&app, &queues, 2, &format!("tick after leave {i}"), async {
            tick(&app.stack).await;
        })
        .await;
    }
    assert_eq!(live(&app, &queues).await, [1, 2], "a's places went back");
}

/// A pool deleted and made again with less, and a pool's capacity lowered below its live
/// sessions: from the third tick on, the queues take the places back as sessions end and
/// admit nobody until the live sessions are below the new capacity.
#[tokio::test]
async fn a_pool_remade_or_lowered_below_its_live_sessions_takes_places_back_as_they_end() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    for (queue, id) in [(&a, "remade"), (&b, "lowered")] {
        pool(&app, "PUT", id, Some(&json!({"capacity": 4}))).await;
        pooled(&app, queue, json!(id)).await;
    }
    let tokens_a = line(&app, &a, "a", 8).await;
    let tokens_b = line(&app, &b, "b", 8).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [4, 4]);

    pool(&app, "DELETE", "remade", None).await;
    pool(&app, "PUT", "remade", Some(&json!({"capacity": 1}))).await;
    pool(&app, "PUT", "lowered", Some(&json!({"capacity": 1}))).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    for (queue, tokens) in [(&a, &tokens_a), (&b, &tokens_b)] {
        for (i, token) in tokens[..4].iter().enumerate() {
            holds_across(&app, &[queue], 1, &format!("{queue}: leave {i}"), async {
                leave(&app, queue, token).await;
            })
            .await;
            holds_across(&app, &[queue], 1, &format!("{queue}: tick {i}"), async {
                tick(&app.stack).await;
            })
            .await;
        }
    }
    // Below the capacity again: the next ticks fill it, and no more.
    for _ in 0..3 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [1, 1]);
}

/// A queue with two live sessions joins a full pool of 3: from the third tick on, the other
/// queue's three leaves let in one buyer at most (the pool's live sessions never rise while
/// above its capacity, nor pass it).
#[tokio::test]
async fn a_queue_that_joins_a_full_pool_with_live_sessions_is_counted_before_anyone_is_let_in() {
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    pool(&app, "PUT", "full", Some(&json!({"capacity": 3}))).await;
    pooled(&app, &b, json!("full")).await;
    let tokens_b = line(&app, &b, "b", 6).await;
    pooled(&app, &a, Value::Null).await;
    put_settings(&app, &a, &json!({"capacity": 2})).await;
    line(&app, &a, "a", 4).await;
    for _ in 0..4 {
        tick(&app.stack).await;
    }
    assert_eq!(live(&app, &[&a, &b]).await, [2, 3]);

    put_settings(&app, &a, &json!({"pool": "full", "capacity": 100})).await;
    for _ in 0..WORD_TICKS {
        tick(&app.stack).await;
    }
    let queues = [a.as_str(), b.as_str()];
    for (i, token) in tokens_b[..3].iter().enumerate() {
        holds_across(&app, &queues, 3, &format!("leave {i}"), async {
            leave(&app, &b, token).await;
        })
        .await;
        holds_across(&app, &queues, 3, &format!("tick {i}"), async {
            tick(&app.stack).await;
        })
        .await;
    }
    let now = live(&app, &queues).await;
    assert!(now.iter().sum::<u64>() <= 3, "{now:?}");
}

/// What the property test knows of one queue: the pool its settings name, and its buyers'
/// tokens in join order.
struct Modelled {
    id: String,
    pool: Option<&'static str>,
    tokens: Vec<String>,
}

/// A seeded scheduler races an operator's changes (moving a queue between two pools and out,
/// lowering and raising a capacity, deleting and remaking a pool, asking for passthrough)
/// against arrivals, leaves and ticks, on two queues on two shards, and reads every queue's
/// live sessions and waiters between steps. Once WORD_TICKS ticks have passed since the last
/// change: nobody is admitted but into a place below the pool's capacity, and above it the
/// pool's live sessions never rise. Passthrough with a pool is refused (400).
#[tokio::test]
async fn a_seeded_race_of_operator_changes_arrivals_leaves_and_ticks_keeps_every_pool_within_its_capacity(
) {
    use rand::{Rng, SeedableRng};
    let app = TestApp::spawn(&[]).await;
    let (a, b) = two_queues_on_two_shards();
    let pools = ["north", "south"];
    for seed in 0..3u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut capacity = [3u64, 2u64];
        let mut made = [true, true];
        for (i, id) in pools.iter().enumerate() {
            pool(&app, "PUT", id, Some(&json!({"capacity": capacity[i]}))).await;
        }
        let mut queues = [
            Modelled {
                id: format!("{a}-{seed}"),
                pool: Some("north"),
                tokens: Vec::new(),
            },
            Modelled {
                id: format!("{b}-{seed}"),
                pool: Some("south"),
                tokens: Vec::new(),
            },
        ];
        for q in &queues {
            pooled(&app, &q.id, json!(q.pool)).await;
        }
        let mut since_change = 0usize;
        let mut joined = 0usize;
        for step in 0..150 {
            let ids: Vec<String> = queues.iter().map(|q| q.id.clone()).collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let (before, _) = (live(&app, &ids).await, ());
            let mut left = [0u64; 2];
            let what;
            match rng.random_range(0..100) {
                0..30 => {
                    let q = rng.random_range(0..2);
                    joined += 1;
                    let reply = join(&app, &queues[q].id, &format!("u{joined}")).await;
                    assert!(matches!(reply.status, 200 | 201), "{}", reply.body);
                    queues[q].tokens.push(reply.token());
                    what = format!("{} joins", queues[q].id);
                }
                30..50 => {
                    let q = rng.random_range(0..2);
                    let mut gone = None;
                    for (k, token) in queues[q].tokens.iter().enumerate() {
                        if lineup_tests::queue::status(&app, &queues[q].id, token)
                            .await
                            .body["status"]
                            == "active"
                        {
                            gone = Some(k);
                            break;
                        }
                    }
                    if let Some(k) = gone {
                        let token = queues[q].tokens.remove(k);
                        assert_eq!(leave(&app, &queues[q].id, &token).await.status, 204);
                        left[q] = 1;
                    }
                    what = format!("{} leaves", queues[q].id);
                }
                50..80 => {
                    tick(&app.stack).await;
                    since_change += 1;
                    what = "tick".to_owned();
                }
                80..88 => {
                    let q = rng.random_range(0..2);
                    let to = [Some("north"), Some("south"), None][rng.random_range(0..3)];
                    pooled(&app, &queues[q].id, json!(to)).await;
                    queues[q].pool = to;
                    since_change = 0;
                    what = format!("{} moves to {to:?}", queues[q].id);
                }
                88..94 => {
                    let p = rng.random_range(0..2);
                    capacity[p] = rng.random_range(1..=5);
                    pool(
                        &app,
                        "PUT",
                        pools[p],
                        Some(&json!({"capacity": capacity[p]})),
                    )
                    .await;
                    made[p] = true;
                    since_change = 0;
                    what = format!("{} to capacity {}", pools[p], capacity[p]);
                }
                94..97 => {
                    let p = rng.random_range(0..2);
                    pool(&app, "DELETE", pools[p], None).await;
                    made[p] = false;
                    since_change = 0;
                    what = format!("{} deleted", pools[p]);
                }
                _ => {
                    let q = rng.random_range(0..2);
                    let reply =
                        put_settings(&app, &queues[q].id, &json!({"mode": "passthrough"})).await;
                    if queues[q].pool.is_some() {
                        reply.assert_problem(400);
                    } else {
                        assert_eq!(reply.status, 200, "{}", reply.body);
                        put_settings(&app, &queues[q].id, &json!({"mode": "queue"})).await;
                    }
                    what = format!("{} asks for passthrough", queues[q].id);
                }
            }
            let after = live(&app, &ids).await;
            if since_change < WORD_TICKS {
                continue;
            }
            for (p, id) in pools.iter().enumerate() {
                let members: Vec<usize> = (0..2).filter(|&q| queues[q].pool == Some(*id)).collect();
                if members.is_empty() {
                    continue;
                }
                let cap = if made[p] { capacity[p] } else { 0 };
                let sum_before: u64 = members.iter().map(|&q| before[q]).sum();
                let sum_after: u64 = members.iter().map(|&q| after[q]).sum();
                let admitted: u64 = members
                    .iter()
                    .map(|&q| (after[q] + left[q]).saturating_sub(before[q]))
                    .sum();
                let context = format!(
                    "seed {seed} step {step} ({what}): pool {id} of {cap}, live {before:?} → {after:?}"
                );
                if admitted > 0 {
                    assert!(sum_after <= cap, "admitted past the capacity: {context}");
                }
                assert!(
                    sum_after <= sum_before.max(cap),
                    "the sum rose above the capacity: {context}"
                );
            }
        }
    }
}
