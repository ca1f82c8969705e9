//! The live boards' hourly snapshots (`snapshot.lua`): the top K rows of each last-24h,
//! last-7d and trending board, by seats and by sell-through, overall and per live genre, so
//! that a read shows how each row moved since (`compare.lua`). The tick runs a round once an
//! hour, in calls of about half a millisecond; the live genres it walks are those a payment
//! counted on within the last week (`windows.lua` names them in the live-genres set).

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};
use serde_json::json;

use super::keys::{Board, Order};
use super::period::Period;
use super::rankings::{Rankings, BOARDS_LUA};
use crate::clock::Clock;
use crate::error::Error;
use crate::ids::Genre;
use crate::store::{assemble, lua_script, NamedScript, ScriptCall, Tagged};

pub(super) static SNAPSHOT: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&[BOARDS_LUA], include_str!("snapshot.lua")))),
    &["DETAILS", "PAGES", "STATE", "GENRES"],
    &["now", "top", "half", "budget", "slots"],
);

/// Rows one snapshot call may copy, a board counting 10 more for its own commands: about half
/// a millisecond (the bench measures some 4 µs a row and 30 µs a board). A call copies at
/// least one board: at the most K, 100 rows and as many tied with the 100th, under 1 ms.
pub const SNAPSHOT_BUDGET: u32 = 100;

/// Most snapshot calls per tick (a round of about 1 000 genres an hour at the default K); a
/// round that needs more goes on in the next tick.
pub const SNAPSHOT_CALLS: u32 = 100;

/// The live boards a round snapshots per genre, in order: each live period by seats and by
/// sell-through, but trending by seats only (a decayed score has no rate).
const SLOTS: [(Period, Order); 5] = [
    (Period::Last24h, Order::Seats),
    (Period::Last24h, Order::Rate),
    (Period::Last7d, Order::Seats),
    (Period::Last7d, Order::Rate),
    (Period::Trending, Order::Seats),
];

/// What `snapshot.lua` answers: the boards snapshotted, and whether the round is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SnapshotReply {
    Done { boards: u64 },
    More { boards: u64 },
}

impl FromRedisValue for SnapshotReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("snapshot", &v, |r| match r.tag() {
            "done" => Ok(SnapshotReply::Done {
                boards: r.number("boards")?,
            }),
            "more" => Ok(SnapshotReply::More {
                boards: r.number("boards")?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

/// What a tick's snapshot calls did: boards snapshotted, calls, and whether the round goes
/// on in the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshots {
    pub boards: u64,
    pub calls: u32,
    pub more: bool,
}

impl Rankings {
    /// The snapshot of the live `period`'s board ranked by `order`, overall or for `genre`.
    pub fn snapshot_key(&self, period: Period, order: Order, genre: Option<&Genre>) -> String {
        let name = format!("snapshot:{period}:{}", order.as_str());
        match genre {
            None => self.key(&name),
            Some(genre) => self.key(&format!("{name}:genre:{genre}")),
        }
    }

    /// The live genres: those a payment counted on within the last week.
    pub(super) fn live_genres_key(&self) -> String {
        self.key("live-genres")
    }

    /// The round's state: the hour it started in, whether it is done, and where it stands.
    fn snapshot_state_key(&self) -> String {
        self.key("snapshot-round")
    }

    /// Per slot, the overall board's key at `now`, its snapshot's key and whether it is the
    /// trending board; a genre's keys are these with `:genre:<genre>` after them.
    fn snapshot_slots(&self, now: chrono::DateTime<chrono::Utc>) -> serde_json::Value {
        SLOTS
            .iter()
            .map(|&(period, order)| {
                let board: Board = self.board_at(period, now, None);
                let key = self.ranked_key(&board, order);
                json!([
                    key,
                    self.snapshot_key(period, order, None),
                    period == Period::Trending
                ])
            })
            .collect()
    }

    /// One snapshot call at `now` (ms).
    pub(crate) fn snapshot_call(&self, now_ms: i64) -> Result<ScriptCall, Error> {
        let now = chrono::DateTime::from_timestamp_millis(now_ms)
            .ok_or_else(|| Error::Internal(format!("a clock at {now_ms} ms")))?;
        let mut call = ScriptCall::of(&SNAPSHOT);
        call.named_key("DETAILS", self.details_key())
            .named_key("PAGES", self.page_cache_key())
            .named_key("STATE", self.snapshot_state_key())
            .named_key("GENRES", self.live_genres_key())
            .named("now", now_ms)
            .named("top", self.settings.snapshot_top)
            .named("half", self.trend().half_life_ms)
            .named("budget", SNAPSHOT_BUDGET)
            .named("slots", self.snapshot_slots(now).to_string());
        Ok(call)
    }

    /// The tick's last part: snapshot calls while the hour's round is not done, up to
    /// [`SNAPSHOT_CALLS`]. A round starts in the first call of an hour after the last one
    /// ended; in the rest of that hour the call finds nothing to do.
    pub async fn snapshot(&self, clock: &dyn Clock) -> Result<Snapshots, Error> {
        let mut done = Snapshots {
            boards: 0,
            calls: 0,
            more: true,
        };
        while done.more && done.calls < SNAPSHOT_CALLS {
            let (boards, more) = match self.call(self.snapshot_call(clock.now_ms())?).await? {
                SnapshotReply::Done { boards } => (boards, false),
                SnapshotReply::More { boards } => (boards, true),
            };
            done.boards += boards;
            done.calls += 1;
            done.more = more;
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::SnapshotReply;
    use redis::{FromRedisValue, Value};

    fn reply(tag: &str, fields: &[(&str, Value)]) -> Value {
        let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let mut items = vec![text(tag)];
        for (name, value) in fields {
            items.extend([text(name), value.clone()]);
        }
        Value::Array(items)
    }

    #[test]
    fn each_snapshot_answer_decodes_into_its_variant() {
        let decode = SnapshotReply::from_redis_value;
        assert_eq!(
            decode(reply("done", &[("boards", Value::Int(0))])).unwrap(),
            SnapshotReply::Done { boards: 0 }
        );
        assert_eq!(
            decode(reply("more", &[("boards", Value::Int(5))])).unwrap(),
            SnapshotReply::More { boards: 5 }
        );
        assert!(decode(reply("more", &[])).is_err());
        assert!(decode(reply("paused", &[("boards", Value::Int(5))])).is_err());
        assert!(decode(reply("more", &[("boards", Value::Array(vec![]))])).is_err());
        assert!(decode(Value::Array(vec![Value::Int(5), Value::Int(1)])).is_err());
    }
}
