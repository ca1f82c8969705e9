//! The door's proof of work: ALTCHA PoW v2 (`PBKDF2/SHA-256`) through the ALTCHA project's
//! `altcha` crate, for a queue's new arrivals and a coupon campaign's claims (docs/door.md).
//!
//! - [`DoorKey::challenge`] makes a challenge for one buyer of one queue or campaign
//!   ([`Scope`]): its cost, an expiry and, for a queue, a serial number, signed with
//!   HMAC-SHA256 under a key derived from `TOKEN_SECRET`.
//! - [`Proof::check`] verifies a solution in the function, with no Redis: the signature, the
//!   expiry, the queue or campaign and the buyer it was made for, and the work.
//! - A domain's script then decides with its own settings, in its one round trip, and a
//!   refusal is [`Refused`]: 403 with a link to a fresh challenge.
//! - [`Counted`] names what the functions count in EMF: challenges issued, solved, refused.

use std::collections::BTreeMap;
use std::time::Duration;

use altcha::{CreateChallengeOptions, Payload, VerifySolutionOptions};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::bounds::CHALLENGE_COST;
use crate::error::{Error, Refusal, Turned};
use crate::ids::{CouponId, QueueId, UserId};
use crate::metrics::Record;
use crate::token::TokenKey;

/// A challenge as a client receives it: ALTCHA's `{parameters, signature}`.
pub type Challenge = altcha::Challenge;

/// Whether a buyer must bring a solved challenge.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChallengeMode {
    /// No challenge (the default).
    #[default]
    Off,
    /// Every new arrival (or claim) solves one, at the floor cost.
    On,
    /// Every new arrival solves one, its cost rising with the queue's arrivals (queues only).
    Adaptive,
}

impl ChallengeMode {
    /// The value stored in a settings hash; `None` for the default, which is not stored.
    pub fn stored(self) -> Option<&'static str> {
        match self {
            ChallengeMode::Off => None,
            ChallengeMode::On => Some("on"),
            ChallengeMode::Adaptive => Some("adaptive"),
        }
    }

    /// The mode a settings hash holds (`None` when it holds no mode).
    pub fn from_stored(stored: &str) -> Option<Self> {
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
/// Serials per redemption bitmap, on the queue and on the striped line: a bitmap holds at
/// most 128 KiB. `queue/issue.lua` and `line/join.lua` say the same, and tests hold them to it.
pub const SERIALS_PER_BITMAP: u64 = 1 << 20;
/// How long a challenge may be solved and redeemed after it is made.
pub const CHALLENGE_TTL: Duration = Duration::from_secs(300);
/// The floor of a challenge's cost where none is set: 0.06 s in headless Chromium on the bench
/// machine (docs/door.md).
pub const DEFAULT_COST_MIN: u32 = 1_000;
/// The ceiling of a challenge's cost where none is set: 0.74 s there.
pub const DEFAULT_COST_MAX: u32 = 20_000;
/// With `adaptive`, the cost is the floor once per this many arrivals in the last minute.
pub const ADAPTIVE_STEP: u64 = 100;

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

/// What a challenge lets its buyer into: a queue's places or a coupon campaign's claims.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    Queue(&'a QueueId),
    Coupon(&'a CouponId),
}

impl Scope<'_> {
    /// The challenge's data field naming it, and its id.
    fn field(&self) -> (&'static str, &str) {
        match self {
            Scope::Queue(queue) => ("queue", queue.as_str()),
            Scope::Coupon(coupon) => ("coupon", coupon.as_str()),
        }
    }

    /// The path of a fresh challenge for it.
    pub fn challenge_path(&self) -> String {
        match self {
            Scope::Queue(queue) => format!("/queues/{queue}/challenge"),
            Scope::Coupon(coupon) => format!("/coupons/{coupon}/challenge"),
        }
    }
}

/// The key challenges are signed with: HMAC-SHA256 of a fixed label under `TOKEN_SECRET`, so
/// it comes from Secrets Manager with the token key and rotates with it. Never shown.
#[derive(Clone)]
pub struct DoorKey(String);

impl DoorKey {
    pub fn derive(token_key: &TokenKey) -> Self {
        DoorKey(hex::encode(
            token_key.derive(b"lineup door: ALTCHA challenge signatures"),
        ))
    }

