//! Sales rankings: boards of seats sold per concert, per period bucket, overall and per
//! genre, fed by payment events exactly once; beside each, a rate board of sell-through for
//! the concerts whose capacity concert events gave (their details, latest `updatedAt` wins).
//!
//! Every ranking key carries the one hash tag `{rk}`, so a batch of events is one atomic
//! script on one shard. The trade-off: one shard carries all ranking writes. A shard takes
//! tens of thousands of small scripts a second, far above a ticketing site's payment rate;
//! if it ever is not, split the tag per period or per genre and route each event's writes
//! by it.
//!
//! Scores are stored negated (−seats), so that Redis's ascending order, which breaks ties
//! by member name, gives most seats first and equal scores by `concertId` ascending.

mod events;
mod period;

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use redis::{FromRedisValue, ParsingError, Script, Value};
use serde::Serialize;
use serde_json::json;

pub use events::{parse_event, Command, ConcertDetails, Parsed, MAX_CAPACITY, MAX_TEXT_CHARS};
pub use period::{local_day, parse_date, Period};

use crate::config::RankingSettings;
use crate::error::Error;
use crate::ids::{ConcertId, Genre, PaymentId};
use crate::store::{primary_read_script, Batch, Conn, ScriptCall, Staged};

/// The apply script: the board helpers (`boards.lua`), then the commands (`apply.lua`).
static APPLY: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        include_str!(concat!(env!("OUT_DIR"), "/ranking/boards.lua")),
        include_str!(concat!(env!("OUT_DIR"), "/ranking/apply.lua"))
    ))
});
static TOP: LazyLock<Script> = LazyLock::new(|| {
    primary_read_script(include_str!(concat!(env!("OUT_DIR"), "/ranking/top.lua")))
});
static CONCERT: LazyLock<Script> = LazyLock::new(|| {
    primary_read_script(include_str!(concat!(
        env!("OUT_DIR"),
        "/ranking/concert.lua"
    )))
});

/// The top-N script, for [`crate::bench_support`].
pub(crate) fn top_script() -> &'static Script {
    &TOP
}

/// Most events per script call; a larger batch costs one more round trip per this many.
pub const EVENTS_PER_CALL: usize = 100;

/// How far ahead of the server's clock a payment's `completedAt` may be.
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);

/// Most refunds that may wait for one payment that has not landed yet.
pub const MAX_PENDING_REFUNDS: u32 = 8;

/// What applying one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Duplicate,
    /// A refund whose payment has not landed: kept, and applied when the payment lands.
    Pending,
    /// Valid, but nothing to do (for example a payment for a cancelled concert).
    Ignored(String),
    /// An id seen before with other contents: a producer bug for a person to look at.
    Conflict(String),
    /// A payment whose time lies outside the window around the server's clock.
    Implausible(String),
    /// Valid, but more than the rankings keep (too many refunds waiting for one payment).
    Refused(String),
}

impl Outcome {
    /// Decodes one outcome of the apply script: a word, then `: ` and the reason.
    fn from_reply(reply: &str) -> Result<Self, ParsingError> {
        let (word, reason) = reply.split_once(": ").unwrap_or((reply, ""));
        let reason = reason.to_owned();
        Ok(match word {
            "applied" => Outcome::Applied,
            "duplicate" => Outcome::Duplicate,
            "pending" => Outcome::Pending,
            "ignored" => Outcome::Ignored(reason),
            "conflict" => Outcome::Conflict(reason),
            "implausible" => Outcome::Implausible(reason),
            "refused" => Outcome::Refused(reason),
            other => return Err(format!("ranking script returned {other:?}").into()),
        })
    }
}

/// The apply script's reply holds one outcome per command, in order.
impl FromRedisValue for Outcome {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Outcome::from_reply(&String::from_redis_value(v)?)
    }
}

/// Commands staged with [`Rankings::stage_apply`], one script call per
/// [`EVENTS_PER_CALL`].
pub struct StagedApply(Vec<Staged<Vec<Outcome>>>);

impl StagedApply {
    /// One outcome per staged command, in order, from the batch's replies.
    pub fn read(&self, replies: &[Value]) -> Result<Vec<Outcome>, Error> {
        let mut outcomes = Vec::new();
        for call in &self.0 {
            outcomes.extend(call.read(replies)?);
        }
        Ok(outcomes)
    }
}

/// One board: a period bucket, overall or for one genre.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    pub period: Period,
    pub bucket: String,
    pub genre: Option<Genre>,
}

