//! The two sample booking routes: what each gatekeeper lets through. `admission` sits behind
//! `queue-authorizer`; `seats` behind API Gateway's JWT authorizer on lineup's own issuer.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::http::{self, json, lambda_authorizer_context};
use lineup::ids::QueueId;
use lineup::Error;

/// What `queue-authorizer` let through: its context, which never holds the token.
pub(super) fn admission(request: &Request, queue: &QueueId) -> Result<Response<Body>, Error> {
    let context = lambda_authorizer_context(request)
        .ok_or_else(|| Error::Forbidden("no queue authorizer ran for this request".into()))?;
    if context.get("queueId").and_then(|q| q.as_str()) != Some(queue.as_str()) {
        return Err(Error::Forbidden(
            "the authorizer admitted another queue".into(),
        ));
    }
    Ok(json(StatusCode::OK, &context))
}

/// What API Gateway's JWT authorizer on lineup's issuer let through: the admission's claims,
/// for this queue only (a booking API checks `qid` against the route's concert the same way).
pub(super) fn seats(request: &Request, queue: &QueueId) -> Result<Response<Body>, Error> {
    let claims = http::jwt_claims(request).ok_or_else(|| {
        Error::Unauthorized("an admission JWT (Authorization: Bearer) is required".into())
    })?;
    if claims.get("qid").map(String::as_str) != Some(queue.as_str()) {
        return Err(Error::Forbidden(
            "the admission is for another queue".into(),
        ));
    }
    Ok(json(StatusCode::OK, claims))
}
