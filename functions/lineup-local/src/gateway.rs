//! The HTTP↔Lambda gateway: what API Gateway does in AWS. It turns each HTTP request into
//! the `lambda_http::Request` the Lambda runtime would build, sends it to the function that
//! owns its first path segment, and turns the answer back into HTTP. For the protected
//! sample route it first builds the authorizer event API Gateway would send and runs
//! `queue-authorizer` on it. The sample browse route it puts behind the JWT authorizer on
//! lineup's own issuer, as the template's `AdmissionJwt` does: the admission JWT is verified
//! against the JWKS and its claims reach the function as API Gateway hands them on.
//! `POST /events` hands EventBridge events to `event-applier`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use aws_lambda_events::event::apigw::ApiGatewayV2httpRequestContext;
use axum::body::{to_bytes, Body as AxumBody};
use axum::extract::{ConnectInfo, State};
use axum::response::Response as AxumResponse;
use axum::Router;
use lambda_http::http::{Method, StatusCode};
use lambda_http::request::RequestContext;
use lambda_http::Body;
use lambda_http::RequestExt;
use lineup::http::MAX_BULK_BODY_BYTES;
use lineup::Error;
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::stack::Stack;

/// The HTTP router: every path goes to the function that owns its first segment. CORS is
/// answered as the template's `CorsConfiguration` has API Gateway answer it with its default
/// origin (`*`): a booking front end on another origin renews the admission through status.
pub fn router(stack: Stack) -> Router {
    use lambda_http::http::header::{HeaderName, AUTHORIZATION, CONTENT_TYPE};
    let cors = tower_http::cors::CorsLayer::new()
        .allow_origin(tower_http::cors::Any)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            CONTENT_TYPE,
            AUTHORIZATION,
            HeaderName::from_static("x-queue-token"),
            HeaderName::from_static("x-queue-id"),
            HeaderName::from_static("x-altcha"),
        ])
        .max_age(std::time::Duration::from_secs(600));
    Router::new()
        .fallback(dispatch)
        .with_state(Arc::new(stack))
        .layer(cors)
}

async fn dispatch(
    State(stack): State<Arc<Stack>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: axum::extract::Request,
) -> AxumResponse {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    let response = match to_lambda_request(request, peer).await {
        Ok(request) => {
            // A path with an empty segment (`//`, a trailing slash) is no route's: the queue
            // API answers its 404, as every function does.
            let segments = lineup::http::path_segments(&path).unwrap_or_default();
            let response = match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["rankings", ..] => ranking_api::handle(request, &stack.ranking_api).await,
                ["coupons", ..] => coupon_api::handle(request, &stack.coupon_api).await,
                ["events"] => Ok(post_events(&request, &stack).await),
                // The sample route the template puts behind `queue-authorizer`. API Gateway
                // runs the authorizer only for the route's own method; any other method is
                // the function's 405.
                ["queues", _, "admission"] if method == Method::GET => {
                    match authorize(request, &stack).await {
                        Ok(request) => queue_api::handle(request, &stack.queue_api).await,
                        Err(err) => Ok(lineup::http::problem(&err)),
                    }
                }
                // The sample browse route, behind the template's `AdmissionJwt`.
                ["queues", _, "seats"] if method == Method::GET => {
                    match admitted(request, &stack.queue_api) {
                        Ok(request) => queue_api::handle(request, &stack.queue_api).await,
                        Err(err) => Ok(lineup::http::problem(&err)),
                    }
                }
                _ => queue_api::handle(request, &stack.queue_api).await,
            };
            match response {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Err(err) => lineup::http::problem(&err),
    };
    tracing::info!(
        %method,
        path = %redact_tokens(&path),
        status = response.status().as_u16(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "request"
    );
    from_lambda_response(response)
}

/// Runs `queue-authorizer` as API Gateway would: with the request's headers and path
/// parameters, attaching its context to the request when it allows, 403 when it denies,
/// and 503 with `Retry-After` when it could not ask Redis.
async fn authorize(
    request: lambda_http::Request,
    stack: &Stack,
) -> Result<lambda_http::Request, Error> {
    let queue = request
        .uri()
        .path()
        .split('/')
        .nth(2)
        .unwrap_or_default()
        .to_owned();
    let headers: serde_json::Map<String, Value> = request
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), json!(value.to_str().ok()?))))
        .collect();
    let event = json!({
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": "arn:aws:execute-api:local:000000000000:local/$default/GET/queues/{queueId}/admission",
        "routeKey": "GET /queues/{queueId}/admission",
        "rawPath": request.uri().path(),
        "rawQueryString": request.uri().query().unwrap_or_default(),
        "headers": headers,
        "pathParameters": {"queueId": queue},
        "requestContext": {
            "accountId": "000000000000", "apiId": "local", "domainName": "localhost",
            "domainPrefix": "localhost", "requestId": "local", "routeKey": "GET /queues/{queueId}/admission",
            "stage": "$default", "time": "", "timeEpoch": 0,
            "http": {"method": "GET", "path": request.uri().path(), "protocol": "HTTP/1.1",
                     "sourceIp": "127.0.0.1", "userAgent": ""}
        }
    });
    let context = match queue_authorizer::decide_event(event, &stack.authorizer).await {
        Ok(context) => context,
        Err(queue_authorizer::Denied::Refused(reason)) => {
            tracing::info!(reason, "denied");
            return Err(Error::Forbidden(
                "the queue authorizer denied this request".into(),
            ));
        }
        // API Gateway would answer a deny; locally the outage is a 503, like every route's.
        Err(queue_authorizer::Denied::Unavailable(err)) => return Err(err),
    };
    let mut authorizer = aws_lambda_events::event::apigw::ApiGatewayRequestAuthorizer::default();
    authorizer.fields = match context {
        Value::Object(fields) => fields.into_iter().collect(),
        _ => Default::default(),
    };
    let mut context = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.clone(),
        _ => ApiGatewayV2httpRequestContext::default(),
    };
    context.authorizer = Some(authorizer);
    Ok(request.with_request_context(RequestContext::ApiGatewayV2(context)))
}

