//! The live boards' hourly snapshots (issue 58): the memory they take beside the live boards,
//! the Redis main-thread CPU of a snapshot call and the longest call, at K = 100 (the default
//! and the most `RANKING_SNAPSHOT_TOP` takes) and K = 10, and reads of a live board compared
//! with its snapshot. Part of the `movement` section, whose connections it sends the reads on.
//!
//! # Method
//!
//! - Rankings of their own: a key prefix and a connection of their own, so that a round
//!   walks these boards alone, whatever other sections left.
//! - The live boards: last-24h and last-7d, by seats and by sell-through, and the current
//!   trending generation, overall with 10 000 concerts and for 30 genres of 300 to 3 000 of
//!   them (every rate board holds every concert of its seat board). A concert has the same
//!   score on its genres' boards as overall; the last-24h board is `Bench::seed_board`'s.
//! - A round starts an hour after the last (the clock given). At each K, K = 10 first: one
//!   round to start with (the first at that K), then 3 rounds for `INFO cpu` over them ÷
//!   their calls (each call's round trip included), then 3 with SLOWLOG logging every
//!   command, for the longest `EVALSHA`. Redis 7.0 logs the commands a script runs too, which
//!   costs the logged rounds some CPU: the report gives their CPU per call as well.
//! - Memory is `MEMORY USAGE … SAMPLES 0` of every board, every snapshot, the round's state
//!   and the live-genres set, after a K's last round.
//! - Reads: the overall last-24h board after the last round, then an hour's sales on it (0
//!   to 96 seats a concert, so rows move a few places), read as the calendar board is
//!   (`movement.rs`); the concerts read alone, in turn, are the top 100 rows that show movement.

use chrono::{DateTime, Utc};
use lineup::ids::{ConcertId, Genre};
use lineup::ranking::{Against, Order, Period, Rankings, Snapshots};

use crate::measure::Bench;
use crate::movement::{write_seats, Reads, CONCERTS};
use crate::probe::Probe;
use crate::report::{met, thousands, Report};

const GENRES: u64 = 30;
const ROUNDS: i64 = 3;
const HOUR_MS: i64 = 3_600_000;
/// Hours of one K's rounds: one to start with, then two sets of [`ROUNDS`].
const SPAN: i64 = 1 + 2 * ROUNDS;

/// Boards in a round: five overall and five per genre.
const BOARDS: u64 = 5 * (1 + GENRES);

pub async fn run(bench: &Bench, report: &mut Report, pings: &[redis::aio::MultiplexedConnection]) {
    report.section(
        "Live boards' snapshots: memory beside the boards, Redis main-thread CPU per snapshot call, reads compared with a snapshot",
    );
    let redis = &bench.app.config.redis;
    let conn = lineup::store::connect(redis, &bench.url()).expect("a connection");
    conn.open(redis.connect_timeout).await;
    let prefix = format!("{}-snapshots", bench.app.config.key_prefix);
    let at_k = |k: u32| {
        let mut settings = bench.app.stack.ranking_api.rankings.settings().clone();
        settings.snapshot_top = k;
        Rankings::new(conn.clone(), prefix.clone(), settings)
    };
    let (default_k, small_k) = (at_k(100), at_k(10));
    let first = first_hour(&default_k);
    let now = DateTime::from_timestamp_millis(first).expect("a time");
    let board = default_k.board_at(Period::Last24h, now, None);
    bench.seed_board(&default_k, &board, CONCERTS).await;
    let concerts = concerts(bench, &default_k, &board).await;
    let rows = seed(bench, &default_k, &prefix, now, &concerts).await;

    let probe = Probe::open(bench).await;
    for (k, rankings, from) in [
        ("10", &small_k, first),
        ("100", &default_k, first + SPAN * HOUR_MS),
    ] {
        let cost = Cost::of(bench, &probe, rankings, from).await;
        let (live, kept) = memory(&probe, &prefix).await;
        let share = kept as f64 / live as f64;
        report.row(
            &format!("snapshots ÷ live boards, memory, K = {k}"),
            &format!(
                "{:.1} % ({:.2} MB ÷ {:.2} MB: {BOARDS} snapshots, the round's state and the live genres ÷ {BOARDS} boards of {} rows)",
                share * 100.0,
                kept as f64 / 1e6,
                live as f64 / 1e6,
                thousands(rows)
            ),
            &format!("goal ≤ 10 %: {}", met(share <= 0.1)),
        );
        report.row(
            &format!("Redis main-thread CPU per snapshot call, K = {k}"),
            &format!(
                "{:.0} µs ({} calls in {ROUNDS} rounds of {BOARDS} boards; {:.0} µs with every command logged)",
                cost.cpu_us, cost.calls, cost.logged_cpu_us
            ),
            "aim: about 0.5 ms (`SNAPSHOT_BUDGET`)",
        );
        let over = cost.logged.iter().filter(|&&us| us > 1_000).count();
        let longest = cost.logged.iter().max().copied().unwrap_or(0);
        report.row(
            &format!("longest snapshot call, K = {k}"),
            &format!(
                "{:.3} ms; {over} of {} calls over 1 ms (SLOWLOG, every command logged, those in scripts too)",
                longest as f64 / 1000.0,
                cost.logged.len()
            ),
            &format!("goal well under 1 ms: {}", met(longest < 1_000)),
        );
    }
    // Back to the default K for the reads.
    rounds(&default_k, first + 2 * SPAN * HOUR_MS, 1).await;

    // An hour's sales: each concert 0 to 96 more seats.
    let sold = concerts
        .iter()
        .map(|c| (c.day + (c.index * 7 % 97) as i64, format!("c{}", c.index)));
    write_seats(bench, &default_k, &board, sold).await;
    let against = default_k.against(&board, None, now);
    assert_eq!(against, Some(Against::Snapshot(board.clone())));
    let top = default_k
        .page(&board, against.as_ref(), Order::Seats, 0, 100)
        .await
        .expect("the top 100");
    let ones: Vec<ConcertId> = top
        .items
        .iter()
        .filter(|row| row.movement.is_some())
        .map(|row| ConcertId::parse(&row.concert_id).expect("an id"))
        .collect();
    assert!(!ones.is_empty(), "rows in the top K with movement");
    let reads = Reads::measure(bench, pings, &default_k, &board, against.as_ref(), &ones).await;
    reads.report(
        report,
        "last-24h, K = 100: ",
        "once after each write; then the kept page serves",
    );
    forget(bench, &probe, &prefix).await;
}

