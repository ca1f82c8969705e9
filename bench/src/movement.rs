//! What movement and the many-concerts read cost (issue 58): Redis main-thread CPU per read
//! through the handler's calls (`Rankings::page`, `Rankings::around`, `Rankings::concerts`),
//! sent over 16 connections one request in flight each, in paired rounds each right after a
//! round of PINGs sent the same way. The live boards' snapshots, and the same reads of a live
//! board compared with its snapshot, are `snapshots.rs`, run right after on the same
//! connections.
//!
//! # Method
//!
//! - Today's and yesterday's daily boards hold the same 10 000 concerts, in different orders,
//!   with their details.
//! - A top-10 read with movement is compared with the same read without, both served from the
//!   page cache (every read between two writes is), and both read from the boards (a page at
//!   offset 1, which the cache never keeps: the work of a miss but the cache's own write).
//! - The read of 100 concerts with movement is compared with one concert's own read
//!   (`around` 0) with movement, 100 concerts drawn over the board read in turn: the same 100 each time, its answer kept in the page cache
//!   (every read of a set between two writes but the first is), and a set not asked before
//!   each time, read from the boards (the first 1 000 keep their answer, `KEPT_SETS`; the
//!   rest find the cache full).
//! - Each figure is 10 000 reads in 5 rounds; compare the ratios, taken within one run.

use lineup::ids::ConcertId;
use lineup::ranking::{Against, Board, Order, Period, Rankings};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::measure::Bench;
use crate::probe::{paired, plain_connections, Cost};
use crate::report::{met, Report};

pub const CONCERTS: u64 = 10_000;
const READS: usize = 10_000;
const ROUNDS: usize = 5;
const LANES: usize = 16;

/// Runs the calendar board's reads; returns the connections the PINGs went on, for
/// `snapshots.rs`.
pub async fn run(bench: &Bench, report: &mut Report) -> Vec<redis::aio::MultiplexedConnection> {
    report.section(
        "Movement and many concerts: Redis main-thread CPU per read at 10 000 concerts, beside a PING sent the same way",
    );
    let rankings = &bench.app.stack.ranking_api.rankings;
    let today = rankings.today();
    let board = Board::on(Period::Daily, today, None);
    let yesterday = Board::on(Period::Daily, today.pred_opt().expect("a day before"), None);
    bench.seed_board(rankings, &board, CONCERTS).await;
    seed_reordered(bench, rankings, &yesterday).await;
    let previous = rankings.against(&board, Some(today), chrono::Utc::now());
    assert_eq!(
        previous,
        Some(Against::Bucket(yesterday.clone())),
        "yesterday's board is kept"
    );
    let pings = plain_connections(bench, LANES).await;
    // Concerts read alone in turn: a hundred drawn over the board, as a set's are.
    let ones = scattered(&mut StdRng::seed_from_u64(1));
    let reads = Reads::measure(bench, &pings, rankings, &board, previous.as_ref(), &ones).await;
    reads.report(
        report,
        "",
        "once after each write; then the kept page serves",
    );
    pings
}

/// The reads of one board, each Redis's main-thread CPU per read: a top-10 read without and
/// with movement, from the page cache and from the boards, one concert's own read and 100
/// concerts' standing, both with movement.
pub struct Reads {
    plain_hit: Cost,
    moved_hit: Cost,
    plain_miss: Cost,
    moved_miss: Cost,
    one: Cost,
    many_kept: Cost,
    many: Cost,
    /// On a calendar board, the bare lookups a set's answer needs at least, as plain
    /// commands ([`bare_lookups`]).
    floor: Option<Cost>,
}

