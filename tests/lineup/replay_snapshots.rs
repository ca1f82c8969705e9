//! Replay with the live boards' snapshots: the replay's shuffled, duplicated payment, refund
//! and cancellation stream (`replay/`), dated over the last ten days, delivered in three
//! waves, with an hourly snapshot round after the first and the second. After the second and
//! the third wave every live board read must show each row's rank by the model of the events
//! delivered so far, and its previous rank, movement and the snapshot's time by the model of
//! the events folded before the last snapshot, under `compare.lua`'s rules for a snapshot of
//! the top K. Prints a `RELIABILITY:` line.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, SecondsFormat, Utc};
use lineup::ranking::{Period, Rankings};
use lineup_tests::TestApp;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde_json::{json, Value};

use super::replay::{
    concert_id, deliver_windows, details_model, generate, read_through, schedule, server_ms,
    trending_model, window_model, Logical, Stream, CONCERTS, GENRES, WINDOW,
};

const EVENTS: usize = 6_000;
const DAYS: i64 = 10;
/// `RANKING_SNAPSHOT_TOP`: below the 40 concerts, about the size of a genre's boards.
const TOP: u64 = 10;
const HOUR_MS: i64 = 3_600_000;
/// The window (of [`WINDOW`] events) each wave ends before; the details go with the first.
const WAVES: [usize; 3] = [35, 48, EVENTS / WINDOW + 1];

/// Concerts that sell only from a wave on (their payments before it go to the next concert),
/// on k-pop, which only every tenth concert is on besides them: so k-pop's snapshots hold
/// fewer than K rows, and these concerts come new to them.
const NEWCOMERS: [(usize, usize); 2] = [(38, 1), (33, 2)];

/// The replay's stream with [`NEWCOMERS`] and a rare k-pop.
fn with_newcomers(mut stream: Stream) -> Stream {
    for (concert, genres) in stream.genres.iter_mut().enumerate() {
        genres.retain(|g| *g != "k-pop");
        if concert % 10 == 0 || NEWCOMERS.iter().any(|(newcomer, _)| *newcomer == concert) {
            genres.push("k-pop");
            genres.sort();
            genres.dedup();
        }
    }
    for (at, event) in stream.events.iter_mut().enumerate() {
        if let Logical::Pay { concert, .. } = event {
            for (newcomer, wave) in NEWCOMERS {
                if *concert == newcomer && at < WAVES[wave - 1] * WINDOW {
                    *concert += 1;
                }
            }
        }
    }
    stream
}

/// A live board: its period, whether ranked by sell-through, and its genre.
type Live = (&'static str, bool, Option<&'static str>);

/// Every live board: last-24h and last-7d by seats and by rate, trending by seats; overall
/// and per genre.
fn live_boards() -> Vec<Live> {
    let orders = [
        ("last-24h", false),
        ("last-24h", true),
        ("last-7d", false),
        ("last-7d", true),
        ("trending", false),
    ];
    std::iter::once(None)
        .chain(GENRES.iter().copied().map(Some))
        .flat_map(|genre| orders.map(|(period, rate)| (period, rate, genre)))
        .collect()
}

/// A board of the model, best first, each concert with its competition rank (1, 2, 2, 4).
type Ranked = Vec<(String, u64)>;

/// `scores` by score descending, then concertId (the boards' order), with competition
/// ranks. Trending scores are sums of doubles, added in another order by Redis: two within
/// 10⁻⁹ of each other would leave their order to rounding, so none may be.
fn ranked(scores: BTreeMap<String, f64>, trending: bool) -> Ranked {
    let mut order: Vec<(String, f64)> = scores.into_iter().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut rows: Ranked = Vec::with_capacity(order.len());
    for (i, (concert, score)) in order.iter().enumerate() {
        let tied = i > 0 && order[i - 1].1 == *score;
        if trending && i > 0 {
            let gap = order[i - 1].1 - score;
            assert!(gap > score * 1e-9, "a near tie on trending: {order:?}");
        }
        let rank = if tied { rows[i - 1].1 } else { i as u64 + 1 };
        rows.push((concert.clone(), rank));
    }
    rows
}

