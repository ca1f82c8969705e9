//! Reading a board: a page from its top, or the rows around one concert, with each row's
//! seats, rate, details and movement (since the bucket before, or a live board's last
//! snapshot), in one call of `page.lua`; the top pages kept rendered in the page cache.

use std::sync::LazyLock;

use chrono::{NaiveDate, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use super::compare::{snapshot_time, Against, COMPARE_LUA};
use super::keys::{Board, Order};
use super::period::{default_day, local_day, Period};
use super::rankings::Rankings;
use crate::error::Error;
use crate::ids::ConcertId;
use crate::store::{assemble, primary_read_script, NamedScript, ScriptCall};

/// The page cache's Lua, the prelude of the page and many-concerts scripts, which keep what
/// they render there.
pub(super) const CACHE_LUA: &str = include_str!("cache.lua");

pub(super) static PAGE: NamedScript = NamedScript::new(
    LazyLock::new(|| {
        primary_read_script(&assemble(
            &[COMPARE_LUA, CACHE_LUA],
            include_str!("page.lua"),
        ))
    }),
    &["ranked", "seat_board", "details", "cache", "previous?"],
    &["mode", "target", "count", "keep", "against", "half"],
);

#[cfg(feature = "bench")]
/// The page script, for [`crate::bench_support`].
pub(crate) fn page_script() -> &'static redis::Script {
    PAGE.script()
}

/// Most rows read either side of a concert (`around`).
pub const MAX_AROUND: u64 = 10;

/// The pages the page cache keeps: those from the top of a board, of at most this many rows
/// (the ranking API's default page, and the rankings page's). So the cache holds at most this
/// many pages per board and order, whatever the requests ask.
pub const CACHED_LIMIT: u64 = 10;

/// One row of a board read: its rank on the board read, its seats, and the concert's
/// details when the rankings know them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub rank: u64,
    pub concert_id: String,
    /// Seats sold in the bucket.
    pub score: u64,
    pub capacity: Option<u64>,
    /// `score ÷ capacity`, rounded to 6 decimals.
    pub rate: Option<f64>,
    pub title: Option<String>,
    pub venue: Option<String>,
    pub starts_at: Option<String>,
    /// The concert's rank on the same board one bucket before, or in a live board's last
    /// snapshot; `None` when it was not there, or when the row compares with nothing.
    pub previous_rank: Option<u64>,
    /// How the concert moved since; `None` when the row compares with nothing: the all-time
    /// board, a bucket before that is no longer kept; on a live board, no snapshot yet, a
    /// snapshot of another half-life, or a row below the snapshot's top rows now or then.
    pub movement: Option<Movement>,
    /// When the snapshot a live board's row compares with was taken (RFC 3339); `None` on a
    /// calendar board, and where `movement` is.
    pub previous_at: Option<String>,
}

/// How a row moved since the same board one bucket before, or since a live board's last
/// snapshot, by competition ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Movement {
    Up {
        by: u64,
    },
    Down {
        by: u64,
    },
    Same,
    /// Not on the board before (on a live board: not in a snapshot of fewer rows than it
    /// keeps).
    New,
}

impl Movement {
    /// From the rank now and the previous rank as `page.lua` gives it: 0 for a concert not
    /// on the board before.
    pub fn between(rank: u64, previous: u64) -> Movement {
        match previous {
            0 => Movement::New,
            before if before > rank => Movement::Up { by: before - rank },
            before if before < rank => Movement::Down { by: rank - before },
            _ => Movement::Same,
        }
    }
}

/// Where a concert at competition rank `rank` stands among `total` on its board: the share
/// of the board at or below it, 100 × (total − rank + 1) ÷ total, to 2 decimals.
pub fn percentile(rank: u64, total: u64) -> f64 {
    if total == 0 || rank == 0 || rank > total {
        return 0.0;
    }
    ((total - rank + 1) as f64 * 100.0 / total as f64 * 100.0).round() / 100.0
}

/// A row of a kept page: `[concertId, rank, score, capacity, [title, venue, startsAt],
/// previous]`, the score as Redis stores it (`page.lua`).
#[derive(Deserialize)]
struct KeptRow(
    String,
    u64,
    Option<String>,
    Option<u64>,
    Option<(String, Option<String>, String)>,
    Option<u64>,
);

