//! Applying ranking commands: each batch of up to [`EVENTS_PER_CALL`] commands is one call of
//! `apply.lua`, which records payments and refunds, queues them for the fold and folds within
//! a budget, and answers one [`Outcome`] per command, each a tag and named fields
//! (`ApplyReply`).

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;
use serde_json::json;

use super::events::Command;
use super::keys::Board;
use super::period::{local_day, Period};
use super::rankings::{Rankings, FOLD_PRELUDES};
use super::record::{calendar_day, concert_fingerprint, RecordRef};
use super::windows::{bucket_of, LAST_24H, LAST_7D};
use crate::error::Error;
use crate::ids::{ConcertId, Genre};
use crate::store::{assemble, lua_script, Batch, NamedScript, ScriptCall, Staged, Tagged};

/// The apply script: the board helpers, the fold, then the commands. Its keys after the
/// first three are the ones the commands name, given for a cluster's routing.
pub(super) static APPLY: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&FOLD_PRELUDES, include_str!("apply.lua")))),
    &["DETAILS", "PAGES", "FOLD", "named…"],
    &[
        "TTL",
        "SKEW_MS",
        "MAX_PENDING",
        "WIN",
        "REC",
        "BUDGET",
        "commands…",
    ],
);

/// Most events per script call; a larger batch costs one more round trip per this many.
pub const EVENTS_PER_CALL: usize = 100;

/// How far ahead of the server's clock a payment's `completedAt` may be.
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);

/// Most refunds that may wait for one payment that has not landed yet.
pub const MAX_PENDING_REFUNDS: u32 = 8;

/// Board entries the fold may write at the end of an apply call. `fold.lua` counts a
/// payment as its boards (24 with two genres) plus 4, or 2 when a payment of the same
/// concert and bucket was folded earlier in the call; the first entry is always folded. About 0.3 ms of Redis time. What
/// is left waits for the next call or the tick.
pub const FOLD_BUDGET_APPLY: u32 = 40;

/// What became of one event: what applying its command did, or why it was not applied. Every
/// answer about one event, on every path (the event applier's direct invocation, the local stack's
/// `POST /events`), is this as JSON: `{"result": …}`, with a `reason` for all but `applied`,
/// `duplicate` and `pending`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "reason")]
pub enum Outcome {
    Applied,
    Duplicate,
    /// A refund whose payment has not landed: kept, and applied when the payment lands.
    Pending,
    /// Valid, but nothing to do (for example a payment for a cancelled concert), or not for
    /// the rankings.
    Ignored(String),
    /// An id seen before with other contents: a producer bug for a person to look at.
    Conflict(String),
    /// A payment whose time lies outside the window around the server's clock.
    Implausible(String),
    /// Malformed, or more than the rankings keep (too many refunds waiting for one payment):
    /// retrying will not help.
    Rejected(String),
    /// Not applied: Redis could not be reached. Retrying will help.
    Failed(String),
}

impl Outcome {
    /// Whether the event goes back to its sender: retried, then to the dead-letter queue.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Outcome::Conflict(_)
                | Outcome::Implausible(_)
                | Outcome::Rejected(_)
                | Outcome::Failed(_)
        )
    }

    /// Decodes one outcome of the apply script: its word as the tag, with a `reason` for
    /// those that have one.
    fn from_reply(reply: &Value) -> Result<Self, ParsingError> {
        Tagged::decode("apply outcome", reply, |r| {
            let reason = || r.text("reason");
            Ok(match r.tag() {
                "applied" => Outcome::Applied,
                "duplicate" => Outcome::Duplicate,
                "pending" => Outcome::Pending,
                "ignored" => Outcome::Ignored(reason()?),
                "conflict" => Outcome::Conflict(reason()?),
                "implausible" => Outcome::Implausible(reason()?),
                "refused" => Outcome::Rejected(reason()?),
                _ => return Err(r.unknown()),
            })
        })
    }
}

/// What `apply.lua` answers: one outcome per command, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ApplyReply {
    Done { outcomes: Vec<Outcome> },
}

