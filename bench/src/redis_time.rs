//! Redis time per call of every buyer-facing script, beside its floor, the least script that
//! keeps the call's behaviour (`least/`) and the bare commands a minimal design would send.
//! Each window: `CONFIG RESETSTAT`, then prepared calls sent one after another from one client
//! (nothing else runs), then `INFO commandstats`. The floor of a call is `EVALSHA` of a script
//! that only returns, with the same keys and arguments.
//!
//! # Method
//!
//! - Redis time per call is `INFO commandstats` usec per call. One client sends prepared command
//!   lines, one at a time, and nothing else runs: the load generator is idle during each window.
//! - A call's bare commands are what a minimal design would send (for status, ZRANK and a
//!   `BITFIELD SET`). Its least script (`bench/src/least/`) carries the same keys and arguments
//!   and runs only what any script keeping the call's behaviour must run, on today's keys: for
//!   status the clock, the settings that can turn a waiter away, the ticket check, the position
//!   and the presence deadline's read and write. Each file says what it leaves out.
//! - Each figure is the median of 5 windows of 400 calls; the call, its floor, its least script
//!   and its bare commands take turns.
//! - One queue holds 20 000 waiters, one active buyer and one ended session (so status carries a
//!   wait estimate). Each polled waiter has polled once before, so the measured poll is its
//!   next one (here told to poll late: 20 000 waiters behind a capacity of 2 wait hours). Issue
//!   runs with rate limits on, each call from a new user and a new IP.
//! - The top-10 reads run at 10 000 concerts, served from the page cache (docs/rankings.md,
//!   "Caching"), as are those of `lineup-bench reads` and `lineup-bench boards`: each measures
//!   the same read many times, with no write in between. The miss row names a page cache of its
//!   own in each call, so each call renders and keeps its page, as the first read after a board
//!   write does.
//! - Runs differ by a µs or so; compare ratios within one run.
//!
//! # Promotion and reaping
//!
//! The section also times a promotion slice (a tick admitting 1 000) and a reaping chunk,
//! through the promoter's and the reaper's own calls.
//!
//! - They are sliced so that no script call holds Redis for more than about a millisecond on a
//!   slow machine. Every buyer's status poll waits behind such a call.
//! - The slices are 32 admissions and 50 reaped waiters per call.
//! - Per admission that is one HGET, one ZRANGE on the ticket clock (its wait, for the
//!   `waitSeconds` metric) and its share of one ZREM, ZADD and HSET: 12–15 µs here, the call's
//!   own cost shared in.
//! - A tick calls again only while there is more to admit.
//!
//! # What limits the figures
//!
//! ## The top-10 read and its page cache
//!
//! - Reading a board's rows in a script (18.5 µs against a floor of 1.4 µs, 13 ×) costs Redis
//!   7.0's Lua bridge more than the commands. Each value a `redis.call` returns becomes a Lua
//!   string, and Redis hashes every byte of it (about 1 µs per KB here); each table of a reply
//!   costs a round of lookups before it is sent; each score is formatted and parsed back. A
//!   nested reply flattened into one array still takes 10 µs.
//! - So a kept page is one string, and only what a row shows (concertId, rank, score, capacity,
//!   title, venue, start): about 1 KB for 10 rows, against 2.3 KB with each details value
//!   whole. A hit is one `HGET` of it: 2.4 × the floor. The same page with whole details costs
//!   3.1–3.3 ×.
//! - A miss reads the board's rows, takes title, venue and start out of each details value (with
//!   plain finds; `cjson.decode` costs 1.6 µs a row) and keeps the page (`HSET`, `EXPIRE`, the
//!   board's `PEXPIRETIME`): about 1.8 × the read that keeps no page. A page is missed once
//!   after each board write, and then served from the cache.
//! - Every apply call deletes the page cache (`UNLINK`, freed off the script's thread when
//!   large): one more `redis.call` per call.
//!
//! ## Where a queue script's time goes
//!
//! Counted in instructions by callgrind (repeatable to the instruction; how to rerun it is
//! below). A status costs about 310 000 instructions; its floor (`EVALSHA` of `return 1` with 26
//! keys and 7 arguments) about 31 000.
//!
//! - Redis 7.0's Lua bridge costs more than the commands it runs. Each `redis.call` turns its
//!   arguments into Redis strings and its reply into Lua strings and tables: a ZSCORE costs
//!   6 500 instructions in a script, `TIME` with its parsing 12 500, the HMGET of the 15
//!   settings fields 25 000, the HMGET of the meta fields 28 000.
//! - `tonumber` of a string costs about 1 700 (glibc's `strtod`). A status makes about 20.
//! - Each helper the prelude defines costs about 2 400 to create, most of it finding its
//!   upvalues (`luaF_findupval`). Garbage collection takes about a tenth of the call.
//! - So a status that reads its settings, its meta, its entry, its presence, its position and a
//!   wait estimate (ten commands) costs several times its floor, however the Lua is written. At
//!   2.5 × the floor a status has about 47 000 instructions left over the floor; `TIME`, the two
//!   reads and the ZSCORE alone take 72 000.
//! - Meta's TTL is renewed once per half window, not at every call.
//! - The gatekeeper's check is no script: one pipeline of plain reads (docs/waiting-room.md,
//!   "Scripts and plain commands"). It has no row here; its Redis CPU per request is in
//!   `per_request.rs`.
//!
//! ## The least scripts
//!
//! The least script of each call (`bench/src/least/`) measures the lowest any script for the
//! call can cost here. It has no prelude, no helpers and none of the call's rarer paths. It runs
//! only the commands any script must run to keep the call's behaviour on today's keys, and
//! returns the call's reply. Each file lists what it leaves out.
//!
//! - Status: `TIME`, one settings read, the ticket's ZSCORE, the ZRANK, and the presence
//!   deadline's read and write (one `BITFIELD`). 4.4–4.6 × the floor, against a goal of 2.5 ×.
//!   It still leaves out the wait estimate, meta, the outage grace and the priority lane.
//! - Issue: 4.5–5.2 × (goal 2.5 ×). Leave: 3.1–3.4 × (goal 3 ×), without the presence check
//!   that tells a dropped waiter so. Summary: 4.3–4.7 × (goal 3 ×).
//! - So no script keeps these four calls within their goals on this server. Packing settings
//!   and meta into one field, keeping the estimate's inputs in the tick, or defining the helpers
//!   once per server (Redis 7 Functions) each cuts only what the least script already does
//!   without.
//! - The goal that does hold on the same server: the top-10 read (2.3–2.7 ×). Capacity at
//!   1 000 000 waiters (`capacity.rs`) holds too, because the poll schedule counts as well as
//!   the cost per call.
//!
//! ## Profiling a call
//!
//! `LINEUP_BENCH_DUMP=dir cargo run --bin lineup-bench redis-time` writes each row's calls
//! (`dir/N.jsonl`), its script (`dir/N.lua`) and the data set (`dir/dump.rdb`). Start `valgrind
//! --tool=callgrind --toggle-collect=evalShaCommand redis-server --dir dir --dbfilename
//! dump.rdb`, load the script and send the calls. A `redis-server` with symbols builds from
//! Debian's source package (`apt-get source redis`, then `make`).

