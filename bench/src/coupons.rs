//! Coupon claims through `coupon-api`'s handler against seed 002's command-by-command design
//! (`baseline::seed_coupon_issue`), on the same server: Redis time per claim and per sold-out
//! answer (every command's `INFO commandstats` usec, scripts' inner commands counted once,
//! inside their `EVALSHA`), round trips per claim, and claims per second.
//!
//! # Method
//!
//! 10 000 claims and 2 000 sold-out answers each way, one caller, rate limits off; then 3 s of
//! 32 callers on one connection against a quantity no run sells out, through the handler, the
//! claim script through the library alone, and seed 002's commands. Seed 002's design
//! (`bench/src/baseline.rs`): `EXISTS` of the sold-out flag, `SADD`, `INCR`, and past the
//! quantity `SREM`, `DECR`, `SET`; on success a `ZADD`.
//!
//! # What limits the figures
//!
//! - lineup's claim costs more Redis time. One `EVALSHA` has a fixed cost of several µs here,
//!   before its work: `TIME`, an `HMGET` of the campaign, an `HGET` of the buyer's claim, then
//!   `HINCRBY`, `HSET`, `ZADD` into the outbox and two O(1) checks of whether a key is new. The
//!   seed's claim writes no claim time and no outbox entry. Its steps are separate commands: a
//!   caller that dies between `SADD` and `INCR`, or during its rollback, leaves the set, the
//!   counter and the flag out of step.
//! - The seed's sold-out answer is one `EXISTS`, cheaper than a script call. lineup's sold-out
//!   answer writes nothing and stays O(1), and it is exact the moment the last number goes, with
//!   no flag to fall out of step.
//! - On loopback, four round trips cost little, so the seed's throughput from 32 pipelining
//!   callers is as high or higher. Each of its round trips adds a network round trip in AWS
//!   (about 0.2–0.5 ms within an Availability Zone), where lineup's single round trip wins.

use std::time::Duration;

use lineup::door::Proof;
use lineup::ids::UserId;
use serde_json::json;

