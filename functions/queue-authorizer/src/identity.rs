//! The buyer behind a request: the `sub` of the JWT in its `authorization` header
//! (`Bearer <jwt>`), verified here, since a route has one authorizer and the gatekeeper is it.
//!
//! Checked as API Gateway's JWT authorizer checks: a signature by one of the issuer's keys
//! (RS256, RS384, RS512, PS256, PS384, PS512, ES256 or ES384; the key named by the header's
//! `kid`), `iss` equal to `JWT_ISSUER`, `aud` holding `JWT_AUDIENCE` (or, without `aud`,
//! `client_id` equal to it), `exp` and `nbf` with [`LEEWAY_SECONDS`] of clock slack, and a
//! `sub`. The keys are fetched on first need, kept for the container's life, and fetched
//! again for a `kid` not in hand at most once a `JWT_KEYS_REFETCH_SECONDS` (a forged `kid`
//! cannot make the gatekeeper hammer the issuer). A failed fetch counts the same: while the
//! issuer is unreachable and no key is in hand, every request is denied.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use jsonwebtoken::{Algorithm, Validation};
use lineup::config::JwtSettings;
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::Mutex;

use crate::jwks::{Key, KeySource};

/// Clock slack on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 30;

/// The deny reason for a request without a verified JWT.
pub const UNAUTHENTICATED: &str = "unauthenticated";

/// The algorithms a buyer's JWT may be signed with: public-key ones only.
const ALGORITHMS: [Algorithm; 8] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
];

/// The verifier of buyers' JWTs, one per container; its keys are shared by every request.
pub struct Identity {
    issuer: String,
    audience: String,
    source: KeySource,
    keys: Mutex<KeyCache>,
}

struct KeyCache {
    by_kid: HashMap<String, Key>,
    refetch: Refetch,
}

/// When the keys may be fetched: the first time at once, then once a period at most.
#[derive(Debug)]
pub struct Refetch {
    every: Duration,
    last: Option<Instant>,
}

impl Refetch {
    pub fn new(every: Duration) -> Self {
        Refetch { every, last: None }
    }

    /// Whether a fetch may start at `now`; if so, it counts from `now`.
    pub fn start(&mut self, now: Instant) -> bool {
        let due = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.every);
        if due {
            self.last = Some(now);
        }
        due
    }
}

/// The claims read from a buyer's JWT; the spec claims are checked by `jsonwebtoken`.
#[derive(Deserialize)]
struct Claims {
    sub: String,
    #[serde(default)]
    aud: Option<Value>,
    #[serde(default)]
    client_id: Option<String>,
}

impl Identity {
    pub fn new(settings: &JwtSettings) -> Self {
        Identity {
            issuer: settings.issuer.clone(),
            audience: settings.audience.clone(),
            source: KeySource::new(&settings.issuer, settings.ca_roots.as_deref()),
            keys: Mutex::new(KeyCache {
                by_kid: HashMap::new(),
                refetch: Refetch::new(settings.keys_refetch),
            }),
        }
    }

    /// The verified `sub` of the JWT in `authorization`, or the deny reason. Why a JWT failed
    /// is logged, never the JWT.
    pub async fn subject(&self, authorization: Option<&str>) -> Result<String, &'static str> {
        self.verify(authorization).await.map_err(|why| {
            tracing::info!(why, "buyer JWT not verified");
            UNAUTHENTICATED
        })
    }

    async fn verify(&self, authorization: Option<&str>) -> Result<String, &'static str> {
        let jwt = authorization
            .and_then(bearer)
            .ok_or("no Bearer authorization")?;
        let header = jsonwebtoken::decode_header(jwt).map_err(|_| "malformed JWT")?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err("algorithm not allowed");
        }
        let kid = header.kid.ok_or("no kid")?;
        let key = self.key(&kid).await.ok_or("unknown kid")?;
        if key.alg.is_some_and(|alg| alg != header.alg) {
            return Err("algorithm differs from the key's");
        }
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.validate_aud = false; // checked below, `client_id` included
        validation.set_issuer(&[&self.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "sub"]);
        let claims = jsonwebtoken::decode::<Claims>(jwt, &key.key, &validation)
            .map_err(|err| match err.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => "bad signature",
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => "expired",
                jsonwebtoken::errors::ErrorKind::ImmatureSignature => "not yet valid",
                jsonwebtoken::errors::ErrorKind::InvalidIssuer => "wrong issuer",
                jsonwebtoken::errors::ErrorKind::MissingRequiredClaim(_) => "a claim is missing",
                _ => "invalid JWT",
            })?
            .claims;
        if !self.audience_matches(&claims) {
            return Err("wrong audience");
        }
        Ok(claims.sub)
    }

    /// `aud` (a string or a list) holds the audience; without `aud`, `client_id` is it.
    fn audience_matches(&self, claims: &Claims) -> bool {
        match &claims.aud {
            Some(Value::String(aud)) => *aud == self.audience,
            Some(Value::Array(auds)) => auds.iter().any(|aud| *aud == *self.audience),
            Some(_) => false,
            None => claims.client_id.as_deref() == Some(self.audience.as_str()),
        }
    }

    /// The key `kid` names, fetching the keys again if it is unknown and a fetch is due.
    async fn key(&self, kid: &str) -> Option<Key> {
        let mut cache = self.keys.lock().await;
        if let Some(key) = cache.by_kid.get(kid) {
            return Some(key.clone());
        }
        if !cache.refetch.start(Instant::now()) {
            return None;
        }
        match self.source.fetch().await {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "fetched the JWT issuer's keys");
                cache.by_kid = keys.into_iter().map(|key| (key.kid.clone(), key)).collect();
            }
            Err(error) => tracing::warn!(error, "cannot fetch the JWT issuer's keys"),
        }
        cache.by_kid.get(kid).cloned()
    }
}

/// The JWT of `Bearer <jwt>` (the scheme in any case).
fn bearer(authorization: &str) -> Option<&str> {
    let (scheme, jwt) = authorization.trim().split_once(' ')?;
    let jwt = jwt.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !jwt.is_empty()).then_some(jwt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_are_fetched_at_once_then_once_a_period_at_most() {
        let start = Instant::now();
        let mut refetch = Refetch::new(Duration::from_secs(60));
        assert!(refetch.start(start), "the first need fetches at once");
        for seconds in [0, 1, 30, 59] {
            assert!(
                !refetch.start(start + Duration::from_secs(seconds)),
                "{seconds}"
            );
        }
        let later = start + Duration::from_secs(60);
        assert!(refetch.start(later), "a minute later");
        assert!(!refetch.start(later + Duration::from_millis(1)));
        assert!(
            !refetch.start(start),
            "a clock read before the last fetch counts as no time passed"
        );
        assert!(refetch.start(later + Duration::from_secs(61)));
    }

    #[test]
    fn only_a_bearer_scheme_carries_a_jwt() {
        assert_eq!(bearer("Bearer a.b.c"), Some("a.b.c"));
        assert_eq!(bearer("bearer  a.b.c "), Some("a.b.c"));
        assert_eq!(bearer("Basic YWxp"), None);
        assert_eq!(bearer("Bearer "), None);
        assert_eq!(bearer("a.b.c"), None);
    }
}