use std::collections::HashMap;
use std::time::Duration;

use lineup::bench_support;
use lineup::ids::QueueId;
use lineup::queue::keys::QueueKeys;
use lineup::ranking::{Board, Order, Period};
use lineup::token::TokenClaims;
use serde_json::json;

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    const WAITERS: usize = 20_000;
    const CALLS: usize = 2_000;
    const ROUNDS: usize = 5;
    report.section(&format!(
        "Redis time per call, {WAITERS} waiting (usec_per_call from INFO commandstats; one client sends prepared calls, nothing else runs; median of {ROUNDS} windows of {} calls; floor: EVALSHA of a script that only returns, same keys and arguments)",
        CALLS / ROUNDS
    ));
    let queue = "time";
    let id = QueueId::parse(queue).unwrap();
    let room = &bench.app.stack.queue_api.room;
    let mut conn = bench.app.inspect.clone();
    // One ended session, so that a waiter's status carries a wait estimate.
    bench.configure(queue, json!({"capacity": 2})).await;
    let holder = bench.issue(queue, "holder").await;
    let leaver = bench.issue(queue, "leaver").await;
    bench.fill(queue, 0, WAITERS).await;
    bench.leave(queue, &leaver).await;
    bench.status(queue, &holder).await;
    let holder = TokenClaims::verify(&holder, &bench.app.config.token_key).expect("a token");
    room.check(&holder)
        .await
        .unwrap()
        .expect("the holder is active");
    room.summary(&id).await.unwrap();
    let floor: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return 1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let keys = QueueKeys::new(&bench.app.config.key_prefix, &id);
    let scratch_seen = format!("{}:bare-seen", keys.meta);
    let scratch_line = format!("{}:bare-waiting", keys.meta);
    let config = room.config();
    let (user_limit, ip_limit) = (
        config.rate_limits.user_per_minute.max(10).to_string(),
        config.rate_limits.ip_per_minute.max(100).to_string(),
    );
    let creation = config.creation.as_str();
    let waiters = bench.random_waiters(queue, 2 * CALLS).await;
    let (polled, leaving) = waiters.split_at(CALLS);
    // Each polled waiter has polled once since the wait estimate appeared, as a waiter who
    // polls as told has: the measured poll is its next one, in the heartbeat windows it was
    // told for.
    for (user, ticket) in polled {
        let claims = TokenClaims {
            queue: id.clone(),
            user: crate::util::user(user),
            ticket: *ticket,
        };
        room.status(&claims).await.unwrap();
    }

    let mut rows: Vec<TimeRow> = Vec::new();
    rows.push((
        "status (a waiter's poll)",
        polled
            .iter()
            .map(|(user, ticket)| {
                bench_support::status_command(room, &id, &[user, &ticket.to_string()])
            })
            .collect(),
        polled
            .iter()
            .flat_map(|(user, ticket)| {
                [
                    line(&["ZRANK", &keys.waiting, user]),
                    line(&[
                        "BITFIELD",
                        &scratch_seen,
                        "SET",
                        "u32",
                        &format!("#{}", ticket % 128),
                        "1",
                    ]),
                ]
            })
            .collect(),
        "2.5×",
        Some(include_str!("least/status.lua")),
    ));
    rows.push((
        "issue (a new buyer, rate limits on)",
        (0..CALLS)
            .map(|i| {
                bench_support::issue_command(
                    room,
                    &id,
                    &[
                        &format!("new-{i}"),
                        &format!("10.0.{}.{}", i / 256, i % 256),
                        &user_limit,
                        &ip_limit,
                        creation,
                        "0",
                    ],
                )
            })
            .collect(),
        (0..CALLS)
            .flat_map(|i| {
                let user = format!("new-{i}");
                [
                    line(&["HINCRBY", &keys.meta, "bare-seq", "1"]),
                    line(&["ZADD", &scratch_line, &(i + 1).to_string(), &user]),
                    line(&[
                        "BITFIELD",
                        &scratch_seen,
                        "SET",
                        "u32",
                        &format!("#{}", (i + 1) % 128),
                        "1",
                    ]),
                ]
            })
            .collect(),
        "2.5×",
        Some(include_str!("least/issue.lua")),
    ));
    rows.push((
        "leave (a waiter)",
        leaving
            .iter()
            .map(|(user, ticket)| {
                bench_support::leave_command(room, &id, &[user, &ticket.to_string()])
            })
            .collect(),
        (0..CALLS)
            .map(|i| line(&["ZREM", &scratch_line, &format!("new-{i}")]))
            .collect(),
        "3×",
        Some(include_str!("least/leave.lua")),
    ));
    rows.push((
        "summary",
        (0..CALLS)
            .map(|_| bench_support::summary_command(room, &id))
            .collect(),
        (0..CALLS)
            .flat_map(|_| {
                [
                    line(&["ZCARD", &keys.waiting]),
                    line(&["ZCOUNT", &keys.active, "0", "+inf"]),
                ]
            })
            .collect(),
        "3×",
        Some(include_str!("least/summary.lua")),
    ));
    let rankings = &bench.app.stack.ranking_api.rankings;
    let board = Board::on(Period::Daily, rankings.today(), None);
    bench.seed_board(rankings, &board, 10_000).await;
    bench.top("daily").await;
    let board_key = rankings.board_key(&board);
    let top: Vec<String> = redis::cmd("ZRANGE")
        .arg(&board_key)
        .arg(0)
        .arg(9)
        .query_async(&mut conn)
        .await
        .unwrap();
    let mut details = vec!["HMGET".to_owned(), rankings.details_key()];
    details.extend(top);
    let details: Vec<&str> = details.iter().map(String::as_str).collect();
    let top = bench_support::top_command(rankings, &board, None, Order::Seats, 10);
    rows.push((
        "top-10 read (10 000 concerts)",
        (0..CALLS).map(|_| top.clone()).collect(),
        (0..CALLS)
            .flat_map(|_| [line(&["ZRANGE", &board_key, "0", "9"]), line(&details)])
            .collect(),
        "3×",
        None,
    ));
    // The same read finding no page kept, as the first read after a board write does: each
    // call names a page cache of its own (same hash tag), so each renders and keeps its page.
    let cache = rankings.page_cache_key();
    rows.push((
        "top-10 read, page cache miss (10 000 concerts)",
        (0..CALLS)
            .map(|i| {
                let mut call = top.clone();
                for part in call.iter_mut().filter(|part| **part == cache.as_bytes()) {
                    *part = format!("{cache}:miss-{i}").into_bytes();
                }
                call
            })
            .collect(),
        (0..CALLS)
            .flat_map(|_| [line(&["ZRANGE", &board_key, "0", "9"]), line(&details)])
            .collect(),
        "3× on the read as served (the row above; a miss follows a board write)",
        None,
    ));

    if let Ok(dir) = std::env::var("LINEUP_BENCH_DUMP") {
        dump(bench, &dir, &rows).await;
    }
    // The least leave script removes waiters from a copy of the line.
    redis::cmd("COPY")
        .arg(&keys.waiting)
        .arg(format!("{}:least-waiting", keys.meta))
        .arg("REPLACE")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    for (name, calls, bare, goal, least) in rows {
        let floors = with_script(&calls, &floor);
        let least = match least {
            Some(text) => {
                let hash: String = redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(text)
                    .query_async(&mut conn)
                    .await
                    .unwrap();
                with_script(&calls, &hash)
            }
            None => Vec::new(),
        };
        let (keys, args) = shape(&calls[0]);
        // Rounds of the call, its floor and the bare commands in turn; the median round of
        // each, so that a burst from another process on the machine skews one round at most.
        let per_round = CALLS / ROUNDS;
        let bare_per_round = bare.len() / ROUNDS;
        let (mut usecs, mut floor_usecs, mut bare_usecs) = (Vec::new(), Vec::new(), Vec::new());
        let mut least_usecs = Vec::new();
        let mut measured = HashMap::new();
        for round in 0..ROUNDS {
            let part = round * per_round..(round + 1) * per_round;
            let stats = window(bench, &calls[part.clone()]).await;
            usecs.push(measure::usec_per_call(&HashMap::new(), &stats, "evalsha"));
            let floor = window(bench, &floors[part.clone()]).await;
            floor_usecs.push(measure::usec_per_call(&HashMap::new(), &floor, "evalsha"));
            if !least.is_empty() {
                let stats = window(bench, &least[part]).await;
                least_usecs.push(measure::usec_per_call(&HashMap::new(), &stats, "evalsha"));
            }
            let bare = window(
                bench,
                &bare[round * bare_per_round..(round + 1) * bare_per_round],
            )
            .await;
            bare_usecs.push(
                bare.iter()
                    .filter(|(name, _)| !matches!(name.as_str(), "info" | "config|resetstat"))
                    .map(|(_, (_, usec))| *usec)
                    .sum::<u64>() as f64
                    / per_round as f64,
            );
            if round == ROUNDS / 2 {
                measured = stats;
            }
        }
        let (usec, floor_usec, bare_usec) = (
            median(&mut usecs),
            median(&mut floor_usecs),
            median(&mut bare_usecs),
        );
        let least = if least_usecs.is_empty() {
            String::new()
        } else {
            let least_usec = median(&mut least_usecs);
            format!(
                "; least script {least_usec:.1} µs: {:.1}× the floor",
                least_usec / floor_usec
            )
        };
        report.row(
            name,
            &format!("{usec:.1} µs"),
            &format!(
                "floor {floor_usec:.1} µs ({keys} keys, {args} args): {:.1}× the floor, goal ≤ {goal}{least}; bare commands {bare_usec:.1} µs; inside per call: {}",
                usec / floor_usec,
                inner(&measured, per_round)
            ),
        );
    }

    // A promotion slice and a reaping chunk, through the promoter's and reaper's own calls.
    let queue = "tick1000";
    bench
        .configure(
            queue,
            json!({"capacity": 1000, "admitPerTick": 1000, "paused": true}),
        )
        .await;
    bench.fill(queue, 0, 1000).await;
    bench.configure(queue, json!({"paused": false})).await;
    bench.reset_commandstats().await;
    let tick = bench
        .room()
        .promote(&[QueueId::parse(queue).unwrap()])
        .await
        .unwrap();
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&HashMap::new(), &after, "evalsha");
    report.row(
        &format!("promotion slice (a tick admitting {})", tick.admitted()),
        &format!("{usec:.1} µs"),
        "goal ≤ 1 ms per slice",
    );

    let queue = "reap";
    bench
        .configure(queue, json!({"capacity": WAITERS, "sessionSeconds": 1}))
        .await;
    bench.fill(queue, 0, WAITERS).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    bench.reset_commandstats().await;
    let reaped = bench
        .room()
        .reap(&QueueId::parse(queue).unwrap())
        .await
        .unwrap();
    let after = bench.commandstats().await;
    let usec = measure::usec_per_call(&HashMap::new(), &after, "evalsha");
    report.row(
        &format!("reaping chunk ({} expired pending)", reaped.expired),
        &format!("{usec:.1} µs"),
        &format!(
            "goal ≤ 1 ms per chunk; {} chunks of {}",
            reaped.script_calls,
            bench_support::REAP_CHUNK
        ),
    );
}