/// The part of a details value's JSON a board shows.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    title: String,
    venue: Option<String>,
    starts_at: String,
}

impl Ranked {
    /// A row from its concert, rank, score as stored, its capacity and shown details
    /// (title, venue, startsAt) if the rankings know them, and its previous rank as
    /// `page.lua` gives it (0: not on the board before; `None`: no comparison), with the
    /// snapshot's time when compared with one.
    fn new(
        concert_id: String,
        rank: u64,
        score: Option<&str>,
        details: Option<(u64, Shown)>,
        previous: Option<u64>,
        at: Option<&String>,
    ) -> Result<Self, String> {
        // A seat score is negated seats; a trending score a fraction, shown rounded down.
        let score = match score {
            Some(raw) => {
                let stored: f64 = raw
                    .parse()
                    .map_err(|_| format!("malformed score {raw:?} of {concert_id}"))?;
                (-stored) as u64
            }
            None => 0,
        };
        let capacity = details.as_ref().map(|(capacity, _)| *capacity);
        let shown = details.map(|(_, shown)| shown);
        Ok(Ranked {
            rank,
            concert_id,
            score,
            capacity,
            rate: capacity
                .filter(|capacity| *capacity > 0)
                .map(|capacity| (score as f64 / capacity as f64 * 1e6).round() / 1e6),
            title: shown.as_ref().map(|shown| shown.title.clone()),
            venue: shown.as_ref().and_then(|shown| shown.venue.clone()),
            starts_at: shown.map(|shown| shown.starts_at),
            previous_rank: previous.filter(|before| *before > 0),
            movement: previous.map(|before| Movement::between(rank, before)),
            previous_at: previous.and(at.cloned()),
        })
    }

    /// A row of a kept page.
    fn kept(row: KeptRow, at: Option<&String>) -> Result<Self, String> {
        let KeptRow(concert_id, rank, score, capacity, shown, previous) = row;
        let details = match (capacity, shown) {
            (Some(capacity), Some((title, venue, starts_at))) => Some((
                capacity,
                Shown {
                    title,
                    venue,
                    starts_at,
                },
            )),
            (None, None) => None,
            _ => return Err(format!("malformed concert details of {concert_id}")),
        };
        Ranked::new(concert_id, rank, score.as_deref(), details, previous, at)
    }

    /// A row of a page read from the boards: the details as the hash holds them,
    /// `<updatedAtMs> <capacity> <json>`.
    fn read(
        concert_id: String,
        rank: u64,
        score: Option<&str>,
        details: Option<&str>,
        previous: Option<u64>,
        at: Option<&String>,
    ) -> Result<Self, String> {
        let details = match details {
            Some(details) => {
                let (capacity, json) = details
                    .split_once(' ')
                    .and_then(|(_, rest)| rest.split_once(' '))
                    .ok_or_else(|| format!("malformed concert details {details:?}"))?;
                let capacity: u64 = capacity
                    .parse()
                    .map_err(|_| format!("malformed capacity in {details:?}"))?;
                let shown: Shown = serde_json::from_str(json)
                    .map_err(|err| format!("malformed concert details JSON: {err}"))?;
                Some((capacity, shown))
            }
            None => None,
        };
        Ranked::new(concert_id, rank, score, details, previous, at)
    }
}

/// A page of a board and the number of concerts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub total: u64,
    pub items: Vec<Ranked>,
}

/// A concert's row on a board, with the rows just above and below it, and the number of
/// concerts on the board.
#[derive(Debug, Clone, PartialEq)]
pub struct Around {
    pub total: u64,
    pub entry: Ranked,
    pub above: Vec<Ranked>,
    pub below: Vec<Ranked>,
}

/// The page script's reply (`page.lua`): a kept page as JSON, `[total, focus, [row, ...],
/// at]`; or a page read from the boards as a flat array, total, focus, at, then per row
/// concertId, rank, score, details and previous rank; `at` the time (ms) of the snapshot
/// compared with, or null.
#[derive(Debug)]
struct PageReply {
    total: u64,
    rows: Vec<Ranked>,
    focus: usize,
}

impl FromRedisValue for PageReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Ok(match v {
            Value::Array(items) => PageReply::flat(items)?,
            other => PageReply::parse(&Vec::<u8>::from_redis_value(other)?)?,
        })
    }
}

