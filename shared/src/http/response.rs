//! Responses: JSON (cached or not), a page, an empty body, and the content type and cache
//! header every problem response carries.

use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Response};
use serde::Serialize;

use crate::error::Error;

/// `Cache-Control` of every error response.
pub(super) const NO_STORE: &str = "no-store";

/// The content type of a problem response (RFC 9457).
pub(super) const PROBLEM_JSON: &str = "application/problem+json";

/// A JSON response that shared caches (a CDN, a browser) may keep and serve for as long as
/// `cache_control` says, such as `public, max-age=5`.
pub fn json_cached(
    status: StatusCode,
    body: &impl Serialize,
    cache_control: &'static str,
) -> Response<Body> {
    let mut response = json(status, body);
    if response.status() == status {
        response.headers_mut().insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(cache_control),
        );
    }
    response
}

/// A JSON response.
pub fn json(status: StatusCode, body: &impl Serialize) -> Response<Body> {
    json_with_type(status, body, "application/json")
}

pub(super) fn json_with_type(
    status: StatusCode,
    body: &impl Serialize,
    content_type: &'static str,
) -> Response<Body> {
    let mut response = match serde_json::to_string(body) {
        Ok(text) => Response::new(Body::Text(text)),
        Err(err) => {
            tracing::error!(%err, "response serialisation failed");
            let mut r = Response::new(Body::Text(
                r#"{"type":"about:blank","title":"Internal error","status":500,"detail":"Something went wrong on our side."}"#.into(),
            ));
            *r.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
            return r;
        }
    };
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// A page, script or stylesheet: `body` as `content_type`, cacheable as `cache_control`
/// says, under the Content-Security-Policy `csp`, never sniffed as another type and never
/// sending a referrer.
pub fn page(
    body: impl Into<String>,
    content_type: &'static str,
    cache_control: &'static str,
    csp: &str,
) -> Result<Response<Body>, Error> {
    let mut response = Response::new(Body::Text(body.into()));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static(cache_control),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_str(csp).map_err(|err| Error::Internal(err.to_string()))?,
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    Ok(response)
}

/// An empty response.
pub fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Body::Empty);
    *response.status_mut() = status;
    response
}
