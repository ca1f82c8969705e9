//! The door: an ALTCHA proof of work (PoW v2, `PBKDF2/SHA-256`, through the ALTCHA project's
//! `altcha` crate) that a new arrival pays before it takes a place, where the queue's setting
//! `challenge` asks for one (docs/door.md).
//!
//! - [`WaitingRoom::challenge`] makes a challenge for one buyer of one queue: its cost from the
//!   queue's settings (with `adaptive`, from its arrivals over the last minute too), a serial
//!   number from the queue's door hash, and an expiry [`CHALLENGE_TTL`] away, signed with
//!   HMAC-SHA256 under a key derived from `TOKEN_SECRET` ([`DoorKey`]). One round trip
//!   (`challenge.lua`).
//! - [`Proof::check`] verifies a solution in the function, with no Redis: the signature, the
//!   expiry, the queue and the buyer it was made for, and the work.
//! - The issue script redeems a verified solution when it makes the place, in issue's one round
//!   trip: it sets the serial's bit in a redemption bitmap and refuses a serial whose bit is
//!   set. A buyer who already holds a place needs no solution. A refusal writes only the
//!   rate-limit counters.

use std::collections::BTreeMap;
use std::time::Duration;

use altcha::{CreateChallengeOptions, Payload, VerifySolutionOptions};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::keys::door_key;
use super::{WaitingRoom, CHALLENGE};
use crate::bounds::CHALLENGE_COST;
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::token::TokenKey;

/// Whether a new arrival must bring a solved challenge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeMode {
    /// No challenge (the default).
    #[default]
    Off,
    /// Every new arrival solves one, at the floor cost.
    On,
    /// Every new arrival solves one, its cost rising with the queue's arrivals.
    Adaptive,
}

impl ChallengeMode {
    /// The value stored in the settings hash; `None` for the default, which is not stored.
    pub(crate) fn stored(self) -> Option<&'static str> {
        match self {
            ChallengeMode::Off => None,
            ChallengeMode::On => Some("on"),
            ChallengeMode::Adaptive => Some("adaptive"),
        }
    }

    /// The mode a settings hash holds (`None` when it holds none).
    pub(crate) fn from_stored(stored: &str) -> Option<Self> {
        match stored {
            "off" | "" => Some(ChallengeMode::Off),
            "on" => Some(ChallengeMode::On),
            "adaptive" => Some(ChallengeMode::Adaptive),
            _ => None,
        }
    }
}

/// The key derivation every challenge asks for.
pub const ALGORITHM: &str = "PBKDF2/SHA-256";
/// How long a challenge may be solved and redeemed after it is made.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(300);
/// The floor of a challenge's cost where the queue sets none: about a tenth of a second of a
/// phone's time.
pub const DEFAULT_COST_MIN: u32 = 1_000;
/// The ceiling of a challenge's cost where the queue sets none: a few seconds.
pub const DEFAULT_COST_MAX: u32 = 20_000;
/// With `adaptive`, the cost is the floor once per this many arrivals in the last minute.
pub const ADAPTIVE_STEP: u64 = 100;
/// Serials per redemption bitmap: a bitmap holds at most 128 KiB.
pub const SERIALS_PER_BITMAP: u64 = 1 << 20;
/// How long a redemption is kept past its challenge's expiry, and the door hash past the last
/// challenge's: room for a function's clock to run behind the server's.
pub const REDEMPTION_SLACK: Duration = Duration::from_secs(300);

/// The cost of a challenge in `mode` between `min` and `max` (PBKDF2 iterations per try) for a
/// queue that took `arrivals_per_minute`: the floor, or with `adaptive` the floor times each
/// started [`ADAPTIVE_STEP`] arrivals a minute, up to the ceiling.
pub fn cost(mode: ChallengeMode, min: u32, max: u32, arrivals_per_minute: u64) -> u32 {
    match mode {
        ChallengeMode::Adaptive => {
            let steps = arrivals_per_minute.div_ceil(ADAPTIVE_STEP).max(1);
            u64::from(min)
                .saturating_mul(steps)
                .min(u64::from(max.max(min))) as u32
        }
        ChallengeMode::Off | ChallengeMode::On => min,
    }
}

/// The key challenges are signed with: HMAC-SHA256 of a fixed label under `TOKEN_SECRET`, so
/// it comes from Secrets Manager with the token key and rotates with it. Never shown.
#[derive(Clone)]
pub struct DoorKey(String);

impl DoorKey {
    pub fn derive(token_key: &TokenKey) -> Self {
        DoorKey(hex(
            &token_key.derive(b"lineup door: ALTCHA challenge signatures")
        ))
    }
}

impl std::fmt::Debug for DoorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DoorKey(…)")
    }
}

/// A queue's door settings in force: whether a new arrival solves a challenge, and the floor
/// and ceiling of its cost (PBKDF2 iterations per try, within [`CHALLENGE_COST`]).
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