impl Reads {
    /// Reads `board` compared with `against`; `ones` are the concerts read alone, in turn,
    /// each of which must show movement; the 100 concerts are spread over the board's 10 000
    /// ([`spread`], [`scattered`]).
    pub async fn measure(
        bench: &Bench,
        pings: &[redis::aio::MultiplexedConnection],
        rankings: &Rankings,
        board: &Board,
        against: Option<&Against>,
        ones: &[ConcertId],
    ) -> Reads {
        let read = |with: Option<&Against>, offset: u64| {
            let (board, with) = (board.clone(), with.cloned());
            async move {
                let page = rankings
                    .page(&board, with.as_ref(), Order::Seats, offset, 10)
                    .await
                    .expect("a page");
                assert_eq!(page.items.len(), 10);
            }
        };
        let reads = || vec![(); READS];
        let plain_hit = paired(bench, pings, ROUNDS, reads(), |_, ()| read(None, 0)).await;
        let moved_hit = paired(bench, pings, ROUNDS, reads(), |_, ()| read(against, 0)).await;
        let plain_miss = paired(bench, pings, ROUNDS, reads(), |_, ()| read(None, 1)).await;
        let moved_miss = paired(bench, pings, ROUNDS, reads(), |_, ()| read(against, 1)).await;
        let in_turn: Vec<ConcertId> = ones.iter().cycle().take(READS).cloned().collect();
        let one = paired(bench, pings, ROUNDS, in_turn, |_, one| async move {
            let around = rankings
                .around(board, against, Order::Seats, &one, 0)
                .await
                .expect("a read");
            assert!(around.is_some_and(|a| a.entry.movement.is_some()));
        })
        .await;
        let standings = |ids: Vec<ConcertId>| async move {
            let standings = rankings
                .concerts(board, against, Order::Seats, &ids)
                .await
                .expect("a read");
            assert_eq!(standings.concerts.len(), 100);
        };
        let many_kept = paired(bench, pings, ROUNDS, vec![spread(); READS], |_, ids| {
            standings(ids)
        })
        .await;
        let mut rng = StdRng::seed_from_u64(58);
        let fresh: Vec<_> = (0..READS).map(|_| scattered(&mut rng)).collect();
        let many = paired(bench, pings, ROUNDS, fresh.clone(), |_, ids| standings(ids)).await;
        let floor = match against {
            Some(Against::Bucket(before)) => {
                let keys = [
                    rankings.board_key(board),
                    rankings.details_key(),
                    rankings.board_key(before),
                ];
                let keys = &keys;
                let floor = paired(bench, pings, ROUNDS, fresh, |lane, ids| {
                    let mut conn = pings[lane].clone();
                    async move { bare_lookups(&mut conn, keys, &ids).await }
                })
                .await;
                Some(floor)
            }
            _ => None,
        };
        Reads {
            plain_hit,
            moved_hit,
            plain_miss,
            moved_miss,
            one,
            many_kept,
            many,
            floor,
        }
    }

    /// The rows, each named after `on` (the board, or nothing for the calendar board);
    /// `miss` says when a read from the boards happens.
    pub fn report(&self, report: &mut Report, on: &str, miss: &str) {
        let ratio = |a: &Cost, b: &Cost| a.per_request_us / b.per_request_us;
        let hit = ratio(&self.moved_hit, &self.plain_hit);
        report.row(
            &format!("{on}top-10 read with movement ÷ without, page cache hit"),
            &format!(
                "{hit:.2} ({:.1} µs ÷ {:.1} µs)",
                self.moved_hit.per_request_us, self.plain_hit.per_request_us
            ),
            &format!("goal ≤ 1.5: {}", met(hit <= 1.5)),
        );
        let from_boards = ratio(&self.moved_miss, &self.plain_miss);
        report.row(
            &format!("{on}page of 10 with movement ÷ without, read from the boards"),
            &format!(
                "{from_boards:.2} ({:.1} µs ÷ {:.1} µs)",
                self.moved_miss.per_request_us, self.plain_miss.per_request_us
            ),
            miss,
        );
        for (how, many) in [
            ("the same 100 again, page cache hit", &self.many_kept),
            ("100 not asked before, read from the boards", &self.many),
        ] {
            let hundred = ratio(many, &self.one);
            report.row(
                &format!(
                    "{on}100 concerts' standing ÷ one concert's read, both with movement: {how}"
                ),
                &format!(
                    "{hundred:.1} ({:.1} µs ÷ {:.1} µs)",
                    many.per_request_us, self.one.per_request_us
                ),
                &format!("goal ≤ 20: {}", met(hundred <= 20.0)),
            );
        }
        if let Some(floor) = &self.floor {
            let bare = ratio(floor, &self.one);
            report.row(
                &format!("{on}the bare lookups 100 concerts not asked before need, as plain commands in one pipeline ÷ one concert's read"),
                &format!(
                    "{bare:.1} ({:.1} µs ÷ {:.1} µs); the script read from the boards: {:.2} × these",
                    floor.per_request_us,
                    self.one.per_request_us,
                    ratio(&self.many, floor)
                ),
                "the floor of a read from the boards",
            );
        }
        for (name, cost) in [
            ("top-10 read, page cache hit", &self.plain_hit),
            ("top-10 read with movement, page cache hit", &self.moved_hit),
            ("one concert's read with movement", &self.one),
            (
                "100 concerts' standing with movement, page cache hit",
                &self.many_kept,
            ),
            (
                "100 concerts' standing with movement, from the boards",
                &self.many,
            ),
        ] {
            let ping_us = cost.per_request_us / median(&cost.ratios);
            report.row(&format!("{on}{name}"), &cost.against(ping_us), "");
        }
    }
}

