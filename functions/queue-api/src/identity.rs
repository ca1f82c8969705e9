//! The admission issuer's public documents: its keys (JWKS) and its OpenID discovery
//! document, which a booking API or API Gateway's JWT authorizer reads; 404 where no issuer
//! is configured.

use chrono::Utc;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Response};
use lineup::admission::{self, Issuer};
use lineup::http;
use lineup::Error;

use crate::deps::Deps;

/// The admission issuer, or 404 where none is configured.
fn issuer(deps: &Deps) -> Result<&Issuer, Error> {
    deps.admission.as_ref().ok_or_else(|| {
        Error::NotFound(
            "this deployment issues no admission JWT (ADMISSION_ISSUER is unset)".into(),
        )
    })
}

/// The admission JWT's public keys.
pub(super) fn jwks(deps: &Deps) -> Result<Response<Body>, Error> {
    Ok(http::json_cached(
        StatusCode::OK,
        &issuer(deps)?.jwks(Utc::now()),
        admission::DISCOVERY_CACHE_CONTROL,
    ))
}

/// The issuer's OpenID discovery document.
pub(super) fn discovery(deps: &Deps) -> Result<Response<Body>, Error> {
    Ok(http::json_cached(
        StatusCode::OK,
        &issuer(deps)?.discovery(),
        admission::DISCOVERY_CACHE_CONTROL,
    ))
}
