//! Redis time of board reads at 10 000 concerts, through the read the handler makes
//! (`Rankings::page`, `Rankings::around`): a seat board, its rate board and 10 000 concerts'
//! details, written straight into Redis in the format the event applier writes.
//!
//! # Method
//!
//! - Each figure is the mean Redis time of 1 000 reads through `Rankings::page` or
//!   `Rankings::around`, as the handler calls them.
//! - Read from the board, a top read makes 3 `redis.call`s on a seat board (ZRANGE, HMGET,
//!   ZCARD), one more on a rate board (ZMSCORE for the seats), one more on a page not at the top
//!   (ZCOUNT for its first rank); around-me adds ZRANK. The top-10 reads here are served from the
//!   page cache, one `HGET` (docs/rankings.md, "Caching"): each is the same read many times, with
//!   no write in between. `redis_time.rs` says what a read costs on a miss.

use lineup::ids::ConcertId;
use lineup::ranking::{Board, Order, Period};

use crate::measure::{self, Bench};
use crate::report::Report;

pub async fn run(bench: &Bench, report: &mut Report) {
    const CONCERTS: u64 = 10_000;
    const CALLS: u64 = 1_000;
    report.section(&format!(
        "Board reads at 10 000 concerts, Redis time per call (INFO commandstats usec of evalsha, mean of {CALLS})"
    ));
    let rankings = &bench.app.stack.ranking_api.rankings;
    let board = Board::on(Period::Daily, rankings.today(), None);
    bench.seed_board(rankings, &board, CONCERTS).await;
    for order in [Order::Seats, Order::Rate] {
        // The concert halfway down the board.
        let middle = rankings
            .page(&board, None, order, CONCERTS / 2, 1)
            .await
            .unwrap()
            .items[0]
            .concert_id
            .clone();
        let middle = &ConcertId::parse(&middle).unwrap();
        let reads: [(&str, Read); 3] = [
            ("top-10 read", Read::Page(0)),
            ("page of 10 at offset 5 000", Read::Page(5_000)),
            ("around-me, 10 either side", Read::Around),
        ];
        for (name, read) in reads {
            let run = || async {
                match read {
                    Read::Page(offset) => {
                        let page = rankings
                            .page(&board, None, order, offset, 10)
                            .await
                            .unwrap();
                        assert_eq!(page.total, CONCERTS);
                        assert_eq!(page.items.len(), 10);
                    }
                    Read::Around => {
                        let around = rankings
                            .around(&board, None, order, middle, 10)
                            .await
                            .unwrap();
                        assert!(around.is_some_and(|a| a.above.len() + a.below.len() == 20));
                    }
                }
            };
            run().await;
            let before = bench.commandstats().await;
            for _ in 0..CALLS {
                run().await;
            }
            let after = bench.commandstats().await;
            let usec = measure::usec_per_call(&before, &after, "evalsha");
            report.row(
                &format!("{name} at 10 000 concerts, by {}", order.as_str()),
                &format!("{:.3} ms", usec / 1000.0),
                "goal < 1 ms; rows, ranks, seats and details in one script",
            );
        }
    }
}

#[derive(Clone, Copy)]
enum Read {
    Page(u64),
    Around,
}