/// The first round's time: an hour from now, or the next trending generation's first minute
/// when the rounds would cross into the next generation (its board would be another).
fn first_hour(rankings: &Rankings) -> i64 {
    let generation = rankings.trend().generation_ms();
    let first = Utc::now().timestamp_millis() + HOUR_MS;
    let last = first + 2 * SPAN * HOUR_MS;
    if last.div_euclid(generation) == first.div_euclid(generation) {
        first
    } else {
        (first.div_euclid(generation) + 1) * generation + 60_000
    }
}

/// One concert of the live boards, `c<index>`: seats in the last 24 hours and 7 days, its
/// trending score (decayed seats) and its capacity.
struct Concert {
    index: u64,
    day: i64,
    week: i64,
    trend: f64,
    capacity: i64,
}

/// The concerts on `board` (`Bench::seed_board`'s), by index, with their capacities from the
/// details; their last-7d seats and trending scores follow from their index.
async fn concerts(
    bench: &Bench,
    rankings: &Rankings,
    board: &lineup::ranking::Board,
) -> Vec<Concert> {
    let mut inspect = bench.app.inspect.clone();
    let seats: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(rankings.board_key(board))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut inspect)
        .await
        .expect("the board");
    let details: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(rankings.details_key())
        .query_async(&mut inspect)
        .await
        .expect("the details");
    let mut concerts: Vec<Concert> = seats
        .into_iter()
        .map(|(id, score)| {
            let index: u64 = id[1..].parse().expect("c<index>");
            let capacity = details[&id].split(' ').nth(1).and_then(|c| c.parse().ok());
            let day = -score as i64;
            let week = day + (index * 48_271 % 9_000) as i64;
            let fresh = 1.0 + (index * 40_503 % 1_000) as f64 / 2_000.0;
            Concert {
                index,
                day,
                week,
                trend: day as f64 * fresh + (week - day) as f64 / 20.0,
                capacity: capacity.expect("a capacity"),
            }
        })
        .collect();
    concerts.sort_by_key(|concert| concert.index);
    concerts
}

/// Writes every live board, overall and for each genre, and names the genres live; returns
/// the rows on the boards.
async fn seed(
    bench: &Bench,
    rankings: &Rankings,
    prefix: &str,
    now: DateTime<Utc>,
    concerts: &[Concert],
) -> u64 {
    let mut inspect = bench.app.inspect.clone();
    let mut live = redis::cmd("ZADD");
    live.arg(format!("{prefix}:{{rk}}:live-genres"));
    // Overall, every concert; genre g, 300 + 2 700 g ÷ 29 of them, every 7th from its own.
    let mut boards = vec![(None, concerts.iter().collect::<Vec<_>>())];
    for g in 0..GENRES {
        let genre = Genre::parse(&format!("genre-{g:02}")).expect("a genre");
        live.arg(0).arg(genre.as_str());
        let members = (0..300 + g * 2_700 / (GENRES - 1))
            .map(|j| &concerts[((g * 337 + j * 7) % CONCERTS) as usize])
            .collect();
        boards.push((Some(genre), members));
    }
    let mut rows = 0;
    for (genre, members) in &boards {
        // Each live period by seats, and by sell-through but trending (a decayed score has
        // no rate): five boards.
        for period in [Period::Last24h, Period::Last7d, Period::Trending] {
            let live = rankings.board_at(period, now, genre.clone());
            let (mut seats, mut rates) = (redis::cmd("ZADD"), redis::cmd("ZADD"));
            seats.arg(rankings.board_key(&live));
            rates.arg(rankings.rate_key(&live));
            for concert in members {
                let id = format!("c{}", concert.index);
                let sold = match period {
                    Period::Last24h => concert.day,
                    _ => concert.week,
                };
                match period {
                    Period::Trending => seats.arg(-concert.trend).arg(id),
                    _ => {
                        rates.arg(-(sold * 1_000_000 / concert.capacity)).arg(&id);
                        seats.arg(-sold).arg(id)
                    }
                };
            }
            let written = match period {
                Period::Trending => vec![seats],
                _ => vec![seats, rates],
            };
            rows += (written.len() * members.len()) as u64;
            for zadd in written {
                zadd.query_async::<()>(&mut inspect).await.expect("a board");
            }
        }
    }
    live.query_async::<()>(&mut inspect)
        .await
        .expect("the live genres");
    rows
}

