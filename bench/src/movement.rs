//! What movement and the many-concerts read cost (issue 58): Redis main-thread CPU per read
//! through the handler's calls (`Rankings::page`, `Rankings::around`, `Rankings::concerts`),
//! sent over 16 connections one request in flight each, in paired rounds each right after a
//! round of PINGs sent the same way.
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
//! - Each figure is 2 000 reads in 5 rounds; compare the ratios, taken within one run.

use lineup::ids::ConcertId;
use lineup::ranking::{Against, Board, Order, Period, Rankings};

use crate::measure::Bench;
use crate::probe::{paired, plain_connections, Cost};
use crate::report::{met, Report};

const CONCERTS: u64 = 10_000;
const READS: usize = 2_000;
const ROUNDS: usize = 5;
const LANES: usize = 16;

pub async fn run(bench: &Bench, report: &mut Report) {
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
    let previous = previous.as_ref();
    let pings = plain_connections(bench, LANES).await;

    let read = |with: Option<&Against>, offset: u64| {
        let board = board.clone();
        let with = with.cloned();
        async move {
            let page = rankings
                .page(&board, with.as_ref(), Order::Seats, offset, 10)
                .await
                .expect("a page");
            assert_eq!(page.items.len(), 10);
        }
    };
    let plain_hit = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        read(None, 0)
    })
    .await;
    let moved_hit = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        read(previous, 0)
    })
    .await;
    let plain_miss = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        read(None, 1)
    })
    .await;
    let moved_miss = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        read(previous, 1)
    })
    .await;

    let middle = ConcertId::parse(&format!("c{}", CONCERTS / 2)).expect("an id");
    let one = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        let (board, middle) = (board.clone(), middle.clone());
        async move {
            let around = rankings
                .around(&board, previous, Order::Seats, &middle, 0)
                .await
                .expect("a read");
            assert!(around.is_some_and(|a| a.entry.movement.is_some()));
        }
    })
    .await;
    let ids: Vec<ConcertId> = (0..100)
        .map(|n| ConcertId::parse(&format!("c{}", n * (CONCERTS / 100) + 7)).expect("an id"))
        .collect();
    let many = paired(bench, &pings, ROUNDS, vec![(); READS], |_, ()| {
        let (board, ids) = (board.clone(), ids.clone());
        async move {
            let standings = rankings
                .concerts(&board, previous, Order::Seats, &ids)
                .await
                .expect("a read");
            assert_eq!(standings.concerts.len(), 100);
        }
    })
    .await;

    let ratio = |a: &Cost, b: &Cost| a.per_request_us / b.per_request_us;
    let hit = ratio(&moved_hit, &plain_hit);
    report.row(
        "top-10 read with movement ÷ without, page cache hit",
        &format!(
            "{hit:.2} ({:.1} µs ÷ {:.1} µs)",
            moved_hit.per_request_us, plain_hit.per_request_us
        ),
        &format!("goal ≤ 1.5: {}", met(hit <= 1.5)),
    );
    let miss = ratio(&moved_miss, &plain_miss);
    report.row(
        "page of 10 with movement ÷ without, read from the boards",
        &format!(
            "{miss:.2} ({:.1} µs ÷ {:.1} µs)",
            moved_miss.per_request_us, plain_miss.per_request_us
        ),
        "once after each write; then the kept page serves",
    );
    let hundred = ratio(&many, &one);
    report.row(
        "100 concerts' standing ÷ one concert's read, both with movement",
        &format!(
            "{hundred:.1} ({:.1} µs ÷ {:.1} µs)",
            many.per_request_us, one.per_request_us
        ),
        &format!("goal ≤ 20: {}", met(hundred <= 20.0)),
    );
    for (name, cost) in [
        ("top-10 read, page cache hit", &plain_hit),
        ("top-10 read with movement, page cache hit", &moved_hit),
        ("one concert's read with movement", &one),
        ("100 concerts' standing with movement", &many),
    ] {
        let ping_us = cost.per_request_us / median(&cost.ratios);
        report.row(name, &cost.against(ping_us), "");
    }
}

/// The same concerts on `board` as `Bench::seed_board` writes, in another order.
async fn seed_reordered(bench: &Bench, rankings: &Rankings, board: &Board) {
    let mut seats = redis::cmd("ZADD");
    seats.arg(rankings.board_key(board));
    for i in 0..CONCERTS {
        seats
            .arg(-((1 + i * 104_729 % 5_000) as i64))
            .arg(format!("c{i}"));
    }
    let mut forget = redis::cmd("UNLINK");
    forget.arg(rankings.page_cache_key());
    let mut inspect = bench.app.inspect.clone();
    for cmd in [seats, forget] {
        cmd.query_async::<()>(&mut inspect).await.expect("seeded");
    }
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(1.0)
}
