//! `queue-api`: the waiting room over HTTP (API Gateway HTTP API, payload format 2.0).
//!
//! [`ROUTES`] lists every route this function serves and what it does; it drives the
//! dispatch, the contract tests and the table in docs/http-api.md. The handlers live by
//! audience: `buyer` (a place in line, its status, leaving; the summary), `operator` (settings,
//! pools, the priority and access lists, access codes), `identity` (the admission issuer's
//! keys and discovery document), `pages` (the waiting room and its assets) and `samples` (the
//! two sample booking routes behind the gatekeepers).
//!
//! A token that no longer holds a place is 410 Gone on both token routes, with a problem type
//! saying why (`session-ended`, `dropped-for-absence`, `left`, `sold-out`); one the queue does
//! not know (forged, malformed, another queue's, or gone too long ago) is 404 `not-found`.
//! A held token's status is `waiting`, `active` or `soldout` (with the operator's message).
//! An active buyer's answer carries `admission`, a JWT the booking API verifies by itself
//! against the JWKS (docs/booking.md); each status poll renews it until the session ends.
//! A new arrival that cannot join is refused: 410 `sold-out`, 409 `queue-closed`, or 429
//! `queue-full` with `Retry-After`; the detail is the operator's message when there is one.
//! In a presale (`access` `list` or `code`), a new arrival not on the list, or without a
//! valid access code (body `accessCode`), is 403 `access-denied`.
//!
//! Who the buyer is: in AWS, the `sub` of the JWT that API Gateway's JWT authorizer verified
//! on the buyer routes (take a place, status, leave). A body `userId` names the buyer only
//! where `ALLOW_BODY_USER_ID=unsafe` (the local stack); otherwise a request without a
//! verified `sub` is 401. A token binds its user: status and leave with another user's JWT
//! are 403.
//!
//! Leaving publishes `QueueTokenReleased`, and `QueueTokenActivated` for whoever took the
//! freed place; an issue admitted at once publishes `QueueTokenActivated`.

mod buyer;
mod deps;
mod identity;
mod operator;
mod pages;
mod samples;

use lambda_http::{Body, Request, Response};
use lineup::http::{self, segments, Route};
use lineup::ids::{PoolId, QueueId, UserId};
use lineup::Error;

pub use buyer::SUMMARY_CACHE_CONTROL;
pub use deps::{Deps, PUBLISHING, SECRETS};
use operator::BuyerList;

/// What a route does, as the dispatch matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Challenge,
    Issue,
    Status,
    Leave,
    Summary,
    Configure,
    Close,
    PutPool,
    Pool,
    DeletePool,
    AddPriority,
    RemovePriority,
    UploadAccess,
    AddAccess,
    RemoveAccess,
    MintCodes,
    Admission,
    Seats,
    Jwks,
    Discovery,
    WaitPage,
    WaitAsset,
    WaitStrings,
}

const fn route(method: &'static str, path: &'static str, does: &'static str, op: Op) -> Route<Op> {
    Route {
        method,
        path,
        does,
        op,
    }
}

