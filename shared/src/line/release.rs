//! A paid session's end on the striped line: one small script on the paying buyer's stripe
//! (`release.lua`: what it ends depends on what is there), staged into the caller's round
//! trip. Its reply is decoded here.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::buyer::{score_of, ticket_of};
use super::handle::Line;
use super::shape::ms;
use crate::ids::{PaymentId, UserId};
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged, Tagged};

/// The release; its keys and arguments, named as `release.lua` binds them.
pub(super) static RELEASE: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("release.lua"))),
    &["ACTIVE", "MARK", "PAID"],
    &[
        "user",
        "now",
        "paid_at",
        "paid_score",
        "skew_ms",
        "session_ms",
        "remember_s",
        "keep_ms",
    ],
);

/// What a payment did to its buyer's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Released {
    /// It ended the session of the place whose token carries `ticket`.
    Ended { ticket: u64 },
    /// It ended nothing: a redelivery, a future-dated payment, no live session, or another
    /// session than the one paid for.
    Kept,
}

/// `release.lua`'s reply: `ended` with the place's `score`, or `kept`.
impl FromRedisValue for Released {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("release", &v, |r| match r.tag() {
            "ended" => Ok(Released::Ended {
                ticket: ticket_of(r.number::<f64>("score")? as i64),
            }),
            "kept" => Ok(Released::Kept),
            _ => Err(r.unknown()),
        })
    }
}

/// A payment as the line's release takes it.
pub struct Payment<'a> {
    pub user: &'a UserId,
    pub id: &'a PaymentId,
    /// The producer's `completedAt` (ms): bounded by the server's clock, never trusted alone.
    pub paid_at: i64,
    /// The ticket of the session paid for, when the event names it.
    pub ticket: Option<u64>,
}

impl Line {
    /// Stages ending the session `payment` paid for, at `now` (ms), in `batch`: remembered
    /// for `remember`, refused `skew` or more ahead of `now`.
    pub fn stage_release(
        &self,
        batch: &mut Batch,
        payment: &Payment<'_>,
        now: i64,
        remember: Duration,
        skew: Duration,
    ) -> Staged<Released> {
        let keys = self.keys(self.stripe_of(payment.user));
        let mut call = ScriptCall::of(&RELEASE);
        call.named_key("ACTIVE", &keys.active)
            .named_key("MARK", keys.mark(payment.user.as_str()))
            .named_key("PAID", keys.paid(payment.id.as_str()))
            .named("user", payment.user.as_str())
            .named("now", now)
            .named("paid_at", payment.paid_at)
            .named(
                "paid_score",
                payment
                    .ticket
                    .map(|ticket| score_of(ticket).to_string())
                    .unwrap_or_default(),
            )
            .named("skew_ms", skew.as_millis() as u64)
            .named("session_ms", self.session_ms())
            .named("remember_s", remember.as_secs().max(1))
            .named("keep_ms", ms(self.shape.keep));
        batch.stage(call)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_release_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("release.lua"), &super::RELEASE);
    }

    #[test]
    fn each_release_answer_decodes_into_its_variant() {
        use super::super::buyer::{score_of, ticket_of};
        use super::Released;
        use crate::store::test_reply as reply;
        use redis::FromRedisValue;
        let decode = |items: &[&str]| Released::from_redis_value(reply(items));
        let score = score_of(41).to_string();
        assert_eq!(
            decode(&["ended", "score", &score]).unwrap(),
            Released::Ended {
                ticket: ticket_of(score_of(41))
            }
        );
        assert_eq!(decode(&["kept"]).unwrap(), Released::Kept);
        assert!(decode(&["kept", "0"]).is_err());
        assert!(decode(&["ended"]).is_err());
    }
}
