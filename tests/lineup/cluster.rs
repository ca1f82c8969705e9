//! Redis Cluster as a first-class configuration: a local three-primary cluster, always,
//! whatever `LINEUP_TEST_REDIS` says. Queues spread over the shards, every script stays in
//! one slot, discovery needs no SCAN, and a primary's failover under load, a shard cut off
//! by a partition and a cluster that falls behind are survived.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use chrono::Utc;
use lambda_runtime::{Context, LambdaEvent};
use lineup_tests::outage::{assert_unavailable_in_time, join_until_served, QUICK_TO_GIVE_UP};
use lineup_tests::queue::{join, leave, promote, status, summary};
use lineup_tests::rankings::{envelope, paid};
use lineup_tests::{api_request_from, sleep, TestApp};
use redis::cluster_routing::Slot;
use serde_json::json;

/// The keys each node holds under `pattern`, asked node by node.
pub(crate) async fn keys_per_node(app: &TestApp, pattern: &str) -> HashMap<u16, Vec<String>> {
    let mut found = HashMap::new();
    for node in &app.cluster.as_ref().unwrap().nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
            continue;
        };
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(pattern)
            .query_async(&mut conn)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            found.insert(node.port(), keys);
        }
    }
    found
}

#[tokio::test]
async fn the_whole_flow_runs_on_three_shards_and_queues_spread_over_them() {
    let app = TestApp::spawn_on_cluster(&[("QUEUE_CAPACITY", "1")], false).await;
    let queues: Vec<String> = (0..12).map(|i| format!("onsale-{i}")).collect();
    for queue in &queues {
        let holder = join(&app, queue, "holder").await.token();
        let waiter = join(&app, queue, "waiter").await.token();
        assert_eq!(status(&app, queue, &waiter).await.body["position"], 1);
        assert_eq!(leave(&app, queue, &holder).await.status, 204);
        assert_eq!(status(&app, queue, &waiter).await.body["status"], "active");
        join(&app, queue, "next").await;
    }
    // One promotion tick over every queue: one pipeline per slot, all at once.
    let tick = promote(&app).await;
    assert_eq!(tick.failed_ticks, 0);
    // A payment that releases a buyer and updates the boards spans two slots in one batch.
    let release = envelope(
        "PaymentCompleted",
        json!({"paymentId": "p1", "concertId": "c1", "seats": 2, "genres": ["rock"],
               "queueId": "onsale-3", "userId": "waiter", "completedAt": Utc::now().to_rfc3339()}),
    );
    let verdicts = event_applier::apply_events(
        &[
            release,
            paid("p2", "c2", 1, &["jazz"], &Utc::now().to_rfc3339()),
        ],
        &app.stack.event_applier,
    )
    .await;
    assert_eq!(
        verdicts,
        [
            lineup::ranking::Outcome::Applied,
            lineup::ranking::Outcome::Applied
        ]
    );
    assert_eq!(summary(&app, "onsale-3").await.body["active"], 0);
    let reaped = queue_reaper::reap_all(&app.stack.reaper).await;
    assert_eq!(
        reaped.queues.len(),
        queues.len(),
        "discovery through the registry, no SCAN"
    );

    let prefix = &app.config.key_prefix;
    let queue_keys = keys_per_node(&app, &format!("{prefix}:{{q:*")).await;
    assert!(
        queue_keys.len() >= 2,
        "queues on at least two shards: {:?}",
        queue_keys.keys()
    );
    // Every ranking key shares one slot, so each batch is one atomic script.
    let ranking_keys: Vec<String> = keys_per_node(&app, &format!("{prefix}:{{rk}}:*"))
        .await
        .into_values()
        .flatten()
        .collect();
    assert!(ranking_keys.len() > 4);
    let slots: BTreeSet<u16> = ranking_keys.iter().map(|k| slot_number(k)).collect();
    assert_eq!(slots.len(), 1, "{ranking_keys:?}");
    // And each queue's keys share one slot.
    for keys in queue_keys.values() {
        let mut by_queue: HashMap<&str, BTreeSet<u16>> = HashMap::new();
        for key in keys {
            let tag = &key[key.find('{').unwrap()..=key.find('}').unwrap()];
            by_queue.entry(tag).or_default().insert(slot_number(key));
        }
        assert!(by_queue.values().all(|slots| slots.len() == 1));
    }
}

fn slot_number(key: &str) -> u16 {
    // Slot has no public number; its Debug form is `Slot(n)`.
    format!("{:?}", Slot::for_key(key))
        .trim_start_matches("Slot(")
        .trim_end_matches(')')
        .parse()
        .unwrap()
}

#[tokio::test]
async fn auto_mode_finds_a_cluster_by_asking() {
    let app = TestApp::spawn_on_cluster(&[("REDIS_MODE", "auto")], false).await;
    for i in 0..6 {
        assert_eq!(join(&app, &format!("q{i}"), "u").await.status, 201);
    }
    assert_eq!(promote(&app).await.failed_ticks, 0);
}

