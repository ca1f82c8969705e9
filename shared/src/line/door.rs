//! The door on the striped line (docs/door.md): a challenge's serial, and the redemption of a
//! solved one, both on the buyer's own stripe. A challenge names its buyer, and a buyer's
//! stripe never changes, so serials need only be unique on a stripe: each stripe counts its
//! own. The join redeems a solution as it makes the place (`join.lua`): it sets the serial's
//! bit in the stripe's redemption bitmap, and refuses a serial whose bit is set.

use std::time::Duration;

use super::handle::Line;
use super::shape::ms;
use crate::door::SERIALS_PER_BITMAP;
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{Batch, Staged};

/// A window of the challenge count: a minute.
const WINDOW_MS: i64 = 60_000;

/// What a new arrival brings to the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pass {
    /// The queue asks for no challenge.
    Free,
    /// It asks for one, and none came.
    Absent,
    /// One came that does not hold.
    Bad,
    /// A solved challenge numbered `serial`, whose redemption is kept until `redeem_until`
    /// (ms).
    Solved { serial: u64, redeem_until: i64 },
}

impl Pass {
    /// `join.lua`'s `door` argument: '' free, 'absent', 'bad', or the serial.
    pub(super) fn as_arg(self) -> String {
        match self {
            Pass::Free => String::new(),
            Pass::Absent => "absent".into(),
            Pass::Bad => "bad".into(),
            Pass::Solved { serial, .. } => serial.to_string(),
        }
    }

    /// Which redemption bitmap the join is given: the serial's, or the first.
    pub(super) fn bitmap(self) -> u64 {
        match self {
            Pass::Solved { serial, .. } => serial / SERIALS_PER_BITMAP,
            _ => 0,
        }
    }

    /// When the redemption may expire (ms); 0 without a solved challenge.
    pub(super) fn redeem_until(self) -> i64 {
        match self {
            Pass::Solved { redeem_until, .. } => redeem_until,
            _ => 0,
        }
    }
}

/// Why the door turned a new arrival away: nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turned {
    /// No solved challenge came.
    Required,
    /// The one that came does not hold.
    Failed,
    /// Its challenge took a place already.
    Replayed,
}

/// A challenge's serial, and how many challenges a minute the line hands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Serial {
    pub serial: u64,
    /// The challenges the buyer's stripe handed out over the last minute (or the current
    /// one so far, when that is more), times the stripes: the line's arrivals, as its door
    /// sees them.
    pub per_minute: u64,
}

impl Line {
    /// The next challenge serial for `user` at `now` (ms), from its stripe's counter, kept
    /// `keep` past this call, and the rate of challenges. One pipeline of plain commands on
    /// the buyer's stripe.
    pub async fn door_serial(
        &self,
        user: &UserId,
        now: i64,
        keep: Duration,
    ) -> Result<Serial, Error> {
        let keys = self.keys(self.stripe_of(user));
        let window = now.div_euclid(WINDOW_MS);
        let (this, last) = (keys.challenges(window), keys.challenges(window - 1));
        let mut batch = Batch::new();
        let serial: Staged<u64> =
            batch.stage_command(&keys.door, redis::cmd("INCR").arg(&keys.door).clone());
        batch.stage_command::<u8>(
            &keys.door,
            redis::cmd("PEXPIRE").arg(&keys.door).arg(ms(keep)).clone(),
        );
        let so_far: Staged<u64> = batch.stage_command(&this, redis::cmd("INCR").arg(&this).clone());
        batch.stage_command::<u8>(
            &this,
            redis::cmd("PEXPIRE").arg(&this).arg(2 * WINDOW_MS).clone(),
        );
        let before: Staged<Option<u64>> =
            batch.stage_command(&last, redis::cmd("GET").arg(&last).clone());
        let replies = self.conn.send(&batch).await?;
        let elapsed = (now - window * WINDOW_MS).max(10_000) as u64;
        let current = so_far.read(&replies)? * WINDOW_MS as u64 / elapsed;
        let per_stripe = before.read(&replies)?.unwrap_or(0).max(current);
        Ok(Serial {
            serial: serial.read(&replies)?,
            per_minute: per_stripe * u64::from(self.shape.stripes.max(1)),
        })
    }
}

#[cfg(test)]
mod tests {
    /// The join keeps as many serials in a redemption bitmap as the key names say.
    #[test]
    fn join_knows_the_serials_per_redemption_bitmap() {
        let line = format!(
            "local SERIALS_PER_BITMAP = {}\n",
            crate::door::SERIALS_PER_BITMAP
        );
        assert!(include_str!("join.lua").contains(&line), "{line}");
    }
}