/// The model's live boards of `stream`: the windows at 5-minute bucket `bucket`, their rate
/// boards (seats × 10⁶ ÷ the latest capacity, rounded down, where it is known), and trending
/// generation `generation`.
fn boards_model(
    stream: &Stream,
    bucket: i64,
    generation: i64,
    half: i64,
) -> BTreeMap<Live, Ranked> {
    let windows = window_model(stream, bucket);
    let details = details_model(stream);
    let trending = trending_model(stream, generation, half);
    live_boards()
        .into_iter()
        .map(|board| {
            let (period, rate, genre) = board;
            let genre_key = genre.map(str::to_owned);
            let scores: BTreeMap<String, f64> = if period == "trending" {
                trending.get(&genre_key).cloned().unwrap_or_default()
            } else {
                let seats = windows.get(&(period, genre_key)).into_iter().flatten();
                seats
                    .filter_map(|(concert, seats)| {
                        if !rate {
                            return Some((concert.clone(), *seats as f64));
                        }
                        let (_, capacity, _) = details.get(concert)?;
                        Some((concert.clone(), (seats * 1_000_000 / capacity) as f64))
                    })
                    .collect()
            };
            (board, ranked(scores, period == "trending"))
        })
        .collect()
}

/// The trending generation a read at `at` uses, from its board's key.
fn generation_at(rankings: &Rankings, at: DateTime<Utc>) -> i64 {
    let board = rankings.board_at(Period::Trending, at, None);
    board.bucket.parse().expect("a generation")
}

/// `stream` as delivered so far: the events at `positions`; any other as if it never came
/// (a payment or refund of no seats, a cancellation as a refund of none).
fn delivered(stream: &Stream, positions: &BTreeSet<usize>) -> Stream {
    let events = stream.events.iter().enumerate().map(|(p, event)| {
        if positions.contains(&p) {
            return event.clone();
        }
        match event.clone() {
            Logical::Pay {
                id, concert, at, ..
            } => Logical::Pay {
                id,
                concert,
                seats: 0,
                at,
            },
            Logical::Refund { id, payment, .. } => Logical::Refund {
                id,
                payment,
                seats: 0,
            },
            Logical::Cancel { .. } => Logical::Refund {
                id: String::new(),
                payment: 0,
                seats: 0,
            },
        }
    });
    Stream {
        events: events.collect(),
        payments: stream.payments.clone(),
        genres: stream.genres.clone(),
        details: stream.details.clone(),
    }
}

/// The position in `stream` of a delivered event; `None` for concert details.
fn position(stream: &Stream, event: &Value) -> Option<usize> {
    let detail = &event["detail"];
    let id = |field: &str, prefix: &str| {
        let id = detail[field].as_str().expect("an id");
        id.strip_prefix(prefix).and_then(|n| n.parse().ok())
    };
    match event["detail-type"].as_str().expect("a detail type") {
        "PaymentCompleted" => id("paymentId", "pay-"),
        "PaymentRefunded" => id("refundId", "refund-"),
        "ConcertCancelled" => stream.events.iter().position(|e| {
            matches!(e, Logical::Cancel { concert } if json!(concert_id(*concert)) == detail["concertId"])
        }),
        _ => None,
    }
}

/// What the model says one board's snapshot kept: the ranks of the top [`TOP`] rows and of
/// the rows tied with the last of them (up to [`TOP`] more), whether the board held more rows
/// than that, and how many rows the tie added.
struct Kept {
    top: BTreeMap<String, u64>,
    full: bool,
    tied: usize,
}

/// A snapshot round: its time (the clock's ms) and each board's snapshot by the model.
struct Round {
    at_ms: i64,
    boards: BTreeMap<Live, Kept>,
}

/// Counts of the rows compared, by what the model says of their movement.
#[derive(Debug, Default)]
struct Counts {
    reads: usize,
    rows: usize,
    up: usize,
    down: usize,
    same: usize,
    new: usize,
    /// Null: ranked below K now.
    below_k: usize,
    /// Null: missing from the snapshot of a board that held more rows.
    not_in_full: usize,
    /// Compared with a rank the snapshot kept because it tied with its K-th row.
    by_tie: usize,
}

/// Ticks until the tick says nothing is left: the fold done and the windows rolled to the
/// server's bucket (its own snapshot round finds the hour's round done).
async fn tick_until_done(app: &TestApp) {
    while lineup_tests::rankings::tick(app).await["more"] == json!(true) {}
}