/// What a K's snapshot calls cost, in rounds an hour apart after one to start with (the
/// first at the K, or ever): Redis main-thread CPU per call (µs), in rounds with nothing
/// logged, then in rounds with every command logged (SLOWLOG at 0), and the µs of each
/// logged call.
struct Cost {
    calls: u32,
    cpu_us: f64,
    logged_cpu_us: f64,
    logged: Vec<u64>,
}

impl Cost {
    /// [`SPAN`] rounds, the first at `first` (ms).
    async fn of(bench: &Bench, probe: &Probe, rankings: &Rankings, first: i64) -> Cost {
        rounds(rankings, first, 1).await;
        let (calls, cpu_us) = cpu_per_call(probe, rankings, first + HOUR_MS).await;
        probe.slowlog_start(0, 100_000).await;
        let later = first + (1 + ROUNDS) * HOUR_MS;
        let logged_cpu_us = cpu_per_call(probe, rankings, later).await.1;
        type Entry = (i64, i64, u64, Vec<String>, String, String);
        let (entries,): (Vec<Entry>,) = redis::pipe()
            .cmd("SLOWLOG")
            .arg("GET")
            .arg(-1)
            .cmd("SLOWLOG")
            .arg("RESET")
            .ignore()
            .query_async(&mut bench.app.inspect.clone())
            .await
            .expect("SLOWLOG GET");
        probe.slowlog_stop().await;
        let logged = entries
            .into_iter()
            .filter(|entry| {
                let command = entry.3.first().map(|c| c.to_ascii_uppercase());
                matches!(command.as_deref(), Some("EVALSHA" | "EVAL"))
            })
            .map(|entry| entry.2)
            .collect();
        Cost {
            calls,
            cpu_us,
            logged_cpu_us,
            logged,
        }
    }
}

/// [`ROUNDS`] rounds from `first` (ms): their calls, and Redis main-thread CPU per call (µs).
async fn cpu_per_call(probe: &Probe, rankings: &Rankings, first: i64) -> (u32, f64) {
    let (before, _) = probe.cpu_and_memory().await;
    let calls = rounds(rankings, first, ROUNDS).await;
    let (after, _) = probe.cpu_and_memory().await;
    (calls, (after - before) / f64::from(calls.max(1)))
}

/// `count` rounds, an hour apart from `first` (ms), each run until done; their calls.
async fn rounds(rankings: &Rankings, first: i64, count: i64) -> u32 {
    let mut calls = 0;
    for hour in 0..count {
        let at = first + hour * HOUR_MS;
        let mut round = Snapshots {
            boards: 0,
            calls: 0,
            more: true,
        };
        while round.more {
            let tick = rankings.snapshot(&at).await.expect("snapshot calls");
            round.boards += tick.boards;
            round.calls += tick.calls;
            round.more = tick.more;
        }
        assert_eq!(round.boards, BOARDS, "{round:?}");
        calls += round.calls;
    }
    calls
}

/// Bytes of the live boards, and of the snapshots with the round's state and the live
/// genres.
async fn memory(probe: &Probe, prefix: &str) -> (i64, i64) {
    let mut live = probe.key_bytes(&format!("{prefix}:{{rk}}:board:*")).await;
    live.extend(probe.key_bytes(&format!("{prefix}:{{rk}}:rate:*")).await);
    let mut kept = probe
        .key_bytes(&format!("{prefix}:{{rk}}:snapshot:*"))
        .await;
    assert_eq!((live.len(), kept.len()), (BOARDS as usize, BOARDS as usize));
    for key in ["snapshot-round", "live-genres"] {
        let state = probe.key_bytes(&format!("{prefix}:{{rk}}:{key}")).await;
        assert_eq!(state.len(), 1, "{key}");
        kept.extend(state);
    }
    let sum = |keys: &[(String, i64)]| keys.iter().map(|(_, bytes)| bytes).sum();
    (sum(&live), sum(&kept))
}

/// Deletes every key of these rankings.
async fn forget(bench: &Bench, probe: &Probe, prefix: &str) {
    let mut unlink = redis::cmd("UNLINK");
    for (key, _) in probe.key_bytes(&format!("{prefix}:*")).await {
        unlink.arg(key);
    }
    unlink
        .query_async::<()>(&mut bench.app.inspect.clone())
        .await
        .expect("forgotten");
}