/// A challenge as a client receives it: ALTCHA's `{parameters, signature}`.
pub type Challenge = altcha::Challenge;

impl WaitingRoom {
    /// A challenge for `user` to join `queue`, signed with `key`; [`Error::NotFound`] for a
    /// queue that does not exist. Its cost follows the queue's settings in force; its serial
    /// comes from the queue's door hash. One round trip.
    pub async fn challenge(
        &self,
        key: &DoorKey,
        queue: &QueueId,
        user: &UserId,
    ) -> Result<Challenge, Error> {
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
        key.challenge(queue, user, serial, cost, expires_at)
    }
}

impl DoorKey {
    /// A challenge for `user` to join `queue`, numbered `serial`, costing `cost` PBKDF2
    /// iterations per try, expiring at `expires_at` (s since the epoch), signed with this key.
    pub fn challenge(
        &self,
        queue: &QueueId,
        user: &UserId,
        serial: u64,
        cost: u32,
        expires_at: i64,
    ) -> Result<Challenge, Error> {
        let data = BTreeMap::from([
            ("queue".to_owned(), json!(queue.as_str())),
            ("buyer".to_owned(), json!(user.as_str())),
            ("serial".to_owned(), json!(serial)),
        ]);
        altcha::create_challenge(CreateChallengeOptions {
            algorithm: ALGORITHM.to_owned(),
            cost,
            data: Some(data),
            expires_at: Some(expires_at),
            hmac_signature_secret: Some(self.0.clone()),
            ..Default::default()
        })
        .map_err(|err| Error::Internal(format!("altcha challenge: {err}")))
    }
}

/// What a new arrival brought to the door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// No solution.
    Absent,
    /// A solution that does not hold, and why.
    Failed(ProofFailure),
    /// A solution that holds, for the challenge with `serial`, which expires at
    /// `expires_at_ms` (ms since the epoch): the issue script redeems it once.
    Solved { serial: u64, expires_at_ms: i64 },
}

/// Why a solution does not hold. Told to the buyer in the refusal's detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProofFailure {
    /// Not base64 of an ALTCHA v2 payload.
    Malformed,
    /// Not signed by this deployment, or altered.
    Forged,
    /// Past its expiry.
    Expired,
    /// Made for another queue or another buyer.
    Foreign,
    /// The work does not check.
    Unsolved,
    /// Redeemed already (the issue script's answer).
    Replayed,
}

impl ProofFailure {
    pub fn describe(self) -> &'static str {
        match self {
            ProofFailure::Malformed => "the solution is not an ALTCHA v2 payload",
            ProofFailure::Forged => "the challenge was not made here, or was altered",
            ProofFailure::Expired => "the challenge has expired",
            ProofFailure::Foreign => "the challenge was made for another queue or buyer",
            ProofFailure::Unsolved => "the solution does not solve the challenge",
            ProofFailure::Replayed => "the challenge was used already",
        }
    }
}

/// The longest payload read: a v2 payload is a few hundred bytes.
const PAYLOAD_MAX_BYTES: usize = 4096;

impl Proof {
    /// Checks `payload` (base64 of an ALTCHA v2 `{challenge, solution}`), if any, against
    /// `key`, `queue` and `user`.
    pub fn check(payload: Option<&str>, key: &DoorKey, queue: &QueueId, user: &UserId) -> Proof {
        let Some(payload) = payload.map(str::trim).filter(|p| !p.is_empty()) else {
            return Proof::Absent;
        };
        match Self::verify(payload, key, queue, user) {
            Ok(proof) => proof,
            Err(failure) => Proof::Failed(failure),
        }
    }

    fn verify(
        payload: &str,
        key: &DoorKey,
        queue: &QueueId,
        user: &UserId,
    ) -> Result<Proof, ProofFailure> {
        if payload.len() > PAYLOAD_MAX_BYTES {
            return Err(ProofFailure::Malformed);
        }
        let bytes = STANDARD
            .decode(payload)
            .map_err(|_| ProofFailure::Malformed)?;
        let Payload {
            challenge,
            solution,
        } = serde_json::from_slice(&bytes).map_err(|_| ProofFailure::Malformed)?;
        let parameters = &challenge.parameters;
        if parameters.algorithm != ALGORITHM || !CHALLENGE_COST.holds(u64::from(parameters.cost)) {
            return Err(ProofFailure::Forged);
        }
        let verdict = altcha::verify_solution(VerifySolutionOptions::new(
            &challenge,
            &solution,
            key.0.clone(),
        ))
        .map_err(|_| ProofFailure::Malformed)?;
        if verdict.expired {
            return Err(ProofFailure::Expired);
        }
        if verdict.invalid_signature != Some(false) {
            return Err(ProofFailure::Forged);
        }
        if !verdict.verified {
            return Err(ProofFailure::Unsolved);
        }
        let data = parameters.data.as_ref().ok_or(ProofFailure::Forged)?;
        if data.get("queue").and_then(|v| v.as_str()) != Some(queue.as_str())
            || data.get("buyer").and_then(|v| v.as_str()) != Some(user.as_str())
        {
            return Err(ProofFailure::Foreign);
        }
        let serial = data
            .get("serial")
            .and_then(|v| v.as_u64())
            .ok_or(ProofFailure::Forged)?;
        let expires_at = parameters.expires_at.ok_or(ProofFailure::Forged)?;
        Ok(Proof::Solved {
            serial,
            expires_at_ms: expires_at.saturating_mul(1000),
        })
    }