/// A command line, its parts as bytes.
type Line = Vec<Vec<u8>>;

/// One row of the redis-time table: its name, its calls, the bare commands, the goal, and the
/// least script (bench/src/least/): what any one-script design of the call must run.
type TimeRow<'a> = (&'a str, Vec<Line>, Vec<Line>, &'a str, Option<&'static str>);

/// For profiling by hand: each row's calls as JSON lines in `dir/<row>.jsonl` and the data
/// set as `dir/dump.rdb`, so that a server started on that file (under callgrind, say)
/// can replay them.
async fn dump(bench: &Bench, dir: &str, rows: &[TimeRow<'_>]) {
    std::fs::create_dir_all(dir).unwrap();
    for (i, (_, calls, _, _, _)) in rows.iter().enumerate() {
        let text: String = calls
            .iter()
            .map(|call| {
                let parts: Vec<String> = call
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect();
                serde_json::to_string(&parts).unwrap() + "\n"
            })
            .collect();
        std::fs::write(format!("{dir}/{i}.jsonl"), text).unwrap();
        let hash = String::from_utf8_lossy(&calls[0][1]).into_owned();
        if let Some(source) = bench_support::script_source(&hash) {
            std::fs::write(format!("{dir}/{i}.lua"), source).unwrap();
        }
    }
    let mut conn = bench.app.inspect.clone();
    let (_, saved): (String, String) = redis::cmd("CONFIG")
        .arg("GET")
        .arg("dir")
        .query_async(&mut conn)
        .await
        .unwrap();
    redis::cmd("SAVE")
        .query_async::<()>(&mut conn)
        .await
        .unwrap();
    std::fs::copy(format!("{saved}/dump.rdb"), format!("{dir}/dump.rdb")).unwrap();
}

/// The median of `values` (sorted in place).
fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// `calls` with the script they run replaced by the one `hash` names.
fn with_script(calls: &[Line], hash: &str) -> Vec<Line> {
    calls
        .iter()
        .map(|call| {
            let mut call = call.clone();
            call[1] = hash.as_bytes().to_vec();
            call
        })
        .collect()
}

/// A command line from text parts.
fn line(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|part| part.as_bytes().to_vec()).collect()
}

