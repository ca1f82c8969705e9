//! The buyer's routes: a door challenge, taking a place, its status (the waiter's heartbeat)
//! and leaving; and the queue's summary, which the waiting-room page reads too.

use chrono::{DateTime, SecondsFormat, Utc};
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::admission::Session;
use lineup::door::{Counted, Proof, Scope};
use lineup::http::{self, json, json_body};
use lineup::ids::{QueueId, UserId};
use lineup::pages;
use lineup::queue::access::AccessCode;
use lineup::queue::{Standing, TokenState};
use lineup::token::TokenClaims;
use lineup::Error;
use serde::{Deserialize, Serialize};

use crate::deps::Deps;

/// How long a CDN or browser may reuse a queue summary.
pub const SUMMARY_CACHE_CONTROL: &str = "public, max-age=2";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueBody {
    user_id: Option<String>,
    /// A presale's access code (`access` `code`).
    access_code: Option<String>,
    /// A solved door challenge, where no `x-altcha` header brings one.
    altcha: Option<String>,
}

/// Who is joining and what they bring to the door.
struct Caller {
    user: UserId,
    code: Option<AccessCode>,
    altcha: Option<String>,
}

/// The caller's user id: the JWT `sub` when an authorizer ran, else the body's `userId`
/// where the deployment allows it; the access code the body brings, if any; and the solved
/// challenge the `x-altcha` header or the body brings, if any.
fn caller(request: &Request, deps: &Deps) -> Result<Caller, Error> {
    let subject = http::verified_subject(request, deps.allow_body_user_id)?;
    let body: Option<IssueBody> = match (&subject, request.body().as_ref().is_empty()) {
        // With a verified identity the body is optional.
        (Some(_), true) => None,
        _ => Some(json_body(request)?),
    };
    let (claimed, code, altcha) = match body {
        Some(body) => (body.user_id, body.access_code, body.altcha),
        None => (None, None, None),
    };
    Ok(Caller {
        user: http::buyer(request, claimed.as_deref(), deps.allow_body_user_id)?,
        code: code.as_deref().map(AccessCode::parse).transpose()?,
        altcha: http::door_payload(request, altcha)?,
    })
}

/// A door challenge for the caller to join `queue` (docs/door.md): the buyer is the JWT `sub`,
/// else `?userId=` where the deployment takes a named buyer. Never cached.
pub(super) async fn challenge(
    request: &Request,
    deps: &Deps,
    queue: &QueueId,
) -> Result<Response<Body>, Error> {
    let claimed = pages::query_param(request.uri().query().unwrap_or(""), "userId")?;
    let user = http::buyer(request, claimed.as_deref(), deps.allow_body_user_id)?;
    let challenge = deps.room.challenge(&deps.door_key, queue, &user).await?;
    deps.metrics
        .emit(&Counted::Issued.record(Scope::Queue(queue)));
    Ok(json(StatusCode::OK, &challenge))
}