impl Board {
    /// The board of `period` holding `day`.
    pub fn on(period: Period, day: NaiveDate, genre: Option<Genre>) -> Self {
        Board {
            period,
            bucket: period.bucket(day),
            genre,
        }
    }
}

/// A page of a board.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub rank: u64,
    pub concert_id: String,
    pub score: u64,
}

/// One row of the top script's page: `{concert, score, rank}`.
impl FromRedisValue for Ranked {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (concert_id, score, rank) = FromRedisValue::from_redis_value(v)?;
        Ok(Ranked {
            rank,
            concert_id,
            score,
        })
    }
}

/// The top script's `{concerts on the board, page}`.
struct PageReply {
    total: u64,
    items: Vec<Ranked>,
}

impl FromRedisValue for PageReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (total, items) = FromRedisValue::from_redis_value(v)?;
        Ok(PageReply { total, items })
    }
}

/// The concert script's `{score, rank}`, or `{}` when the concert is not on the board:
/// `(rank, score)`.
struct PositionReply(Option<(u64, u64)>);

impl FromRedisValue for PositionReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let reply: Vec<u64> = FromRedisValue::from_redis_value(v)?;
        Ok(PositionReply(match reply.as_slice() {
            [score, rank] => Some((*rank, *score)),
            [] => None,
            other => return Err(format!("concert script returned {other:?}").into()),
        }))
    }
}

/// The rankings over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct Rankings {
    conn: Conn,
    prefix: String,
    settings: RankingSettings,
}

impl Rankings {
    pub fn new(conn: Conn, prefix: impl Into<String>, settings: RankingSettings) -> Self {
        Rankings {
            conn,
            prefix: prefix.into(),
            settings,
        }
    }

    pub fn settings(&self) -> &RankingSettings {
        &self.settings
    }

    fn key(&self, rest: &str) -> String {
        format!("{}:{{rk}}:{rest}", self.prefix)
    }

    /// A board ranked by seats sold.
    pub fn board_key(&self, board: &Board) -> String {
        self.key(&format!("board:{}", Self::board_name(board)))
    }

    /// The same board ranked by sell-through (millionths of capacity); `apply.lua` derives
    /// it from the seat board's key the same way.
    pub fn rate_key(&self, board: &Board) -> String {
        self.key(&format!("rate:{}", Self::board_name(board)))
    }

    fn board_name(board: &Board) -> String {
        match &board.genre {
            None => format!("{}:{}", board.period, board.bucket),
            Some(genre) => format!("{}:{}:genre:{genre}", board.period, board.bucket),
        }
    }

    /// The one hash of concert details: `concertId` → `<updatedAt ms> <capacity> <json>`.
    pub fn details_key(&self) -> String {
        self.key("concert-details")
    }

    /// Today in the ranking zone.
    pub fn today(&self) -> NaiveDate {
        local_day(Utc::now(), self.settings.time_zone)
    }

    /// Stages `commands` in `batch`, atomically per call of up to [`EVENTS_PER_CALL`], so
    /// they share one round trip with other work (the updater's releases); the handle reads
    /// their outcomes.
    pub fn stage_apply(&self, batch: &mut Batch, commands: &[Command]) -> StagedApply {
        let calls = commands
            .chunks(EVENTS_PER_CALL)
            .map(|chunk| {
                let mut invocation = ScriptCall::new(&APPLY);
                // KEYS[1] is the details hash, which every command may read.
                let details = self.details_key();
                invocation.key(&details);
                let mut keys = Vec::new();
                invocation
                    .arg(self.settings.dedupe.as_secs())
                    .arg(FUTURE_SKEW.as_millis() as u64)
                    .arg(MAX_PENDING_REFUNDS);
                for command in chunk {
                    let op = self.op(command, &mut keys);
                    invocation.arg(op.to_string());
                }
                keys.sort();
                keys.dedup();
                for key in keys.iter().filter(|key| **key != details) {
                    invocation.key(key);
                }
                batch.stage(invocation)
            })
            .collect();
        StagedApply(calls)
    }

    /// Sends `batch`, which holds this owner's staged work and whatever shares its round
    /// trip; the staged handles read the replies.
    pub async fn send(&self, batch: &Batch) -> Result<Vec<Value>, Error> {
        Ok(self.conn.send(batch).await?)
    }