impl FromRedisValue for ApplyReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("apply", &v, |r| match r.tag() {
            "done" => Ok(ApplyReply::Done {
                outcomes: r
                    .list("outcomes")?
                    .iter()
                    .map(Outcome::from_reply)
                    .collect::<Result<_, _>>()?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

/// Commands staged with [`Rankings::stage_apply`], one script call per
/// [`EVENTS_PER_CALL`], each with the number of commands it carries.
pub struct StagedApply(Vec<(Staged<ApplyReply>, usize)>);

impl StagedApply {
    /// One outcome per staged command, in order, from the batch's replies.
    pub fn read(&self, replies: &[Value]) -> Result<Vec<Outcome>, Error> {
        let mut outcomes = Vec::new();
        for (call, commands) in &self.0 {
            let ApplyReply::Done { outcomes: answered } = call.read(replies)?;
            if answered.len() != *commands {
                return Err(Error::Internal(format!(
                    "the apply script answered {} outcomes for {commands} commands",
                    answered.len()
                )));
            }
            outcomes.extend(answered);
        }
        Ok(outcomes)
    }
}

impl Rankings {
    /// Stages `commands` in `batch`, atomically per call of up to [`EVENTS_PER_CALL`], so
    /// they share one round trip with other work (the event applier's releases); the handle reads
    /// their outcomes.
    pub fn stage_apply(&self, batch: &mut Batch, commands: &[Command]) -> StagedApply {
        let calls = commands
            .chunks(EVENTS_PER_CALL)
            .map(|chunk| {
                let mut invocation = ScriptCall::of(&APPLY);
                // The details hash, which every command may read; the page cache, which the
                // call deletes; the fold queue.
                let (details, pages, fold) =
                    (self.details_key(), self.page_cache_key(), self.fold_key());
                invocation
                    .named_key("DETAILS", &details)
                    .named_key("PAGES", &pages)
                    .named_key("FOLD", &fold);
                let mut keys = vec![self.windows_state_key(), self.records_index_key()];
                invocation
                    .named("TTL", self.settings.dedupe.as_secs())
                    .named("SKEW_MS", FUTURE_SKEW.as_millis() as u64)
                    .named("MAX_PENDING", MAX_PENDING_REFUNDS)
                    .named("WIN", self.window_templates().to_string())
                    .named("REC", self.records_config().to_string())
                    .named("BUDGET", FOLD_BUDGET_APPLY);
                for command in chunk {
                    let (op, fold) = self.op(command, &mut keys);
                    invocation.named("commands", op.to_string());
                    if let Some(fold) = fold {
                        invocation.named("commands", fold);
                    }
                }
                keys.sort();
                keys.dedup();
                for key in keys
                    .iter()
                    .filter(|key| **key != details && **key != pages && **key != fold)
                {
                    invocation.named_key("named", key);
                }
                (batch.stage(invocation), chunk.len())
            })
            .collect();
        StagedApply(calls)
    }

    /// Sends `batch`, which holds this owner's staged work and whatever shares its round
    /// trip; the staged handles read the replies.
    pub async fn send(&self, batch: &Batch) -> Result<Vec<Value>, Error> {
        Ok(self.conn.send(batch).await?)
    }

    /// The script's instruction for `command`, noting every key it names in `keys`; for a
    /// payment also its entry in the fold queue (`fold.lua`).
    pub(super) fn op(
        &self,
        command: &Command,
        keys: &mut Vec<String>,
    ) -> (serde_json::Value, Option<String>) {
        let mut keys = Noted(keys);
        let op = match command {
            Command::Payment {
                payment,
                concert,
                seats,
                genres,
                completed_at,
            } => {
                let record = RecordRef::of(payment);
                let fold = self.fold_entry(&mut keys, concert, genres, *completed_at);
                let (day, week) = calendar_day(local_day(*completed_at, self.settings.time_zone));
                let [first, _] = self.trend().generations_for(*completed_at);
                let genres: Vec<&str> = genres.iter().map(Genre::as_str).collect();
                let op = json!({
                    "op": "pay",
                    "record": record.field,
                    "slot": record.slot,
                    "fpc": concert_fingerprint(concert),
                    "legacy": keys.note(self.legacy_record_key(payment)),
                    "pending": keys.note(self.pending_key(payment)),
                    "cancelled": self.key(&format!("concert:{concert}:cancelled")),
                    "concert": concert.as_str(),
                    "seats": seats,
                    "genres": genres,
                    "at": completed_at.timestamp_millis(),
                    "day": day,
                    "week": week,
                    "b": bucket_of(*completed_at),
                    "k": first.index,
                    "w": first.weight,
                });
                return (op, Some(fold));
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
                let record = RecordRef::of(payment);
                json!({
                    "op": "refund",
                    "record": record.field,
                    "slot": record.slot,
                    "fpc": concert_fingerprint(concert),
                    "legacy": keys.note(self.legacy_record_key(payment)),
                    "pending": keys.note(self.pending_key(payment)),
                    "dedupe": keys.note(self.key(&dedupe)),
                    "cancelled": keys.note(self.key(&format!("concert:{concert}:cancelled"))),
                    "payment": payment.as_str(),
                    "concert": concert.as_str(),
                    "seats": seats,
                })
            }
            Command::Cancel { concert } => json!({
                "op": "cancel",
                "index": keys.note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": keys.note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
            }),
            Command::Details {
                concert,
                details,
                updated_at,
            } => json!({
                "op": "details",
                "index": keys.note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": keys.note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
                // What the hash holds: the script reads the first two words only.
                "value": format!(
                    "{} {} {}",
                    updated_at.timestamp_millis(),
                    details.capacity,
                    json!(details)
                ),
            }),
        };
        (op, None)
    }

    /// A payment's entry in the fold queue (`fold.lua`) after its record, which the script
    /// puts first, noting every key the fold may write: words, as no key or id holds a
    /// space. First its weights, then its shape, which the payments of one concert in one
    /// bucket share: the concert's index and cancellation, the bucket, the genres, and each
    /// board with its expiry.
    fn fold_entry(
        &self,
        keys: &mut Noted,
        concert: &ConcertId,
        genres: &[Genre],
        completed_at: DateTime<Utc>,
    ) -> String {
        let cancelled = keys.note(self.key(&format!("concert:{concert}:cancelled")));
        let index = keys.note(self.key(&format!("concert:{concert}:boards")));
        let bucket = bucket_of(completed_at);
        let csv = genres
            .iter()
            .map(Genre::as_str)
            .collect::<Vec<_>>()
            .join(",");
        let boards = self.boards_for(completed_at, genres);
        let generations = self.trend().generations_for(completed_at);
        let weights = generations
            .iter()
            .map(|generation| generation.weight.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let mut fold = format!(
            "{} {concert} {index} {cancelled} {} {bucket} {}",
            if weights.is_empty() { "-" } else { &weights },
            if csv.is_empty() { "-" } else { &csv },
            boards.len()
        );
        for (board, expires) in boards {
            let key = keys.note(self.board_key(&board));
            fold += &format!(" {key} {}", expires.map_or(0, |t| t.timestamp()));
        }
        for generation in generations {
            let key = keys.note(self.board_key(&Board {
                period: Period::Trending,
                bucket: generation.index.to_string(),
                genre: None,
            }));
            fold += &format!(" {key} {}", generation.expires_at);
        }
        // Declare the window keys this payment may write, as for every other key.
        for (window, period) in [(LAST_24H, Period::Last24h), (LAST_7D, Period::Last7d)] {
            keys.note(self.key(&format!("window:{}:{bucket}", window.name)));
            for genre in std::iter::once(None).chain(genres.iter().cloned().map(Some)) {
                keys.note(self.board_key(&Board {
                    period,
                    bucket: "rolling".into(),
                    genre,
                }));
            }
        }
        fold
    }

    /// Every board a payment at `at` counts on, with each board's expiry.
    pub(super) fn boards_for(
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
}

/// The keys a batch's script names, noted as its instructions are written.
struct Noted<'a>(&'a mut Vec<String>);

impl Noted<'_> {
    fn note(&mut self, key: String) -> String {
        self.0.push(key.clone());
        key
    }
}

#[cfg(test)]
mod tests {
    use super::{ApplyReply, Outcome};
    use redis::{FromRedisValue, Value};

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    /// An outcome as the script answers it: the word, then the reason if any.
    fn outcome(word: &str, reason: Option<&str>) -> Value {
        let mut items = vec![text(word)];
        if let Some(reason) = reason {
            items.extend([text("reason"), text(reason)]);
        }
        Value::Array(items)
    }

    #[test]
    pub(super) fn script_outcomes_decode_with_their_reasons() {
        let cases = [
            (("applied", None), Outcome::Applied),
            (("duplicate", None), Outcome::Duplicate),
            (("pending", None), Outcome::Pending),
            (
                ("ignored", Some("concert cancelled")),
                Outcome::Ignored("concert cancelled".into()),
            ),
            (("conflict", Some("a: b")), Outcome::Conflict("a: b".into())),
            (
                ("implausible", Some("ahead")),
                Outcome::Implausible("ahead".into()),
            ),
            (("refused", Some("full")), Outcome::Rejected("full".into())),
        ];
        let reply = Value::Array(vec![
            text("done"),
            text("outcomes"),
            Value::Array(
                cases
                    .iter()
                    .map(|((word, reason), _)| outcome(word, *reason))
                    .collect(),
            ),
        ]);
        assert_eq!(
            ApplyReply::from_redis_value(reply).unwrap(),
            ApplyReply::Done {
                outcomes: cases.into_iter().map(|(_, outcome)| outcome).collect()
            }
        );
        for bad in [
            outcome("exploded", None),
            outcome("ignored", None),
            outcome("applied", Some("twice")),
            text("applied"),
        ] {
            assert!(Outcome::from_reply(&bad).is_err(), "{bad:?}");
        }
        let not_done = Value::Array(vec![text("outcomes"), Value::Array(vec![])]);
        assert!(ApplyReply::from_redis_value(not_done).is_err());
        let not_a_list = Value::Array(vec![text("done"), text("outcomes"), text("applied")]);
        assert!(ApplyReply::from_redis_value(not_a_list).is_err());
    }
}
