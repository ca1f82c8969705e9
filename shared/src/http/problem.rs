//! RFC 9457 problem responses: [`problem`] is the one place an [`Error`] becomes a status
//! code. Internal details are logged, never sent.

use std::collections::BTreeMap;

use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Response};
use serde::Serialize;

use super::response::{json_with_type, NO_STORE, PROBLEM_JSON};
use crate::error::{Error, Turned};

/// RFC 9457 problem details.
#[derive(Debug, Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    detail: String,
    /// A refusal's link, as a member named by its relation (RFC 9457 extension member).
    #[serde(flatten)]
    link: Option<BTreeMap<&'static str, &'a str>>,
}

/// The response for `err`. Internal details are logged, never sent.
pub fn problem(err: &Error) -> Response<Body> {
    let (status, title, kind) = match err {
        Error::Invalid { .. } => (
            StatusCode::BAD_REQUEST,
            "Invalid request",
            "invalid-request",
        ),
        Error::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "Unauthorized", "unauthorized"),
        Error::Forbidden(_) => (StatusCode::FORBIDDEN, "Forbidden", "forbidden"),
        Error::NotFound(_) => (StatusCode::NOT_FOUND, "Not found", "not-found"),
        Error::Refused(refusal) => (
            match refusal.turned() {
                Turned::Forbidden => StatusCode::FORBIDDEN,
                Turned::Gone => StatusCode::GONE,
                Turned::Conflict => StatusCode::CONFLICT,
                Turned::Busy => StatusCode::TOO_MANY_REQUESTS,
            },
            refusal.title(),
            refusal.kind(),
        ),
        Error::Conflict(_) => (StatusCode::CONFLICT, "Conflict", "conflict"),
        Error::MethodNotAllowed { .. } => (
            StatusCode::METHOD_NOT_ALLOWED,
            "Method not allowed",
            "method-not-allowed",
        ),
        Error::PayloadTooLarge { .. } => (
            StatusCode::PAYLOAD_TOO_LARGE,
            "Request body too large",
            "payload-too-large",
        ),
        Error::RateLimited { .. } => (
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests",
            "rate-limited",
        ),
        Error::Unavailable { .. } => (
            StatusCode::SERVICE_UNAVAILABLE,
            "Service unavailable",
            "service-unavailable",
        ),
        Error::Internal(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "Internal error",
            "internal-error",
        ),
    };
    let detail = match err {
        Error::Unavailable { source, .. } => {
            tracing::warn!(error = %source, "redis unavailable");
            "The service is briefly unavailable; retry after the delay in Retry-After.".into()
        }
        Error::Internal(detail) => {
            tracing::error!(%detail, "internal error");
            "Something went wrong on our side.".into()
        }
        other => other.to_string(),
    };
    let link = match err {
        Error::Refused(refusal) => refusal.link(),
        _ => None,
    };
    let body = Problem {
        kind: &format!("https://lineup.dev/problems/{kind}"),
        title,
        status: status.as_u16(),
        detail,
        link: link.map(|(rel, href)| BTreeMap::from([(rel, href)])),
    };
    let mut response = json_with_type(status, &body, PROBLEM_JSON);
    let headers = response.headers_mut();
    // An error is never cached: a board that failed to read must not stay failed.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    let retry_after = match err {
        Error::Unavailable { retry_after, .. } | Error::RateLimited { retry_after } => {
            Some(*retry_after)
        }
        Error::Refused(refusal) => refusal.retry_after(),
        _ => None,
    };
    if let Some(retry_after) = retry_after {
        headers.insert(
            header::RETRY_AFTER,
            HeaderValue::from(retry_after.as_secs().max(1)),
        );
    }
    if let Some((rel, href)) = link {
        if let Ok(value) = HeaderValue::from_str(&format!("<{href}>; rel=\"{rel}\"")) {
            headers.insert(header::LINK, value);
        }
    }
    match err {
        Error::MethodNotAllowed { allow } => {
            if let Ok(value) = HeaderValue::from_str(allow) {
                headers.insert(header::ALLOW, value);
            }
        }
        Error::Unauthorized(_) => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        _ => {}
    }
    response
}
