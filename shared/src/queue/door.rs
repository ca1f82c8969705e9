//! A queue's door (docs/door.md): its settings, the challenge round trip, and the redemption of
//! solutions. The proof of work itself is [`crate::door`].
//!
//! - [`WaitingRoom::challenge`] makes a challenge for one buyer of one queue: its cost from the
//!   queue's settings (with `adaptive`, from its arrivals over the last minute too), a serial
//!   number from the queue's door hash, and an expiry [`CHALLENGE_TTL`] away by Redis's
//!   clock. One round trip (`challenge.lua`).
//! - The issue script redeems a solution that holds when it makes the place, in issue's one
//!   round trip: it sets the serial's bit in a redemption bitmap and refuses a serial whose bit
//!   is set. A buyer who already holds a place needs no solution. A refusal writes only the
//!   rate-limit counters.

use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;

use super::keys::door_key;
use super::{WaitingRoom, CHALLENGE};
use crate::door::{
    cost, Challenge, ChallengeMode, DoorKey, Proof, Scope, CHALLENGE_TTL, DEFAULT_COST_MAX,
    DEFAULT_COST_MIN,
};
use crate::error::Error;
use crate::ids::{QueueId, UserId};

/// How long a redemption is kept past its challenge's expiry, and the door hash past the last
/// challenge's: room for a function's clock to run behind the server's.
pub const REDEMPTION_SLACK: Duration = Duration::from_secs(300);

/// A queue's door settings in force: whether a new arrival solves a challenge, and the floor
/// and ceiling of its cost (PBKDF2 iterations per try, within [`crate::bounds::CHALLENGE_COST`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DoorSettings {
    pub challenge: ChallengeMode,
    pub challenge_cost_min: u32,
    pub challenge_cost_max: u32,
}

/// The scripts' `{challenge, cost min or '', cost max or ''}` (`settings_reply` in
/// `replies.lua`), the defaults filled in.
impl FromRedisValue for DoorSettings {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (mode, min, max): (String, String, String) = FromRedisValue::from_redis_value(v)?;
        let number = |raw: &str, default: u32| -> Result<u32, ParsingError> {
            if raw.is_empty() {
                return Ok(default);
            }
            raw.parse()
                .map_err(|_| format!("settings hold a challenge cost {raw:?}").into())
        };
        Ok(DoorSettings {
            challenge: ChallengeMode::from_stored(&mode)
                .ok_or_else(|| format!("settings hold challenge {mode:?}"))?,
            challenge_cost_min: number(&min, DEFAULT_COST_MIN)?,
            challenge_cost_max: number(&max, DEFAULT_COST_MAX)?,
        })
    }
}

/// What `challenge.lua` answers: `{door settings, arrivals a minute, serial, now (ms)}`, or
/// `{'no-queue'}` for a queue that does not exist.
enum ChallengeReply {
    Issued {
        door: DoorSettings,
        arrivals_per_minute: u64,
        serial: u64,
        now_ms: i64,
    },
    NoQueue,
}

impl FromRedisValue for ChallengeReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        if let Value::Array(items) = &v {
            if let [Value::BulkString(first)] = items.as_slice() {
                if first.as_slice() == b"no-queue" {
                    return Ok(ChallengeReply::NoQueue);
                }
            }
        }
        let (door, arrivals_per_minute, serial, now_ms) = FromRedisValue::from_redis_value(v)?;
        Ok(ChallengeReply::Issued {
            door,
            arrivals_per_minute,
            serial,
            now_ms,
        })
    }
}

impl WaitingRoom {
    /// A challenge for `user` to join `queue`, signed with `key`; [`Error::NotFound`] for a
    /// queue that does not exist. Its cost follows the queue's settings in force; its serial
    /// comes from the queue's door hash. One round trip. On the striped line, from the
    /// buyer's stripe (`striped_door`).
    pub async fn challenge(
        &self,
        key: &DoorKey,
        queue: &QueueId,
        user: &UserId,
    ) -> Result<Challenge, Error> {
        if let Some(lines) = self.lines.clone() {
            return self.line_challenge(&lines, key, queue, user).await;
        }
        let mut call = self.invocation(&CHALLENGE, queue);
        call.key(door_key(&self.prefix, queue))
            .named("creation", self.config.creation.as_str())
            .named("keep_ms", millis(CHALLENGE_TTL + REDEMPTION_SLACK));
        let (door, arrivals_per_minute, serial, now_ms) = match self.conn.invoke(call).await? {
            ChallengeReply::Issued {
                door,
                arrivals_per_minute,
                serial,
                now_ms,
            } => (door, arrivals_per_minute, serial, now_ms),
            ChallengeReply::NoQueue => {
                return Err(Error::NotFound(format!("no queue {queue}")));
            }
        };
        // The server's clock, which the redemption bitmap's expiry follows too.
        let expires_at = (now_ms + millis(CHALLENGE_TTL) as i64).div_euclid(1000);
        let cost = cost(
            door.challenge,
            door.challenge_cost_min,
            door.challenge_cost_max,
            arrivals_per_minute,
        );
        key.challenge(Scope::Queue(queue), user, Some(serial), cost, expires_at)
    }
}

/// The issue script's arguments for `proof`: `door` (`''` none, `'bad'`, or the serial) and
/// `redeemed_until` (when its redemption may expire, ms; 0 without a solved one).
pub(crate) fn issue_args(proof: &Proof) -> (String, i64) {
    match proof {
        Proof::Solved {
            serial: Some(serial),
            expires_at_ms,
        } => (
            serial.to_string(),
            expires_at_ms + millis(REDEMPTION_SLACK) as i64,
        ),
        Proof::Absent => (String::new(), 0),
        Proof::Failed(_) | Proof::Solved { serial: None, .. } => ("bad".to_owned(), 0),
    }
}

/// The serial of a solved proof, or 0: which redemption bitmap the issue script is given.
pub(crate) fn serial(proof: &Proof) -> u64 {
    match proof {
        Proof::Solved {
            serial: Some(serial),
            ..
        } => *serial,
        _ => 0,
    }
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}
