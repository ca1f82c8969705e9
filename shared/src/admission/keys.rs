//! The admission JWT's signing keys: a private JWK set as the secret holds it (each key with
//! the instant it starts signing and the instant it retires), read and checked, the key of
//! the moment, the public keys a verifier needs, a fresh key and a rotation's next set. A
//! private key never leaves this module but through [`KeySet::generate`]'s JSON.

use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use chrono::{DateTime, Utc};
use jsonwebtoken::jwk::{
    AlgorithmParameters, CommonParameters, EllipticCurve, EllipticCurveKeyParameters,
    EllipticCurveKeyType, Jwk, JwkSet, KeyAlgorithm, OctetKeyPairParameters, OctetKeyPairType,
    PublicKeyUse, RSAKeyParameters, RSAKeyType,
};
use jsonwebtoken::{Algorithm, EncodingKey};
use serde::Deserialize;
use serde_json::{json, Value};

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

/// One signing key: its id, algorithm, private half (as ring reads it), public JWK and the
/// span it signs in.
#[derive(Clone)]
pub struct AdmissionKey {
    pub(super) kid: String,
    pub(super) alg: Algorithm,
    pub(super) encoding: EncodingKey,
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
    pub(super) keys: Vec<AdmissionKey>,
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

pub(super) fn b64(bytes: &[u8]) -> String {
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
