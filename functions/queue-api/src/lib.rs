//! `queue-api`: the waiting room over HTTP (API Gateway HTTP API, payload format 2.0).
//!
//! | route | does |
//! |---|---|
//! | `POST /queues/{queueId}/tokens` | take a place (201), or get one's existing place (200) |
//! | `GET /queues/{queueId}/tokens/{token}` | where the token stands; a waiter's heartbeat |
//! | `DELETE /queues/{queueId}/tokens/{token}` | leave the line or give up the session (204) |
//! | `GET /queues/{queueId}` | the queue's summary |

use chrono::{DateTime, SecondsFormat, Utc};
use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use lineup::http::{self, json, json_body, jwt_subject, no_route, respond, segments};
use lineup::ids::{QueueId, UserId};
use lineup::queue::{Standing, TokenState, WaitingRoom};
use lineup::token::{TokenClaims, TokenKey};
use lineup::Error;
use serde::{Deserialize, Serialize};

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    pub token_key: TokenKey,
}

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(
    request: Request,
    deps: &Deps,
) -> Result<Response<Body>, std::convert::Infallible> {
    Ok(respond(route(&request, deps).await))
}

async fn route(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let method = request.method();
    match segments(request).as_slice() {
        ["queues", queue] => match *method {
            Method::GET => summary(deps, QueueId::parse(queue)?).await,
            _ => Err(Error::MethodNotAllowed { allow: "GET" }),
        },
        ["queues", queue, "tokens"] => match *method {
            Method::POST => issue(request, deps, QueueId::parse(queue)?).await,
            _ => Err(Error::MethodNotAllowed { allow: "POST" }),
        },
        ["queues", queue, "tokens", token] => {
            let queue = QueueId::parse(queue)?;
            match *method {
                Method::GET => status(deps, &queue, token).await,
                Method::DELETE => leave(deps, &queue, token).await,
                _ => Err(Error::MethodNotAllowed {
                    allow: "GET, DELETE",
                }),
            }
        }
        _ => Err(no_route(request)),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueBody {
    user_id: Option<String>,
}

/// The caller's user id: the JWT `sub` when an authorizer ran, else the body's `userId`.
fn caller(request: &Request) -> Result<UserId, Error> {
    let subject = jwt_subject(request);
    let body: Option<IssueBody> = match (&subject, request.body().as_ref().is_empty()) {
        // With a verified identity the body is optional.
        (Some(_), true) => None,
        _ => Some(json_body(request)?),
    };
    let claimed = body.and_then(|b| b.user_id);
    match (subject, claimed) {
        (Some(sub), Some(claimed)) if sub != claimed => Err(Error::Forbidden(
            "userId differs from the authenticated user".into(),
        )),
        (Some(sub), _) => UserId::parse(&sub),
        (None, Some(claimed)) => UserId::parse(&claimed),
        (None, None) => Err(Error::invalid(UserId::FIELD, "is required")),
    }
}

async fn issue(request: &Request, deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    let user = caller(request)?;
    let issued = deps.room.issue(&queue, &user).await?;
    let status = if issued.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(
        status,
        &TokenStatus::new(&issued.claims, &issued.state, deps),
    ))
}

/// The claims of a token shown on `queue`'s path. Malformed, forged and other queues'
/// tokens are all simply not found here.
fn claims_on(queue: &QueueId, token: &str, deps: &Deps) -> Result<TokenClaims, Error> {
    TokenClaims::verify(token, &deps.token_key)
        .filter(|claims| &claims.queue == queue)
        .ok_or_else(token_not_found)
}

fn token_not_found() -> Error {
    Error::NotFound("no waiting or active token like this in this queue".into())
}

async fn status(deps: &Deps, queue: &QueueId, token: &str) -> Result<Response<Body>, Error> {
    let claims = claims_on(queue, token, deps)?;
    let state = deps
        .room
        .status(&claims)
        .await?
        .ok_or_else(token_not_found)?;
    Ok(json(
        StatusCode::OK,
        &TokenStatus::new(&claims, &state, deps),
    ))
}

async fn leave(deps: &Deps, queue: &QueueId, token: &str) -> Result<Response<Body>, Error> {
    let claims = claims_on(queue, token, deps)?;
    if deps.room.leave(&claims).await? {
        Ok(http::empty(StatusCode::NO_CONTENT))
    } else {
        Err(token_not_found())
    }
}

async fn summary(deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    Ok(json(StatusCode::OK, &deps.room.summary(&queue).await?))
}

/// The token status body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenStatus<'a> {
    token: String,
    queue_id: &'a QueueId,
    user_id: &'a UserId,
    status: &'static str,
    position: Option<u64>,
    ticket: u64,
    estimated_wait_seconds: Option<u64>,
    active_until: Option<String>,
    poll_after_seconds: u64,
}

impl<'a> TokenStatus<'a> {
    fn new(claims: &'a TokenClaims, state: &TokenState, deps: &Deps) -> Self {
        let now: DateTime<Utc> = Utc::now();
        let (status, position, active_until) = match &state.standing {
            Standing::Waiting { position } => ("waiting", Some(*position), None),
            Standing::Active { until } => (
                "active",
                None,
                Some(until.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ),
        };
        TokenStatus {
            token: claims.sign(&deps.token_key),
            queue_id: &claims.queue,
            user_id: &claims.user,
            status,
            position,
            ticket: state.ticket,
            estimated_wait_seconds: state.estimated_wait_seconds(),
            active_until,
            poll_after_seconds: state.poll_after_seconds(deps.room.settings(), now),
        }
    }
}
