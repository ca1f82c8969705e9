//! A handler's result turned into a response, whichever way it went: an error becomes its
//! problem response (`problem.rs`).

use std::future::Future;

use lambda_http::{Body, Response};

use super::problem::problem;
use crate::error::Error;

/// Turns a handler result into a response, whichever way it went.
pub fn respond(result: Result<Response<Body>, Error>) -> Response<Body> {
    result.unwrap_or_else(|err| problem(&err))
}

/// What an HTTP function's `handle` returns: always a response, an error having become a
/// problem.
pub type Answered = Result<Response<Body>, std::convert::Infallible>;

/// Handles one request with `route`: its response, or its error as a problem. All its Redis
/// calls share one budget of four response timeouts ([`crate::store::request`]).
pub async fn answer(route: impl Future<Output = Result<Response<Body>, Error>>) -> Answered {
    Ok(respond(crate::store::request(route).await))
}
