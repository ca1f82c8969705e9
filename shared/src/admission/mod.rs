//! The admission JWT (docs/booking.md): what an active buyer shows the booking API, which
//! verifies it by itself against lineup's JWKS. This module owns the signing keys (a private
//! JWK set, each key with the instant it starts signing and the instant it retires), the
//! claims, the signature, and the two public documents: the JWKS and the OpenID discovery
//! document that names it.
//!
//! ring signs (RS256, ES256 or EdDSA), through `jsonwebtoken`. The RustCrypto crates only
//! turn a private JWK's numbers into the DER ring reads, check that the public half matches,
//! and make a fresh key for the local stack. A private key never leaves this module: no
//! `Debug`, no log line, no serialization but [`KeySet::generate`]'s.

use std::time::Duration;

use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{DecodingKey, Header, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::ids::{QueueId, UserId};

mod keys;

use keys::b64;
pub use keys::{AdmissionKey, KeySet, ALGORITHMS, PUBLISHED_SLACK, RSA_MAX_BITS, RSA_MIN_BITS};

/// How long a verifier may cache the JWKS and the discovery document: well under the two
/// hours a next key must be published before it signs.
pub const DISCOVERY_CACHE_CONTROL: &str = "public, max-age=300";

/// The path of the JWKS, below the issuer.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// What lineup signs into an admission JWT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionClaims {
    pub iss: String,
    pub aud: String,
    /// The buyer.
    pub sub: String,
    /// The queue.
    pub qid: String,
    /// The session: `<ticket>:<ms it began>`. A buyer's next session has another.
    pub sid: String,
    pub iat: i64,
    pub nbf: i64,
    /// The earlier of the session's end and `iat` + the admission TTL.
    pub exp: i64,
    /// 128 random bits, base64url.
    pub jti: String,
}

/// The least time an admission has left when it is served: a verifier a moment behind still
/// takes it. Fewer seconds of the session left, the answer carries none.
pub const SHORTEST_ADMISSION: Duration = Duration::from_secs(2);

/// Whose session an admission is for.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    pub queue: &'a QueueId,
    pub user: &'a UserId,
    pub ticket: u64,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
}

/// The issuer: its URL, the audience it signs for, how long an admission lives, and its keys.
#[derive(Clone)]
pub struct Issuer {
    pub issuer: String,
    pub audience: String,
    pub ttl: Duration,
    pub keys: KeySet,
}

impl Issuer {
    /// The claims of an admission to `session` issued at `now`; `None` when it would expire
    /// less than [`SHORTEST_ADMISSION`] after `now`: in the session's last seconds, and once
    /// the session has ended (nothing is renewed after it).
    pub fn claims(&self, session: &Session, now: DateTime<Utc>) -> Option<AdmissionClaims> {
        let iat = now.timestamp();
        let ttl_end = iat.saturating_add(self.ttl.as_secs() as i64);
        let exp = ttl_end.min(session.until.timestamp());
        let left_ms = exp
            .saturating_mul(1_000)
            .saturating_sub(now.timestamp_millis());
        if left_ms < SHORTEST_ADMISSION.as_millis() as i64 {
            return None;
        }
        let mut jti = [0u8; 16];
        rand::rng().fill_bytes(&mut jti);
        Some(AdmissionClaims {
            iss: self.issuer.clone(),
            aud: self.audience.clone(),
            sub: session.user.as_str().to_owned(),
            qid: session.queue.as_str().to_owned(),
            sid: format!("{}:{}", session.ticket, session.since.timestamp_millis()),
            iat,
            nbf: iat,
            exp,
            jti: b64(&jti),
        })
    }

    /// The admission JWT for `session` at `now`, signed with the key of the moment; `None`
    /// when the session has ended or no key signs now (the caller logs the latter).
    pub fn sign(&self, session: &Session, now: DateTime<Utc>) -> Result<Option<String>, String> {
        let Some(claims) = self.claims(session, now) else {
            return Ok(None);
        };
        let key = self
            .keys
            .signing_key(now)
            .ok_or("no admission key signs now: every key has retired")?;
        let mut header = Header::new(key.alg);
        header.kid = Some(key.kid.clone());
        jsonwebtoken::encode(&header, &claims, &key.encoding)
            .map(Some)
            .map_err(|err| format!("key {:?} could not sign: {err}", key.kid))
    }