use crate::baseline;
use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    const QUANTITY: u64 = 10_000;
    const SOLD_OUT_CALLS: u64 = 2_000;
    report.section(&format!(
        "Coupon claims, {QUANTITY} coupons (Redis time: INFO commandstats usec of every command, per answer)"
    ));
    let put = |coupon: &'static str| async move {
        let body = json!({"quantity": QUANTITY}).to_string();
        let status = bench
            .invoke_coupon_api(&Bench::event(
                "PUT",
                &format!("/coupons/{coupon}"),
                Some(&body),
            ))
            .await;
        assert_eq!(status, 201);
    };
    let claim = |coupon: &'static str, user: String| async move {
        let body = json!({"userId": user}).to_string();
        bench
            .invoke_coupon_api(&Bench::event(
                "POST",
                &format!("/coupons/{coupon}/claims"),
                Some(&body),
            ))
            .await
    };
    // lineup: one EVALSHA per answer.
    put("bench-coupon").await;
    assert_eq!(claim("bench-coupon", "warm".into()).await, 201);
    let before = bench.commandstats().await;
    for i in 1..QUANTITY {
        assert_eq!(claim("bench-coupon", format!("u{i}")).await, 201);
    }
    let after = bench.commandstats().await;
    let claimed_usec = usec(&before, &after, LINEUP) / (QUANTITY - 1) as f64;
    let claimed_trips = calls(&before, &after, LINEUP) as f64 / (QUANTITY - 1) as f64;
    let before = bench.commandstats().await;
    for i in 0..SOLD_OUT_CALLS {
        assert_eq!(claim("bench-coupon", format!("late{i}")).await, 410);
    }
    let after = bench.commandstats().await;
    let sold_out_usec = usec(&before, &after, LINEUP) / SOLD_OUT_CALLS as f64;
    let sold_out_trips = calls(&before, &after, LINEUP) as f64 / SOLD_OUT_CALLS as f64;

    // Seed 002: up to six commands, each a round trip.
    let mut conn = redis::Client::open(bench.url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let before = bench.commandstats().await;
    for i in 0..QUANTITY {
        assert!(baseline::seed_coupon_issue(&mut conn, "c", &format!("u{i}"), QUANTITY).await);
    }
    let after = bench.commandstats().await;
    let seed_usec = usec(&before, &after, SEED) / QUANTITY as f64;
    let seed_trips = calls(&before, &after, SEED) as f64 / QUANTITY as f64;
    // The first late buyer runs the rollback and sets the flag; the rest meet the flag.
    let before = bench.commandstats().await;
    for i in 0..SOLD_OUT_CALLS {
        assert!(!baseline::seed_coupon_issue(&mut conn, "c", &format!("late{i}"), QUANTITY).await);
    }
    let after = bench.commandstats().await;
    let seed_sold_out_usec = usec(&before, &after, SEED) / SOLD_OUT_CALLS as f64;
    let seed_sold_out_trips = calls(&before, &after, SEED) as f64 / SOLD_OUT_CALLS as f64;

    report.row(
        "claim, Redis time",
        &format!("{claimed_usec:.2} µs"),
        &format!("seed 002: {seed_usec:.2} µs; lineup's also writes the claim's outbox entry"),
    );
    report.row(
        "claim, round trips",
        &format!("{claimed_trips:.2}"),
        &format!("seed 002: {seed_trips:.2}"),
    );
    report.row(
        "sold-out answer, Redis time",
        &format!("{sold_out_usec:.2} µs"),
        &format!("seed 002: {seed_sold_out_usec:.2} µs (one EXISTS of its flag)"),
    );
    report.row(
        "sold-out answer, round trips",
        &format!("{sold_out_trips:.2}"),
        &format!("seed 002: {seed_sold_out_trips:.2}"),
    );

    // Claims per second through the handler, 32 callers, and seed 002's over one connection,
    // both against a quantity no run sells out.
    let body = json!({"quantity": 10_000_000}).to_string();
    let status = bench
        .invoke_coupon_api(&Bench::event("PUT", "/coupons/bench-rate", Some(&body)))
        .await;
    assert_eq!(status, 201);
    let handler_rate = measure::rate(32, Duration::from_secs(3), |i| async move {
        let status = claim("bench-rate", format!("r{i}")).await;
        assert!(status == 201 || status == 410);
    })
    .await;
    let seed_rate = measure::rate(32, Duration::from_secs(3), |i| {
        let mut conn = conn.clone();
        async move {
            assert!(
                baseline::seed_coupon_issue(&mut conn, "rate", &format!("r{i}"), 10_000_000).await
            );
        }
    })
    .await;
    // The claim script alone, through the library call the handler makes (no event to parse,
    // no response to build).
    let coupons = &bench.app.stack.coupon_api.coupons;
    let coupon = lineup::ids::CouponId::parse("bench-rate").unwrap();
    let raw_rate = measure::rate(32, Duration::from_secs(3), |i| {
        let coupon = &coupon;
        async move {
            let user = UserId::parse(&format!("raw{i}")).unwrap();
            let reply = coupons
                .claim(coupon, &user, None, None, &Proof::Absent)
                .await
                .unwrap();
            assert!(matches!(reply, lineup::coupon::ClaimReply::Claimed { .. }));
        }
    })
    .await;
    report.row(
        "claims per second, 32 callers",
        &format!("{handler_rate:.0}"),
        &format!(
            "through the handler; the script through the library alone: {raw_rate:.0}; seed \
             002's commands from the same process: {seed_rate:.0}"
        ),
    );
}

/// The commands lineup's claims send: one script call each (its inner commands are in its
/// time).
const LINEUP: &[&str] = &["evalsha"];

/// The commands seed 002's issue sends, each from the client.
const SEED: &[&str] = &["exists", "sadd", "incr", "srem", "decr", "set", "zadd"];

type Stats = std::collections::HashMap<String, (u64, u64)>;

/// Redis time (usec) of `names` between two readings.
fn usec(before: &Stats, after: &Stats, names: &[&str]) -> f64 {
    names
        .iter()
        .map(|name| {
            (after.get(*name).map_or(0, |a| a.1) - before.get(*name).map_or(0, |b| b.1)) as f64
        })
        .sum()
}

/// Calls of `names` between two readings.
fn calls(before: &Stats, after: &Stats, names: &[&str]) -> u64 {
    names
        .iter()
        .map(|name| after.get(*name).map_or(0, |a| a.0) - before.get(*name).map_or(0, |b| b.0))
        .sum()
}