    /// The issue script's arguments for this proof: `door` (`''` none, `'bad'`, or the
    /// serial) and `redeemed_until` (when its redemption may expire, ms; 0 without a solved
    /// one).
    pub(crate) fn args(&self) -> (String, i64) {
        match self {
            Proof::Absent => (String::new(), 0),
            Proof::Failed(_) => ("bad".to_owned(), 0),
            Proof::Solved {
                serial,
                expires_at_ms,
            } => (
                serial.to_string(),
                expires_at_ms + millis(REDEMPTION_SLACK) as i64,
            ),
        }
    }

    /// The serial of a solved proof, or 0: which redemption bitmap the issue script is given.
    pub(crate) fn serial(&self) -> u64 {
        match self {
            Proof::Solved { serial, .. } => *serial,
            _ => 0,
        }
    }
}

fn millis(duration: Duration) -> u64 {
    duration.as_millis() as u64
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    #[test]
    fn adaptive_cost_rises_by_the_floor_per_step_of_arrivals_up_to_the_ceiling() {
        use ChallengeMode::*;
        assert_eq!(cost(Off, 1000, 20000, 50_000), 1000);
        assert_eq!(cost(On, 1000, 20000, 50_000), 1000);
        assert_eq!(cost(Adaptive, 1000, 20000, 0), 1000);
        assert_eq!(cost(Adaptive, 1000, 20000, 100), 1000);
        assert_eq!(cost(Adaptive, 1000, 20000, 101), 2000);
        assert_eq!(cost(Adaptive, 1000, 20000, 950), 10000);
        assert_eq!(cost(Adaptive, 1000, 20000, 50_000), 20000);
        // A ceiling below the floor is the floor.
        assert_eq!(cost(Adaptive, 1000, 500, 50_000), 1000);
    }

    fn solved(key: &DoorKey, queue: &str, user: &str, expires_at: i64) -> String {
        let (queue, user) = (QueueId::parse(queue).unwrap(), UserId::parse(user).unwrap());
        let challenge = key.challenge(&queue, &user, 7, 100, expires_at).unwrap();
        let solution = altcha::solve_challenge(altcha::SolveChallengeOptions::new(&challenge))
            .unwrap()
            .unwrap();
        STANDARD.encode(
            serde_json::to_vec(&Payload {
                challenge,
                solution,
            })
            .unwrap(),
        )
    }

    #[test]
    fn a_solution_holds_only_for_its_queue_and_buyer_and_before_its_expiry() {
        let key = DoorKey::derive(&TokenKey::random());
        let (queue, user) = (
            QueueId::parse("show").unwrap(),
            UserId::parse("ann").unwrap(),
        );
        let later = (Utc::now() + chrono::Duration::seconds(60)).timestamp();
        let good = solved(&key, "show", "ann", later);
        assert_eq!(
            Proof::check(Some(&good), &key, &queue, &user),
            Proof::Solved {
                serial: 7,
                expires_at_ms: later * 1000
            }
        );
        let failed =
            |payload: &str, key: &DoorKey| match Proof::check(Some(payload), key, &queue, &user) {
                Proof::Failed(failure) => failure,
                other => panic!("{other:?}"),
            };
        assert_eq!(
            failed(&good, &DoorKey::derive(&TokenKey::random())),
            ProofFailure::Forged
        );
        assert_eq!(
            failed(&solved(&key, "other", "ann", later), &key),
            ProofFailure::Foreign
        );
        assert_eq!(
            failed(&solved(&key, "show", "ben", later), &key),
            ProofFailure::Foreign
        );
        let past = (Utc::now() - chrono::Duration::seconds(1)).timestamp();
        assert_eq!(
            failed(&solved(&key, "show", "ann", past), &key),
            ProofFailure::Expired
        );
        assert_eq!(failed("not base64!", &key), ProofFailure::Malformed);
        assert_eq!(
            failed(&STANDARD.encode(b"{}"), &key),
            ProofFailure::Malformed
        );
        assert_eq!(Proof::check(None, &key, &queue, &user), Proof::Absent);
        assert_eq!(Proof::check(Some(" "), &key, &queue, &user), Proof::Absent);
    }
}
