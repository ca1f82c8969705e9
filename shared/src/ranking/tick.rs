//! The rankings' tick: the fold (`fold_tick.lua`) of what the apply calls left in the fold
//! queue, the roll of the rolling windows (`roll.lua`), taking the buckets that left a window
//! off its boards, then the live boards' hourly snapshots (`snapshot.rs`), each within its
//! budget per call and per tick. The fold's and the roll's answers, a tag and named fields,
//! decode here (`FoldReply`, `RollReply`).

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};
use serde_json::json;

use super::rankings::{Rankings, BOARDS_LUA, FOLD_PRELUDES};
use super::windows::{TICK_CALLS, TICK_FIELDS, TICK_STEPS};
use crate::clock::Clock;
use crate::error::Error;
use crate::store::{assemble, lua_script, Batch, NamedScript, ScriptCall, Staged, Tagged};

/// The tick's fold: the board helpers, the fold, and its one call, which also unlinks a
/// payment record group in its last hour. Its last keys, the watermark hash and the record
/// index, are reached through the window templates and the records' settings, given for a
/// cluster's routing.
pub(super) static FOLD: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&FOLD_PRELUDES, include_str!("fold_tick.lua")))),
    &["DETAILS", "PAGES", "FOLD", "named…"],
    &["TTL", "WIN", "REC", "BUDGET"],
);

/// The tick: the board helpers, then the roll of the windows.
pub(super) static ROLL: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&[BOARDS_LUA], include_str!("roll.lua")))),
    &["DETAILS", "PAGES", "WATERMARKS"],
    &["cfg", "budget", "steps"],
);

/// Board entries one fold call of the tick may write: about half a millisecond.
pub const FOLD_BUDGET_TICK: u32 = 80;

/// Most fold calls per tick (160 000 board entries a minute beyond what the apply calls
/// fold); what is left waits for the next tick.
pub const FOLD_CALLS: u32 = 2000;

/// What `roll.lua` answers: the bucket fields taken off, and whether there is more to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RollReply {
    Done { fields: u64 },
    More { fields: u64 },
}

