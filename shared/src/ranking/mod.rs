//! Sales rankings: boards of seats sold per concert, per period bucket, overall and per
//! genre, fed by payment events exactly once.
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

use chrono::{DateTime, NaiveDate, Utc};
use redis::Script;
use serde::Serialize;
use serde_json::json;

pub use events::{parse_event, Command, Parsed};
pub use period::{local_day, parse_date, Period};

use crate::config::RankingSettings;
use crate::error::Error;
use crate::ids::{ConcertId, Genre};
use crate::store::{primary_read_script, Batch, Conn, ScriptCall};

static APPLY: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("apply.lua")));
static TOP: LazyLock<Script> = LazyLock::new(|| primary_read_script(include_str!("top.lua")));
static CONCERT: LazyLock<Script> =
    LazyLock::new(|| primary_read_script(include_str!("concert.lua")));

/// The top-N script, for benchmarks that run it raw (`redis-benchmark`) beside the handler.
pub fn top_script() -> &'static Script {
    &TOP
}

/// Most events per script call; a larger batch costs one more round trip per this many.
pub const EVENTS_PER_CALL: usize = 100;

/// What applying one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Duplicate,
    /// Valid, but nothing to do (for example a refund of a payment never seen).
    Ignored(String),
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

    pub fn board_key(&self, board: &Board) -> String {
        match &board.genre {
            None => self.key(&format!("board:{}:{}", board.period, board.bucket)),
            Some(genre) => self.key(&format!(
                "board:{}:{}:genre:{genre}",
                board.period, board.bucket
            )),
        }
    }

    /// Today in the ranking zone.
    pub fn today(&self) -> NaiveDate {
        local_day(Utc::now(), self.settings.time_zone)
    }

    /// Stages `commands` in `batch`, atomically per call of up to [`EVENTS_PER_CALL`], so
    /// they share one round trip with other work (the updater's releases); read the
    /// outcomes with [`Rankings::outcomes`].
    pub fn stage_apply(&self, batch: &mut Batch, commands: &[Command]) -> Vec<usize> {
        commands
            .chunks(EVENTS_PER_CALL)
            .map(|chunk| {
                let mut invocation = ScriptCall::new(&APPLY);
                let mut keys = Vec::new();
                invocation.arg(self.settings.dedupe.as_secs());
                for command in chunk {
                    let op = self.op(command, &mut keys);
                    invocation.arg(op.to_string());
                }
                keys.sort();
                keys.dedup();
                for key in &keys {
                    invocation.key(key);
                }
                batch.script(invocation)
            })
            .collect()
    }

    /// One outcome per staged command, in order, from the batch's replies.
    pub fn outcomes(staged: &[usize], replies: &[redis::Value]) -> Result<Vec<Outcome>, Error> {
        let mut outcomes = Vec::new();
        for index in staged {
            let reply = replies
                .get(*index)
                .ok_or_else(|| Error::Internal("missing ranking reply".into()))?;
            let texts: Vec<String> = redis::from_redis_value_ref(reply)
                .map_err(|err| Error::Internal(format!("ranking reply: {err}")))?;
            outcomes.extend(texts.into_iter().map(|reply| match reply.as_str() {
                "applied" => Outcome::Applied,
                "duplicate" => Outcome::Duplicate,
                other => Outcome::Ignored(other.trim_start_matches("ignored: ").to_owned()),
            }));
        }
        Ok(outcomes)
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
                json!({
                    "op": "pay",
                    "record": note(self.key(&format!("payment:{payment}"))),
                    "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                    "index": note(self.key(&format!("concert:{concert}:boards"))),
                    "concert": concert.as_str(),
                    "seats": seats,
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
                    "dedupe": note(self.key(&dedupe)),
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
        }
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
        let (total, rows): (u64, Vec<(String, u64, u64)>) = self.conn.invoke(invocation).await?;
        let items = rows
            .into_iter()
            .map(|(concert_id, score, rank)| Ranked {
                rank,
                concert_id,
                score,
            })
            .collect();
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
        let reply: Vec<u64> = self.conn.invoke(invocation).await?;
        Ok(match reply.as_slice() {
            [score, rank] => Some((*rank, *score)),
            _ => None,
        })
    }
}
