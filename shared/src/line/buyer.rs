//! A buyer's calls on the striped line, each one round trip to the buyer's own stripe: the
//! join (`join.lua`: the place depends on what is there), the poll and the leave (plain
//! commands, pipelined). Each reply is decoded here into one named shape per outcome.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::{ms, Line, Stripe};
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall};

/// The join; its keys and arguments, named as `join.lua` binds them.
pub(super) static JOIN: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("join.lua"))),
    &["LINE", "ACTIVE", "SEGMENTS", "PUBLISHED", "SEEN"],
    &["user", "now", "segment_ms", "presence_ms", "keep_ms"],
);

/// What a join did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// A new place, scored `score` (ms) on `stripe`.
    New { stripe: Stripe, score: i64 },
    /// The buyer was already in line: its place, unchanged.
    Already { stripe: Stripe, score: i64 },
    /// The buyer holds a session until `until` (ms).
    Active { stripe: Stripe, until: i64 },
}

/// `join.lua`'s reply: `{'joined' | 'waiting' | 'active', ms}`.
enum JoinReply {
    Joined(i64),
    Waiting(i64),
    Active(i64),
}

impl FromRedisValue for JoinReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (outcome, ms): (String, String) = FromRedisValue::from_redis_value(v)?;
        let ms = ms
            .parse::<f64>()
            .map_err(|_| ParsingError::from(format!("join: not a score: {ms}")))?
            as i64;
        match outcome.as_str() {
            "joined" => Ok(JoinReply::Joined(ms)),
            "waiting" => Ok(JoinReply::Waiting(ms)),
            "active" => Ok(JoinReply::Active(ms)),
            other => Err(ParsingError::from(format!("join: unknown outcome {other}"))),
        }
    }
}

/// Where a poll found its buyer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// In line at `position` (1 is next), exact as of the last tick.
    Waiting { position: u64 },
    /// In line, in a segment the tick has not published yet: `on_stripe` is its place on its
    /// own stripe; its position comes with the next tick.
    Unplaced { on_stripe: u64 },
    /// Admitted: a session until `until` (ms).
    Active { until: i64 },
    /// Neither in line nor in a session: it left, was passed over as absent, or its session
    /// ended.
    Gone,
}

/// What a leave removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// A place in line.
    Place,
    /// A session.
    Session,
    /// Nothing: the buyer held neither.
    Nothing,
}

impl Line {
    /// `user` joins at `now` (ms), or finds the place or session it already holds.
    pub async fn join(&self, user: &UserId, now: i64) -> Result<Joined, Error> {
        let stripe = self.stripe_of(user);
        let keys = self.keys(stripe);
        let mut call = ScriptCall::of(&JOIN);
        call.named_key("LINE", &keys.line)
            .named_key("ACTIVE", &keys.active)
            .named_key("SEGMENTS", &keys.segments)
            .named_key("PUBLISHED", &keys.published)
            .named_key("SEEN", keys.seen(user.as_str()))
            .named("user", user.as_str())
            .named("now", now)
            .named("segment_ms", self.segment_ms())
            .named("presence_ms", ms(self.shape.presence))
            .named("keep_ms", ms(self.shape.keep));
        Ok(match self.conn.invoke(call).await? {
            JoinReply::Joined(score) => Joined::New { stripe, score },
            JoinReply::Waiting(score) => Joined::Already { stripe, score },
            JoinReply::Active(until) => Joined::Active { stripe, until },
        })
    }

    /// `user`'s standing at `now` (ms), for the place scored `score` that its join gave it;
    /// marks it present for the shape's presence. Four plain commands in one pipeline:
    /// the published figure of its segment, its rank on its stripe, its session, and the mark.
    pub async fn poll(&self, user: &UserId, score: i64, now: i64) -> Result<Standing, Error> {
        let keys = self.keys(self.stripe_of(user));
        let mut batch = Batch::new();
        let ahead = batch.stage_command::<Option<u64>>(
            &keys.published,
            redis::cmd("HGET")
                .arg(&keys.published)
                .arg(self.segment_of(score))
                .clone(),
        );
        let rank = batch.stage_command::<Option<u64>>(
            &keys.line,
            redis::cmd("ZRANK")
                .arg(&keys.line)
                .arg(user.as_str())
                .clone(),
        );
        let until = batch.stage_command::<Option<f64>>(
            &keys.active,
            redis::cmd("ZSCORE")
                .arg(&keys.active)
                .arg(user.as_str())
                .clone(),
        );
        let seen = keys.seen(user.as_str());
        batch.stage_command::<()>(
            &seen,
            redis::cmd("SET")
                .arg(&seen)
                .arg(1)
                .arg("PX")
                .arg(ms(self.shape.presence))
                .clone(),
        );
        let replies = self.conn.send(&batch).await?;
        Ok(
            match (
                rank.read(&replies)?,
                ahead.read(&replies)?,
                until.read(&replies)?,
            ) {
                (Some(rank), Some(ahead), _) => Standing::Waiting {
                    position: ahead + rank + 1,
                },
                (Some(rank), None, _) => Standing::Unplaced {
                    on_stripe: rank + 1,
                },
                (None, _, Some(until)) if until as i64 > now => Standing::Active {
                    until: until as i64,
                },
                (None, _, _) => Standing::Gone,
            },
        )
    }

    /// `user` gives up its place or its session: two plain commands in one pipeline.
    pub async fn leave(&self, user: &UserId) -> Result<Left, Error> {
        let keys = self.keys(self.stripe_of(user));
        let mut batch = Batch::new();
        let place = batch.stage_command::<u64>(
            &keys.line,
            redis::cmd("ZREM")
                .arg(&keys.line)
                .arg(user.as_str())
                .clone(),
        );
        let session = batch.stage_command::<u64>(
            &keys.active,
            redis::cmd("ZREM")
                .arg(&keys.active)
                .arg(user.as_str())
                .clone(),
        );
        let replies = self.conn.send(&batch).await?;
        Ok(
            match (place.read(&replies)? > 0, session.read(&replies)? > 0) {
                (true, _) => Left::Place,
                (false, true) => Left::Session,
                (false, false) => Left::Nothing,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_join_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("join.lua"), &super::JOIN);
    }
}
