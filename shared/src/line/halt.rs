//! Stopping a line's admissions at once: sold out, paused, or a health level of 0. The call
//! that halts writes every stripe before it returns, and every admission checks its own
//! stripe's halt in the same script that admits, so no admission follows the call. Resuming
//! clears every stripe; the health's halt is cleared alone (`clear.lua`) once the level rises.

use std::fmt;
use std::sync::LazyLock;

use super::handle::Line;
use super::shape::ms;
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall};

/// Clearing one reason's halt on a stripe; its key and argument, named as `clear.lua` binds
/// them.
static CLEAR: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("clear.lua"))),
    &["HALT"],
    &["why"],
);

/// Why a line admits nobody.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Halt {
    SoldOut,
    Paused,
    /// The booking system's health level is 0.
    Unhealthy,
}

impl Halt {
    pub fn as_str(self) -> &'static str {
        match self {
            Halt::SoldOut => "sold-out",
            Halt::Paused => "paused",
            Halt::Unhealthy => "unhealthy",
        }
    }

    /// The halt a stripe's `halt` key names.
    pub fn parse(text: &str) -> Option<Halt> {
        [Halt::SoldOut, Halt::Paused, Halt::Unhealthy]
            .into_iter()
            .find(|h| h.as_str() == text)
    }
}

impl fmt::Display for Halt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Line {
    /// Halts admissions for `why`: every stripe says so once this returns.
    pub async fn halt(&self, why: Halt) -> Result<(), Error> {
        let mut batch = Batch::new();
        self.stage_halt(&mut batch, why);
        self.conn.send(&batch).await?;
        Ok(())
    }

    /// Stages halting admissions for `why` on every stripe in `batch`, so that a caller's
    /// round trip carries it: every stripe says so once the batch has been sent. The health's
    /// halt never takes the place of another: a sold-out or paused stripe stays so.
    pub fn stage_halt(&self, batch: &mut Batch, why: Halt) {
        for keys in &self.stripe_keys {
            let mut set = redis::cmd("SET");
            set.arg(&keys.halt)
                .arg(why.as_str())
                .arg("PX")
                .arg(ms(self.shape.keep));
            if why == Halt::Unhealthy {
                set.arg("NX");
            }
            batch.stage_command::<Option<String>>(&keys.halt, set);
        }
    }

    /// Clears the halt for `why` on every stripe that halted for it, and no other: one small
    /// script a stripe, in one round trip.
    pub async fn clear(&self, why: Halt) -> Result<(), Error> {
        let mut batch = Batch::new();
        for keys in &self.stripe_keys {
            let mut call = ScriptCall::of(&CLEAR);
            call.named_key("HALT", &keys.halt)
                .named("why", why.as_str());
            batch.stage::<u64>(call);
        }
        self.conn.send(&batch).await?;
        Ok(())
    }

    /// Why `user`'s stripe admits nobody, by the published state this function holds fresh
    /// at `now` (a poll reads it when it holds none): as of the last tick.
    pub fn halted_for(&self, user: &UserId, now: i64) -> Option<Halt> {
        self.published_for(user, now)?
            .halted
            .as_deref()
            .and_then(Halt::parse)
    }

    /// Lets the line admit again: clears every stripe's halt.
    pub async fn resume(&self) -> Result<(), Error> {
        let mut batch = Batch::new();
        for keys in &self.stripe_keys {
            batch.stage_command::<u64>(&keys.halt, redis::cmd("DEL").arg(&keys.halt).clone());
        }
        self.conn.send(&batch).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clear_binds_its_key_and_argument_as_named() {
        crate::store::bindings::assert_binds(include_str!("clear.lua"), &super::CLEAR);
    }
}
