//! `lineup-bench line`: Redis main-thread CPU per request of the striped line
//! (`lineup::line`), from `INFO cpu`, sent as AWS sends it: 16 containers, each a `Line` over
//! its own connection with one request in flight, in five rounds each beside as many PINGs.
//!
//! The line has one stripe here: every request touches one stripe, so one server shows a
//! request's whole cost. The rows: a new buyer's join (the join script) and, beside it, its
//! five commands sent plain in one pipeline (its floor without a script), a waiter's poll (two
//! plain commands: its rank and its mark kept alive, `PEXPIRE … GT`; each container reads the
//! stripe's published state once a second, so once here), the gatekeeper's check (one `GET`
//! of the buyer's mark) with the first thousand admitted, a leave (two `ZREM`s and a `SET` of
//! the mark), and one tick over the waiting line.

use std::time::Duration;

use lineup::ids::{QueueId, UserId};
use lineup::line::{
    Checked, Joined, Lease, Line, LineShape, Standing, Stripe, StripeKeys, HEAD_WINDOW,
};

use crate::measure::Bench;
use crate::probe::{main_thread_cpu_us, paired, plain_connections};
use crate::report::Report;

/// Containers sending at once, each one connection with one request in flight.
const CONTAINERS: usize = 16;

/// Buyers per row: each request a distinct buyer.
const BUYERS: usize = 4_000;

/// Rounds each row is sent in, each beside its own PINGs.
const ROUNDS: usize = 5;

fn user(i: usize) -> UserId {
    UserId::parse(&format!("line-{i:05}")).expect("user id")
}

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section(&format!(
        "Redis CPU per request of the striped line (INFO cpu, main thread), {CONTAINERS} \
         containers with one request in flight each, {BUYERS} distinct buyers per row"
    ));
    let shape = LineShape {
        stripes: 1,
        presence: Duration::from_secs(3600),
        ..LineShape::default()
    };
    let config = &bench.app.config;
    let lines: Vec<Line> = (0..CONTAINERS)
        .map(|_| {
            let conn = lineup::store::connect(&config.redis, &bench.url()).expect("connect");
            Line::new(
                conn,
                &config.key_prefix,
                QueueId::parse("line-costs").expect("queue id"),
                shape,
            )
        })
        .collect();
    let lines = &lines;
    let pings = &plain_connections(bench, CONTAINERS).await;
    let now = chrono::Utc::now().timestamp_millis();
    let scores: Vec<std::sync::atomic::AtomicI64> = (0..BUYERS)
        .map(|_| std::sync::atomic::AtomicI64::new(0))
        .collect();
    let scores = &scores;

    let join = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            match lines[lane].join(&user(i), now).await.expect("join") {
                Joined::New { score, .. } => {
                    scores[i].store(score, std::sync::atomic::Ordering::Relaxed)
                }
                other => panic!("a new place: {other:?}"),
            }
        },
    )
    .await;

    // The common join's five commands for a new buyer, plain, in one pipeline, on a line of
    // their own: the floor of any join that reads what it reads and writes what it writes.
    let bare_keys = StripeKeys::new(
        &config.key_prefix,
        &QueueId::parse("line-costs-bare").expect("queue id"),
        Stripe(0),
        1,
    );
    let bare_keys = &bare_keys;
    let bare_join = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            let who = user(i);
            let _: () = redis::pipe()
                .cmd("ZSCORE")
                .arg(&bare_keys.active)
                .arg(who.as_str())
                .ignore()
                .cmd("SET")
                .arg(bare_keys.mark(who.as_str()))
                .arg("w")
                .arg("PX")
                .arg(3_600_000)
                .ignore()
                .cmd("GET")
                .arg(&bare_keys.sealed)
                .ignore()
                .cmd("ZADD")
                .arg(&bare_keys.line)
                .arg("NX")
                .arg(now)
                .arg(who.as_str())
                .ignore()
                .cmd("SADD")
                .arg(&bare_keys.segments)
                .arg(now / 1_000)
                .ignore()
                .query_async(&mut pings[lane].clone())
                .await
                .expect("the join's commands");
        },
    )
    .await;

    // One tick once every segment has sealed, admitting nobody: every waiter then has its
    // published figure.
    let sealed = now + 2 * shape.segment.as_millis() as i64 + shape.seal.as_millis() as i64;
    let before = main_thread_cpu_us(bench).await;
    let Lease::Granted(fence) = lines[0]
        .lease("bench", Duration::from_secs(600))
        .await
        .expect("lease")
    else {
        panic!("the bench's lease");
    };
    let ticked = lines[0].tick(fence, &sealed, 0).await.expect("tick");
    let tick_us = main_thread_cpu_us(bench).await - before;
    assert_eq!(ticked.placed, BUYERS as u64);

    let poll = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            let score = scores[i].load(std::sync::atomic::Ordering::Relaxed);
            let standing = lines[lane]
                .poll(&user(i), score, sealed)
                .await
                .expect("poll");
            assert!(matches!(standing, Standing::Waiting { .. }), "{standing:?}");
        },
    )
    .await;

    // As many admitted as one tick admits from a stripe, then the gatekeeper's check of each.
    let admit_at = sealed + 1;
    let admitted = HEAD_WINDOW as usize;
    lines[0]
        .tick(fence, &admit_at, admitted as u64)
        .await
        .expect("tick");
    let check = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            let live = lines[lane].check(&user(i), admit_at).await.expect("check");
            assert_eq!(
                matches!(live, Checked::Active { .. }),
                i < admitted,
                "buyer {i}"
            );
        },
    )
    .await;

    let leave = paired(
        bench,
        pings,
        ROUNDS,
        (0..BUYERS).collect(),
        |lane, i| async move {
            lines[lane].leave(&user(i)).await.expect("leave");
        },
    )
    .await;
    let ping_us = crate::probe::ping_us(bench, pings, BUYERS).await;
    report.row(
        "PING",
        &format!("{ping_us:.1} µs"),
        "the floor: a request's own I/O",
    );
    report.row("join, a new buyer", &join.against(ping_us), "≤ 3× PING");
    report.row(
        "the common join's five commands, plain, in one pipeline",
        &bare_join.against(ping_us),
        "the floor of the join's work, without a script",
    );
    report.row("poll, a waiter", &poll.against(ping_us), "≤ 1.5× PING");
    report.row(
        "the gatekeeper's check",
        &check.against(ping_us),
        "≤ 1.5× PING",
    );
    report.row(
        "leave, a waiter or a session",
        &leave.against(ping_us),
        "≤ 2× PING",
    );
    report.row(
        &format!("tick over {BUYERS} waiters in one segment"),
        &format!("{tick_us:.0} µs"),
        "a diagnostic",
    );
}
