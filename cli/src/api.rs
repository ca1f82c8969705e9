//! One request and its reply: JSON in, JSON or a problem (RFC 9457) out. Reads and the
//! idempotent writes (PUT, DELETE) are tried again after a 502, 503 or 504 or a failed
//! connection, waiting as `Retry-After` says; a POST is sent once, because minting codes
//! twice would show the operator only the second batch.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use crate::error::{CliError, Problem};
use crate::routes::Route;
use crate::sign::Signer;

/// How long one request may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Tries of a read or an idempotent write, the first included.
pub const TRIES: u32 = 3;
/// The longest wait between tries, whatever `Retry-After` says.
const MOST_WAIT: Duration = Duration::from_secs(5);

/// What a query value keeps as it is: RFC 3986's unreserved characters, as SigV4's canonical
/// query string writes them. `aws-sigv4` signs `genre=k-pop` whatever the URL's encoding; a
/// verifier that reads the query as it arrives (botocore's) would see `k%2Dpop` and refuse it.
/// Sent in the canonical form, both read the same.
const QUERY_VALUE: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A 2xx answer: its status and its JSON body (`null` when it has none).
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
}

/// The API of one target.
#[derive(Clone)]
pub struct Api {
    base: String,
    client: HttpsClient,
    signer: Option<Signer>,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("base", &self.base)
            .field("signed", &self.signer.is_some())
            .finish()
    }
}

impl Api {
    /// `base` is the API's URL (`https://…execute-api…amazonaws.com`, or lineup-local's);
    /// requests are signed when `signer` is given. HTTPS trusts the system's roots.
    pub fn new(base: &str, signer: Option<Signer>) -> Result<Api, CliError> {
        let base = base.trim_end_matches('/').to_owned();
        let parsed: http::Uri = base
            .parse()
            .map_err(|err| CliError::Usage(format!("bad URL {base:?}: {err}")))?;
        match parsed.scheme_str() {
            Some("http" | "https") if parsed.host().is_some() => {}
            _ => {
                return Err(CliError::Usage(format!(
                    "bad URL {base:?}: give http:// or https:// and a host"
                )))
            }
        }
        let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|err| CliError::Setup(format!("TLS: {err}")))?;
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(with_native_roots(tls)?)
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Api {
            base,
            client,
            signer,
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn signed(&self) -> bool {
        self.signer.is_some()
    }

    /// Sends `route` with its path parameters, query and JSON body, trying again where that
    /// is safe (above).
    pub async fn call(
        &self,
        route: Route,
        params: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Reply, CliError> {
        let retryable = route.method() != Method::POST;
        let mut tried = 1;
        loop {
            match self.call_once(route, params, query, body).await {
                Err(err) if retryable && tried < TRIES => {
                    let wait = match &err {
                        CliError::Failed(problem) if matches!(problem.status, 502..=504) => {
                            Duration::from_secs(problem.retry_after.unwrap_or(1))
                        }
                        CliError::Unreachable { .. } => Duration::from_secs(1),
                        _ => return Err(err),
                    };
                    tokio::time::sleep(wait.min(MOST_WAIT)).await;
                    tried += 1;
                }
                other => return other,
            }
        }
    }

    /// Sends `route` once.
    pub async fn call_once(
        &self,
        route: Route,
        params: &[&str],
        query: &[(&str, String)],
        body: Option<&Value>,
    ) -> Result<Reply, CliError> {
        let mut url = format!("{}{}", self.base, route.path(params));
        if !query.is_empty() {
            let pairs: Vec<String> = query
                .iter()
                .map(|(name, value)| {
                    format!(
                        "{name}={}",
                        percent_encoding::utf8_percent_encode(value, QUERY_VALUE)
                    )
                })
                .collect();
            url.push('?');
            url.push_str(&pairs.join("&"));
        }
        let uri: http::Uri = url
            .parse()
            .map_err(|err| CliError::Usage(format!("bad request URL {url:?}: {err}")))?;
        let host = uri
            .authority()
            .map(|authority| authority.to_string())
            .unwrap_or_default();
        let payload = match body {
            Some(body) => Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
            None => Bytes::new(),
        };
        let mut request = Request::builder()
            .method(route.method())
            .uri(uri)
            .header(header::HOST, host)
            .header(header::ACCEPT, "application/json, application/problem+json")
            .header(
                header::USER_AGENT,
                concat!("lineup-cli/", env!("CARGO_PKG_VERSION")),
            );
        if body.is_some() {
            request = request.header(header::CONTENT_TYPE, "application/json");
        }
        let mut request = request
            .body(payload)
            .map_err(|err| CliError::Usage(format!("cannot build the request: {err}")))?;
        if let Some(signer) = &self.signer {
            signer.sign(&mut request).await?;
        }
        let request = request.map(Full::new);
        let what = format!("{} {}", route.method(), self.base);
        let response = tokio::time::timeout(REQUEST_TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| CliError::Unreachable {
                what: what.clone(),
                reason: format!("no answer in {} s", REQUEST_TIMEOUT.as_secs()),
            })?
            .map_err(|err| CliError::Unreachable {
                what: what.clone(),
                reason: crate::sign::error_chain(&err),
            })?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get(header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse().ok());
        let bytes = tokio::time::timeout(REQUEST_TIMEOUT, response.into_body().collect())
            .await
            .map_err(|_| CliError::Unreachable {
                what: what.clone(),
                reason: "the answer stopped coming".into(),
            })?
            .map_err(|err| CliError::Unreachable {
                what,
                reason: err.to_string(),
            })?
            .to_bytes();
        if status.is_success() {
            let body = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).map_err(|err| CliError::Unreachable {
                    what: format!("{} {}", route.method(), route.template()),
                    reason: format!("the answer is not JSON: {err}"),
                })?
            };
            return Ok(Reply { status, body });
        }
        let problem = problem(status, &bytes, retry_after);
        Err(if status.is_client_error() {
            CliError::Refused(problem)
        } else {
            CliError::Failed(problem)
        })
    }
}

/// A problem+json body as one line; any other body's first 200 characters.
fn problem(status: StatusCode, body: &[u8], retry_after: Option<u64>) -> Problem {
    let reason = status.canonical_reason().unwrap_or("error").to_owned();
    let (title, detail) = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(fields)) => (
            fields
                .get("title")
                .and_then(Value::as_str)
                .map_or(reason, str::to_owned),
            fields
                .get("detail")
                .or_else(|| fields.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned(),
        ),
        _ => (
            reason,
            String::from_utf8_lossy(body).chars().take(200).collect(),
        ),
    };
    Problem {
        status: status.as_u16(),
        title,
        detail: detail.replace(['\n', '\r'], " "),
        retry_after,
    }
}

/// The system's root certificates (the operator's machine, not a Lambda).
fn with_native_roots(
    tls: rustls::ConfigBuilder<rustls::ClientConfig, rustls::WantsVerifier>,
) -> Result<rustls::ClientConfig, CliError> {
    let mut roots = rustls::RootCertStore::empty();
    let found = rustls_native_certs::load_native_certs();
    for cert in found.certs {
        let _ = roots.add(cert);
    }
    if roots.is_empty() {
        return Err(CliError::Setup(
            "no trusted root certificates found on this system".into(),
        ));
    }
    Ok(tls.with_root_certificates(roots).with_no_client_auth())
}