/// Every route this function serves. `openapi.yaml` and the template must list exactly
/// these, and docs/http-api.md shows this table; tests check all three, and that each route
/// is really served.
pub const ROUTES: &[Route<Op>] = &[
    route("GET", "/queues/{queueId}/challenge", "a door challenge (ALTCHA PoW v2) for the buyer to solve before joining a queue that asks for one", Op::Challenge),
    route("POST", "/queues/{queueId}/tokens", "take a place (201), or get one's existing place (200)", Op::Issue),
    route("GET", "/queues/{queueId}/tokens/{token}", "where the token stands; a waiter's heartbeat", Op::Status),
    route("DELETE", "/queues/{queueId}/tokens/{token}", "leave the line or give up the session (204)", Op::Leave),
    route("GET", "/queues/{queueId}", "the queue's summary and settings in force; cacheable for a few seconds", Op::Summary),
    route("PUT", "/queues/{queueId}/settings", "change the queue's settings, creating it (IAM-protected in AWS)", Op::Configure),
    route("DELETE", "/queues/{queueId}/settings", "close an empty queue: its settings go (IAM-protected in AWS)", Op::Close),
    route("PUT", "/pools/{poolId}", "set a capacity pool's capacity and weights, creating it (IAM-protected in AWS)", Op::PutPool),
    route("GET", "/pools/{poolId}", "the pool: capacity, weights, each queue's allotment (IAM-protected in AWS)", Op::Pool),
    route("DELETE", "/pools/{poolId}", "delete the pool: its queues admit no one new until it is made again (IAM-protected in AWS)", Op::DeletePool),
    route("PUT", "/queues/{queueId}/priority/{userId}", "put a user on the priority list (IAM-protected in AWS)", Op::AddPriority),
    route("DELETE", "/queues/{queueId}/priority/{userId}", "take a user off it (IAM-protected in AWS)", Op::RemovePriority),
    route("PUT", "/queues/{queueId}/access", "put up to 10,000 user ids on the presale access list (IAM-protected in AWS)", Op::UploadAccess),
    route("PUT", "/queues/{queueId}/access/{userId}", "put one user on it (IAM-protected in AWS)", Op::AddAccess),
    route("DELETE", "/queues/{queueId}/access/{userId}", "take a user off it (IAM-protected in AWS)", Op::RemoveAccess),
    route("POST", "/queues/{queueId}/access-codes", "mint up to 10,000 presale access codes, shown once (IAM-protected in AWS)", Op::MintCodes),
    route("GET", "/queues/{queueId}/admission", "a sample payment route behind `queue-authorizer`: shows what it let through", Op::Admission),
    route("GET", "/queues/{queueId}/seats", "a sample browse route behind API Gateway's JWT authorizer on lineup's own issuer: shows the admission claims it let through", Op::Seats),
    route("GET", "/.well-known/jwks.json", "the admission JWT's public keys (JWKS); public, cacheable", Op::Jwks),
    route("GET", "/.well-known/openid-configuration", "the issuer's OpenID discovery document, naming the JWKS; public, cacheable", Op::Discovery),
    route("GET", "/queues/{queueId}/wait", "the waiting-room page (HTML), `?return=…`; the token comes in the URL fragment", Op::WaitPage),
    route("GET", "/queues/{queueId}/wait/{asset}", "its script (`wait.js`), styles (`page.css`), the queue's theme (`theme.css`), its service worker (`worker.js`) and the door's solver (`altcha.js`)", Op::WaitAsset),
    route("GET", "/queues/{queueId}/wait/i18n/{lang}", "its string table in one language (JSON)", Op::WaitStrings),
];

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(request: Request, deps: &Deps) -> http::Answered {
    http::answer(dispatch(&request, deps)).await
}

async fn dispatch(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let segments = segments(request)?;
    let (op, values) = http::find(ROUTES, request, &segments)?;
    let queue = || values.get(0).and_then(QueueId::parse);
    let user = || values.get(1).and_then(UserId::parse);
    let pool = || values.get(0).and_then(PoolId::parse);
    match op {
        Op::Challenge => buyer::challenge(request, deps, &queue()?).await,
        Op::Issue => buyer::issue(request, deps, queue()?).await,
        Op::Status | Op::Leave => {
            let claims = buyer::claims_on(request, &queue()?, values.get(1)?, deps)?;
            if op == Op::Status {
                buyer::status(deps, &claims).await
            } else {
                buyer::leave(deps, &claims).await
            }
        }
        Op::Summary => buyer::summary(deps, queue()?).await,
        Op::Configure => operator::configure(request, deps, queue()?).await,
        Op::Close => operator::close(deps, queue()?).await,
        Op::PutPool => operator::put_pool(request, deps, pool()?).await,
        Op::Pool => operator::pool(deps, pool()?).await,
        Op::DeletePool => operator::delete_pool(deps, pool()?).await,
        Op::AddPriority | Op::RemovePriority => {
            let add = op == Op::AddPriority;
            operator::edit_list(deps, BuyerList::Priority, &queue()?, &user()?, add).await
        }
        Op::AddAccess | Op::RemoveAccess => {
            let add = op == Op::AddAccess;
            operator::edit_list(deps, BuyerList::Access, &queue()?, &user()?, add).await
        }
        Op::UploadAccess => operator::add_access(request, deps, &queue()?).await,
        Op::MintCodes => operator::mint_codes(request, deps, &queue()?).await,
        Op::Admission => samples::admission(request, &queue()?),
        Op::Seats => samples::seats(request, &queue()?),
        Op::Jwks => identity::jwks(deps),
        Op::Discovery => identity::discovery(deps),
        Op::WaitPage => pages::wait_page(request, deps, &queue()?).await,
        Op::WaitAsset => pages::wait_asset(deps, &queue()?, values.get(1)?).await,
        Op::WaitStrings => {
            queue()?;
            pages::strings(values.get(1)?)
        }
    }
}
