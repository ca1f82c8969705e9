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

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk, JwkSet, KeyAlgorithm, OctetKeyPairParameters, OctetKeyPairType,
    PublicKeyUse, RSAKeyParameters, RSAKeyType,
};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::ids::{QueueId, UserId};

/// The algorithms an admission key may sign with. RS256 is the default: API Gateway's JWT
/// authorizer takes RSA keys only.
pub const ALGORITHMS: &[(&str, Algorithm)] = &[
    ("RS256", Algorithm::RS256),
    ("ES256", Algorithm::ES256),
    ("EdDSA", Algorithm::EdDSA),
];

/// The smallest RSA modulus a key set may hold, in bits.
pub const RSA_MIN_BITS: usize = 2048;
/// The largest: ring signs with moduli of up to 4096 bits.
pub const RSA_MAX_BITS: usize = 4096;

/// How long a key stays in the JWKS after it retires, beyond the longest admission it can
/// have signed: clock skew between the function and the verifiers.
pub const PUBLISHED_SLACK: Duration = Duration::from_secs(60);

/// How long a verifier may cache the JWKS and the discovery document: well under the two
/// hours a next key must be published before it signs.
pub const DISCOVERY_CACHE_CONTROL: &str = "public, max-age=300";

/// The path of the JWKS, below the issuer.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// One signing key: its id, algorithm, private half (as ring reads it), public JWK and the
/// span it signs in.
#[derive(Clone)]
pub struct AdmissionKey {
    kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
    public: Jwk,
    active_from: DateTime<Utc>,
    retires_at: Option<DateTime<Utc>>,
}

impl AdmissionKey {
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// Whether this key signs at `now`.
    fn signs_at(&self, now: DateTime<Utc>) -> bool {
        self.active_from <= now && self.retires_at.is_none_or(|end| now < end)
    }

    /// Whether a verifier may still meet an admission this key signed, at `now`, when an
    /// admission lives at most `ttl`.
    fn published_at(&self, now: DateTime<Utc>, ttl: Duration) -> bool {
        let after = chrono::Duration::from_std(ttl + PUBLISHED_SLACK).unwrap_or_default();
        self.retires_at.is_none_or(|end| now < end + after)
    }
}

/// A private key as the secret holds it: a JWK (RFC 7517, RFC 7518 § 6, RFC 8037) with
/// lineup's two members, `activeFrom` and `retiresAt` (RFC 3339).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PrivateJwk {
    kty: String,
    kid: String,
    #[serde(default)]
    alg: Option<String>,
    #[serde(default)]
    crv: Option<String>,
    #[serde(default)]
    n: Option<String>,
    #[serde(default)]
    e: Option<String>,
    #[serde(default)]
    d: Option<String>,
    #[serde(default)]
    p: Option<String>,
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    x: Option<String>,
    #[serde(default)]
    y: Option<String>,
    active_from: DateTime<Utc>,
    #[serde(default)]
    retires_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
struct PrivateJwkSet {
    keys: Vec<PrivateJwk>,
}

/// The signing keys, in the order they start signing.
#[derive(Clone)]
pub struct KeySet {
    keys: Vec<AdmissionKey>,
}

/// The members of a JWK that must be present, as bytes.
fn member(value: &Option<String>, kid: &str, name: &str) -> Result<Vec<u8>, String> {
    let text = value
        .as_deref()
        .ok_or_else(|| format!("key {kid:?} has no {name:?}"))?;
    URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| format!("key {kid:?}: {name:?} is not base64url without padding"))
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn common(kid: &str, alg: Algorithm) -> CommonParameters {
    CommonParameters {
        public_key_use: Some(PublicKeyUse::Signature),
        key_algorithm: Some(match alg {
            Algorithm::ES256 => KeyAlgorithm::ES256,
            Algorithm::EdDSA => KeyAlgorithm::EdDSA,
            _ => KeyAlgorithm::RS256,
        }),
        key_id: Some(kid.to_owned()),
        ..CommonParameters::default()
    }
}