    /// A challenge for `user` into `scope`, numbered `serial` where the scope redeems
    /// solutions (a queue), costing `cost` PBKDF2 iterations per try, expiring at
    /// `expires_at` (s since the epoch), signed with this key.
    pub fn challenge(
        &self,
        scope: Scope<'_>,
        user: &UserId,
        serial: Option<u64>,
        cost: u32,
        expires_at: i64,
    ) -> Result<Challenge, Error> {
        let (field, id) = scope.field();
        let mut data = BTreeMap::from([
            (field.to_owned(), json!(id)),
            ("buyer".to_owned(), json!(user.as_str())),
        ]);
        if let Some(serial) = serial {
            data.insert("serial".to_owned(), json!(serial));
        }
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

impl std::fmt::Debug for DoorKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DoorKey(…)")
    }
}

/// What a buyer brought to the door.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Proof {
    /// No solution.
    Absent,
    /// A solution that does not hold, and why.
    Failed(ProofFailure),
    /// A solution that holds, for the challenge numbered `serial` (a queue's), which expires
    /// at `expires_at_ms` (ms since the epoch).
    Solved {
        serial: Option<u64>,
        expires_at_ms: i64,
    },
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
    /// Made for another queue, campaign or buyer.
    Foreign,
    /// The work does not check.
    Unsolved,
    /// Redeemed already (a queue's issue script says so).
    Replayed,
}

impl ProofFailure {
    pub fn describe(self) -> &'static str {
        match self {
            ProofFailure::Malformed => "the solution is not an ALTCHA v2 payload",
            ProofFailure::Forged => "the challenge was not made here, or was altered",
            ProofFailure::Expired => "the challenge has expired",
            ProofFailure::Foreign => "the challenge was made for another queue, campaign or buyer",
            ProofFailure::Unsolved => "the solution does not solve the challenge",
            ProofFailure::Replayed => "the challenge was used already",
        }
    }
}

/// The longest payload read: a v2 payload is a few hundred bytes.
pub const PAYLOAD_MAX_BYTES: usize = 4096;

impl Proof {
    /// Checks `payload` (base64 of an ALTCHA v2 `{challenge, solution}`), if any, against
    /// `key`, `scope` and `user`.
    pub fn check(payload: Option<&str>, key: &DoorKey, scope: Scope<'_>, user: &UserId) -> Proof {
        let Some(payload) = payload.map(str::trim).filter(|p| !p.is_empty()) else {
            return Proof::Absent;
        };
        match Self::verify(payload, key, scope, user) {
            Ok(proof) => proof,
            Err(failure) => Proof::Failed(failure),
        }
    }

    fn verify(
        payload: &str,
        key: &DoorKey,
        scope: Scope<'_>,
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
        let (field, id) = scope.field();
        if data.get(field).and_then(|v| v.as_str()) != Some(id)
            || data.get("buyer").and_then(|v| v.as_str()) != Some(user.as_str())
        {
            return Err(ProofFailure::Foreign);
        }
        let expires_at = parameters.expires_at.ok_or(ProofFailure::Forged)?;
        Ok(Proof::Solved {
            serial: data.get("serial").and_then(|v| v.as_u64()),
            expires_at_ms: expires_at.saturating_mul(1000),
        })
    }

    /// Whether it holds.
    pub fn solved(&self) -> bool {
        matches!(self, Proof::Solved { .. })
    }
}

/// A buyer turned away at the door (403): no solution came (`why` is `None`), or the one that
/// came does not hold. `challenge` is the path of a fresh one, sent as a `Link` and as the
/// problem's member `challenge`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub why: Option<ProofFailure>,
    pub challenge: String,
}

impl Refused {
    /// The refusal for a buyer into `scope` who brought `proof`; `replayed` when the script
    /// found it redeemed already.
    pub fn of(scope: Scope<'_>, proof: &Proof, replayed: bool) -> Self {
        let why = match (proof, replayed) {
            (_, true) => Some(ProofFailure::Replayed),
            (Proof::Absent, _) => None,
            (Proof::Failed(why), _) => Some(*why),
            (Proof::Solved { .. }, _) => Some(ProofFailure::Malformed),
        };
        Refused {
            why,
            challenge: scope.challenge_path(),
        }
    }
}

impl Refusal for Refused {
    fn turned(&self) -> Turned {
        Turned::Forbidden
    }

