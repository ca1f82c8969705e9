//! A primary of the cluster fails over during an opening on the striped line: its stripes
//! answer 503 for a few seconds, the other stripes' buyers are served meanwhile, and
//! capacity, the draw's order and one place per buyer hold across it.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use lineup_tests::draw::{draw_value, in_seconds, rfc, until};
use lineup_tests::{sleep, Reply, TestApp};
use serde_json::json;

use crate::cluster::keys_per_node;

const MEMBERS: usize = 60;
const CAPACITY: usize = 20;

async fn join(app: &TestApp, i: usize) -> Reply {
    let body = json!({ "userId": format!("buyer-{i}") }).to_string();
    app.http("POST", "/queues/fo/tokens", Some(&body)).await
}

async fn status(app: &TestApp, token: &str) -> Reply {
    app.http("GET", &format!("/queues/fo/tokens/{token}"), None)
        .await
}

/// The stack on a local cluster of three primaries, each with a replica: twelve stripes, and
/// timeouts short enough that a dead primary's calls give up within a second.
async fn spawn() -> TestApp {
    TestApp::spawn_on_cluster(
        &[
            ("LINE_STRIPES", "12"),
            ("QUEUE_CREATION", "operator"),
            ("REDIS_CONNECT_TIMEOUT_MS", "300"),
            ("REDIS_RESPONSE_TIMEOUT_MS", "500"),
            ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        ],
        true,
    )
    .await
}

/// One promoter tick; whether it reached every stripe.
async fn tick(app: &TestApp) -> Option<lineup::queue::PromotionReport> {
    queue_promoter::tick(&app.stack.promoter)
        .await
        .inspect_err(|err| eprintln!("a tick failed: {err:?}"))
        .ok()
}

