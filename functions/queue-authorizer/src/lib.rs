//! `queue-authorizer`: the gatekeeper in front of the booking and payment routes. An API
//! Gateway HTTP API Lambda authorizer (payload 2.0, simple responses).
//!
//! A request is authorized only while its queue token (header `x-queue-token`) is active
//! right now in the queue named by the header `x-queue-id` or, failing that, by the path
//! parameter `AUTHORIZER_QUEUE_PATH_PARAMETER` (default `queueId`). The signature is checked
//! first, then Redis answers in one round trip, so a token that left, expired or was
//! released after payment is denied on its very next call.
//!
//! Where a JWT issuer is configured (`JWT_ISSUER`, `JWT_AUDIENCE`; the template always sets
//! them), the request must also carry the buyer's JWT (header `authorization`,
//! `Bearer <jwt>`), verified here against the issuer's keys ([`identity`]), and its `sub` must
//! be the user the token was issued to: a place cannot be shared. Verification is local (the
//! keys are cached), before the one Redis round trip. Without an issuer (the local stack),
//! the queue token alone decides.
//!
//! Anything else is a deny, never an error: a missing or forged token, another queue's
//! token, a payload that is not an authorizer request, and a Redis outage (fail closed).
//! The context carries `userId`, `queueId` and `activeUntil`, never the token. A deny's
//! context is `{"reason": …}`, the reason also logged: for a genuine token, `waiting`,
//! `sold-out` (every token not active in a sold-out queue) or what queue-api's status answers
//! as its problem type (`session-ended`, `dropped-for-absence`, `left`, `not-found`); a forged
//! or other queue's token is `not-found` too; a missing or unverified JWT is `unauthenticated`
//! (the issuer's keys out of reach included), another buyer's is `buyer-mismatch`.
//! [`decide_event`] tells an outage from a refusal, for the local stack's 503.

pub mod identity;
pub mod jwks;

use std::sync::Arc;

use aws_lambda_events::event::apigw::{
    ApiGatewayV2CustomAuthorizerSimpleResponse, ApiGatewayV2CustomAuthorizerV2Request,
};
use chrono::SecondsFormat;
use lambda_runtime::LambdaEvent;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, SecretPolicy};
use lineup::ids::QueueId;
use lineup::queue::{Refusal, WaitingRoom};
use lineup::token::{TokenClaims, TokenKey};
use serde_json::{json, Value};

use crate::identity::Identity;

pub const TOKEN_HEADER: &str = "x-queue-token";
pub const QUEUE_HEADER: &str = "x-queue-id";
pub const AUTHORIZATION_HEADER: &str = "authorization";

/// The deny reason for a JWT whose `sub` is not the token's user.
pub const BUYER_MISMATCH: &str = "buyer-mismatch";

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    pub token_key: TokenKey,
    /// The path parameter naming the queue when the header does not.
    pub queue_path_parameter: String,
    /// The buyers' JWT verifier, where an issuer is configured.
    pub identity: Option<Arc<Identity>>,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Required;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::Nothing;

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads: the one place they are wired.
    pub fn new(started: &Started) -> Result<Self, ConfigError> {
        Ok(Deps {
            room: started.room()?,
            token_key: started.config.token_key.clone(),
            queue_path_parameter: started.config.env.authorizer_queue_path_parameter(),
            identity: started
                .config
                .env
                .jwt()?
                .as_ref()
                .map(|settings| Arc::new(Identity::new(settings))),
        })
    }
}

/// Why a request is denied.
#[derive(Debug)]
pub enum Denied {
    /// The request does not pass.
    Refused(&'static str),
    /// Redis could not be asked: denied all the same (fail closed).
    Unavailable(lineup::Error),
}

impl From<&'static str> for Denied {
    fn from(reason: &'static str) -> Self {
        Denied::Refused(reason)
    }
}

/// Answers one authorization request. Never fails.
pub async fn handle(
    event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<ApiGatewayV2CustomAuthorizerSimpleResponse, std::convert::Infallible> {
    let mut response = ApiGatewayV2CustomAuthorizerSimpleResponse::default();
    match lineup::store::request(decide_event(event.payload, deps)).await {
        Ok(context) => {
            response.is_authorized = true;
            response.context = context;
        }
        Err(denied) => {
            let reason = match denied {
                Denied::Refused(reason) => {
                    tracing::info!(reason, "denied");
                    reason
                }
                Denied::Unavailable(err) => {
                    tracing::warn!(error = %err, "queue check failed; denying");
                    "queue store unavailable"
                }
            };
            response.is_authorized = false;
            response.context = json!({ "reason": reason });
        }
    }
    Ok(response)
}

/// The context to pass on for an authorizer request (as JSON), or why it is denied.
pub async fn decide_event(payload: Value, deps: &Deps) -> Result<Value, Denied> {
    match serde_json::from_value::<ApiGatewayV2CustomAuthorizerV2Request>(payload) {
        Ok(request) => decide(&request, deps).await,
        Err(_) => Err("not an HTTP API authorizer request".into()),
    }
}

/// The context to pass on, or why the request is denied.
async fn decide(
    request: &ApiGatewayV2CustomAuthorizerV2Request,
    deps: &Deps,
) -> Result<Value, Denied> {
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    // Who is asking comes first: an unauthenticated caller learns nothing of the token.
    let buyer = match &deps.identity {
        Some(identity) => Some(identity.subject(header(AUTHORIZATION_HEADER)).await?),
        None => None,
    };
    let token = header(TOKEN_HEADER).ok_or("no x-queue-token header")?;
    let from_header = header(QUEUE_HEADER);
    let from_path = request
        .path_parameters
        .get(&deps.queue_path_parameter)
        .map(String::as_str);
    let queue = match (from_header, from_path) {
        (Some(h), Some(p)) if h != p => {
            return Err("x-queue-id differs from the path's queue".into())
        }
        (Some(q), _) | (None, Some(q)) => QueueId::parse(q).map_err(|_| "malformed queue id")?,
        (None, None) => return Err("no queue named".into()),
    };
    let claims = TokenClaims::verify(token, &deps.token_key)
        .filter(|claims| claims.queue == queue)
        .ok_or(Refusal::Unknown.reason())?;
    if buyer.is_some_and(|buyer| buyer != claims.user.as_str()) {
        return Err(BUYER_MISMATCH.into());
    }
    match deps.room.check(&claims).await {
        Ok(Ok(gate)) => Ok(json!({
            "userId": claims.user.as_str(),
            "queueId": claims.queue.as_str(),
            "activeUntil": gate.active_until.to_rfc3339_opts(SecondsFormat::Millis, true),
        })),
        Ok(Err(refusal)) => Err(refusal.reason().into()),
        Err(err) => Err(Denied::Unavailable(err)),
    }
}