impl KeySet {
    /// The key set in `json` (`{"keys": [...]}`), every key for `alg`. Refuses a set with
    /// no key signing at `now`, two keys with one `kid`, a key whose public half does not
    /// match its private half, and RSA keys under 2048 bits. The message never holds a key.
    pub fn parse(json: &str, alg: Algorithm, now: DateTime<Utc>) -> Result<Self, String> {
        let set: PrivateJwkSet = serde_json::from_str(json).map_err(|err| {
            format!(
                "is not a JWK set with activeFrom on each key (line {}, column {})",
                err.line(),
                err.column()
            )
        })?;
        let mut keys = Vec::with_capacity(set.keys.len());
        for jwk in &set.keys {
            let key = private_key(jwk, alg)?;
            if keys.iter().any(|k: &AdmissionKey| k.kid == key.kid) {
                return Err(format!("two keys have the kid {:?}", key.kid));
            }
            keys.push(key);
        }
        keys.sort_by_key(|key| key.active_from);
        let set = KeySet { keys };
        if set.signing_key(now).is_none() {
            return Err("has no key that signs now (activeFrom passed, retiresAt not)".into());
        }
        Ok(set)
    }

    /// A set of one fresh key for `alg`, signing from `active_from`, and its private JWK set
    /// as JSON (the shape [`KeySet::parse`] reads): the local stack's key, or a new key for
    /// an operator's secret.
    pub fn generate(
        alg: Algorithm,
        kid: &str,
        active_from: DateTime<Utc>,
        retires_at: Option<DateTime<Utc>>,
    ) -> Result<(KeySet, String), String> {
        let mut jwk = generate_private(alg)?;
        jwk["kid"] = json!(kid);
        jwk["use"] = json!("sig");
        jwk["activeFrom"] = json!(active_from);
        if let Some(end) = retires_at {
            jwk["retiresAt"] = json!(end);
        }
        let text = json!({ "keys": [jwk] }).to_string();
        let set = KeySet::parse(&text, alg, active_from)?;
        Ok((set, text))
    }

