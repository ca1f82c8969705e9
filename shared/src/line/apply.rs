//! The tick's work on one stripe (`apply.lua`): the walked places, present ones admitted and
//! absent ones passed over, in calls of at most [`APPLY_CHUNK`]; the last call also seals the
//! stripe's segments, takes off its empty ones, publishes what its polls read and sets its
//! allowance. Each call is refused, with nothing written, under an older fence or a halt.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::allowance::ALLOW_FOR;
use super::fence::Fence;
use super::halt::Halt;
use super::keys::StripeKeys;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged, Tagged};

/// The tick's work on one stripe; its keys and arguments, named as `apply.lua` binds them.
pub(super) static APPLY: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("apply.lua"))),
    &[
        "LINE",
        "ACTIVE",
        "SEGMENTS",
        "SEALED",
        "PUBLISHED",
        "FENCE",
        "HALT",
        "ALLOW",
        "marks…",
    ],
    &[
        "now",
        "session_ms",
        "keep_ms",
        "sealed",
        "published",
        "fence",
        "walk_count",
        "empty_count",
        "allow",
        "allow_ms",
        "lists…",
    ],
);

/// The most places one call of `apply.lua` takes off the line, so that a call stays well under
/// a millisecond of Redis's time.
pub const APPLY_CHUNK: usize = 50;

/// `apply.lua`'s reply: `applied` with the users `admitted` and `dropped`, `fenced` with the
/// stripe's `fence`, or `halted` with `why`.
pub(super) enum ApplyReply {
    Applied {
        admitted: Vec<String>,
        dropped: Vec<String>,
    },
    Fenced(Fence),
    Halted(Option<Halt>),
}

impl FromRedisValue for ApplyReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("apply", &v, |r| match r.tag() {
            "applied" => Ok(ApplyReply::Applied {
                admitted: r.texts("admitted")?,
                dropped: r.texts("dropped")?,
            }),
            "fenced" => Ok(ApplyReply::Fenced(Fence(r.number("fence")?))),
            "halted" => Ok(ApplyReply::Halted(Halt::parse(&r.text("why")?))),
            _ => Err(r.unknown()),
        })
    }
}

/// One stripe's share of a tick, as `apply.lua` takes it.
pub(super) struct Apply<'a> {
    pub now: i64,
    pub session_ms: u64,
    pub keep_ms: u64,
    /// The instant the stripe's segments are sealed up to.
    pub seal_at: i64,
    /// What the stripe's polls read (JSON).
    pub published: String,
    pub fence: Fence,
    /// The stripe's walked places, in the walk's order.
    pub walk: &'a [String],
    /// The stripe's sealed segments that hold nobody.
    pub empty: &'a [i64],
    /// How far the stripe's allowance moves.
    pub grant: i64,
}

impl Apply<'_> {
    /// Stages the stripe's calls into `batch`, in order: the walk in chunks of at most
    /// [`APPLY_CHUNK`], the last with the seal, the empty segments, the published state and
    /// the allowance (one call when nothing is walked).
    pub(super) fn stage(&self, keys: &StripeKeys, batch: &mut Batch) -> Vec<Staged<ApplyReply>> {
        let chunks: Vec<&[String]> = if self.walk.is_empty() {
            vec![&[]]
        } else {
            self.walk.chunks(APPLY_CHUNK).collect()
        };
        let last = chunks.len() - 1;
        let mut staged = Vec::with_capacity(chunks.len());
        for (c, chunk) in chunks.into_iter().enumerate() {
            let closing = c == last;
            let mut call = ScriptCall::of(&APPLY);
            call.named_key("LINE", &keys.line)
                .named_key("ACTIVE", &keys.active)
                .named_key("SEGMENTS", &keys.segments)
                .named_key("SEALED", &keys.sealed)
                .named_key("PUBLISHED", &keys.published)
                .named_key("FENCE", &keys.fence)
                .named_key("HALT", &keys.halt)
                .named_key("ALLOW", &keys.allow);
            for user in chunk {
                call.named_key("marks", keys.mark(user));
            }
            call.named("now", self.now)
                .named("session_ms", self.session_ms)
                .named("keep_ms", self.keep_ms)
                .named(
                    "sealed",
                    if closing {
                        self.seal_at.to_string()
                    } else {
                        String::new()
                    },
                )
                .named(
                    "published",
                    if closing { self.published.as_str() } else { "" },
                )
                .named("fence", self.fence.0)
                .named("walk_count", chunk.len())
                .named("empty_count", if closing { self.empty.len() } else { 0 })
                .named("allow", if closing { self.grant } else { 0 })
                .named("allow_ms", super::shape::ms(ALLOW_FOR));
            for user in chunk {
                call.named("lists", user.as_str());
            }
            if closing {
                for segment in self.empty {
                    call.named("lists", *segment);
                }
            }
            staged.push(batch.stage(call));
        }
        staged
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_apply_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("apply.lua"), &super::APPLY);
    }

    #[test]
    fn each_apply_answer_decodes_into_its_variant() {
        use super::super::halt::Halt;
        use super::ApplyReply;
        use redis::{FromRedisValue, Value};
        let text = |s: &str| Value::BulkString(s.as_bytes().to_vec());
        let users = |names: &[&str]| Value::Array(names.iter().map(|n| text(n)).collect());
        let applied = Value::Array(vec![
            text("applied"),
            text("admitted"),
            users(&["ann", "ben"]),
            text("dropped"),
            users(&[]),
        ]);
        match ApplyReply::from_redis_value(applied).unwrap() {
            ApplyReply::Applied { admitted, dropped } => {
                assert_eq!(admitted, ["ann", "ben"]);
                assert!(dropped.is_empty());
            }
            _ => panic!("not applied"),
        }
        let fenced = Value::Array(vec![text("fenced"), text("fence"), Value::Int(7)]);
        assert!(matches!(
            ApplyReply::from_redis_value(fenced).unwrap(),
            ApplyReply::Fenced(super::Fence(7))
        ));
        let halted = Value::Array(vec![text("halted"), text("why"), text("sold-out")]);
        assert!(matches!(
            ApplyReply::from_redis_value(halted).unwrap(),
            ApplyReply::Halted(Some(Halt::SoldOut))
        ));
        let positional = Value::Array(vec![text("applied"), users(&["ann"]), users(&[])]);
        assert!(ApplyReply::from_redis_value(positional).is_err());
    }
}
