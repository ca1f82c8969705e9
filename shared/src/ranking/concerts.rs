//! Many concerts' standing on one board in one call of `concerts.lua`: for each, its rank,
//! seats, sell-through, movement (since the bucket before, or a live board's last snapshot)
//! and percentile, or that it is not on the board. For a catalogue or search page that shows a rank badge on each concert it
//! lists.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::compare::{snapshot_time, Against, COMPARE_LUA};
use super::keys::{Board, Order};
use super::rankings::Rankings;
use super::read::{percentile, Movement};
use crate::error::Error;
use crate::ids::ConcertId;
use crate::store::{assemble, primary_read_script, NamedScript, ScriptCall};

pub(super) static CONCERTS: NamedScript = NamedScript::new(
    LazyLock::new(|| primary_read_script(&assemble(&[COMPARE_LUA], include_str!("concerts.lua")))),
    &["ranked", "seat_board", "details", "previous?"],
    &["against", "half", "ids…"],
);

/// Most concerts one read asks for.
pub const MAX_CONCERTS: usize = 100;

/// One concert's standing on a board. A concert not on the board has `on_board` false and
/// every other field `None`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Standing {
    pub concert_id: String,
    pub on_board: bool,
    pub rank: Option<u64>,
    /// Seats sold in the bucket.
    pub score: Option<u64>,
    pub capacity: Option<u64>,
    /// `score ÷ capacity`, rounded to 6 decimals.
    pub rate: Option<f64>,
    pub previous_rank: Option<u64>,
    pub movement: Option<Movement>,
    /// When the snapshot a live board's movement compares with was taken (RFC 3339).
    pub previous_at: Option<String>,
    pub percentile: Option<f64>,
}

/// The concerts asked for, each once, sorted by id: so the same set in any order reads, and
/// answers, the same.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standings {
    pub total: u64,
    pub concerts: Vec<Standing>,
}

/// `concerts.lua`'s reply: total, the time of the snapshot compared with (RFC 3339), then per
/// id its rank, seat score, capacity and previous rank.
#[derive(Debug)]
struct ConcertsReply {
    total: u64,
    at: Option<String>,
    rows: Vec<Row>,
}

/// One concert's values in the reply: its rank (none when not on the board), its seat score
/// as stored, its capacity and its previous rank (0: not on the board before; none: no
/// comparison).
#[derive(Debug, Clone)]
struct Row {
    rank: Option<u64>,
    score: Option<String>,
    capacity: Option<u64>,
    previous: Option<u64>,
}

impl FromRedisValue for ConcertsReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let items = Vec::<Value>::from_redis_value(v)?;
        if items.len() < 2 || items.len() % 4 != 2 {
            return Err(format!("a standings reply of {} values", items.len()).into());
        }
        let mut items = items.into_iter();
        let total = u64::from_redis_value(items.next().unwrap_or(Value::Nil))?;
        let at = snapshot_time(Option::<i64>::from_redis_value(
            items.next().unwrap_or(Value::Nil),
        )?)?;
        let mut rows = Vec::new();
        while let Some(rank) = items.next() {
            let mut next = || items.next().unwrap_or(Value::Nil);
            let (score, capacity, previous) = (next(), next(), next());
            rows.push(Row {
                rank: Option::<u64>::from_redis_value(rank)?,
                score: Option::<String>::from_redis_value(score)?,
                capacity: Option::<u64>::from_redis_value(capacity)?,
                previous: Option::<u64>::from_redis_value(previous)?,
            });
        }
        Ok(ConcertsReply { total, at, rows })
    }
}