/// Takes a snapshot round at `clock` (ms) after the tick rolls the windows, with a later
/// hour's clock again if a 5-minute bucket starts meanwhile; returns the round as the model
/// of `stream`, the events folded before it, gives it.
async fn take_round(app: &TestApp, stream: &Stream, mut clock: i64) -> Round {
    let rankings = &app.stack.event_applier.rankings;
    let half = rankings.settings().trending_half_life.as_millis() as i64;
    loop {
        let before = server_ms(app).await;
        tick_until_done(app).await;
        let round = rankings.snapshot(&clock).await.expect("a round");
        let after = server_ms(app).await;
        // Five boards overall and five for each genre.
        let want = 5 * (GENRES.len() as u64 + 1);
        assert_eq!((round.boards, round.more), (want, false), "{round:?}");
        if after.div_euclid(300_000) != before.div_euclid(300_000) {
            clock += HOUR_MS;
            continue;
        }
        // The trending board snapshotted is the clock's generation.
        let at = DateTime::from_timestamp_millis(clock).unwrap();
        let model = boards_model(
            stream,
            before.div_euclid(300_000),
            generation_at(rankings, at),
            half,
        );
        let boards = model
            .into_iter()
            .map(|(board, rows)| {
                // The K-th row's ties, up to K more, are kept at its rank.
                let cut = rows.len().min(TOP as usize);
                let tied = match cut.checked_sub(1).map(|last| rows[last].1) {
                    Some(rank) if cut == TOP as usize => rows[cut..]
                        .iter()
                        .take(TOP as usize)
                        .take_while(|(_, r)| *r == rank)
                        .count(),
                    _ => 0,
                };
                let kept = Kept {
                    top: rows.iter().take(cut + tied).cloned().collect(),
                    full: rows.len() > cut + tied,
                    tied,
                };
                (board, kept)
            })
            .collect();
        return Round {
            at_ms: clock,
            boards,
        };
    }
}

/// A read's row as compared: `[concertId, rank, previousRank, movement, previousAt]`; a
/// field the read leaves out shows as `"absent"`, so it never passes for null.
fn shown(item: &Value) -> Value {
    let field = |name: &str| item.get(name).cloned().unwrap_or(json!("absent"));
    let names = [
        "concertId",
        "rank",
        "previousRank",
        "movement",
        "previousAt",
    ];
    Value::Array(names.map(field).to_vec())
}

fn shown_all(items: &Value) -> Vec<Value> {
    items.as_array().expect("rows").iter().map(shown).collect()
}

/// The row `concert` at competition rank `rank` must show against `kept`, taken at `at`:
/// null below K now; its rank then if it is in the snapshot; null if it is not and the
/// board held more rows than the snapshot, else new.
fn expected(concert: &str, rank: u64, kept: &Kept, at: &str, counts: &mut Counts) -> Value {
    counts.rows += 1;
    let (was, moved) = if rank > TOP {
        counts.below_k += 1;
        (Value::Null, Value::Null)
    } else if let Some(&was) = kept.top.get(concert) {
        let cut_rank = kept.top.values().max().copied().unwrap_or(0);
        counts.by_tie += usize::from(kept.tied > 0 && was == cut_rank);
        let moved = if was > rank {
            counts.up += 1;
            json!({"kind": "up", "by": was - rank})
        } else if was < rank {
            counts.down += 1;
            json!({"kind": "down", "by": rank - was})
        } else {
            counts.same += 1;
            json!({"kind": "same"})
        };
        (json!(was), moved)
    } else if kept.full {
        counts.not_in_full += 1;
        (Value::Null, Value::Null)
    } else {
        counts.new += 1;
        (Value::Null, json!({"kind": "new"}))
    };
    let at = if moved.is_null() {
        Value::Null
    } else {
        json!(at)
    };
    json!([concert, rank, was, moved, at])
}