/// Checks the admission JWT as API Gateway's JWT authorizer on lineup's issuer would, and
/// attaches its claims (as strings) to the request; 401 without a valid one.
fn admitted(
    request: lambda_http::Request,
    deps: &queue_api::Deps,
) -> Result<lambda_http::Request, Error> {
    let unauthorized = || Error::Unauthorized("a valid admission JWT is required".into());
    let issuer = deps.admission.as_ref().ok_or_else(unauthorized)?;
    let token = request
        .headers()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(unauthorized)?;
    let claims = issuer
        .verify(token.trim(), chrono::Utc::now())
        .ok_or_else(unauthorized)?;
    let mut jwt =
        aws_lambda_events::event::apigw::ApiGatewayRequestAuthorizerJwtDescription::default();
    jwt.claims = match serde_json::to_value(&claims) {
        Ok(Value::Object(fields)) => fields
            .into_iter()
            .map(|(name, value)| match value {
                Value::String(text) => (name, text),
                other => (name, other.to_string()),
            })
            .collect(),
        _ => Default::default(),
    };
    let mut authorizer = aws_lambda_events::event::apigw::ApiGatewayRequestAuthorizer::default();
    authorizer.jwt = Some(jwt);
    let mut context = match request.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(context)) => context.clone(),
        _ => ApiGatewayV2httpRequestContext::default(),
    };
    context.authorizer = Some(authorizer);
    Ok(request.with_request_context(RequestContext::ApiGatewayV2(context)))
}

/// The path with any queue token replaced, so tokens never reach the log.
fn redact_tokens(path: &str) -> String {
    let mut after_tokens = false;
    path.split('/')
        .map(|segment| {
            let shown = if after_tokens { "<token>" } else { segment };
            after_tokens = segment == "tokens";
            shown
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `POST /events`: one EventBridge event or a JSON array of them, applied by the event
/// applier's own code. Answers with one verdict per event, or with the problem that kept
/// them from being applied (503 with `Retry-After` when Redis is out of reach).
async fn post_events(request: &lambda_http::Request, stack: &Stack) -> lambda_http::Response<Body> {
    if request.method() != Method::POST {
        return lineup::http::problem(&Error::MethodNotAllowed {
            allow: "POST".into(),
        });
    }
    let events = match lineup::http::json_document::<Value>(request) {
        Ok(Value::Array(events)) => events,
        Ok(event) => vec![event],
        Err(err) => return lineup::http::problem(&err),
    };
    let (verdicts, error) =
        event_applier::apply_events_reporting(&events, &stack.event_applier).await;
    // Redis out of reach: 503 with Retry-After, like every other route. A retry is safe:
    // whatever ran is deduplicated.
    if let Some(err) = error {
        return lineup::http::problem(&err);
    }
    let results: Vec<Value> = events
        .iter()
        .zip(verdicts)
        .enumerate()
        .map(|(index, (event, verdict))| {
            let mut result = serde_json::to_value(&verdict).unwrap_or(Value::Null);
            result["index"] = json!(index);
            result["id"] = event.get("id").cloned().unwrap_or(Value::Null);
            result
        })
        .collect();
    lineup::http::json(StatusCode::OK, &json!({ "results": results }))
}

/// The request as API Gateway would hand it to the Lambda function, with the TCP peer as
/// `requestContext.http.sourceIp`.
async fn to_lambda_request(
    request: axum::extract::Request,
    peer: SocketAddr,
) -> Result<lambda_http::Request, Error> {
    let (parts, body) = request.into_parts();
    // The largest body any route takes; each handler holds its own routes to less.
    let bytes = to_bytes(body, MAX_BULK_BODY_BYTES)
        .await
        .map_err(|_| Error::PayloadTooLarge {
            limit: MAX_BULK_BODY_BYTES,
        })?;
    let body = if bytes.is_empty() {
        Body::Empty
    } else {
        match String::from_utf8(bytes.to_vec()) {
            Ok(text) => Body::Text(text),
            Err(err) => Body::Binary(err.into_bytes()),
        }
    };
    let mut context = ApiGatewayV2httpRequestContext::default();
    context.http.method = parts.method.clone();
    context.http.path = Some(parts.uri.path().to_owned());
    context.http.source_ip = Some(peer.ip().to_string());
    Ok(lambda_http::Request::from_parts(parts, body)
        .with_request_context(RequestContext::ApiGatewayV2(context)))
}

fn from_lambda_response(response: lambda_http::Response<Body>) -> AxumResponse {
    let (parts, body) = response.into_parts();
    let body = match body {
        Body::Empty => AxumBody::empty(),
        Body::Text(text) => AxumBody::from(text),
        Body::Binary(bytes) => AxumBody::from(bytes),
        _ => AxumBody::empty(),
    };
    AxumResponse::from_parts(parts, body)
}

/// Serves `stack` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    stack: Stack,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router(stack).into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

#[cfg(test)]
mod tests {
    use super::redact_tokens;

    #[test]
    fn tokens_never_reach_the_request_log() {
        assert_eq!(
            redact_tokens("/queues/q1/tokens/AQAAAAAAAAAB"),
            "/queues/q1/tokens/<token>"
        );
        assert_eq!(redact_tokens("/queues/q1/tokens"), "/queues/q1/tokens");
        assert_eq!(redact_tokens("/rankings/daily"), "/rankings/daily");
    }
}