/// The 100 concerts a many-concerts read asks for: one in every hundred of the 10 000.
fn spread() -> Vec<ConcertId> {
    (0..100)
        .map(|n| ConcertId::parse(&format!("c{}", n * (CONCERTS / 100) + 7)).expect("an id"))
        .collect()
}

/// What a many-concerts answer needs at least, for each concert, sent as plain commands in
/// one pipeline: its score on the board and on the board before (`ZMSCORE` each), its
/// details (`HMGET`), and its position on both boards (`ZRANK` each, a position, not yet a
/// competition rank). `keys`: the board, the details, the board before.
async fn bare_lookups(
    conn: &mut redis::aio::MultiplexedConnection,
    keys: &[String; 3],
    ids: &[ConcertId],
) {
    let [board, details, before] = keys;
    let names: Vec<&str> = ids.iter().map(ConcertId::as_str).collect();
    let mut pipe = redis::pipe();
    pipe.cmd("ZMSCORE").arg(board).arg(&names);
    pipe.cmd("HMGET").arg(details).arg(&names);
    pipe.cmd("ZMSCORE").arg(before).arg(&names);
    for key in [board, before] {
        for name in &names {
            pipe.cmd("ZRANK").arg(key).arg(name);
        }
    }
    let _: () = pipe.query_async(conn).await.expect("the bare lookups");
}

/// 100 concerts, one in each hundred of the 10 000 drawn at random: a set not asked before.
fn scattered(rng: &mut StdRng) -> Vec<ConcertId> {
    (0..100)
        .map(|n| {
            let at = n * (CONCERTS / 100) + rng.random_range(0..CONCERTS / 100);
            ConcertId::parse(&format!("c{at}")).expect("an id")
        })
        .collect()
}

/// The same concerts on `board` as `Bench::seed_board` writes, in another order.
async fn seed_reordered(bench: &Bench, rankings: &Rankings, board: &Board) {
    let seats = (0..CONCERTS).map(|i| ((1 + i * 104_729 % 5_000) as i64, format!("c{i}")));
    write_seats(bench, rankings, board, seats).await;
}

/// Sets each `(seats, concert)` on `board`'s seat board, behind the writers' backs: the
/// pages they would have dropped go too.
pub async fn write_seats(
    bench: &Bench,
    rankings: &Rankings,
    board: &Board,
    seats: impl IntoIterator<Item = (i64, String)>,
) {
    let mut zadd = redis::cmd("ZADD");
    zadd.arg(rankings.board_key(board));
    for (seats, concert) in seats {
        zadd.arg(-seats).arg(concert);
    }
    let mut forget = redis::cmd("UNLINK");
    forget.arg(rankings.page_cache_key());
    let mut inspect = bench.app.inspect.clone();
    for cmd in [zadd, forget] {
        cmd.query_async::<()>(&mut inspect).await.expect("seeded");
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(1.0)
}
