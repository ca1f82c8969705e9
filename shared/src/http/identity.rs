//! Who is calling: the buyer a verified JWT names, the source IP, and a Lambda authorizer's
//! context. A body field never names the buyer.

use std::collections::HashMap;

use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};

use crate::error::Error;
use crate::ids::UserId;

/// The claims an API Gateway JWT authorizer verified, when one ran.
pub fn jwt_claims(request: &Request) -> Option<&HashMap<String, String>> {
    match request.request_context_ref()? {
        RequestContext::ApiGatewayV2(context) => {
            Some(&context.authorizer.as_ref()?.jwt.as_ref()?.claims)
        }
        #[allow(unreachable_patterns)]
        _ => None,
    }
}

/// The `sub` claim of an API Gateway JWT authorizer, when one ran: the only buyer identity
/// API Gateway has verified.
pub fn jwt_subject(request: &Request) -> Option<String> {
    jwt_claims(request)?.get("sub").cloned()
}

/// The buyer a request speaks for: the JWT `sub` when an authorizer verified one, else
/// `claimed` (the body's `userId`) where the deployment allows it (`ALLOW_BODY_USER_ID=unsafe`).
/// Without either it is 401; a `claimed` that differs from the `sub` is 403.
pub fn buyer(
    request: &Request,
    claimed: Option<&str>,
    allow_body_user_id: bool,
) -> Result<UserId, Error> {
    match (verified_subject(request, allow_body_user_id)?, claimed) {
        (Some(sub), Some(claimed)) if sub != claimed => Err(Error::Forbidden(
            "userId differs from the authenticated user".into(),
        )),
        (Some(sub), _) => UserId::parse(&sub),
        (None, Some(claimed)) => UserId::parse(claimed),
        (None, None) => Err(Error::invalid(UserId::FIELD, "is required")),
    }
}

/// The JWT `sub` of a buyer route, when an authorizer verified one. Without one it is 401,
/// unless the deployment takes a body's `userId` (`ALLOW_BODY_USER_ID=unsafe`): then `None`.
pub fn verified_subject(
    request: &Request,
    allow_body_user_id: bool,
) -> Result<Option<String>, Error> {
    match jwt_subject(request) {
        None if !allow_body_user_id => Err(Error::Unauthorized(
            "a verified JWT (Authorization: Bearer) is required".into(),
        )),
        subject => Ok(subject),
    }
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