impl PageReply {
    /// A kept page.
    fn parse(json: &[u8]) -> Result<Self, String> {
        let (total, focus, rows, at): (u64, usize, Vec<KeptRow>, Option<i64>) =
            serde_json::from_slice(json).map_err(|err| format!("malformed page: {err}"))?;
        let at = snapshot_time(at)?;
        let rows = rows
            .into_iter()
            .map(|row| Ranked::kept(row, at.as_ref()))
            .collect::<Result<_, _>>()?;
        Ok(PageReply { total, rows, focus })
    }

    /// A page read from the boards.
    fn flat(items: Vec<Value>) -> Result<Self, ParsingError> {
        if items.len() < 3 || items.len() % 5 != 3 {
            return Err(format!("a page of {} values", items.len()).into());
        }
        let mut items = items.into_iter();
        let (total, focus, at) = (
            u64::from_redis_value(items.next().unwrap_or(Value::Nil))?,
            usize::from_redis_value(items.next().unwrap_or(Value::Nil))?,
            Option::<i64>::from_redis_value(items.next().unwrap_or(Value::Nil))?,
        );
        let at = snapshot_time(at)?;
        let mut rows = Vec::new();
        while let Some(concert) = items.next() {
            let mut next = || items.next().unwrap_or(Value::Nil);
            let (rank, score, details, previous) = (next(), next(), next(), next());
            rows.push(Ranked::read(
                String::from_redis_value(concert)?,
                u64::from_redis_value(rank)?,
                Option::<String>::from_redis_value(score)?.as_deref(),
                Option::<String>::from_redis_value(details)?.as_deref(),
                Option::<u64>::from_redis_value(previous)?,
                at.as_ref(),
            )?);
        }
        Ok(PageReply { total, rows, focus })
    }

    /// The rows split around the focus row, or `None` when the concert is not on the board.
    fn around(mut self) -> Option<Around> {
        if self.focus == 0 || self.focus > self.rows.len() {
            return None;
        }
        let below = self.rows.split_off(self.focus);
        let entry = self.rows.pop()?;
        Some(Around {
            total: self.total,
            entry,
            above: self.rows,
            below,
        })
    }
}

/// A trending score is decayed sales, not seats: a rate from it would mean nothing.
fn without_rate_on_trending(board: &Board, rows: &mut [Ranked]) {
    if board.period == Period::Trending {
        for row in rows {
            row.rate = None;
        }
    }
}

impl Rankings {
    /// Today in the ranking zone.
    pub fn today(&self) -> NaiveDate {
        local_day(Utc::now(), self.settings.time_zone)
    }

    /// The day a read of `period` without a date serves now, and whether it fell back to
    /// an earlier bucket ([`default_day`]).
    pub fn served_day(&self, period: Period) -> (NaiveDate, bool) {
        default_day(Utc::now(), &self.settings, period)
    }

    /// The page script's keys for `board` ranked by `order`, compared with `against`
    /// ([`Rankings::against`]) when given; its arguments still to come.
    pub(super) fn read_call(
        &self,
        board: &Board,
        against: Option<&Against>,
        order: Order,
    ) -> ScriptCall {
        let mut invocation = ScriptCall::of(&PAGE);
        let ranked = self.ranked_key(board, order);
        invocation
            .named_key("ranked", ranked)
            .named_key("seat_board", self.board_key(board))
            .named_key("details", self.details_key())
            .named_key("cache", self.page_cache_key());
        if let Some(previous) = self.previous_key(against, order) {
            invocation.named_key("previous", previous);
        }
        invocation
    }