/// The ids sorted, each once: what the read asks, whatever order they came in.
pub fn canonical(ids: &[ConcertId]) -> Vec<ConcertId> {
    ids.iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

impl Rankings {
    /// The standing of each of `ids` ([`MAX_CONCERTS`] at most, after duplicates) on `board`
    /// ranked by `order`, with movement since `against` when given.
    pub async fn concerts(
        &self,
        board: &Board,
        against: Option<&Against>,
        order: Order,
        ids: &[ConcertId],
    ) -> Result<Standings, Error> {
        let ids = canonical(ids);
        if ids.is_empty() || ids.len() > MAX_CONCERTS {
            return Err(Error::invalid(
                "ids",
                format!("must name 1 to {MAX_CONCERTS} concerts"),
            ));
        }
        let ranked = self.ranked_key(board, order);
        let mut call = ScriptCall::of(&CONCERTS);
        call.named_key("ranked", ranked)
            .named_key("seat_board", self.board_key(board))
            .named_key("details", self.details_key());
        if let Some(previous) = self.previous_key(against, order) {
            call.named_key("previous", previous);
        }
        self.compare_args(&mut call, against);
        for id in &ids {
            call.named("ids", id.as_str());
        }
        let reply: ConcertsReply = self.conn.invoke(call).await?;
        if reply.rows.len() != ids.len() {
            return Err(Error::Internal(format!(
                "{} standings for {} concerts",
                reply.rows.len(),
                ids.len()
            )));
        }
        let trending = board.period == super::period::Period::Trending;
        let concerts = ids
            .iter()
            .zip(reply.rows)
            .map(|(id, row)| standing(id, reply.total, reply.at.as_ref(), &row, trending))
            .collect::<Result<_, _>>()?;
        Ok(Standings {
            total: reply.total,
            concerts,
        })
    }
}

/// One concert's standing from the script's values for it.
fn standing(
    id: &ConcertId,
    total: u64,
    at: Option<&String>,
    row: &Row,
    trending: bool,
) -> Result<Standing, Error> {
    let Row {
        rank,
        score,
        capacity,
        previous,
    } = row.clone();
    let Some(rank) = rank else {
        return Ok(Standing {
            concert_id: id.to_string(),
            on_board: false,
            rank: None,
            score: None,
            capacity: None,
            rate: None,
            previous_rank: None,
            movement: None,
            previous_at: None,
            percentile: None,
        });
    };
    // A seat score is negated seats; a trending score a fraction, shown rounded down.
    let score = match score.as_deref() {
        Some(raw) => {
            let stored: f64 = raw
                .parse()
                .map_err(|_| Error::Internal(format!("malformed score {raw:?} of {id}")))?;
            (-stored) as u64
        }
        None => 0,
    };
    Ok(Standing {
        concert_id: id.to_string(),
        on_board: true,
        rank: Some(rank),
        score: Some(score),
        capacity,
        rate: capacity
            .filter(|capacity| *capacity > 0 && !trending)
            .map(|capacity| (score as f64 / capacity as f64 * 1e6).round() / 1e6),
        previous_rank: previous.filter(|before| *before > 0),
        movement: previous.map(|before| Movement::between(rank, before)),
        previous_at: previous.and(at.cloned()),
        percentile: Some(percentile(rank, total)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(raw: &str) -> ConcertId {
        ConcertId::parse(raw).unwrap()
    }

    #[test]
    fn the_same_set_in_any_order_asks_the_same() {
        assert_eq!(
            canonical(&[id("b"), id("a"), id("b")]),
            canonical(&[id("a"), id("b")])
        );
    }

    #[test]
    fn a_reply_decodes_each_concerts_standing() {
        let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let reply = ConcertsReply::from_redis_value(Value::Array(vec![
            Value::Int(4),
            Value::Nil,
            Value::Int(2),
            text("-3"),
            Value::Int(6),
            Value::Int(1),
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Nil,
        ]))
        .unwrap();
        assert_eq!(reply.total, 4);
        let on = standing(&id("a"), 4, None, &reply.rows[0], false).unwrap();
        assert_eq!(
            (
                on.rank,
                on.score,
                on.rate,
                on.previous_rank,
                on.movement,
                on.percentile
            ),
            (
                Some(2),
                Some(3),
                Some(0.5),
                Some(1),
                Some(Movement::Down { by: 1 }),
                Some(75.0)
            )
        );
        let off = standing(&id("z"), 4, None, &reply.rows[1], false).unwrap();
        assert!(!off.on_board);
        assert_eq!((off.rank, off.movement, off.percentile), (None, None, None));
        assert!(ConcertsReply::from_redis_value(Value::Array(vec![
            Value::Int(1),
            Value::Nil,
            Value::Nil
        ]))
        .is_err());
    }
}
