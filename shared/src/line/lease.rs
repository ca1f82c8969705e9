//! The promoter's lease on a line: one tick writer at a time. A promoter takes or renews the
//! lease before each tick, and the tick's writes carry the lease's fence: each stripe keeps the
//! highest fence it has seen and refuses a lower one, so a promoter that paused past its lease
//! and resumes changes nothing a newer one has written. The lease lives under the queue's own
//! tag, `{l:<queue>}`, apart from every stripe's.

use std::sync::LazyLock;
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::fence::Fence;
use super::handle::Line;
use super::shape::ms;
use crate::error::Error;
use crate::store::{lua_script, NamedScript, ScriptCall, Tagged};

/// The lease; its keys and arguments, named as `lease.lua` binds them.
pub(super) static LEASE: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("lease.lua"))),
    &["LEASE", "FENCE"],
    &["holder", "ttl_ms", "keep_ms"],
);

/// What asking for the lease gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lease {
    /// The caller holds the lease (taken now, or renewed) with this fence.
    Granted(Fence),
    /// Another holder has it for `for_ms` more.
    Held { for_ms: i64 },
}

/// `lease.lua`'s reply: `taken` or `renewed` with the `fence`, or `held` with `for_ms`.
impl FromRedisValue for Lease {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("lease", &v, |r| match r.tag() {
            "taken" | "renewed" => Ok(Lease::Granted(Fence(r.number("fence")?))),
            "held" => Ok(Lease::Held {
                for_ms: r.number("for_ms")?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

impl Line {
    /// Takes or renews the line's lease for `holder`, for `ttl`.
    pub async fn lease(&self, holder: &str, ttl: Duration) -> Result<Lease, Error> {
        let mut call = ScriptCall::of(&LEASE);
        call.named_key("LEASE", self.own_key("lease"))
            .named_key("FENCE", self.own_key("fence"))
            .named("holder", holder)
            .named("ttl_ms", ms(ttl))
            // The fence outlives every stripe's copy of it, so it never runs backwards.
            .named("keep_ms", 2 * ms(self.shape.keep));
        Ok(self.conn.invoke(call).await?)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_lease_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("lease.lua"), &super::LEASE);
    }

    #[test]
    fn each_lease_answer_decodes_into_its_variant() {
        use super::{Fence, Lease};
        use crate::store::test_reply as reply;
        use redis::FromRedisValue;
        let decode = |items: &[&str]| Lease::from_redis_value(reply(items));
        assert_eq!(
            decode(&["taken", "fence", "3"]).unwrap(),
            Lease::Granted(Fence(3))
        );
        assert_eq!(
            decode(&["renewed", "fence", "3"]).unwrap(),
            Lease::Granted(Fence(3))
        );
        assert_eq!(
            decode(&["held", "for_ms", "2500"]).unwrap(),
            Lease::Held { for_ms: 2500 }
        );
        assert!(decode(&["held", "fence", "3"]).is_err());
        assert!(decode(&["taken", "3"]).is_err());
    }
}
