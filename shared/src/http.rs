//! The HTTP edge shared by the API functions: JSON and RFC 9457 problem responses, request
//! bodies, the caller's identity and path matching. [`problem`] is the one place an
//! [`Error`] becomes a status code.

use std::future::Future;

use aws_lambda_events::event::apigw::ApiGatewayV2httpResponse;
use lambda_http::http::{header, HeaderValue, StatusCode};
use lambda_http::request::{LambdaRequest, RequestContext};
use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::LambdaEvent;
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::Error;
use crate::ids::UserId;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 8 * 1024;

/// Largest body of a bulk upload (`PUT /queues/{queueId}/access`: 10,000 user ids of up to
/// 64 characters fit).
pub const MAX_BULK_BODY_BYTES: usize = 1024 * 1024;

const PROBLEM_JSON: &str = "application/problem+json";

/// `Cache-Control` of every error response.
const NO_STORE: &str = "no-store";

/// RFC 9457 problem details.
#[derive(Debug, Serialize)]
struct Problem<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    title: &'a str,
    status: u16,
    detail: String,
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
        Error::AccessDenied(_) => (StatusCode::FORBIDDEN, "Access denied", "access-denied"),
        Error::NotFound(_) => (StatusCode::NOT_FOUND, "Not found", "not-found"),
        Error::Gone(departure) => (StatusCode::GONE, departure.title(), departure.kind()),
        Error::SoldOut { .. } | Error::QueueSoldOut { .. } => {
            (StatusCode::GONE, "Sold out", "sold-out")
        }
        Error::QueueClosed { .. } => (StatusCode::CONFLICT, "Queue closed", "queue-closed"),
        Error::QueueNotOpen { .. } => (StatusCode::CONFLICT, "Queue not open", "queue-not-open"),
        Error::QueueFull { .. } => (StatusCode::TOO_MANY_REQUESTS, "Queue full", "queue-full"),
        Error::Conflict(_) => (StatusCode::CONFLICT, "Conflict", "conflict"),
        Error::QueueLimit { .. } => (StatusCode::CONFLICT, "Too many queues", "too-many-queues"),
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
    let body = Problem {
        kind: &format!("https://lineup.dev/problems/{kind}"),
        title,
        status: status.as_u16(),
        detail,
    };
    let mut response = json_with_type(status, &body, PROBLEM_JSON);
    let headers = response.headers_mut();
    // An error is never cached: a board that failed to read must not stay failed.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    match err {
        Error::Unavailable { retry_after, .. }
        | Error::RateLimited { retry_after }
        | Error::QueueFull { retry_after, .. }
        | Error::QueueNotOpen { retry_after } => {
            headers.insert(
                header::RETRY_AFTER,
                HeaderValue::from(retry_after.as_secs().max(1)),
            );
        }
        Error::MethodNotAllowed { allow } => {
            headers.insert(header::ALLOW, HeaderValue::from_static(allow));
        }
        Error::Unauthorized(_) => {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        _ => {}
    }
    response
}

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

fn json_with_type(
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

/// Turns a handler result into a response, whichever way it went.
pub fn respond(result: Result<Response<Body>, Error>) -> Response<Body> {
    result.unwrap_or_else(|err| problem(&err))
}

/// Handles one request with `route`: its response, or its error as a problem. All its Redis
/// calls share one budget of four response timeouts ([`crate::store::request`]).
pub async fn answer(route: impl Future<Output = Result<Response<Body>, Error>>) -> Response<Body> {
    respond(crate::store::request(route).await)
}

/// Parses the JSON body, which must be an object, into `T`, naming the field that does
/// not fit. (Serde would otherwise read an array positionally into a struct.)
pub fn json_body<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, true, MAX_BODY_BYTES)
}

/// [`json_body`] for the one route that takes a bulk upload: up to [`MAX_BULK_BODY_BYTES`].
pub fn bulk_json_body<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, true, MAX_BULK_BODY_BYTES)
}

/// Parses any JSON document in the body into `T`.
pub fn json_document<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, false, MAX_BODY_BYTES)
}

fn parse_body<T: DeserializeOwned>(
    request: &Request,
    object_only: bool,
    limit: usize,
) -> Result<T, Error> {
    let bytes: &[u8] = request.body().as_ref();
    if bytes.len() > limit {
        return Err(Error::PayloadTooLarge { limit });
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => return Err(Error::invalid("body", "a JSON object is required")),
        Some(b'{') => {}
        Some(_) if object_only => {
            return Err(Error::invalid("body", "must be a JSON object"));
        }
        Some(_) => {}
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|err| Error::invalid_at("body", err))?;
    deserializer
        .end()
        .map_err(|err| Error::invalid("body", err.to_string()))?;
    Ok(value)
}

