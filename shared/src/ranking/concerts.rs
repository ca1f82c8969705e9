//! Many concerts' standing on one board in one call of `concerts.lua`: for each, its rank,
//! seats, sell-through, movement (since the bucket before, or a live board's last snapshot)
//! and percentile, or that it is not on the board. For a catalogue or search page that shows
//! a rank badge on each concert it lists. The answer for a set of ids is kept in the page
//! cache until the next write, as the top pages are.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::compare::{snapshot_time, Against, COMPARE_LUA};
use super::keys::{Board, Order};
use super::rankings::Rankings;
use super::read::{percentile, Movement, CACHE_LUA};
use crate::error::Error;
use crate::ids::ConcertId;
use crate::store::{assemble, primary_read_script, NamedScript, ScriptCall};

pub(super) static CONCERTS: NamedScript = NamedScript::new(
    LazyLock::new(|| {
        primary_read_script(&assemble(
            &[COMPARE_LUA, CACHE_LUA],
            include_str!("concerts.lua"),
        ))
    }),
    &["ranked", "seat_board", "details", "cache", "previous?"],
    &["against", "half", "set", "room", "ids…"],
);

/// Most concerts one read asks for.
pub const MAX_CONCERTS: usize = 100;

/// A many-concerts read keeps its answer in the page cache only while the cache holds fewer
/// fields than this: the answers for 1 000 sets of ids, at most about 4 KB each, whatever
/// sets are asked between two writes.
pub const KEPT_SETS: usize = 1_000;

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

/// `concerts.lua`'s reply, JSON `[total, at, [row, ...]]`: the concerts on the board, the
/// time of the snapshot compared with (RFC 3339), then a row per id.
#[derive(Debug)]
struct ConcertsReply {
    total: u64,
    at: Option<String>,
    rows: Vec<Row>,
}

/// One concert's values in the reply, `[rank, score, capacity, previous]`: its rank (none
/// when not on the board), its seat score as stored, its capacity and its previous rank (0:
/// not on the board before; none: no comparison).
#[derive(Debug, Clone, serde::Deserialize)]
struct Row {
    rank: Option<u64>,
    score: Option<String>,
    capacity: Option<u64>,
    previous: Option<u64>,
}

impl FromRedisValue for ConcertsReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let json = Vec::<u8>::from_redis_value(v)?;
        let (total, at, rows): (u64, Option<i64>, Vec<Row>) =
            serde_json::from_slice(&json).map_err(|err| format!("malformed standings: {err}"))?;
        Ok(ConcertsReply {
            total,
            at: snapshot_time(at)?,
            rows,
        })
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

/// A name of a set of ids, sorted and each once, under which the page cache keeps its answer:
/// the SHA-256 of the ids, each followed by a space (an id holds none).
fn set_name(ids: &[ConcertId]) -> String {
    let mut digest = Sha256::new();
    for id in ids {
        digest.update(id.as_str().as_bytes());
        digest.update(b" ");
    }
    hex::encode(digest.finalize())
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
            .named_key("details", self.details_key())
            .named_key("cache", self.page_cache_key());
        if let Some(previous) = self.previous_key(against, order) {
            call.named_key("previous", previous);
        }
        self.compare_args(&mut call, against);
        call.named("set", set_name(&ids))
            .named("room", KEPT_SETS.to_string());
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
        let reply = ConcertsReply::from_redis_value(text(
            r#"[4,null,[[2,"-3",6,1],[null,null,null,null]]]"#,
        ))
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
        assert!(ConcertsReply::from_redis_value(text("[1,null,[[1]]]")).is_err());
        assert!(ConcertsReply::from_redis_value(Value::Array(vec![Value::Int(1)])).is_err());
    }

    #[test]
    fn a_set_is_named_by_its_ids() {
        assert_eq!(set_name(&[id("a"), id("b")]), set_name(&[id("a"), id("b")]));
        assert_ne!(set_name(&[id("a"), id("b")]), set_name(&[id("ab")]));
        assert_eq!(set_name(&[id("a")]).len(), 64);
    }
}