/// The keys and arguments an `EVALSHA` line carries.
fn shape(call: &[Vec<u8>]) -> (usize, usize) {
    let keys: usize = std::str::from_utf8(&call[2])
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    (keys, call.len() - 3 - keys)
}

/// `INFO commandstats` after sending `lines` one by one from one client, stats reset first.
async fn window(bench: &Bench, lines: &[Vec<Vec<u8>>]) -> HashMap<String, (u64, u64)> {
    let mut conn = bench.app.inspect.clone();
    let commands: Vec<redis::Cmd> = lines
        .iter()
        .map(|parts| {
            let mut cmd = redis::cmd(std::str::from_utf8(&parts[0]).unwrap());
            for part in &parts[1..] {
                cmd.arg(part.as_slice());
            }
            cmd
        })
        .collect();
    bench.reset_commandstats().await;
    for cmd in &commands {
        let reply: redis::Value = cmd.query_async(&mut conn).await.unwrap();
        assert!(!matches!(reply, redis::Value::ServerError(_)), "{reply:?}");
    }
    bench.commandstats().await
}

/// The commands a script ran per call, most time first: `name×calls usec`.
fn inner(stats: &HashMap<String, (u64, u64)>, calls: usize) -> String {
    let mut inside: Vec<(&String, &(u64, u64))> = stats
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "info" | "evalsha" | "config|resetstat"))
        .collect();
    inside.sort_by_key(|(_, (_, usec))| std::cmp::Reverse(*usec));
    inside
        .iter()
        .map(|(name, (n, usec))| {
            format!(
                "{name}×{:.1} {:.1} µs",
                *n as f64 / calls as f64,
                *usec as f64 / calls as f64
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    /// The `local ARG = N` line of a Lua source: where a script's own arguments start.
    fn arg_line(source: &str) -> &str {
        source
            .lines()
            .find(|line| line.starts_with("local ARG = "))
            .expect("a `local ARG = N` line")
    }

    /// The least scripts read their own arguments where the prelude puts them, so they run
    /// on the same calls as the product's scripts.
    #[test]
    fn least_scripts_find_their_arguments_where_the_prelude_does() {
        let prelude = arg_line(include_str!("../../shared/src/queue/common.lua"));
        for least in [
            include_str!("least/status.lua"),
            include_str!("least/issue.lua"),
            include_str!("least/leave.lua"),
        ] {
            assert_eq!(arg_line(least), prelude);
        }
    }
}