/// Twelve stripes on three primaries, each with a replica. Sixty members join the pre-queue;
/// at the opening the promoter admits the first twenty by draw value. Then a primary that
/// holds members' stripes, and not the queue's own tags (its settings, the line's lease), is
/// SIGKILLed, and its replica takes over. Meanwhile the members on the other primaries poll
/// every 20 ms, and one on the failed primary every 100 ms, with a promoter tick, until it is
/// served again. Five admitted buyers on the other primaries leave as the primary dies: the
/// ticks during the outage admit exactly the next five by draw value among the other stripes'
/// waiters, and never more than twenty. Once the stripes are back, five more leave, and the
/// next ticks admit exactly the next five by draw value of everyone left, the failed stripes'
/// members passed during the outage first. No ticket is held twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_failing_over_during_an_opening_costs_its_stripes_a_few_seconds_and_keeps_order()
{
    let mut app = spawn().await;
    let opens = in_seconds(3);
    let settings = json!({"capacity": CAPACITY, "opensAt": rfc(opens)});
    let set = app
        .http("PUT", "/queues/fo/settings", Some(&settings.to_string()))
        .await;
    assert_eq!(set.status, 200, "{:?}", set.body);
    let mut tokens = Vec::new();
    for i in 0..MEMBERS {
        let joined = join(&app, i).await;
        assert_eq!(joined.status, 201, "{:?}", joined.body);
        tokens.push(joined.token());
    }
    let summary = app.http("GET", "/queues/fo", None).await;
    let seed_key = lineup::queue::keys::QueueKeys::new(
        &app.config.key_prefix,
        &lineup::ids::QueueId::parse("fo").unwrap(),
    )
    .settings;
    let mut inspect = app.inspect.clone();
    let seed: String = redis::cmd("HGET")
        .arg(&seed_key)
        .arg("draw-seed")
        .query_async(&mut inspect)
        .await
        .unwrap();
    let seed = hex::decode(seed).unwrap();
    assert!(summary.body["draw"]["seedSha256"].is_string());
    let value = |i: usize| draw_value(&seed, &format!("buyer-{i}")) >> 24;
    let mut by_value: Vec<usize> = (0..MEMBERS).collect();
    by_value.sort_by_key(|i| value(*i));

    // The opening: the first tick seals every stripe past it, the next admits.
    until(opens + chrono::Duration::milliseconds(1_600)).await;
    tick(&app).await.expect("the first tick");
    let admitted: Vec<String> = tick(&app)
        .await
        .expect("the second tick")
        .events()
        .filter_map(|e| e.user_id.clone())
        .collect();
    let first: Vec<String> = by_value[..CAPACITY]
        .iter()
        .map(|i| format!("buyer-{i}"))
        .collect();
    assert_eq!(admitted, first);

    // Which primary holds each member's stripe.
    let primaries = app.cluster.as_ref().unwrap().primaries().await;
    let pattern = format!("{}:{{l:fo:*}}:mark:*", app.config.key_prefix);
    let mut on: HashMap<u16, Vec<usize>> = HashMap::new();
    for (port, keys) in keys_per_node(&app, &pattern).await {
        if primaries.contains(&port) {
            for key in keys {
                let i: usize = key.rsplit("buyer-").next().unwrap().parse().unwrap();
                on.entry(port).or_default().push(i);
            }
        }
    }
    // The queue's own tags live on one primary: its failover stops the whole queue for its
    // seconds. The victim is another.
    let mut own = BTreeSet::new();
    for tag in ["q:fo", "l:fo"] {
        let pattern = format!("{}:{{{tag}}}:*", app.config.key_prefix);
        own.extend(keys_per_node(&app, &pattern).await.into_keys());
    }
    let (&victim, victims) = on
        .iter()
        .filter(|(port, _)| !own.contains(*port))
        .max_by_key(|(_, members)| members.len())
        .expect("a primary without the queue's own tags");
    let victims: BTreeSet<usize> = victims.iter().copied().collect();
    let others: Vec<usize> = (0..MEMBERS).filter(|i| !victims.contains(i)).collect();
    assert!(!others.is_empty() && !victims.is_empty());
    // Five admitted on the other primaries leave once it is down; then the next five of the
    // other stripes' waiters by value are admitted while it is.
    let leavers: Vec<usize> = by_value[..CAPACITY]
        .iter()
        .copied()
        .filter(|i| !victims.contains(i))
        .take(5)
        .collect();
    assert_eq!(leavers.len(), 5, "five admitted on the other primaries");
    let during: Vec<String> = by_value[CAPACITY..]
        .iter()
        .filter(|i| !victims.contains(i))
        .take(5)
        .map(|i| format!("buyer-{i}"))
        .collect();

    // Let the replicas catch up, then kill the primary.
    sleep(Duration::from_millis(500)).await;
    let mut cluster = app.cluster.take().unwrap();
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.port() == victim)
        .unwrap();
    // The other primaries' members poll all along.
    let app = Arc::new(app);
    let tokens = Arc::new(tokens);
    let stop = Arc::new(AtomicBool::new(false));
    let polling = {
        let (app, tokens, stop) = (app.clone(), tokens.clone(), stop.clone());
        let others: Vec<usize> = others
            .iter()
            .copied()
            .filter(|i| !leavers.contains(i))
            .collect();
        tokio::spawn(async move {
            let (mut served, mut refused, mut n) = (0u32, 0u32, 0);
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let other = others[n % others.len()];
                match status(&app, &tokens[other]).await.status {
                    200 => served += 1,
                    503 => refused += 1,
                    code => panic!("buyer-{other}: {code}"),
                }
                sleep(Duration::from_millis(20)).await;
            }
            (served, refused)
        })
    };
    sleep(Duration::from_millis(200)).await;
    node.stop().await;
    let killed = Instant::now();
    let (mut failed_ticks, mut ticks) = (0u32, 0u32);
    let mut recovered_after = None;
    let mut admitted_during = Vec::new();
    let mut left = false;
    while killed.elapsed() < Duration::from_secs(30) {
        let victim_buyer = *victims.iter().next().unwrap();
        match status(&app, &tokens[victim_buyer]).await.status {
            200 => {
                recovered_after = Some(killed.elapsed());
                break;
            }
            503 => {}
            code => panic!("buyer-{victim_buyer}: {code}"),
        }
        if !left {
            for i in &leavers {
                let path = format!("/queues/fo/tokens/{}", tokens[*i]);
                assert_eq!(app.http("DELETE", &path, None).await.status, 204);
            }
            left = true;
        }
        ticks += 1;
        match tick(&app).await {
            Some(report) => admitted_during.extend(report.events().filter_map(|e| {
                (e.kind == lineup::queue::QueueEventKind::Activated)
                    .then(|| e.user_id.clone())
                    .flatten()
            })),
            None => failed_ticks += 1,
        }
        sleep(Duration::from_millis(100)).await;
    }
    let recovered_after = recovered_after.expect("its stripes served again, with no restart");
    stop.store(true, Ordering::Relaxed);
    let (served, refused) = polling.await.unwrap();
    assert!(served > 0, "the other primaries' buyers were served");
    assert!(left, "the buyers left while the primary was down");
    assert_eq!(
        admitted_during, during,
        "the other stripes admitted while the failed ones were down ({ticks} ticks, \
         {failed_ticks} failed)"
    );

    // Five more leave: the next ticks admit exactly the next five by draw value of those
    // left, the failed stripes' members passed meanwhile first.
    let admitted: BTreeSet<usize> = by_value[..CAPACITY]
        .iter()
        .copied()
        .chain(during.iter().map(|u| u["buyer-".len()..].parse().unwrap()))
        .collect();
    let still: Vec<usize> = by_value[..CAPACITY]
        .iter()
        .copied()
        .filter(|i| !leavers.contains(i))
        .collect();
    for i in &still[..5] {
        let path = format!("/queues/fo/tokens/{}", tokens[*i]);
        assert_eq!(app.http("DELETE", &path, None).await.status, 204);
    }
    let mut next = Vec::new();
    for _ in 0..20 {
        if let Some(report) = tick(&app).await {
            next.extend(report.events().filter_map(|e| e.user_id.clone()));
        }
        if next.len() >= 5 {
            break;
        }
        sleep(Duration::from_millis(200)).await;
    }
    let expected: Vec<String> = by_value
        .iter()
        .filter(|i| !admitted.contains(i))
        .take(5)
        .map(|i| format!("buyer-{i}"))
        .collect();
    let on_victim = |u: &String| victims.contains(&u["buyer-".len()..].parse::<usize>().unwrap());
    assert_eq!(
        next,
        expected,
        "admitted after the failover, then the next by draw value; on the failed primary: \
         {:?} and {:?}",
        next.iter().filter(|u| on_victim(u)).collect::<Vec<_>>(),
        expected.iter().filter(|u| on_victim(u)).collect::<Vec<_>>()
    );
    sleep(lineup::line::PUBLISHED_FOR).await;
    let (mut active, mut tickets) = (0, BTreeSet::new());
    for token in tokens.iter() {
        let reply = status(&app, token).await;
        if reply.status == 200 {
            assert!(tickets.insert(reply.body["ticket"].as_u64().unwrap()));
            active += usize::from(reply.body["status"] == "active");
        }
    }
    assert_eq!(active, CAPACITY, "capacity held, and filled again");
    println!(
        "RELIABILITY: striped line failover: primary :{victim} (holding {} of {MEMBERS} members' \
         stripes) SIGKILLed after the opening; its stripes served again {recovered_after:?} after \
         the kill, with no restart; meanwhile {served} polls on other primaries served ({refused} \
         refused), {ticks} ticks ({failed_ticks} failed) admitted the other stripes' next five in \
         draw order; then the next five, the failed stripes' first, admitted exactly in draw \
         order; capacity held, no ticket twice",
        victims.len()
    );
    drop(cluster);
}

