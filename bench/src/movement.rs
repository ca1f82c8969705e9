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
//!   (`around` 0) with movement.
//! - Each figure is 10 000 reads in 5 rounds; compare the ratios, taken within one run.

use lineup::ids::ConcertId;
use lineup::ranking::{Against, Board, Order, Period, Rankings};

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
    let middle = ConcertId::parse(&format!("c{}", CONCERTS / 2)).expect("an id");
    let reads = Reads::measure(bench, &pings, rankings, &board, previous.as_ref(), &middle).await;
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
    many: Cost,
}

impl Reads {
    /// Reads `board` compared with `against`; `one` is the concert read alone, which must
    /// show movement; the 100 concerts are spread over the board's 10 000 ([`spread`]).
    pub async fn measure(
        bench: &Bench,
        pings: &[redis::aio::MultiplexedConnection],
        rankings: &Rankings,
        board: &Board,
        against: Option<&Against>,
        one: &ConcertId,
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
        let one = paired(bench, pings, ROUNDS, reads(), |_, ()| async move {
            let around = rankings
                .around(board, against, Order::Seats, one, 0)
                .await
                .expect("a read");
            assert!(around.is_some_and(|a| a.entry.movement.is_some()));
        })
        .await;
        let ids = spread();
        let many = paired(bench, pings, ROUNDS, reads(), |_, ()| {
            let ids = &ids;
            async move {
                let standings = rankings
                    .concerts(board, against, Order::Seats, ids)
                    .await
                    .expect("a read");
                assert_eq!(standings.concerts.len(), 100);
            }
        })
        .await;
        Reads {
            plain_hit,
            moved_hit,
            plain_miss,
            moved_miss,
            one,
            many,
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
        let hundred = ratio(&self.many, &self.one);
        report.row(
            &format!("{on}100 concerts' standing ÷ one concert's read, both with movement"),
            &format!(
                "{hundred:.1} ({:.1} µs ÷ {:.1} µs)",
                self.many.per_request_us, self.one.per_request_us
            ),
            &format!("goal ≤ 20: {}", met(hundred <= 20.0)),
        );
        for (name, cost) in [
            ("top-10 read, page cache hit", &self.plain_hit),
            ("top-10 read with movement, page cache hit", &self.moved_hit),
            ("one concert's read with movement", &self.one),
            ("100 concerts' standing with movement", &self.many),
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