    fn kind(&self) -> &'static str {
        match self.why {
            None => "challenge-required",
            Some(_) => "challenge-failed",
        }
    }

    fn title(&self) -> &'static str {
        match self.why {
            None => "Challenge required",
            Some(_) => "Challenge failed",
        }
    }

    fn link(&self) -> Option<(&'static str, &str)> {
        Some(("challenge", &self.challenge))
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.why {
            None => f.write_str(
                "this asks for a solved challenge first: fetch one from the link, solve it, \
                 and send the solution in x-altcha",
            ),
            Some(why) => write!(
                f,
                "{}: fetch a fresh challenge from the link and solve it",
                why.describe()
            ),
        }
    }
}

impl From<Refused> for Error {
    fn from(refused: Refused) -> Self {
        Error::refused(refused)
    }
}

/// What the door did for one request, counted per queue or campaign in EMF (namespace
/// `lineup`, dimension `queueId` or `couponId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counted {
    /// A challenge was handed out (`challengesIssued`).
    Issued,
    /// A solution took a place or a claim (`challengesSolved`).
    Solved,
    /// A buyer was turned away at the door (`challengesRefused`).
    Refused,
}

impl Counted {
    /// The metric record counting this for `scope`.
    pub fn record(self, scope: Scope<'_>) -> Record {
        let metric = match self {
            Counted::Issued => "challengesIssued",
            Counted::Solved => "challengesSolved",
            Counted::Refused => "challengesRefused",
        };
        let (dimension, id) = match scope {
            Scope::Queue(queue) => ("queueId", queue.as_str()),
            Scope::Coupon(coupon) => ("couponId", coupon.as_str()),
        };
        Record::new().dimension(dimension, id).count(metric, 1)
    }

    /// What an answer to a buyer who brought `proof` counts, if anything: a door refusal, or
    /// a solution that made something new (`created`).
    pub fn answer<T>(
        result: &Result<T, Error>,
        created: impl Fn(&T) -> bool,
        proof: &Proof,
    ) -> Option<Self> {
        match result {
            Err(err) if err.refusal::<Refused>().is_some() => Some(Counted::Refused),
            Ok(answer) if created(answer) && proof.solved() => Some(Counted::Solved),
            _ => None,
        }
    }
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

    fn solved(key: &DoorKey, scope: Scope<'_>, user: &str, expires_at: i64) -> String {
        let user = UserId::parse(user).unwrap();
        let challenge = key
            .challenge(scope, &user, Some(7), 100, expires_at)
            .unwrap();
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
    fn a_solution_holds_only_for_its_scope_and_buyer_and_before_its_expiry() {
        let key = DoorKey::derive(&TokenKey::random());
        let (show, other) = (
            QueueId::parse("show").unwrap(),
            QueueId::parse("other").unwrap(),
        );
        let coupon = CouponId::parse("show").unwrap();
        let user = UserId::parse("ann").unwrap();
        let here = Scope::Queue(&show);
        let later = (Utc::now() + chrono::Duration::seconds(60)).timestamp();
        let good = solved(&key, here, "ann", later);
        assert_eq!(
            Proof::check(Some(&good), &key, here, &user),
            Proof::Solved {
                serial: Some(7),
                expires_at_ms: later * 1000
            }
        );
        let failed = |payload: &str, key: &DoorKey, scope: Scope<'_>| match Proof::check(
            Some(payload),
            key,
            scope,
            &user,
        ) {
            Proof::Failed(failure) => failure,
            other => panic!("{other:?}"),
        };
        let stranger = DoorKey::derive(&TokenKey::random());
        assert_eq!(failed(&good, &stranger, here), ProofFailure::Forged);
        assert_eq!(
            failed(&good, &key, Scope::Queue(&other)),
            ProofFailure::Foreign
        );
        // A queue's challenge is no coupon's, though they share an id.
        assert_eq!(
            failed(&good, &key, Scope::Coupon(&coupon)),
            ProofFailure::Foreign
        );
        assert_eq!(
            failed(&solved(&key, here, "ben", later), &key, here),
            ProofFailure::Foreign
        );
        let past = (Utc::now() - chrono::Duration::seconds(1)).timestamp();
        assert_eq!(
            failed(&solved(&key, here, "ann", past), &key, here),
            ProofFailure::Expired
        );
        assert_eq!(failed("not base64!", &key, here), ProofFailure::Malformed);
        assert_eq!(
            failed(&STANDARD.encode(b"{}"), &key, here),
            ProofFailure::Malformed
        );
        assert_eq!(Proof::check(None, &key, here, &user), Proof::Absent);
        assert_eq!(Proof::check(Some(" "), &key, here, &user), Proof::Absent);
    }
}
