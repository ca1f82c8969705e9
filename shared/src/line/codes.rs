//! The presale access codes on the striped line. Each code (its SHA-256) lies on a stripe
//! chosen from its hash, so the codes spread over every stripe. A join with a code binds it in
//! one small script on that stripe (`bind.lua`), then joins on the buyer's own stripe. Minting
//! reads every stripe's count first, on the operator's path only. Each reply is decoded here.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::access::ACCESS_CHUNK;
use super::handle::Line;
use super::keys::Stripe;
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged};

/// The binding; its keys and arguments, named as `bind.lua` binds them.
pub(super) static BIND: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("bind.lua"))),
    &["CODES"],
    &["hash", "user", "op"],
);

/// What binding a code to a buyer found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The code was free: it is the buyer's now.
    New,
    /// The code was the buyer's already.
    Again,
    /// No such code.
    Unknown,
    /// Another buyer holds the code.
    Taken,
}

impl FromRedisValue for Bound {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let outcome: String = FromRedisValue::from_redis_value(v)?;
        match outcome.as_str() {
            "new" => Ok(Bound::New),
            "again" => Ok(Bound::Again),
            "unknown" => Ok(Bound::Unknown),
            "taken" => Ok(Bound::Taken),
            other => Err(ParsingError::from(format!("bind: unknown outcome {other}"))),
        }
    }
}

/// What letting a code go found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unbound {
    /// The code is free again.
    Freed,
    /// The code was not the buyer's: it stays as it was.
    Kept,
}

impl FromRedisValue for Unbound {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let outcome: String = FromRedisValue::from_redis_value(v)?;
        match outcome.as_str() {
            "unbound" => Ok(Unbound::Freed),
            "kept" => Ok(Unbound::Kept),
            other => Err(ParsingError::from(format!(
                "unbind: unknown outcome {other}"
            ))),
        }
    }
}

impl Line {
    /// The stripe a code lies on, from its hash (64 hex digits): its first eight digits.
    fn code_stripe(&self, hash: &str) -> Stripe {
        let head = hash
            .get(..8)
            .and_then(|digits| u32::from_str_radix(digits, 16).ok())
            .unwrap_or(0);
        Stripe((head % u32::from(self.shape.stripes.max(1))) as u16)
    }

    /// How many codes the line holds: one pipeline over every stripe (`HLEN`).
    async fn code_count(&self) -> Result<u64, Error> {
        let mut batch = Batch::new();
        let counts: Vec<Staged<u64>> = self
            .stripe_keys
            .iter()
            .map(|keys| {
                batch.stage_command(&keys.codes, redis::cmd("HLEN").arg(&keys.codes).clone())
            })
            .collect();
        let replies = self.conn.send(&batch).await?;
        let mut held = 0;
        for count in &counts {
            held += count.read(&replies)?;
        }
        Ok(held)
    }

    /// Stores fresh codes by their `hashes`, unbound, unless the line would then hold more
    /// than `most`; returns how many it holds, or `None` when refused. Two round trips: the
    /// counts, then the codes, so two mints at once may pass `most` by the second's codes.
    pub async fn mint_codes(&self, hashes: &[String], most: u64) -> Result<Option<u64>, Error> {
        let held = self.code_count().await?;
        let after = held + hashes.len() as u64;
        if after > most {
            return Ok(None);
        }
        let mut by: std::collections::BTreeMap<Stripe, Vec<&str>> = Default::default();
        for hash in hashes {
            by.entry(self.code_stripe(hash)).or_default().push(hash);
        }
        let mut batch = Batch::new();
        for (stripe, hashes) in by {
            let keys = self.keys(stripe);
            for chunk in hashes.chunks(ACCESS_CHUNK) {
                let mut cmd = redis::cmd("HSET");
                cmd.arg(&keys.codes);
                for hash in chunk {
                    cmd.arg(*hash).arg("");
                }
                batch.stage_command::<u64>(&keys.codes, cmd);
            }
        }
        if !batch.is_empty() {
            self.conn.send(&batch).await?;
        }
        Ok(Some(after))
    }

    /// Binds the code hashed `hash` to `user`: one call to the code's stripe.
    pub async fn bind_code(&self, hash: &str, user: &UserId) -> Result<Bound, Error> {
        self.code_call(hash, user, "bind").await
    }

    /// Lets the code hashed `hash` go again, if `user` holds it: its join took no new place.
    pub async fn unbind_code(&self, hash: &str, user: &UserId) -> Result<Unbound, Error> {
        self.code_call(hash, user, "unbind").await
    }

    async fn code_call<T: FromRedisValue>(
        &self,
        hash: &str,
        user: &UserId,
        op: &str,
    ) -> Result<T, Error> {
        let keys = self.keys(self.code_stripe(hash));
        let mut call = ScriptCall::of(&BIND);
        call.named_key("CODES", &keys.codes)
            .named("hash", hash)
            .named("user", user.as_str())
            .named("op", op);
        Ok(self.conn.invoke(call).await?)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_binding_binds_what_rust_names() {
        crate::store::bindings::assert_binds(include_str!("bind.lua"), &super::BIND);
    }
}