    /// The next step of a rotation: the private JWK set `current` (JSON, as
    /// [`KeySet::parse`] reads it at `now`) with a fresh key `kid` for `alg` signing from
    /// `active_from`, and the key that would sign then retiring at that instant. Publish it at
    /// least two hours before `active_from` (API Gateway caches JWKS that long). The keys of
    /// `current` keep every member they had.
    pub fn rotate(
        current: &str,
        alg: Algorithm,
        kid: &str,
        active_from: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<String, String> {
        let parsed = KeySet::parse(current, alg, now)?;
        let retiring = parsed
            .signing_key(active_from)
            .map(|key| key.kid.clone())
            .ok_or("no key of the current set signs at the new key's activeFrom")?;
        let mut set: Value = serde_json::from_str(current).map_err(|err| err.to_string())?;
        let keys = set["keys"]
            .as_array_mut()
            .ok_or("the current set has no \"keys\"")?;
        for key in keys.iter_mut() {
            if key["kid"] == json!(retiring) {
                key["retiresAt"] = json!(active_from);
            }
        }
        let (_, next) = KeySet::generate(alg, kid, active_from, None)?;
        let next: Value = serde_json::from_str(&next).map_err(|err| err.to_string())?;
        keys.push(next["keys"][0].clone());
        let text = serde_json::to_string_pretty(&set).map_err(|err| err.to_string())?;
        KeySet::parse(&text, alg, now)?;
        Ok(text)
    }

    /// The key that signs at `now`: of those whose span holds `now`, the one that started
    /// last. `None` once every key has retired.
    pub fn signing_key(&self, now: DateTime<Utc>) -> Option<&AdmissionKey> {
        self.keys.iter().rev().find(|key| key.signs_at(now))
    }

    /// The public keys a verifier needs at `now`: every key not yet retired (those still to
    /// start signing too, so verifiers hold them before they sign), and every retired key
    /// whose admissions may still be alive.
    pub fn published(&self, now: DateTime<Utc>, ttl: Duration) -> JwkSet {
        JwkSet {
            keys: self
                .keys
                .iter()
                .filter(|key| key.published_at(now, ttl))
                .map(|key| key.public.clone())
                .collect(),
        }
    }
}

/// Reads one private JWK for `alg`. The public half is computed from the private one (and
/// compared with the JWK's own, where it gives one), so the JWKS always verifies what the key
/// signs. No probe signature: an RS256 one costs ring 0.6–0.8 ms, half a cold start.
fn private_key(jwk: &PrivateJwk, alg: Algorithm) -> Result<AdmissionKey, String> {
    let kid = jwk.kid.as_str();
    if kid.is_empty() || kid.len() > 128 || kid.chars().any(char::is_control) {
        return Err("a key's kid must be 1 to 128 characters, none a control character".into());
    }
    if let Some(named) = &jwk.alg {
        let wanted = ALGORITHMS
            .iter()
            .find(|(_, a)| *a == alg)
            .map_or("", |(n, _)| n);
        if named != wanted {
            return Err(format!(
                "key {kid:?} is for {named}, but ADMISSION_ALGORITHM is {wanted}"
            ));
        }
    }
    if jwk.retires_at.is_some_and(|end| end <= jwk.active_from) {
        return Err(format!("key {kid:?} retires before it starts signing"));
    }
    let (encoding, parameters) = match (alg, jwk.kty.as_str()) {
        (Algorithm::RS256, "RSA") => rsa_key(jwk)?,
        (Algorithm::ES256, "EC") => p256_key(jwk)?,
        (Algorithm::EdDSA, "OKP") => ed25519_key(jwk)?,
        (_, kty) => return Err(format!("key {kid:?} has kty {kty:?}, not this algorithm's")),
    };
    let key = AdmissionKey {
        kid: kid.to_owned(),
        alg,
        encoding,
        public: Jwk {
            common: common(kid, alg),
            algorithm: parameters,
        },
        active_from: jwk.active_from,
        retires_at: jwk.retires_at,
    };
    Ok(key)
}

fn rsa_key(jwk: &PrivateJwk) -> Result<(EncodingKey, AlgorithmParameters), String> {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    use rsa::BigUint;
    let kid = jwk.kid.as_str();
    let number = |value, name| member(value, kid, name).map(|b| BigUint::from_bytes_be(&b));
    let key = rsa::RsaPrivateKey::from_components(
        number(&jwk.n, "n")?,
        number(&jwk.e, "e")?,
        number(&jwk.d, "d")?,
        vec![number(&jwk.p, "p")?, number(&jwk.q, "q")?],
    )
    .and_then(|key| key.validate().map(|()| key))
    .map_err(|_| format!("key {kid:?} is not a valid RSA private key"))?;
    if !(RSA_MIN_BITS..=RSA_MAX_BITS).contains(&(key.size() * 8)) {
        return Err(format!(
            "key {kid:?} is not of {RSA_MIN_BITS} to {RSA_MAX_BITS} bits"
        ));
    }
    let der = key
        .to_pkcs1_der()
        .map_err(|_| format!("key {kid:?} cannot be encoded"))?;
    Ok((
        EncodingKey::from_rsa_der(der.as_bytes()),
        AlgorithmParameters::RSA(RSAKeyParameters {
            key_type: RSAKeyType::RSA,
            n: b64(&key.n().to_bytes_be()),
            e: b64(&key.e().to_bytes_be()),
        }),
    ))
}

fn p256_key(jwk: &PrivateJwk) -> Result<(EncodingKey, AlgorithmParameters), String> {
    use p256::elliptic_curve::sec1::ToEncodedPoint;
    use p256::pkcs8::EncodePrivateKey;
    let kid = jwk.kid.as_str();
    if jwk.crv.as_deref() != Some("P-256") {
        return Err(format!("key {kid:?}: crv must be \"P-256\" for ES256"));
    }
    let secret = p256::SecretKey::from_slice(&member(&jwk.d, kid, "d")?)
        .map_err(|_| format!("key {kid:?} is not a valid P-256 private key"))?;
    let point = secret.public_key().to_encoded_point(false);
    let (x, y) = match (point.x(), point.y()) {
        (Some(x), Some(y)) => (b64(x), b64(y)),
        _ => return Err(format!("key {kid:?} has no public point")),
    };
    if jwk.x.as_deref().is_some_and(|given| given != x)
        || jwk.y.as_deref().is_some_and(|given| given != y)
    {
        return Err(format!("key {kid:?}: x and y are not d's public key"));
    }
    let der = secret
        .to_pkcs8_der()
        .map_err(|_| format!("key {kid:?} cannot be encoded"))?;
    Ok((
        EncodingKey::from_ec_der(der.as_bytes()),
        AlgorithmParameters::EllipticCurve(EllipticCurveKeyParameters {
            key_type: EllipticCurveKeyType::EC,
            curve: EllipticCurve::P256,
            x,
            y,
        }),
    ))
}

fn ed25519_key(jwk: &PrivateJwk) -> Result<(EncodingKey, AlgorithmParameters), String> {
    use ed25519_dalek::pkcs8::EncodePrivateKey;
    let kid = jwk.kid.as_str();
    if jwk.crv.as_deref() != Some("Ed25519") {
        return Err(format!("key {kid:?}: crv must be \"Ed25519\" for EdDSA"));
    }
    let seed: [u8; 32] = member(&jwk.d, kid, "d")?
        .try_into()
        .map_err(|_| format!("key {kid:?}: d must be 32 bytes"))?;
    let signing = ed25519_dalek::SigningKey::from_bytes(&seed);
    let x = b64(signing.verifying_key().as_bytes());
    if jwk.x.as_deref().is_some_and(|given| given != x) {
        return Err(format!("key {kid:?}: x is not d's public key"));
    }
    let der = signing
        .to_pkcs8_der()
        .map_err(|_| format!("key {kid:?} cannot be encoded"))?;
    Ok((
        EncodingKey::from_ed_der(der.as_bytes()),
        AlgorithmParameters::OctetKeyPair(OctetKeyPairParameters {
            key_type: OctetKeyPairType::OctetKeyPair,
            curve: EllipticCurve::Ed25519,
            x,
        }),
    ))
}

/// A fresh private JWK for `alg`, without kid or span.
fn generate_private(alg: Algorithm) -> Result<Value, String> {
    let mut rng = rand_core::OsRng;
    match alg {
        Algorithm::RS256 => {
            use rsa::traits::{PrivateKeyParts, PublicKeyParts};
            let key = rsa::RsaPrivateKey::new(&mut rng, RSA_MIN_BITS)
                .map_err(|_| "could not make an RSA key".to_owned())?;
            let primes = key.primes();
            let [p, q] = primes else {
                return Err("an RSA key of other than two primes".into());
            };
            let mut jwk = json!({
                "kty": "RSA", "alg": "RS256",
                "n": b64(&key.n().to_bytes_be()), "e": b64(&key.e().to_bytes_be()),
                "d": b64(&key.d().to_bytes_be()),
                "p": b64(&p.to_bytes_be()), "q": b64(&q.to_bytes_be()),
            });
            if let (Some(dp), Some(dq)) = (key.dp(), key.dq()) {
                jwk["dp"] = json!(b64(&dp.to_bytes_be()));
                jwk["dq"] = json!(b64(&dq.to_bytes_be()));
            }
            if let Some(qi) = key.crt_coefficient() {
                jwk["qi"] = json!(b64(&qi.to_bytes_be()));
            }
            Ok(jwk)
        }
        Algorithm::ES256 => {
            use p256::elliptic_curve::sec1::ToEncodedPoint;
            let secret = p256::SecretKey::random(&mut rng);
            let point = secret.public_key().to_encoded_point(false);
            Ok(json!({
                "kty": "EC", "crv": "P-256", "alg": "ES256",
                "d": b64(&secret.to_bytes()),
                "x": b64(point.x().map(|x| x.as_slice()).unwrap_or_default()),
                "y": b64(point.y().map(|y| y.as_slice()).unwrap_or_default()),
            }))
        }
        Algorithm::EdDSA => {
            let signing = ed25519_dalek::SigningKey::generate(&mut rng);
            Ok(json!({
                "kty": "OKP", "crv": "Ed25519", "alg": "EdDSA",
                "d": b64(signing.as_bytes()),
                "x": b64(signing.verifying_key().as_bytes()),
            }))
        }
        other => Err(format!("{other:?} is not an admission algorithm")),
    }
}

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