/// The `sub` claim of an API Gateway JWT authorizer, when one ran: the only buyer identity
/// API Gateway has verified.
pub fn jwt_subject(request: &Request) -> Option<String> {
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => context
            .authorizer
            .as_ref()?
            .jwt
            .as_ref()?
            .claims
            .get("sub")
            .cloned(),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The buyer a request speaks for: the JWT `sub` when an authorizer verified one, else
/// `claimed` (the body's `userId`) where the deployment allows it (`ALLOW_BODY_USER_ID=unsafe`).
/// Without either it is 401; a `claimed` that differs from the `sub` is 403.
pub fn buyer(
    request: &Request,
    claimed: Option<&str>,
    allow_body_user_id: bool,
) -> Result<UserId, Error> {
    match (jwt_subject(request), claimed) {
        (Some(sub), Some(claimed)) if sub != claimed => Err(Error::Forbidden(
            "userId differs from the authenticated user".into(),
        )),
        (Some(sub), _) => UserId::parse(&sub),
        (None, _) if !allow_body_user_id => Err(no_identity()),
        (None, Some(claimed)) => UserId::parse(claimed),
        (None, None) => Err(Error::invalid(UserId::FIELD, "is required")),
    }
}

/// The 401 for a buyer route reached without a verified identity.
pub fn no_identity() -> Error {
    Error::Unauthorized("a verified JWT (Authorization: Bearer) is required".into())
}

/// The caller's address as API Gateway saw it (`requestContext.http.sourceIp`), or as the
/// local stack saw the TCP peer.
pub fn source_ip(request: &Request) -> Option<std::net::IpAddr> {
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => context.http.source_ip.as_deref()?.parse().ok(),
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The context a Lambda authorizer (such as `queue-authorizer`) attached to the request.
pub fn lambda_authorizer_context(
    request: &Request,
) -> Option<serde_json::Map<String, serde_json::Value>> {
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => {
            let fields = &context.authorizer.as_ref()?.fields;
            (!fields.is_empty()).then(|| fields.clone().into_iter().collect())
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The path split into its segments, each percent-decoded (`a%3Ab` is `a:b`; a segment that
/// does not decode to UTF-8 is kept as sent, and fails id validation). A path with an empty
/// segment (`//`, or a trailing slash) matches no route: it is the 404 of [`no_route`], before
/// any route reads an id or a method from it.
pub fn segments(request: &Request) -> Result<Vec<String>, Error> {
    path_segments(request.uri().path()).ok_or_else(|| no_route(request))
}

/// `path` split into its percent-decoded segments, as [`segments`]; `None` when one is empty.
pub fn path_segments(path: &str) -> Option<Vec<String>> {
    path.strip_prefix('/')
        .unwrap_or(path)
        .split('/')
        .map(|segment| match segment {
            "" => None,
            _ => Some(match percent_decode_str(segment).decode_utf8() {
                Ok(decoded) => decoded.into_owned(),
                Err(_) => segment.to_owned(),
            }),
        })
        .collect()
}

/// The 404 for a path no route matches.
pub fn no_route(request: &Request) -> Error {
    Error::NotFound(format!("no route for {}", request.uri().path()))
}

/// The Lambda entry of an HTTP function. Unlike `lambda_http::run`, it accepts any JSON: an
/// API Gateway request goes to `handler`; anything else (an SQS batch or a scheduled event
/// sent to the wrong function) is answered with a 400 problem, never an invocation error.
pub async fn answer_lambda_event<F, Fut>(
    event: LambdaEvent<serde_json::Value>,
    handler: F,
) -> Result<ApiGatewayV2httpResponse, std::convert::Infallible>
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, std::convert::Infallible>>,
{
    let LambdaEvent { payload, context } = event;
    let response = match serde_json::from_value::<LambdaRequest>(payload) {
        Ok(request) => {
            let request: Request = request.into();
            match handler(request.with_lambda_context(context)).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Err(_) => problem(&Error::invalid(
            "event",
            "not an API Gateway HTTP API request",
        )),
    };
    Ok(to_api_gateway(response))
}

/// The API Gateway HTTP API (payload 2.0) form of `response`.
fn to_api_gateway(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        other => Some(other),
    };
    out
}
