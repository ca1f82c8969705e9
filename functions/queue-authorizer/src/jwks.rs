//! The buyers' JWT issuer's public keys, fetched as API Gateway's JWT authorizer finds them:
//! `<issuer>/.well-known/openid-configuration` names the `jwks_uri`, which serves the JWKS.
//!
//! Plain HTTP/1.1 over rustls on ring, trusting the Amazon roots Cognito's certificates chain
//! to, or `JWT_CA_FILE`. Both requests share one short deadline, and a body over 1 MiB is
//! refused. The client is built at each fetch, which happens at most once a
//! `JWT_KEYS_REFETCH_SECONDS`: nothing of it is made at cold start.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnectorBuilder;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::DecodingKey;
use serde_json::Value;

/// How long one fetch (discovery and JWKS) may take in all: the authorizer's own timeout is 3 s.
pub const FETCH_DEADLINE: Duration = Duration::from_millis(1_500);

/// The largest discovery document or JWKS read.
const MAX_BODY: usize = 1 << 20;

/// A signing key of the issuer.
#[derive(Clone)]
pub struct Key {
    pub kid: String,
    pub key: DecodingKey,
    /// The JWK's `alg`, when it names one: a JWT under this key must use it.
    pub alg: Option<jsonwebtoken::Algorithm>,
}

/// Where the issuer's keys come from.
pub struct KeySource {
    issuer: String,
    /// `JWT_CA_FILE`'s PEM; parsed at each fetch, not at cold start.
    ca_roots: Option<Vec<u8>>,
}

impl KeySource {
    pub fn new(issuer: &str, ca_roots: Option<&[u8]>) -> Self {
        KeySource {
            issuer: issuer.trim_end_matches('/').to_owned(),
            ca_roots: ca_roots.map(<[u8]>::to_vec),
        }
    }

    /// The issuer's signing keys, or why they could not be had (no secret in it).
    pub async fn fetch(&self) -> Result<Vec<Key>, String> {
        match tokio::time::timeout(FETCH_DEADLINE, self.fetch_now()).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {FETCH_DEADLINE:?}")),
        }
    }

    async fn fetch_now(&self) -> Result<Vec<Key>, String> {
        let client = self.client()?;
        let discovery = format!("{}/.well-known/openid-configuration", self.issuer);
        let discovery = get_json(&client, &discovery).await?;
        let jwks_uri = discovery["jwks_uri"]
            .as_str()
            .ok_or("the discovery document names no jwks_uri")?;
        let jwks = get_json(&client, jwks_uri).await?;
        let keys = jwks["keys"]
            .as_array()
            .ok_or("the JWKS holds no keys array")?;
        Ok(keys.iter().filter_map(signing_key).collect())
    }

    /// HTTPS only, unless the issuer itself is plain HTTP (a loopback issuer, by the config's
    /// rule).
    fn client(
        &self,
    ) -> Result<Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|err| err.to_string())?
            .with_root_certificates(lineup::tls::root_store(self.ca_roots.as_deref()))
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(FETCH_DEADLINE));
        let builder = HttpsConnectorBuilder::new().with_tls_config(tls);
        let connector = if self.issuer.starts_with("http://") {
            builder.https_or_http().enable_http1().wrap_connector(http)
        } else {
            builder.https_only().enable_http1().wrap_connector(http)
        };
        Ok(Client::builder(TokioExecutor::new()).build(connector))
    }
}

/// The JSON at `url`, answered with 200.
async fn get_json(
    client: &Client<hyper_rustls::HttpsConnector<HttpConnector>, Empty<Bytes>>,
    url: &str,
) -> Result<Value, String> {
    let uri: http::Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
    let request = http::Request::get(uri)
        .header(http::header::ACCEPT, "application/json")
        .body(Empty::new())
        .map_err(|err| err.to_string())?;
    let response = client
        .request(request)
        .await
        .map_err(|err| format!("{url}: {err}"))?;
    if response.status() != http::StatusCode::OK {
        return Err(format!("{url}: {}", response.status()));
    }
    let body = Limited::new(response.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|err| format!("{url}: {err}"))?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|err| format!("{url}: not JSON ({err})"))
}

/// A JWKS entry as a key to verify signatures with; `None` for one that is not (an encryption
/// key, a symmetric one, one without `kid`, or one this build cannot read).
fn signing_key(entry: &Value) -> Option<Key> {
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    if matches!(&jwk.common.public_key_use, Some(use_) if *use_ != PublicKeyUse::Signature) {
        return None;
    }
    if matches!(
        jwk.algorithm,
        jsonwebtoken::jwk::AlgorithmParameters::OctetKey(_)
    ) {
        return None;
    }
    let alg = match jwk.common.key_algorithm {
        None => None,
        Some(named) => Some(named.to_string().parse().ok()?),
    };
    Some(Key {
        kid: jwk.common.key_id.clone()?,
        key: DecodingKey::from_jwk(&jwk).ok()?,
        alg,
    })
}