/// Reads every live board through the ranking API after the tick (a whole page, the top 10
/// twice, rendered then kept, and a many-concerts read of `ids`) and asserts each row against
/// the model of `stream` at the server's bucket and `round`; read again if a bucket starts
/// meanwhile.
async fn check(app: &TestApp, stream: &Stream, round: &Round, ids: &str) -> Counts {
    let api = &app.stack.ranking_api;
    let half = api.rankings.settings().trending_half_life.as_millis() as i64;
    let at = DateTime::from_timestamp_millis(round.at_ms).unwrap();
    let at = at.to_rfc3339_opts(SecondsFormat::Millis, true);
    loop {
        let before = server_ms(app).await;
        tick_until_done(app).await;
        let now = DateTime::from_timestamp_millis(before).unwrap();
        let generation = generation_at(&api.rankings, now);
        let model = boards_model(stream, before.div_euclid(300_000), generation, half);
        let mut counts = Counts::default();
        let mut reads: Vec<(String, Value, Value)> = Vec::new();
        for (board, rows) in &model {
            let kept = &round.boards[board];
            let want: Vec<Value> = rows
                .iter()
                .map(|(concert, rank)| expected(concert, *rank, kept, &at, &mut counts))
                .collect();
            let (period, rate, genre) = board;
            let mut query = genre.map(|g| format!("&genre={g}")).unwrap_or_default();
            if *rate {
                query.push_str("&by=rate");
            }
            let path = format!("/rankings/{period}?limit=100{query}");
            let page = read_through(api, &path).await.body;
            let got = json!([page["total"], shown_all(&page["items"])]);
            reads.push((path, got, json!([rows.len(), want])));
            for _ in 0..2 {
                let path = format!("/rankings/{period}?limit=10{query}");
                let page = read_through(api, &path).await.body;
                let top = &want[..want.len().min(10)];
                reads.push((path, json!(shown_all(&page["items"])), json!(top)));
            }
            // Each concert once, sorted by id; all null off the board.
            let path = format!("/rankings/{period}/concerts?ids={ids}{query}");
            let many = read_through(api, &path).await.body;
            let got = json!([many["total"], shown_all(&many["concerts"])]);
            let all: Vec<Value> = (0..CONCERTS)
                .map(|k| {
                    let id = json!(concert_id(k));
                    let row = want.iter().find(|row| row[0] == id);
                    row.cloned().unwrap_or(json!([id, null, null, null, null]))
                })
                .collect();
            reads.push((path, got, json!([rows.len(), all])));
            counts.reads += 4;
        }
        let after = server_ms(app).await;
        if after.div_euclid(300_000) == before.div_euclid(300_000) {
            for (path, got, want) in &reads {
                assert_eq!(got, want, "{path} against the snapshot at {at}");
            }
            return counts;
        }
    }
}