/// How long the settings' primary stays down before its replica takes over.
const OUTAGE: Duration = Duration::from_secs(4);

/// The URL of the node that replicates the primary on `port`.
async fn replica_of(app: &TestApp, port: u16) -> String {
    for node in &app.cluster.as_ref().unwrap().nodes {
        let client = redis::Client::open(node.url()).unwrap();
        let mut conn = client.get_multiplexed_async_connection().await.unwrap();
        let info: String = redis::cmd("INFO")
            .arg("replication")
            .query_async(&mut conn)
            .await
            .unwrap();
        if info.contains(&format!("master_port:{port}\r")) {
            return node.url();
        }
    }
    panic!("no replica of :{port}");
}

async fn config_set(url: &str, name: &str, value: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
}

/// The primary that holds a queue's settings (`{q:<queue>}`) is killed, and its replica takes
/// over [`OUTAGE`] later. Each container serves the settings it holds meanwhile: buyers whose
/// stripes lie on other primaries are served while the queue's summary, which reads the
/// settings there, is 503; and the promoter, whose lease lies on another primary, fills a
/// place freed meanwhile, within the capacity.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_primary_failing_over_stops_no_other_stripe() {
    const HELD: usize = 3;
    let mut app = spawn().await;
    // A queue whose settings and lease lie on different primaries.
    let names: Vec<String> = (0..8).map(|i| format!("so{i}")).collect();
    let settings = json!({ "capacity": HELD }).to_string();
    for name in &names {
        let path = format!("/queues/{name}/settings");
        let set = app.http("PUT", &path, Some(&settings)).await;
        assert_eq!(set.status, 200, "{:?}", set.body);
    }
    tick(&app).await.expect("the first tick");
    let primaries = app.cluster.as_ref().unwrap().primaries().await;
    let prefix = app.config.key_prefix.clone();
    let mut chosen = None;
    for name in &names {
        let mut on = Vec::new();
        for tag in ["q", "l"] {
            let pattern = format!("{prefix}:{{{tag}:{name}}}:*");
            let nodes = keys_per_node(&app, &pattern).await;
            on.push(nodes.into_keys().find(|port| primaries.contains(port)));
        }
        if let [Some(settings), Some(lease)] = on[..] {
            if settings != lease {
                chosen = Some((name.clone(), settings));
                break;
            }
        }
    }
    let (queue, victim) = chosen.expect("a queue whose settings and lease lie apart");
    let path = |token: &str| format!("/queues/{queue}/tokens/{token}");

    let mut tokens = Vec::new();
    for i in 0..20 {
        let body = json!({ "userId": format!("buyer-{i}") }).to_string();
        let joined = app
            .http("POST", &format!("/queues/{queue}/tokens"), Some(&body))
            .await;
        assert_eq!(joined.status, 201, "{:?}", joined.body);
        tokens.push(joined.token());
    }
    let mut admitted = 0;
    for _ in 0..30 {
        admitted += tick(&app).await.map_or(0, |report| report.admitted());
        if admitted == HELD as u64 {
            break;
        }
        sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(admitted, HELD as u64);
    // The buyers whose stripes lie off the victim, and which of them hold a session.
    let pattern = format!("{prefix}:{{l:{queue}:*}}:mark:*");
    let mut others: Vec<usize> = Vec::new();
    for (port, keys) in keys_per_node(&app, &pattern).await {
        if primaries.contains(&port) && port != victim {
            others.extend(keys.iter().map(|key| {
                key.rsplit("buyer-")
                    .next()
                    .unwrap()
                    .parse::<usize>()
                    .unwrap()
            }));
        }
    }
    let mut active_others = Vec::new();
    for &i in &others {
        let polled = app.http("GET", &path(&tokens[i]), None).await;
        assert_eq!(polled.status, 200, "{:?}", polled.body);
        if polled.body["status"] == "active" {
            active_others.push(i);
        }
    }
    let leaver = *active_others.first().expect("a session on another primary");
    assert!(others.len() > active_others.len(), "waiters elsewhere");

    // Its replica waits to take over until told (as a slow failover does): the outage lasts
    // OUTAGE.
    let replica = replica_of(&app, victim).await;
    config_set(&replica, "cluster-replica-no-failover", "yes").await;
    // Let the replicas catch up, then kill the primary.
    sleep(Duration::from_millis(500)).await;
    tick(&app).await.expect("a tick before the kill");
    // The containers' settings are read; a second after, they must be read again.
    app.http("GET", &path(&tokens[others[0]]), None).await;
    let warm = Instant::now();
    sleep(Duration::from_millis(900)).await;
    let mut cluster = app.cluster.take().unwrap();
    let node = cluster
        .nodes
        .iter_mut()
        .find(|n| n.port() == victim)
        .unwrap();
    node.stop().await;
    let killed = Instant::now();
    assert_eq!(
        app.http("DELETE", &path(&tokens[leaver]), None)
            .await
            .status,
        204
    );
    others.retain(|i| *i != leaver);
    // The buyers elsewhere poll all along; each poll's instant and answer is kept.
    let app = Arc::new(app);
    let tokens = Arc::new(tokens);
    let stop = Arc::new(AtomicBool::new(false));
    let polling = {
        let (app, tokens, stop, queue) = (app.clone(), tokens.clone(), stop.clone(), queue.clone());
        tokio::spawn(async move {
            let (mut polls, mut n) = (Vec::new(), 0);
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let other = others[n % others.len()];
                let path = format!("/queues/{queue}/tokens/{}", tokens[other]);
                let sent = Instant::now();
                match app.http("GET", &path, None).await.status {
                    code @ (200 | 503) => polls.push((sent, code)),
                    code => panic!("buyer-{other}: {code}"),
                }
                sleep(Duration::from_millis(20)).await;
            }
            polls
        })
    };
    // The queue's summary, which reads the settings, says when their primary is down (503);
    // the promoter ticks meanwhile, every 100 ms.
    let recovered = Arc::new(AtomicBool::new(false));
    let probing = {
        let (app, queue, recovered) = (app.clone(), queue.clone(), recovered.clone());
        tokio::spawn(async move {
            let mut answers = Vec::new();
            while warm.elapsed() < Duration::from_secs(20) {
                let asked = Instant::now();
                let status = app
                    .http("GET", &format!("/queues/{queue}"), None)
                    .await
                    .status;
                answers.push((asked, status));
                if status == 200 && answers.iter().any(|(_, status)| *status == 503) {
                    break;
                }
                sleep(Duration::from_millis(20)).await;
            }
            recovered.store(true, Ordering::Relaxed);
            answers
        })
    };
    let mut ticks = Vec::new();
    let mut failing_over = false;
    while !recovered.load(Ordering::Relaxed) {
        if !failing_over && killed.elapsed() > OUTAGE {
            config_set(&replica, "cluster-replica-no-failover", "no").await;
            failing_over = true;
        }
        let started = Instant::now();
        ticks.push((
            started,
            tick(&app).await.map_or(0, |report| report.admitted()),
        ));
        sleep(Duration::from_millis(100)).await;
    }
    let answers = probing.await.unwrap();
    let down: Vec<Instant> = answers
        .iter()
        .filter(|(_, status)| *status == 503)
        .map(|(asked, _)| *asked)
        .collect();
    // Down from the kill until its replica answers.
    let until = *down.last().expect("the settings' primary was seen down");
    let filled_during: u64 = ticks
        .iter()
        .filter(|(started, _)| (killed..until).contains(started))
        .map(|(_, admitted)| admitted)
        .sum();
    let mut filled: u64 = ticks.iter().map(|(_, admitted)| admitted).sum();
    stop.store(true, Ordering::Relaxed);
    let polls = polling.await.unwrap();
    // The polls once the containers' settings were more than a second old.
    let held_since = warm + Duration::from_millis(1_100);
    let during: Vec<u16> = polls
        .iter()
        .filter(|(sent, _)| (held_since..until).contains(sent))
        .map(|(_, code)| *code)
        .collect();
    let served = during.iter().filter(|code| **code == 200).count();
    let refused = during.len() - served;
    assert!(
        served >= 10 && served >= 3 * refused,
        "polls elsewhere while the settings were down: {served} served, {refused} refused"
    );
    assert_eq!(filled_during, 1, "the freed place filled during the outage");
    for _ in 0..3 {
        filled += tick(&app).await.map_or(0, |report| report.admitted());
    }
    assert_eq!(filled, 1, "and no more: capacity held");
    println!(
        "RELIABILITY: striped line, the settings' primary :{victim} SIGKILLed, its replica \
         taking over {OUTAGE:?} later: meanwhile {served} polls on other primaries were served \
         with the settings held ({refused} refused), and a tick filled the place freed meanwhile"
    );
    drop(cluster);
}