    /// The claims of `token` if it verifies as API Gateway's JWT authorizer on this issuer
    /// verifies it: a `kid` in the JWKS of `now`, its algorithm, the signature, `iss`, `aud`,
    /// `exp` and `nbf` (no leeway). The local stack's gateway stands in for API Gateway with it.
    pub fn verify(&self, token: &str, now: DateTime<Utc>) -> Option<AdmissionClaims> {
        let kid = jsonwebtoken::decode_header(token).ok()?.kid?;
        let jwks = self.jwks(now);
        let jwk = jwks.find(&kid)?;
        let key = self.keys.keys.iter().find(|key| key.kid == kid)?;
        let mut validation = Validation::new(key.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.validate_nbf = true;
        validation.leeway = 0;
        let claims: AdmissionClaims =
            jsonwebtoken::decode(token, &DecodingKey::from_jwk(jwk).ok()?, &validation)
                .ok()?
                .claims;
        (claims.exp > now.timestamp() && claims.nbf <= now.timestamp()).then_some(claims)
    }

    /// The JWKS document at `now`.
    pub fn jwks(&self, now: DateTime<Utc>) -> JwkSet {
        self.keys.published(now, self.ttl)
    }

    /// The OpenID discovery document: the issuer and where its keys are, with the members
    /// OpenID Connect Discovery 1.0 requires.
    pub fn discovery(&self) -> Value {
        let algs: Vec<&str> = self
            .keys
            .keys
            .iter()
            .filter_map(|key| ALGORITHMS.iter().find(|(_, a)| *a == key.alg))
            .map(|(name, _)| *name)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        json!({
            "issuer": self.issuer,
            "jwks_uri": format!("{}{JWKS_PATH}", self.issuer),
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
            "claims_supported": ["iss", "aud", "sub", "qid", "sid", "iat", "nbf", "exp", "jti"],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use jsonwebtoken::Algorithm;

    fn at(s: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(s, 0).unwrap()
    }

    fn verify(token: &str, set: &JwkSet, alg: Algorithm) -> AdmissionClaims {
        let kid = jsonwebtoken::decode_header(token).unwrap().kid.unwrap();
        let jwk = set.find(&kid).expect("kid in the set");
        let mut validation = Validation::new(alg);
        validation.set_audience(&["booking"]);
        validation.validate_exp = false;
        jsonwebtoken::decode(token, &DecodingKey::from_jwk(jwk).unwrap(), &validation)
            .unwrap()
            .claims
    }

    #[test]
    fn each_algorithm_signs_what_its_public_key_verifies() {
        let queue = QueueId::parse("concert-1").unwrap();
        let user = UserId::parse("user-1").unwrap();
        for (_, alg) in ALGORITHMS {
            let (keys, text) = KeySet::generate(*alg, "k1", at(0), None).unwrap();
            // The private JSON reads back to the same public key.
            let again = KeySet::parse(&text, *alg, at(10)).unwrap();
            assert_eq!(
                serde_json::to_value(again.published(at(10), Duration::ZERO)).unwrap(),
                serde_json::to_value(keys.published(at(10), Duration::ZERO)).unwrap()
            );
            let issuer = Issuer {
                issuer: "https://queue.example".into(),
                audience: "booking".into(),
                ttl: Duration::from_secs(60),
                keys,
            };
            let session = Session {
                queue: &queue,
                user: &user,
                ticket: 7,
                since: at(1_000),
                until: at(1_030),
            };
            let token = issuer.sign(&session, at(1_010)).unwrap().unwrap();
            let claims = verify(&token, &issuer.jwks(at(1_010)), *alg);
            assert_eq!(claims.exp, 1_030, "the session's end comes before the TTL");
            assert_eq!(claims.sid, "7:1000000");
            assert_eq!(issuer.sign(&session, at(1_030)).unwrap(), None);
            // In the session's last 2 s: none, to the ms.
            let ms = |ms: i64| Utc.timestamp_millis_opt(ms).unwrap();
            assert!(issuer.sign(&session, ms(1_028_000)).unwrap().is_some());
            assert_eq!(issuer.sign(&session, ms(1_028_001)).unwrap(), None);
            assert_eq!(issuer.sign(&session, ms(1_029_990)).unwrap(), None);
        }
    }

    #[test]
    fn keys_switch_at_their_instants_and_stay_published_while_their_tokens_live() {
        let (_, a) = KeySet::generate(Algorithm::ES256, "a", at(0), Some(at(100))).unwrap();
        let (_, b) = KeySet::generate(Algorithm::ES256, "b", at(100), None).unwrap();
        let mut both: Value = serde_json::from_str(&a).unwrap();
        let b: Value = serde_json::from_str(&b).unwrap();
        both["keys"]
            .as_array_mut()
            .unwrap()
            .push(b["keys"][0].clone());
        let set = KeySet::parse(&both.to_string(), Algorithm::ES256, at(50)).unwrap();
        assert_eq!(set.signing_key(at(99)).unwrap().kid(), "a");
        assert_eq!(set.signing_key(at(100)).unwrap().kid(), "b");
        let ttl = Duration::from_secs(60);
        let kids = |now| -> Vec<String> {
            set.published(at(now), ttl)
                .keys
                .iter()
                .map(|k| k.common.key_id.clone().unwrap())
                .collect()
        };
        assert_eq!(
            kids(50),
            ["a", "b"],
            "the next key is published before it signs"
        );
        assert_eq!(kids(219), ["a", "b"]);
        assert_eq!(kids(220), ["b"], "retired, TTL and slack past: gone");
    }

    #[test]
    fn a_rotation_retires_the_signing_key_when_the_next_one_starts() {
        let (_, first) = KeySet::generate(Algorithm::EdDSA, "a", at(0), None).unwrap();
        let rotated = KeySet::rotate(&first, Algorithm::EdDSA, "b", at(7_500), at(100)).unwrap();
        let set = KeySet::parse(&rotated, Algorithm::EdDSA, at(100)).unwrap();
        assert_eq!(set.signing_key(at(7_499)).unwrap().kid(), "a");
        assert_eq!(set.signing_key(at(7_500)).unwrap().kid(), "b");
        assert_eq!(set.published(at(100), Duration::ZERO).keys.len(), 2);
        // The first key's private members are kept as they were.
        let before: Value = serde_json::from_str(&first).unwrap();
        let after: Value = serde_json::from_str(&rotated).unwrap();
        assert_eq!(after["keys"][0]["d"], before["keys"][0]["d"]);
        assert!(KeySet::rotate(&first, Algorithm::EdDSA, "a", at(7_500), at(100)).is_err());
    }

    #[test]
    fn bad_key_sets_are_refused_without_showing_a_key() {
        let (_, text) = KeySet::generate(Algorithm::EdDSA, "k", at(0), None).unwrap();
        let d = serde_json::from_str::<Value>(&text).unwrap()["keys"][0]["d"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut wrong_x: Value = serde_json::from_str(&text).unwrap();
        wrong_x["keys"][0]["x"] = json!(b64(&[1u8; 32]));
        let mut duplicate: Value = serde_json::from_str(&text).unwrap();
        let copy = duplicate["keys"][0].clone();
        duplicate["keys"].as_array_mut().unwrap().push(copy);
        for (json, alg) in [
            ("not json".to_owned(), Algorithm::EdDSA),
            (text.clone(), Algorithm::RS256),
            (wrong_x.to_string(), Algorithm::EdDSA),
            (duplicate.to_string(), Algorithm::EdDSA),
            (r#"{"keys":[]}"#.to_owned(), Algorithm::EdDSA),
        ] {
            let err = KeySet::parse(&json, alg, at(10)).err().expect("refused");
            assert!(!err.contains(&d), "{err}");
        }
        // Not yet signing: refused at start-up.
        assert!(KeySet::parse(&text, Algorithm::EdDSA, at(-1)).is_err());
    }
}
