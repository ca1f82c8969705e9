//! Queues their first buyer creates on the striped line (`QUEUE_CREATION=open`): the join makes
//! the queue within `MAX_QUEUES`; its settings end once nobody has been on its line for
//! `QUEUE_RETIRE_AFTER_SECONDS`, unless an operator takes it over; and the reaper then takes
//! it off the registry, but never while anyone holds a place on it. Redis's own expiry cannot
//! be moved, so the tests read `PTTL` and delete the settings as their expiry would.

use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use redis::aio::ConnectionLike;

use super::line_served::Served;

/// How long a queue a buyer made lasts with nobody on its line, in these tests.
const RETIRE_AFTER_MS: i64 = 600_000;

/// A stack on the striped line where buyers create queues.
async fn open() -> Served {
    Served::with(&[
        ("QUEUE_CREATION", "open"),
        ("QUEUE_RETIRE_AFTER_SECONDS", "600"),
        ("MAX_QUEUES", "3"),
    ])
    .await
}

fn settings_key(served: &Served, queue: &str) -> String {
    let queue = QueueId::parse(queue).expect("queue id");
    QueueKeys::new(&served.app.config.key_prefix, &queue).settings
}

async fn query<T: redis::FromRedisValue>(served: &Served, cmd: &mut redis::Cmd) -> T {
    let mut conn = served.app.inspect.clone();
    let value = conn.req_packed_command(cmd).await.expect("redis");
    redis::from_redis_value(value).expect("reply")
}

/// The ms left to `queue`'s settings (-1: kept for good, -2: gone).
async fn settings_ttl(served: &Served, queue: &str) -> i64 {
    query(served, redis::cmd("PTTL").arg(settings_key(served, queue))).await
}

/// Sets `queue`'s settings to end in `ms`, as time passing would.
async fn age_settings(served: &Served, queue: &str, ms: i64) {
    let _: bool = query(
        served,
        redis::cmd("PEXPIRE")
            .arg(settings_key(served, queue))
            .arg(ms),
    )
    .await;
}

/// Deletes `queue`'s settings, as their expiry does.
async fn expire_settings(served: &Served, queue: &str) {
    let _: u64 = query(served, redis::cmd("DEL").arg(settings_key(served, queue))).await;
}

async fn by_arrival(served: &Served, queue: &str) -> Option<String> {
    query(
        served,
        redis::cmd("HGET")
            .arg(settings_key(served, queue))
            .arg("by-arrival"),
    )
    .await
}

async fn registered(served: &Served, queue: &str) -> bool {
    let registry = format!("{}:queues", served.app.config.key_prefix);
    query(served, redis::cmd("SISMEMBER").arg(registry).arg(queue)).await
}

/// `buyer-<i>` asks `queue` for a place; its token.
async fn joined(served: &Served, queue: &str, i: usize) -> String {
    let joined = served.join(queue, i).await;
    assert_eq!(joined.status, 201, "{:?}", joined.body);
    joined.token()
}