    /// The script's instruction for `command`, noting every key it names in `keys`.
    fn op(&self, command: &Command, keys: &mut Vec<String>) -> serde_json::Value {
        let mut note = |key: String| {
            keys.push(key.clone());
            key
        };
        match command {
            Command::Payment {
                payment,
                concert,
                seats,
                genres,
                completed_at,
                ..
            } => {
                let boards: Vec<_> = self
                    .boards_for(*completed_at, genres)
                    .into_iter()
                    .map(|(board, expires)| {
                        json!([
                            note(self.board_key(&board)),
                            expires.map_or(0, |t| t.timestamp())
                        ])
                    })
                    .collect();
                let genres: Vec<&str> = genres.iter().map(Genre::as_str).collect();
                json!({
                    "op": "pay",
                    "record": note(self.key(&format!("payment:{payment}"))),
                    "pending": note(self.pending_key(payment)),
                    "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                    "index": note(self.key(&format!("concert:{concert}:boards"))),
                    "concert": concert.as_str(),
                    "seats": seats,
                    "genres": genres,
                    "at": completed_at.timestamp_millis(),
                    "boards": boards,
                })
            }
            Command::Refund {
                payment,
                refund,
                concert,
                seats,
            } => {
                let dedupe = match refund {
                    Some(refund) => format!("refund:r:{refund}"),
                    None => format!("refund:p:{payment}"),
                };
                json!({
                    "op": "refund",
                    "record": note(self.key(&format!("payment:{payment}"))),
                    "pending": note(self.pending_key(payment)),
                    "dedupe": note(self.key(&dedupe)),
                    "payment": payment.as_str(),
                    "concert": concert.as_str(),
                    "seats": seats,
                })
            }
            Command::Cancel { concert } => json!({
                "op": "cancel",
                "index": note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
            }),
            Command::Details {
                concert,
                details,
                updated_at,
            } => json!({
                "op": "details",
                "index": note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
                // What the hash holds: the script reads the first two words only.
                "value": format!(
                    "{} {} {}",
                    updated_at.timestamp_millis(),
                    details.capacity,
                    json!(details)
                ),
            }),
        }
    }

    /// The refunds waiting for `payment` to land.
    fn pending_key(&self, payment: &PaymentId) -> String {
        self.key(&format!("payment:{payment}:pending-refunds"))
    }

    /// Every board a payment at `at` counts on, with each board's expiry.
    fn boards_for(
        &self,
        at: DateTime<Utc>,
        genres: &[Genre],
    ) -> Vec<(Board, Option<DateTime<Utc>>)> {
        let day = local_day(at, self.settings.time_zone);
        let genres = std::iter::once(None).chain(genres.iter().cloned().map(Some));
        genres
            .flat_map(|genre| {
                Period::ALL.into_iter().map(move |period| {
                    (
                        Board::on(period, day, genre.clone()),
                        period.expires_at(day, &self.settings),
                    )
                })
            })
            .collect()
    }

    /// A page of `board` and the number of concerts on it.
    pub async fn page(
        &self,
        board: &Board,
        offset: u64,
        limit: u64,
    ) -> Result<(u64, Vec<Ranked>), Error> {
        let mut invocation = ScriptCall::new(&TOP);
        invocation.key(self.board_key(board)).arg(offset).arg(limit);
        let PageReply { total, items } = self.conn.invoke(invocation).await?;
        Ok((total, items))
    }

    /// The concert's rank and score on `board`, if it is on it.
    pub async fn position(
        &self,
        board: &Board,
        concert: &ConcertId,
    ) -> Result<Option<(u64, u64)>, Error> {
        let mut invocation = ScriptCall::new(&CONCERT);
        invocation.key(self.board_key(board)).arg(concert.as_str());
        let PositionReply(position) = self.conn.invoke(invocation).await?;
        Ok(position)
    }
}

#[cfg(test)]
mod tests {
    use super::Outcome;

    #[test]
    fn script_outcomes_decode_with_their_reasons() {
        let cases = [
            ("applied", Outcome::Applied),
            ("duplicate", Outcome::Duplicate),
            ("pending", Outcome::Pending),
            (
                "ignored: concert cancelled",
                Outcome::Ignored("concert cancelled".into()),
            ),
            ("conflict: a: b", Outcome::Conflict("a: b".into())),
            ("implausible: ahead", Outcome::Implausible("ahead".into())),
            ("refused: full", Outcome::Refused("full".into())),
        ];
        for (reply, outcome) in cases {
            assert_eq!(Outcome::from_reply(reply).unwrap(), outcome, "{reply}");
        }
        assert!(Outcome::from_reply("exploded").is_err());
    }
}