/// 6 000 events (payments, refunds, 5 cancellations) over the last 10 days, 40 concerts and 4
/// genres, each delivered 1–3 times as the replay delivers them (shuffled within windows of
/// 100, a third of the refunds a window before their payment, each window's calls at once,
/// direct, in SQS batches and as single events), in three waves: the first with every version
/// of the concert details, then the snapshot round of the next hour (K = 10); the second, a
/// check, the round of the hour after; the third, a check. A check reads every live board
/// (last-24h and last-7d by seats and by rate, trending; overall and per genre) as a whole
/// page, a top 10 twice and a many-concerts read of all 40 concerts in a shuffled order, one
/// twice: each row's rank must follow the model of the events delivered so far, and its
/// previousRank, movement and previousAt the model of those folded before the round, by the
/// competition ranks of the round's top 10 rows: null below 10 now or missing from a snapshot
/// of 10 rows, new when missing from a snapshot of fewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_movement_follows_the_snapshot_of_the_events_folded_before_it() {
    let app = TestApp::spawn(&[
        ("RANKING_SNAPSHOT_TOP", "10"),
        // The stream is dated: keep its events inside the dedupe window.
        ("RANKING_DEDUPE_DAYS", "3660"),
        // Generations of 12 weeks: a round an hour or two ahead is almost always on the
        // current one (and modelled on its own when not).
        ("RANKING_TRENDING_HALF_LIFE_HOURS", "168"),
    ])
    .await;
    let rankings = &app.stack.event_applier.rankings;
    let mut rng = StdRng::seed_from_u64(58);
    let stream = with_newcomers(generate(&mut rng, Utc::now(), EVENTS, DAYS));
    let (mut by_window, deliveries, _, versions) = schedule(&mut rng, &stream, WAVES[0]);
    // Each event's first window, and the wave it lands in.
    let mut first: BTreeMap<usize, usize> = BTreeMap::new();
    for (window, events) in by_window.iter().enumerate() {
        for position in events.iter().filter_map(|e| position(&stream, e)) {
            first.entry(position).or_insert(window);
        }
    }
    assert_eq!(first.len(), EVENTS, "every event delivered");
    let wave_of = |window: usize| WAVES.iter().position(|end| window < *end).unwrap();
    // Per wave, the refunds delivered a window before their payment, and those of a payment
    // delivered in an earlier wave.
    let (mut early, mut across) = ([0; 3], [0; 3]);
    for (&at, &window) in &first {
        if let Logical::Refund { payment, .. } = &stream.events[at] {
            let paid = first[&stream.payments[*payment]];
            early[wave_of(window)] += usize::from(window < paid);
            across[wave_of(window)] += usize::from(wave_of(window) > wave_of(paid));
        }
    }
    assert!(early[1] > 0 && across[1] > 0, "{early:?} {across:?}");
    let mut ids: Vec<String> = (0..CONCERTS).map(concert_id).collect();
    ids.shuffle(&mut rng);
    ids.push(ids[CONCERTS / 2].clone());
    let ids = ids.join(",");

    let mut calls = 0;
    let mut totals = Counts::default();
    let mut round: Option<Round> = None;
    for (wave, end) in WAVES.iter().enumerate() {
        let rest = by_window.split_off(end - WAVES[..wave].last().unwrap_or(&0));
        calls += deliver_windows(&app, &mut rng, std::mem::replace(&mut by_window, rest)).await;
        let fold = rankings.fold().await.expect("fold");
        assert_eq!(fold.left, 0, "{fold:?}");
        let positions = first.iter().filter(|(_, w)| *w < end).map(|(p, _)| *p);
        let so_far = delivered(&stream, &positions.collect::<BTreeSet<_>>());
        if let Some(round) = &round {
            let counts = check(&app, &so_far, round, &ids).await;
            for (total, n) in [
                (&mut totals.reads, counts.reads),
                (&mut totals.rows, counts.rows),
                (&mut totals.up, counts.up),
                (&mut totals.down, counts.down),
                (&mut totals.same, counts.same),
                (&mut totals.new, counts.new),
                (&mut totals.below_k, counts.below_k),
                (&mut totals.not_in_full, counts.not_in_full),
                (&mut totals.by_tie, counts.by_tie),
            ] {
                *total += n;
            }
        }
        if wave + 1 < WAVES.len() {
            // An hour after the last round and after now: a new round starts.
            let last = round.as_ref().map_or(0, |r| r.at_ms);
            let clock = (last + HOUR_MS).max(Utc::now().timestamp_millis() + HOUR_MS);
            round = Some(take_round(&app, &so_far, clock).await);
        }
    }
    for (kind, count) in [
        ("up", totals.up),
        ("down", totals.down),
        ("same", totals.same),
        ("new", totals.new),
        ("null below K", totals.below_k),
        ("null not in a full snapshot", totals.not_in_full),
    ] {
        assert!(count > 0, "no {kind} row: {totals:?}");
    }
    let cancels = stream
        .events
        .iter()
        .filter(|e| matches!(e, Logical::Cancel { .. }))
        .count();
    let line = format!(
        "RELIABILITY: replay snapshots: {EVENTS} events ({} payments, {} refunds, {cancels} \
         cancellations) and {versions} detail versions delivered {deliveries} times in {calls} \
         calls, 3 waves ({} refunds before their payment, {} of an earlier wave's); 2 rounds of \
         top {TOP}; {} reads of {} live boards agree with the model on {} rows: {} up, {} down, \
         {} same, {} new, {} against a rank kept by a tie at the cut-off, {} null below K, {} \
         null not in a full snapshot",
        stream.payments.len(),
        EVENTS - stream.payments.len() - cancels,
        early.iter().sum::<usize>(),
        across.iter().sum::<usize>(),
        totals.reads,
        live_boards().len(),
        totals.rows,
        totals.up,
        totals.down,
        totals.same,
        totals.new,
        totals.by_tie,
        totals.below_k,
        totals.not_in_full,
    );
    assert!(line.len() <= 500, "{}", line.len());
    println!("{line}");
}