/// A queue's first buyer creates it: registered, with settings that say so and end
/// `QUEUE_RETIRE_AFTER_SECONDS` on. Each tick that finds anyone on its line puts that end
/// back; one that finds the line empty leaves it. An operator's change keeps the settings for
/// good, and the tick then leaves them so.
#[tokio::test]
async fn a_queues_first_buyer_creates_it_and_the_tick_keeps_it_while_anyone_waits() {
    let served = open().await;
    let first = joined(&served, "pop", 0).await;
    assert!(registered(&served, "pop").await);
    assert_eq!(by_arrival(&served, "pop").await.as_deref(), Some("1"));
    let ttl = settings_ttl(&served, "pop").await;
    assert!(0 < ttl && ttl <= RETIRE_AFTER_MS, "{ttl}");
    // A second buyer finds the queue and changes nothing of it.
    let second = joined(&served, "pop", 1).await;
    assert_eq!(by_arrival(&served, "pop").await.as_deref(), Some("1"));

    // Time passes: a tick that finds buyers on the line puts the end back.
    age_settings(&served, "pop", 5_000).await;
    served.clock.advance(3_000);
    served.tick().await;
    let ttl = settings_ttl(&served, "pop").await;
    assert!(ttl > RETIRE_AFTER_MS - 60_000, "{ttl}");

    // Both leave; a tick that finds the line empty leaves the end where it is.
    for token in [&first, &second] {
        let path = format!("/queues/pop/tokens/{token}");
        assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    }
    served.clock.advance(2_000);
    served.tick().await;
    age_settings(&served, "pop", 5_000).await;
    served.clock.advance(2_000);
    served.tick().await;
    let ttl = settings_ttl(&served, "pop").await;
    assert!(
        0 < ttl && ttl <= 5_000,
        "an empty line kept its queue: {ttl}"
    );

    // An operator takes the queue over: its settings no longer end, and no tick gives them
    // an end again.
    served.create("pop", r#"{"capacity": 2}"#).await;
    assert_eq!(settings_ttl(&served, "pop").await, -1);
    assert_eq!(by_arrival(&served, "pop").await, None);
    joined(&served, "pop", 2).await;
    served.clock.advance(3_000);
    served.tick().await;
    assert_eq!(settings_ttl(&served, "pop").await, -1);
}

/// Once a buyer-made queue's settings end with nobody on its line, the reaper takes it off
/// the registry, and the next buyer makes it again. Settings that end while a buyer still
/// holds a place (a join that came with the settings its container held) are made again by
/// the reaper, and the queue stays: that buyer keeps its place and is admitted. Every key
/// but the registry ends.
#[tokio::test]
async fn the_reaper_retires_a_buyers_queue_only_once_nobody_is_on_its_line() {
    let served = open().await;
    let gone = joined(&served, "fad", 0).await;
    let path = format!("/queues/fad/tokens/{gone}");
    assert_eq!(served.app.http("DELETE", &path, None).await.status, 204);
    expire_settings(&served, "fad").await;
    queue_reaper::reap_all(&served.app.stack.reaper).await;
    assert!(!registered(&served, "fad").await, "an ended queue stayed");
    // Its buyer who left is still told so.
    let again = served.status("fad", &gone).await;
    assert_eq!(again.status, 410, "{:?}", again.body);
    assert_eq!(again.body["type"], "https://lineup.dev/problems/left");
    // The next buyer makes it again.
    served.clock.advance(1_000);
    joined(&served, "fad", 1).await;
    assert!(registered(&served, "fad").await);
    assert_eq!(by_arrival(&served, "fad").await.as_deref(), Some("1"));

    // Settings gone under a waiting buyer: the reaper makes them again and keeps the queue.
    let held = joined(&served, "stray", 0).await;
    expire_settings(&served, "stray").await;
    queue_reaper::reap_all(&served.app.stack.reaper).await;
    assert!(
        registered(&served, "stray").await,
        "a queue with a buyer was retired"
    );
    assert_eq!(by_arrival(&served, "stray").await.as_deref(), Some("1"));
    assert!(settings_ttl(&served, "stray").await > 0);
    served.clock.advance(3_000);
    served.tick().await;
    served.clock.advance(1_000);
    let polled = served.status("stray", &held).await;
    assert_eq!(polled.status, 200, "{:?}", polled.body);
    assert_eq!(polled.body["status"], "active", "{:?}", polled.body);

    // Every key of the buyers' queues ends; the registry's owner is the reaper.
    let forever: Vec<String> = served
        .app
        .keys_with_ttl()
        .await
        .into_iter()
        .filter(|(_, ttl)| *ttl < 0)
        .map(|(key, _)| key)
        .collect();
    let registry = format!("{}:queues", served.app.config.key_prefix);
    assert_eq!(forever, [registry]);
}

/// A buyer's join that would make one queue more than `MAX_QUEUES` is 409 `too-many-queues`
/// and writes nothing; the queues that exist still take buyers.
#[tokio::test]
async fn a_buyer_makes_no_queue_past_max_queues() {
    let served = open().await;
    for queue in ["one", "two", "three"] {
        joined(&served, queue, 0).await;
    }
    let refused = served.join("four", 0).await;
    refused.assert_problem(409);
    lineup_tests::queue::assert_kind(&refused, 409, "too-many-queues");
    assert_eq!(
        settings_ttl(&served, "four").await,
        -2,
        "a refused queue left settings"
    );
    assert!(!registered(&served, "four").await);
    joined(&served, "three", 1).await;
}