impl FromRedisValue for RollReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("roll", &v, |r| match r.tag() {
            "done" => Ok(RollReply::Done {
                fields: r.number("fields")?,
            }),
            "more" => Ok(RollReply::More {
                fields: r.number("fields")?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

/// The bucket fields a roll call's `reply` says it took off, for the bench, which sends the
/// call itself ([`crate::bench_support`]).
#[cfg(feature = "bench")]
pub(crate) fn roll_fields(reply: Value) -> Result<u64, ParsingError> {
    match RollReply::from_redis_value(reply)? {
        RollReply::Done { fields } | RollReply::More { fields } => Ok(fields),
    }
}

/// What `fold_tick.lua` answers: the entries folded and set aside, and, while the fold queue
/// is not empty, the entries left in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FoldReply {
    Done {
        folded: u64,
        rejected: u64,
    },
    More {
        folded: u64,
        left: u64,
        rejected: u64,
    },
}

impl FromRedisValue for FoldReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("fold", &v, |r| match r.tag() {
            "done" => Ok(FoldReply::Done {
                folded: r.number("folded")?,
                rejected: r.number("rejected")?,
            }),
            "more" => Ok(FoldReply::More {
                folded: r.number("folded")?,
                left: r.number("left")?,
                rejected: r.number("rejected")?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

/// What a tick's fold did: payments and refunds folded onto the boards, script calls,
/// entries left in the fold queue, and entries set aside as unreadable (kept for the dedupe
/// window in `fold:rejected`; never written by this version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    pub folded: u64,
    pub calls: u32,
    pub left: u64,
    pub rejected: u64,
}

/// What a tick did: payments and refunds folded onto the boards and those left in the fold
/// queue, bucket fields taken off the rolling boards, live boards snapshotted, script calls,
/// and whether work was left for the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub folded: u64,
    pub fold_left: u64,
    pub fold_rejected: u64,
    pub processed: u64,
    pub snapshots: u64,
    pub calls: u32,
    pub more: bool,
}

impl Tick {
    /// The handler's answer: `{"folded", "foldLeft", "foldRejected", "processed",
    /// "snapshots", "calls", "more"}`.
    pub fn to_json(self) -> serde_json::Value {
        json!({"folded": self.folded, "foldLeft": self.fold_left,
               "foldRejected": self.fold_rejected, "processed": self.processed,
               "snapshots": self.snapshots, "calls": self.calls, "more": self.more})
    }
}

impl Rankings {
    /// Folds what the apply calls left in the fold queue onto the boards (fold calls while
    /// entries are left, up to [`FOLD_CALLS`]), then takes the buckets that left each
    /// rolling window off its boards: one script call, and another while the last says
    /// there is more, up to [`TICK_CALLS`]; then, once neither left work for the next tick,
    /// goes on with the hour's round of snapshots ([`Rankings::snapshot`]) at `clock`'s time.
    /// Each call is one round trip.
    pub async fn tick(&self, clock: &dyn Clock) -> Result<Tick, Error> {
        let mut tick = Tick {
            folded: 0,
            fold_left: 0,
            fold_rejected: 0,
            processed: 0,
            snapshots: 0,
            calls: 0,
            more: false,
        };
        let fold = self.fold().await?;
        tick.folded = fold.folded;
        tick.fold_left = fold.left;
        tick.fold_rejected = fold.rejected;
        tick.calls = fold.calls;
        let mut more = true;
        let mut roll_calls = 0;
        while more && roll_calls < TICK_CALLS {
            let (fields, now_more) = match self.call(self.roll_call()).await? {
                RollReply::Done { fields } => (fields, false),
                RollReply::More { fields } => (fields, true),
            };
            tick.processed += fields;
            roll_calls += 1;
            more = now_more;
        }
        tick.calls += roll_calls;
        tick.more = fold.left > 0 || more;
        // A snapshot copies the boards as they stand: only once they hold every payment
        // recorded and no bucket that has left its window.
        if !tick.more {
            let snapshots = self.snapshot(clock).await?;
            tick.snapshots = snapshots.boards;
            tick.calls += snapshots.calls;
            tick.more = snapshots.more;
        }
        Ok(tick)
    }

    /// The tick's first part: fold calls while the fold queue holds entries, up to
    /// [`FOLD_CALLS`].
    pub async fn fold(&self) -> Result<Fold, Error> {
        let mut fold = Fold {
            folded: 0,
            calls: 0,
            left: 1,
            rejected: 0,
        };
        while fold.left > 0 && fold.calls < FOLD_CALLS {
            let (folded, left, rejected) = match self.call(self.fold_call()).await? {
                FoldReply::Done { folded, rejected } => (folded, 0, rejected),
                FoldReply::More {
                    folded,
                    left,
                    rejected,
                } => (folded, left, rejected),
            };
            fold.folded += folded;
            fold.calls += 1;
            fold.left = left;
            fold.rejected = rejected;
        }
        Ok(fold)
    }

    /// One script call, through the batch path the apply script takes: no second copy of
    /// the single-call path.
    pub(super) async fn call<T: FromRedisValue>(&self, call: ScriptCall) -> Result<T, Error> {
        let mut batch = Batch::new();
        let staged: Staged<T> = batch.stage(call);
        Ok(staged.read(&self.conn.send(&batch).await?)?)
    }

    /// One call of the tick's fold.
    pub(crate) fn fold_call(&self) -> ScriptCall {
        let mut invocation = ScriptCall::of(&FOLD);
        invocation
            .named_key("DETAILS", self.details_key())
            .named_key("PAGES", self.page_cache_key())
            .named_key("FOLD", self.fold_key())
            .named_key("named", self.windows_state_key())
            .named_key("named", self.records_index_key())
            .named("TTL", self.settings.dedupe.as_secs())
            .named("WIN", self.window_templates().to_string())
            .named("REC", self.records_config().to_string())
            .named("BUDGET", FOLD_BUDGET_TICK);
        invocation
    }

    /// One tick script call.
    pub(crate) fn roll_call(&self) -> ScriptCall {
        let mut invocation = ScriptCall::of(&ROLL);
        invocation
            .named_key("DETAILS", self.details_key())
            .named_key("PAGES", self.page_cache_key())
            .named_key("WATERMARKS", self.windows_state_key())
            .named("cfg", self.window_templates().to_string())
            .named("budget", TICK_FIELDS)
            .named("steps", TICK_STEPS);
        invocation
    }
}

#[cfg(test)]
mod tests {
    use super::{FoldReply, RollReply};
    use crate::store::test_reply as reply;
    use redis::{FromRedisValue, Value};

    #[test]
    fn each_fold_and_roll_answer_decodes_into_its_variant() {
        let fold = |items: &[&str]| FoldReply::from_redis_value(reply(items));
        assert_eq!(
            fold(&["done", "folded", "3", "rejected", "0"]).unwrap(),
            FoldReply::Done {
                folded: 3,
                rejected: 0
            }
        );
        assert_eq!(
            fold(&["more", "folded", "8", "left", "5", "rejected", "1"]).unwrap(),
            FoldReply::More {
                folded: 8,
                left: 5,
                rejected: 1
            }
        );
        let roll = |items: &[&str]| RollReply::from_redis_value(reply(items));
        assert_eq!(
            roll(&["done", "fields", "0"]).unwrap(),
            RollReply::Done { fields: 0 }
        );
        assert_eq!(
            roll(&["more", "fields", "400"]).unwrap(),
            RollReply::More { fields: 400 }
        );
        for bad in [
            &["more", "folded", "8", "rejected", "1"][..],
            &["done", "folded", "-1", "rejected", "0"],
            &["3", "0", "0"],
        ] {
            assert!(fold(bad).is_err(), "{bad:?}");
        }
        for bad in [
            &["done"][..],
            &["finished", "fields", "1"],
            &["done", "fields", "x"],
        ] {
            assert!(roll(bad).is_err(), "{bad:?}");
        }
        assert!(
            RollReply::from_redis_value(Value::Array(vec![Value::Int(1), Value::Int(0)])).is_err()
        );
    }
}
