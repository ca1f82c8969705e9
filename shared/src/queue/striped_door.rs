//! The door on the striped line (docs/door.md): a challenge whose serial comes from the
//! buyer's own stripe ([`crate::line::Line::door_serial`]), and what a new arrival's proof is
//! to the line's join ([`Pass`]), which redeems it as it makes the place.

use super::door::REDEMPTION_SLACK;
use super::WaitingRoom;
use crate::door::{cost, Challenge, ChallengeMode, DoorKey, Proof, Scope, CHALLENGE_TTL};
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::line::{Lines, Pass};

impl WaitingRoom {
    /// A challenge for `user` to join `queue` on its line, signed with `key`: its cost from
    /// the queue's settings (with `adaptive`, from the challenges the line hands out a
    /// minute), its serial from the buyer's stripe, its expiry [`CHALLENGE_TTL`] away by the
    /// line's clock. A queue nobody created is [`Error::NotFound`]. The queue's settings (held
    /// a second), then one round trip to the buyer's stripe.
    pub(super) async fn line_challenge(
        &self,
        lines: &Lines,
        key: &DoorKey,
        queue: &QueueId,
        user: &UserId,
    ) -> Result<Challenge, Error> {
        let now = self.clock.now_ms();
        let (terms, line) = self.line_of(lines, queue, now).await?;
        if !terms.created {
            return Err(Error::NotFound(format!("no queue {queue}")));
        }
        let serial = line
            .door_serial(user, now, CHALLENGE_TTL + REDEMPTION_SLACK)
            .await?;
        let door = terms.door;
        let cost = cost(
            door.challenge,
            door.challenge_cost_min,
            door.challenge_cost_max,
            serial.per_minute,
        );
        let expires_at = (now + CHALLENGE_TTL.as_millis() as i64).div_euclid(1000);
        key.challenge(
            Scope::Queue(queue),
            user,
            Some(serial.serial),
            cost,
            expires_at,
        )
    }
}

/// What `proof` is to the line's join, in a queue whose door is `mode`: free when it asks for
/// no challenge; else absent, bad, or solved, its redemption kept the slack past the
/// challenge's expiry.
pub(super) fn pass_of(mode: ChallengeMode, proof: &Proof) -> Pass {
    if mode == ChallengeMode::Off {
        return Pass::Free;
    }
    match proof {
        Proof::Absent => Pass::Absent,
        Proof::Failed(_) | Proof::Solved { serial: None, .. } => Pass::Bad,
        Proof::Solved {
            serial: Some(serial),
            expires_at_ms,
        } => Pass::Solved {
            serial: *serial,
            redeem_until: expires_at_ms + REDEMPTION_SLACK.as_millis() as i64,
        },
    }
}