    /// The page script's call for a page, kept in the page cache when it is one the cache
    /// keeps (the top [`CACHED_LIMIT`] rows or fewer).
    pub(crate) fn page_call(
        &self,
        board: &Board,
        against: Option<&Against>,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> ScriptCall {
        let mut invocation = self.read_call(board, against, order);
        let keep = offset == 0 && limit <= CACHED_LIMIT;
        invocation
            .named("mode", "page")
            .named("target", offset)
            .named("count", limit)
            .named("keep", if keep { "1" } else { "0" });
        self.compare_args(&mut invocation, against);
        invocation
    }

    /// A page of `board` ranked by `order`, and the number of concerts on it; each row with
    /// its movement since `against` when given.
    pub async fn page(
        &self,
        board: &Board,
        against: Option<&Against>,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<Page, Error> {
        let invocation = self.page_call(board, against, order, offset, limit);
        let PageReply {
            total, mut rows, ..
        } = self.conn.invoke(invocation).await?;
        without_rate_on_trending(board, &mut rows);
        Ok(Page { total, items: rows })
    }

    /// `concert`'s row on `board` ranked by `order`, with up to `n` rows either side
    /// ([`MAX_AROUND`] at most), if it is on the board; each row with its movement since
    /// `against` when given.
    pub async fn around(
        &self,
        board: &Board,
        against: Option<&Against>,
        order: Order,
        concert: &ConcertId,
        n: u64,
    ) -> Result<Option<Around>, Error> {
        let mut invocation = self.read_call(board, against, order);
        invocation
            .named("mode", "around")
            .named("target", concert.as_str())
            .named("count", n.min(MAX_AROUND))
            .named("keep", "0");
        self.compare_args(&mut invocation, against);
        let mut reply: PageReply = self.conn.invoke(invocation).await?;
        without_rate_on_trending(board, &mut reply.rows);
        Ok(reply.around())
    }
}

#[cfg(test)]
mod tests {
    use super::{percentile, Movement, PageReply};
    use redis::{FromRedisValue, Value};

    pub(super) fn parse(json: &str) -> PageReply {
        PageReply::parse(json.as_bytes()).unwrap()
    }

    pub(super) fn flat(values: Vec<Value>) -> PageReply {
        PageReply::from_redis_value(Value::Array(values)).unwrap()
    }

    pub(super) fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    const STORED: &str = r#"{"title":"T","venue":null,"startsAt":"2026-12-24T19:00:00Z","capacity":3,"genres":["rock"]}"#;

    #[test]
    pub(super) fn page_rows_read_from_the_boards_decode_with_their_details_and_rate() {
        let row = |id: &str, rank: i64, score: Option<&str>, details: Option<String>| {
            vec![
                text(id),
                Value::Int(rank),
                score.map_or(Value::Nil, text),
                details.map_or(Value::Nil, |d| text(&d)),
                Value::Nil,
            ]
        };
        let mut values = vec![Value::Int(9), Value::Int(0), Value::Nil];
        values.extend(row(
            "c1",
            3,
            Some("-2"),
            Some(format!("1700000000000 3 {STORED}")),
        ));
        values.extend(row("c2", 4, Some("-2"), None));
        values.extend(row("c3", 5, None, None));
        values.extend(row("c4", 6, Some("-1.75"), None));
        values.extend(row("c5", 7, Some("-2"), Some(format!("1 0 {STORED}"))));
        let page = flat(values);
        assert_eq!((page.total, page.focus, page.rows.len()), (9, 0, 5));
        let full = &page.rows[0];
        assert_eq!(
            (full.rank, full.score, full.capacity, full.rate),
            (3, 2, Some(3), Some(0.666667))
        );
        assert_eq!(full.title.as_deref(), Some("T"));
        assert_eq!(full.venue, None);
        assert_eq!(full.starts_at.as_deref(), Some("2026-12-24T19:00:00Z"));
        let bare = &page.rows[1];
        assert_eq!(
            (bare.concert_id.as_str(), bare.capacity, bare.rate),
            ("c2", None, None)
        );
        assert_eq!(bare.title, None);
        // No seat score: 0 seats. A trending score shows its whole part.
        assert_eq!((page.rows[2].score, page.rows[3].score), (0, 1));
        // A capacity of 0 never divides: no rate.
        assert_eq!((page.rows[4].capacity, page.rows[4].rate), (Some(0), None));
        for bad in ["garbage", "1 x {}", "1 3 not json", "1 3 {}"] {
            let mut values = vec![Value::Int(1), Value::Int(0), Value::Nil];
            values.extend(row("c1", 1, Some("-1"), Some(bad.to_owned())));
            assert!(
                PageReply::from_redis_value(Value::Array(values)).is_err(),
                "{bad}"
            );
        }
        let mut short = vec![Value::Int(1), Value::Int(0), Value::Nil];
        short.extend(row("c1", 1, Some("-1"), None));
        short.pop();
        assert!(PageReply::from_redis_value(Value::Array(short)).is_err());
        // An empty board, and a concert not on it.
        let empty = flat(vec![Value::Int(0), Value::Int(0), Value::Nil]);
        assert_eq!((empty.total, empty.rows.len()), (0, 0));
        assert!(empty.around().is_none());
    }

    #[test]
    pub(super) fn kept_pages_decode_as_the_same_rows() {
        let page = parse(
            r#"[9,0,[["c1",3,"-2",3,["T",null,"2026-12-24T19:00:00Z"],1],["c2",4,"-2",null,null,4],
                ["c3",5,null,null,null,0],["c5",7,"-2",0,["T","V","2027"],null]],null]"#,
        );
        assert_eq!((page.total, page.focus, page.rows.len()), (9, 0, 4));
        let full = &page.rows[0];
        assert_eq!(
            (full.rank, full.score, full.capacity, full.rate),
            (3, 2, Some(3), Some(0.666667))
        );
        assert_eq!(
            (
                full.title.as_deref(),
                full.venue.as_deref(),
                full.starts_at.as_deref()
            ),
            (Some("T"), None, Some("2026-12-24T19:00:00Z"))
        );
        assert_eq!(
            (page.rows[1].capacity, page.rows[1].title.as_deref()),
            (None, None)
        );
        assert_eq!(page.rows[2].score, 0);
        assert_eq!((page.rows[3].capacity, page.rows[3].rate), (Some(0), None));
        assert_eq!(page.rows[3].venue.as_deref(), Some("V"));
        let moved: Vec<_> = page
            .rows
            .iter()
            .map(|r| (r.previous_rank, r.movement))
            .collect();
        assert_eq!(
            moved,
            [
                (Some(1), Some(Movement::Down { by: 2 })),
                (Some(4), Some(Movement::Same)),
                (None, Some(Movement::New)),
                (None, None),
            ]
        );
        for bad in [
            "",
            "[1,0]",
            "[1,0,{},null]",
            "[1,0,[]]",
            r#"[1,0,[["c1",1,"x",null,null,null]],null]"#,
            r#"[1,0,[["c1",1,"-1","3",["T",null,"S"],null]],null]"#,
            r#"[1,0,[["c1",1,"-1",3,null,null]],null]"#,
            r#"[1,0,[["c1",1,"-1",null,["T",null,"S"],null]],null]"#,
            r#"[1,0,[["c1",1,"-1",3,[null,null,"S"],null]],null]"#,
            r#"[1,0,[["c1",1,"-1",null,null,"2"]],null]"#,
        ] {
            assert!(PageReply::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse("[0,0,[],null]").rows.len(), 0);
        // Compared with a snapshot: each row that compares carries its time.
        let live = parse(
            r#"[2,0,[["c1",1,"-2",null,null,2],["c2",2,"-1",null,null,null]],1764514800000]"#,
        );
        assert_eq!(
            live.rows[0].previous_at.as_deref(),
            Some("2025-11-30T15:00:00.000Z")
        );
        assert_eq!(
            (live.rows[1].movement, live.rows[1].previous_at.as_deref()),
            (None, None)
        );
    }

    #[test]
    fn the_percentile_counts_the_board_at_or_below_a_rank() {
        assert_eq!(percentile(1, 4), 100.0);
        assert_eq!(percentile(4, 4), 25.0);
        // Competition ranks: two concerts sharing rank 2 of 3 stand above one.
        assert_eq!(percentile(2, 3), 66.67);
        assert_eq!(percentile(1, 0), 0.0);
    }

    #[test]
    pub(super) fn a_page_around_a_concert_splits_at_its_row() {
        let mut values = vec![Value::Int(5), Value::Int(2), Value::Nil];
        for (id, previous) in [
            ("c1", Value::Int(0)),
            ("c2", Value::Int(4)),
            ("c3", Value::Int(1)),
        ] {
            values.extend([text(id), Value::Int(1), text("-1"), Value::Nil, previous]);
        }
        let around = flat(values).around().unwrap();
        assert_eq!(around.entry.concert_id, "c2");
        assert_eq!(
            (around.total, around.above.len(), around.below.len()),
            (5, 1, 1)
        );
        // Previous ranks: 0 is a concert new to the board; ties share a rank.
        assert_eq!(around.above[0].movement, Some(Movement::New));
        assert_eq!(around.above[0].previous_rank, None);
        assert_eq!(around.entry.movement, Some(Movement::Up { by: 3 }));
        assert_eq!(around.entry.previous_rank, Some(4));
        assert_eq!(around.below[0].movement, Some(Movement::Same));
    }
}
