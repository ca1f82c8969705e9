//! A JWT issuer for the gatekeeper's buyer check: OpenID discovery and a JWKS served over
//! HTTP on a loopback port, and JWTs signed with its keys (RS256 from `tests/fixtures/jwt`,
//! ES256 made at start). Its keys can change (rotation) and it can go down and come back on
//! the same port.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

/// The audience the test issuer's JWTs carry by default.
pub const AUDIENCE: &str = "lineup-test";

/// A signing key: its `kid`, algorithm, private half and JWKS entry.
pub struct SigningKey {
    pub kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
    pub jwk: Value,
}

impl SigningKey {
    /// One of the fixed RSA keys (`rsa-1`, `rsa-2`).
    pub fn rsa(name: &str) -> Self {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/jwt");
        let pem = std::fs::read(dir.join(format!("{name}.pem"))).expect("fixture key");
        let jwk = std::fs::read_to_string(dir.join(format!("{name}.jwk.json"))).expect("jwk");
        SigningKey {
            kid: name.to_owned(),
            alg: Algorithm::RS256,
            encoding: EncodingKey::from_rsa_pem(&pem).expect("RSA PEM"),
            jwk: serde_json::from_str(&jwk).expect("JWK JSON"),
        }
    }

    /// A P-256 key made now.
    pub fn ec(kid: &str) -> Self {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256");
        let point = pair.public_key_raw(); // 0x04 || x || y
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
            jwk: json!({
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
            }),
        }
    }

    /// A JWT of these claims under this key, its header naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }

    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }
}

/// The issuer's server.
pub struct TestIssuer {
    addr: SocketAddr,
    /// The JWKS entries it serves.
    jwks: Arc<Mutex<Vec<Value>>>,
    /// How many JWKS requests it answered.
    pub fetches: Arc<Mutex<u32>>,
    server: Option<JoinHandle<()>>,
}

#[derive(Clone)]
struct Served {
    issuer: String,
    jwks: Arc<Mutex<Vec<Value>>>,
    fetches: Arc<Mutex<u32>>,
}

impl TestIssuer {
    /// Serving `keys`' JWKS on a fresh loopback port.
    pub async fn start(keys: &[&SigningKey]) -> TestIssuer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mut issuer = TestIssuer {
            addr,
            jwks: Arc::new(Mutex::new(keys.iter().map(|k| k.jwk.clone()).collect())),
            fetches: Arc::new(Mutex::new(0)),
            server: None,
        };
        issuer.serve(listener);
        issuer
    }

    /// Not started yet: its port is reserved by nobody until [`TestIssuer::up`].
    pub async fn down_from_the_start(keys: &[&SigningKey]) -> TestIssuer {
        let mut issuer = TestIssuer::start(keys).await;
        issuer.down();
        issuer
    }

    /// `JWT_ISSUER`, as the `iss` of its JWTs.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Serves these keys from now on.
    pub fn publish(&self, keys: &[&SigningKey]) {
        *self.jwks.lock().unwrap() = keys.iter().map(|k| k.jwk.clone()).collect();
    }

    pub fn jwks_fetches(&self) -> u32 {
        *self.fetches.lock().unwrap()
    }

    /// Stops listening: connections are refused.
    pub fn down(&mut self) {
        if let Some(server) = self.server.take() {
            server.abort();
        }
    }

    /// Listens again, on the same port.
    pub async fn up(&mut self) {
        let listener = tokio::net::TcpListener::bind(self.addr)
            .await
            .expect("rebind");
        self.serve(listener);
    }

    fn serve(&mut self, listener: tokio::net::TcpListener) {
        let served = Served {
            issuer: self.url(),
            jwks: self.jwks.clone(),
            fetches: self.fetches.clone(),
        };
        let app = Router::new()
            .route("/.well-known/openid-configuration", get(discovery))
            .route("/keys", get(jwks))
            .with_state(served);
        self.server = Some(tokio::spawn(async move {
            axum::serve(listener, app).await.expect("serve");
        }));
    }

    /// The claims of a buyer's valid JWT from this issuer, valid for ten minutes.
    pub fn claims(&self, sub: &str) -> Value {
        let now = chrono::Utc::now().timestamp();
        json!({"iss": self.url(), "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600})
    }

    /// The gatekeeper's settings for this issuer.
    pub fn vars(&self) -> [(&'static str, String); 3] {
        [
            ("JWT_ISSUER", self.url()),
            ("JWT_AUDIENCE", AUDIENCE.to_owned()),
            // One second, not a minute, so that rotation and recovery take a second.
            ("JWT_KEYS_REFETCH_SECONDS", "1".to_owned()),
        ]
    }
}

impl Drop for TestIssuer {
    fn drop(&mut self) {
        self.down();
    }
}

async fn discovery(State(served): State<Served>) -> Json<Value> {
    Json(json!({
        "issuer": served.issuer,
        "jwks_uri": format!("{}/keys", served.issuer),
    }))
}

async fn jwks(State(served): State<Served>) -> Json<Value> {
    *served.fetches.lock().unwrap() += 1;
    Json(json!({"keys": served.jwks.lock().unwrap().clone()}))
}