pub(super) async fn issue(
    request: &Request,
    deps: &Deps,
    queue: QueueId,
) -> Result<Response<Body>, Error> {
    let Caller { user, code, altcha } = caller(request, deps)?;
    let proof = Proof::check(
        altcha.as_deref(),
        &deps.door_key,
        Scope::Queue(&queue),
        &user,
    );
    let issued = deps
        .room
        .issue_at_door(
            &queue,
            &user,
            http::source_ip(request),
            code.as_ref(),
            &proof,
        )
        .await;
    if let Some(counted) = Counted::answer(&issued, |issued| issued.created, &proof) {
        deps.metrics.emit(&counted.record(Scope::Queue(&queue)));
    }
    let issued = issued?;
    deps.publisher.publish(&issued.events()).await;
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

/// The claims of a token shown on `queue`'s path, held by the caller. Malformed, forged and
/// other queues' tokens are all simply not found here; a token issued to another user than
/// the caller's verified JWT names is 403.
pub(super) fn claims_on(
    request: &Request,
    queue: &QueueId,
    token: &str,
    deps: &Deps,
) -> Result<TokenClaims, Error> {
    let subject = http::verified_subject(request, deps.allow_body_user_id)?;
    let claims = TokenClaims::verify(token, &deps.token_key)
        .filter(|claims| &claims.queue == queue)
        .ok_or_else(Error::unknown_token)?;
    match subject {
        Some(sub) if sub != claims.user.as_str() => Err(Error::Forbidden(
            "this token was issued to another user".into(),
        )),
        _ => Ok(claims),
    }
}

/// A token's standing; 410 with the reason when its session or place is over.
pub(super) async fn status(deps: &Deps, claims: &TokenClaims) -> Result<Response<Body>, Error> {
    let state = deps.room.status(claims).await?;
    Ok(json(
        StatusCode::OK,
        &TokenStatus::new(claims, &state, deps),
    ))
}

/// Leaves the line, or gives up the session.
pub(super) async fn leave(deps: &Deps, claims: &TokenClaims) -> Result<Response<Body>, Error> {
    let left = deps.room.leave(claims).await?;
    deps.publisher.publish(&left.events).await;
    Ok(http::empty(StatusCode::NO_CONTENT))
}

pub(super) async fn summary(deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    Ok(http::json_cached(
        StatusCode::OK,
        &deps.room.summary(&queue).await?,
        SUMMARY_CACHE_CONTROL,
    ))
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
    /// Where the wait lies: null exactly when `estimated_wait_seconds` is.
    estimated_wait_range: Option<WaitRangeSeconds>,
    active_until: Option<String>,
    poll_after_seconds: u64,
    /// Admissions are paused: the place holds, but no estimate is honest until they resume.
    paused: bool,
    /// The operator's message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    /// In the pre-queue: the opening.
    #[serde(skip_serializing_if = "Option::is_none")]
    opens_at: Option<String>,
    /// Placed by the draw: the value that placed the buyer, to check (docs/draw.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    draw: Option<DrawValue>,
    /// An active buyer's admission JWT (docs/booking.md), renewed by each poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    admission: Option<String>,
}

/// The range of a waiter's wait, in whole seconds.
#[derive(Debug, Serialize)]
struct WaitRangeSeconds {
    low: u64,
    high: u64,
}

/// A buyer's draw value: 7 hex digits, the top 28 bits of HMAC-SHA256(seed, userId).
#[derive(Debug, Serialize)]
struct DrawValue {
    value: String,
}

impl<'a> TokenStatus<'a> {
    fn new(claims: &'a TokenClaims, state: &TokenState, deps: &Deps) -> Self {
        let now: DateTime<Utc> = Utc::now();
        let mut opens_at = None;
        let admission = match (&state.standing, &deps.admission) {
            (Standing::Active { since, until }, Some(issuer)) => {
                let session = Session {
                    queue: &claims.queue,
                    user: &claims.user,
                    ticket: state.ticket,
                    since: *since,
                    until: *until,
                };
                issuer.sign(&session, now).unwrap_or_else(|reason| {
                    tracing::error!(%reason, "no admission JWT was signed");
                    None
                })
            }
            _ => None,
        };
        let (status, position, active_until) = match &state.standing {
            Standing::Waiting { position } => ("waiting", Some(*position), None),
            // On the striped line, before a tick has counted the place's segment.
            Standing::Placing { .. } => ("waiting", None, None),
            Standing::Active { until, .. } => (
                "active",
                None,
                Some(until.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ),
            Standing::SoldOut => ("soldout", None, None),
            Standing::Prequeue { opens_at: at } => {
                opens_at = Some(at.to_rfc3339_opts(SecondsFormat::Millis, true));
                ("prequeue", None, None)
            }
        };
        TokenStatus {
            token: claims.sign(&deps.token_key),
            queue_id: &claims.queue,
            user_id: &claims.user,
            status,
            position,
            ticket: state.ticket,
            estimated_wait_seconds: state.estimated_wait_seconds(),
            estimated_wait_range: state
                .estimated_wait_range()
                .map(|(low, high)| WaitRangeSeconds { low, high }),
            active_until,
            poll_after_seconds: match (&admission, &deps.admission) {
                // A front end that polls as told renews the admission before it expires.
                (Some(_), Some(issuer)) => state
                    .poll_after_seconds(now)
                    .min(issuer.ttl.as_secs() * 3 / 4),
                _ => state.poll_after_seconds(now),
            },
            paused: state.paused,
            message: state.message.clone(),
            opens_at,
            draw: state.draw_value().map(|value| DrawValue { value }),
            admission,
        }
    }
}