async fn request(app: &TestApp, queue: &str, user: &str) -> lineup_tests::Reply {
    let body = json!({ "userId": user }).to_string();
    app.queue_api(api_request_from(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
        "198.51.100.7",
    ))
    .await
}

/// A local cluster of 3 primaries with a replica each. A primary is SIGKILLed while buyers keep
/// arriving in 6 queues. Its queue answers 503 until the replica takes over, then is served again
/// with no restart. Arrivals on the other shards are served meanwhile. Capacity holds, and no
/// ticket is held twice. No acknowledged place is lost here; writes lost to asynchronous
/// replication are not covered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_failover_under_load_recovers_and_admits_nobody_twice() {
    let mut app = TestApp::spawn_on_cluster(
        &[
            ("QUEUE_CAPACITY", "5"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
            ("REDIS_RESPONSE_TIMEOUT_MS", "500"),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        ],
        true,
    )
    .await;
    let queues: Vec<String> = (0..6).map(|i| format!("fo-{i}")).collect();
    let mut tokens: HashMap<(String, String), String> = HashMap::new();
    for (i, queue) in queues.iter().enumerate() {
        for u in 0..10 {
            let user = format!("u{i}-{u}");
            let reply = request(&app, queue, &user).await;
            assert_eq!(reply.status, 201);
            tokens.insert((queue.clone(), user), reply.token());
        }
    }
    promote(&app).await;

    // Kill the primary that holds the first queue's slot; its replica takes over.
    let victim_port = {
        let keys = keys_per_node(&app, &format!("{}:{{q:fo-0}}:*", app.config.key_prefix)).await;
        let primaries = app.cluster.as_ref().unwrap().primaries().await;
        *keys
            .keys()
            .find(|port| primaries.contains(port))
            .expect("the primary of fo-0")
    };
    // Buyers keep arriving in the other queues (on every shard) all along.
    let mut cluster = app.cluster.take().unwrap();
    let app = std::sync::Arc::new(app);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let background = {
        let (app, stop) = (app.clone(), stop.clone());
        tokio::spawn(async move {
            let (mut served, mut refused, mut n) = (0u64, 0u64, 0u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let queue = format!("fo-{}", 1 + n % 5);
                match request(&app, &queue, &format!("bg-{n}")).await.status {
                    201 => served += 1,
                    503 => refused += 1,
                    other => panic!("{other}"),
                }
                sleep(Duration::from_millis(5)).await;
            }
            (served, refused)
        })
    };
    sleep(Duration::from_millis(300)).await;
    let victim = cluster
        .nodes
        .iter_mut()
        .find(|n| n.port() == victim_port)
        .unwrap();
    victim.stop().await;

    let started = Instant::now();
    let mut unavailable = 0;
    let mut recovered_after = None;
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(30) {
        n += 1;
        let user = format!("late-{n}");
        let reply = request(&app, "fo-0", &user).await;
        match reply.status {
            201 => {
                tokens.insert(("fo-0".into(), user), reply.token());
                recovered_after = Some(started.elapsed());
                break;
            }
            503 => unavailable += 1,
            other => panic!("{other}: {}", reply.body),
        }
        sleep(Duration::from_millis(100)).await;
    }
    let recovered_after =
        recovered_after.expect("served again after the failover, without a restart");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (served, refused) = background.await.unwrap();
    assert!(served > 0, "the other shards kept serving");
    // The other shards kept serving throughout; after the failover everything works.
    let out = queue_promoter::handle(
        LambdaEvent::new(json!({}), Context::default()),
        &app.stack.promoter,
    )
    .await
    .unwrap();
    assert_eq!(out.failed_ticks, 0);

    // Nobody admitted twice or both waiting and active; capacity held; each user one place.
    for queue in &queues {
        let body = summary(&app, queue).await.body;
        assert!(body["active"].as_u64().unwrap() <= 5, "{queue}: {body}");
        let mut seen_tickets = BTreeSet::new();
        for ((q, user), token) in &tokens {
            if q != queue {
                continue;
            }
            let reply = status(&app, queue, token).await;
            if reply.status == 200 {
                assert!(
                    seen_tickets.insert(reply.body["ticket"].as_u64().unwrap()),
                    "{user}"
                );
            }
        }
    }
    println!(
        "RELIABILITY: cluster failover: primary :{victim_port} SIGKILLed under load; its queue \
         answered {unavailable} requests with 503 and was served again {recovered_after:?} after \
         the kill with no restart; meanwhile {served} arrivals in queues on the other shards were \
         served ({refused} refused); capacity held, no ticket twice"
    );
    drop(cluster);
}

