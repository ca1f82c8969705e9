//! The designs lineup replaces, implemented faithfully here and only here (never in the
//! product), on the same server in the same run.

use std::time::{Duration, Instant};

use crate::measure::{percentile, Bench};

const GLOBAL: &str = "bench:baseline:global-waiting";

/// One global queue whose status fetches the whole waiting set (`ZRANGE 0 -1`) and finds
/// the buyer in it. Grows the set to `size` members; returns p50 and p99.
pub async fn global_status_latency(bench: &Bench, size: usize) -> (Duration, Duration) {
    // Its own connection without the client's 500 ms reply timeout: at a million waiting,
    // one whole-line reply takes about that long to produce and read.
    let mut conn = redis::Client::open(bench.url())
        .unwrap()
        .get_multiplexed_async_connection_with_config(
            &redis::AsyncConnectionConfig::new().set_response_timeout(None),
        )
        .await
        .unwrap();
    let have: usize = redis::cmd("ZCARD")
        .arg(GLOBAL)
        .query_async(&mut conn)
        .await
        .unwrap_or(0);
    for start in (have..size).step_by(10_000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 10_000).min(size) {
            pipe.zadd(GLOBAL, format!("token-{i:07}"), i).ignore();
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
    let calls = match size {
        s if s <= 10_000 => 200,
        s if s <= 100_000 => 40,
        _ => 10,
    };
    let mut samples = Vec::new();
    for k in 0..calls {
        let wanted = format!("token-{:07}", (k * 7919) % size);
        let started = Instant::now();
        let line: Vec<String> = redis::cmd("ZRANGE")
            .arg(GLOBAL)
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await
            .unwrap();
        let position = line.iter().position(|t| *t == wanted);
        assert!(position.is_some());
        samples.push(started.elapsed());
    }
    samples.sort();
    (percentile(&samples, 50.0), percentile(&samples, 99.0))
}

/// Redis bytes per waiting buyer in the replaced design: a token record (JSON) per buyer, a
/// set of users, and the global line.
pub async fn memory_per_buyer(bench: &Bench, buyers: usize) -> f64 {
    let mut conn = bench.app.inspect.clone();
    let before = bench.used_memory().await;
    for start in (0..buyers).step_by(5_000) {
        let mut pipe = redis::pipe();
        for i in start..(start + 5_000).min(buyers) {
            let token = format!("{i:032x}");
            pipe.set(
                format!("bench:base:token:{token}"),
                format!(r#"{{"queueId":"big-onsale","userId":"user-{i:07}","status":"waiting","issuedAt":1795312800000}}"#),
            )
            .ignore();
            pipe.sadd("bench:base:users", format!("user-{i:07}"))
                .ignore();
            pipe.zadd("bench:base:line", token, i).ignore();
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    }
    let per_buyer = (bench.used_memory().await - before) as f64 / buyers as f64;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("bench:base:*")
        .query_async(&mut conn)
        .await
        .unwrap();
    for chunk in keys.chunks(10_000) {
        redis::cmd("UNLINK")
            .arg(chunk)
            .query_async::<()>(&mut conn)
            .await
            .unwrap();
    }
    per_buyer
}

/// p50 of one token issue, one caller at a time, with `waiting` buyers in line: lineup's
/// handler issuing into `queue`, and the replaced design's seven separate commands (GET,
/// SISMEMBER, ZRANK, SCARD, SADD, SET, SET) against the global line that
/// [`global_status_latency`] grew to the same size.
pub async fn issue_latency(bench: &Bench, queue: &str, waiting: usize) -> (Duration, Duration) {
    const CALLS: usize = 1000;
    let mut lineup = Vec::new();
    for i in 0..CALLS {
        let started = Instant::now();
        bench.issue(queue, &format!("l{waiting}-{i}")).await;
        lineup.push(started.elapsed());
    }
    let mut conn = bench.app.inspect.clone();
    let mut baseline = Vec::new();
    for i in 0..CALLS {
        let user = format!("l{waiting}-{i}");
        let started = Instant::now();
        let _: Option<String> = redis::cmd("GET")
            .arg(format!("bench:b7:user:{user}"))
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: bool = redis::cmd("SISMEMBER")
            .arg("bench:b7:active")
            .arg(&user)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: Option<u64> = redis::cmd("ZRANK")
            .arg(GLOBAL)
            .arg(&user)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: u64 = redis::cmd("SCARD")
            .arg("bench:b7:active")
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: u64 = redis::cmd("SADD")
            .arg("bench:b7:users")
            .arg(&user)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg(format!("bench:b7:token:{waiting}:{i:032x}"))
            .arg(&user)
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("SET")
            .arg(format!("bench:b7:user:{user}"))
            .arg(format!("{waiting}:{i:032x}"))
            .query_async(&mut conn)
            .await
            .unwrap();
        baseline.push(started.elapsed());
    }
    lineup.sort();
    baseline.sort();
    (percentile(&lineup, 50.0), percentile(&baseline, 50.0))
}

/// Ranking updates sent event by event and command by command: a dedupe SET NX, then one
/// ZINCRBY per board (four periods, overall and one genre) and the concert's board index.
pub async fn ranking_events_per_second(bench: &Bench, callers: usize, run: Duration) -> f64 {
    crate::measure::rate(callers, run, |n| {
        let mut conn = bench.app.inspect.clone();
        async move {
            let fresh: bool = redis::cmd("SET")
                .arg(format!("bench:rk:payment:{n}"))
                .arg(1)
                .arg("NX")
                .arg("EX")
                .arg(3_024_000)
                .query_async(&mut conn)
                .await
                .unwrap();
            if fresh {
                let concert = format!("c{}", n % 50);
                for board in ["daily", "weekly", "monthly", "all"]
                    .iter()
                    .flat_map(|p| [format!("bench:rk:{p}"), format!("bench:rk:{p}:rock")])
                {
                    let _: f64 = redis::cmd("ZINCRBY")
                        .arg(&board)
                        .arg(-1)
                        .arg(&concert)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                    let _: u64 = redis::cmd("SADD")
                        .arg(format!("bench:rk:index:{concert}"))
                        .arg(&board)
                        .query_async(&mut conn)
                        .await
                        .unwrap();
                }
            }
        }
    })
    .await
}

/// Seed 002's coupon issue, command by command as it was written: the sold-out flag
/// (`EXISTS`), `SADD` for one per user, `INCR` for the number, and past the quantity `SREM`,
/// `DECR` and `SET` of the flag; on success `ZADD` into the queue a worker drains. Each
/// command is its own round trip. Returns whether the user got a coupon.
pub async fn seed_coupon_issue(
    conn: &mut redis::aio::MultiplexedConnection,
    coupon: &str,
    user: &str,
    quantity: u64,
) -> bool {
    let issued = format!("bench:seed-coupon:{coupon}:issued");
    let queue = format!("bench:seed-coupon:{coupon}:queue");
    let counter = format!("bench:seed-coupon:{coupon}:counter");
    let soldout = format!("bench:seed-coupon:{coupon}:soldout");
    let flagged: bool = redis::cmd("EXISTS")
        .arg(&soldout)
        .query_async(conn)
        .await
        .unwrap();
    if flagged {
        return false;
    }
    let added: u64 = redis::cmd("SADD")
        .arg(&issued)
        .arg(user)
        .query_async(conn)
        .await
        .unwrap();
    if added == 0 {
        return false;
    }
    let order: u64 = redis::cmd("INCR")
        .arg(&counter)
        .query_async(conn)
        .await
        .unwrap();
    if order > quantity {
        redis::cmd("SREM")
            .arg(&issued)
            .arg(user)
            .query_async::<()>(conn)
            .await
            .unwrap();
        redis::cmd("DECR")
            .arg(&counter)
            .query_async::<()>(conn)
            .await
            .unwrap();
        redis::cmd("SET")
            .arg(&soldout)
            .arg("1")
            .query_async::<()>(conn)
            .await
            .unwrap();
        return false;
    }
    redis::cmd("ZADD")
        .arg(&queue)
        .arg(order)
        .arg(user)
        .query_async::<()>(conn)
        .await
        .unwrap();
    true
}