/// A partition cuts one shard off (bytes dropped, nothing closed or reset), then heals for
/// new connections only, as when a node is replaced: the cluster client's connection to it
/// would time out forever. Meanwhile that shard's queue answers 503 in time and the other
/// shards serve; once a new connection gets through, the same processes serve it again.
///
/// The nodes announce a proxy each. One shard is cut off for three rounds. Its queue answers 503
/// without a hang while a queue on another shard is served in every round. After the heal it is
/// served again, with one more 503: the timeout whose probe failed opens the new connection, which
/// takes over only once it reaches every primary. Without the replacement, the shard stays 503.
#[tokio::test]
async fn a_shard_cut_off_by_a_partition_answers_503_and_is_served_again_once_it_heals() {
    let app = TestApp::spawn_on_cluster_behind_links(QUICK_TO_GIVE_UP).await;
    let nodes: Vec<u16> = app
        .cluster
        .as_ref()
        .unwrap()
        .nodes
        .iter()
        .map(|n| n.port())
        .collect();
    // One queue on each node, found by asking the nodes where its keys went.
    let mut queue_on: HashMap<usize, String> = HashMap::new();
    for i in 0..30 {
        let queue = format!("split-{i}");
        assert_eq!(join(&app, &queue, "first").await.status, 201);
        let keys = keys_per_node(&app, &format!("{}:{{q:{queue}}}:*", app.config.key_prefix)).await;
        let port = *keys.keys().next().expect("the queue's node");
        let node = nodes.iter().position(|p| *p == port).expect("a node");
        queue_on.entry(node).or_insert(queue);
        if queue_on.len() == nodes.len() {
            break;
        }
    }
    // Not the node the functions were given as the cluster's address, which a real
    // configuration endpoint never is either.
    let (cut_off, healthy) = (&queue_on[&1], &queue_on[&2]);

    app.links[1].partition();
    for round in 0..3 {
        let user = format!("during-{round}");
        let started = Instant::now();
        let (cut_reply, healthy_reply) = tokio::join!(join(&app, cut_off, &user), async {
            // After the cut-off request has gone out on the shared connection.
            sleep(Duration::from_millis(50)).await;
            join(&app, healthy, &user).await
        });
        assert_unavailable_in_time(&cut_reply, started.elapsed());
        assert_eq!(healthy_reply.status, 201, "{}", healthy_reply.body);
    }

    app.links[1].heal();
    let (retry, recovered_in, unavailable) = join_until_served(&app, cut_off, "after").await;
    assert_eq!(retry.status, 201, "still {}: {}", retry.status, retry.body);
    // Nothing sent during the partition reached the shard.
    assert_eq!(retry.body["ticket"], 2);
    for (node, queue) in &queue_on {
        assert_eq!(summary(&app, queue).await.status, 200, "node {node}");
    }
    println!(
        "RELIABILITY: cluster partition: one of 3 shards cut off for 3 rounds; its queue \
         answered 503 with no hang while the other shards served; served again \
         {recovered_in:?} after it healed ({unavailable} more 503s), on new connections"
    );
}

/// A cluster that falls behind, every reply later than the response timeout but coming,
/// keeps the connections it has, as one server does (`faults::a_redis_too_slow…`): the
/// probe's PING to the primary the request went to is answered late, so no replacement
/// connection, with a handshake to every primary, is opened on each timeout.
///
/// Every node is behind its own proxy, and replies come 700 ms late against a 500 ms timeout. Each
/// of 6 buyers answers 503 with `Retry-After`, never hanging, with no new connection opened.
#[tokio::test]
async fn a_cluster_too_slow_for_the_timeout_is_not_also_flooded_with_reconnections() {
    let app = TestApp::spawn_on_cluster_behind_links(QUICK_TO_GIVE_UP).await;
    assert_eq!(join(&app, "behind", "ana").await.status, 201);
    let accepted = |app: &TestApp| -> usize {
        app.links
            .iter()
            .map(|link| link.connections_accepted())
            .sum()
    };
    let opened_before = accepted(&app);
    // Every reply 700 ms after its request: past the 500 ms timeout, within a probe's 1.5 s.
    for link in &app.links {
        link.set_delay(Duration::from_millis(350));
    }
    for round in 0..6 {
        let started = Instant::now();
        let reply = join(&app, "behind", &format!("buyer-{round}")).await;
        assert_unavailable_in_time(&reply, started.elapsed());
    }
    for link in &app.links {
        link.set_delay(Duration::ZERO);
    }
    let caught_up = join(&app, "behind", "bo").await;
    assert_eq!(caught_up.status, 201, "{}", caught_up.body);
    let reconnections = accepted(&app) - opened_before;
    assert_eq!(
        reconnections, 0,
        "no new connection to a cluster that answers, however late"
    );
    println!(
        "RELIABILITY: cluster behind (replies 700 ms late, timeout 500 ms): 6 requests answered \
         503 in time, {reconnections} reconnections; served at once once it caught up"
    );
}
