//! Path matching: a request's path as its decoded segments, the error of a path no route
//! takes, and the error of a method a route does not take.

use lambda_http::http::Method;
use lambda_http::Request;
use percent_encoding::percent_decode_str;

use crate::error::Error;

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

/// `Ok` when `method` is one of `allowed`, the methods a route takes as an `Allow` header
/// lists them (`"PUT, DELETE"`); else the 405 that names them.
pub fn allow(method: &Method, allowed: &'static str) -> Result<(), Error> {
    if allowed.split(", ").any(|name| name == method.as_str()) {
        Ok(())
    } else {
        Err(Error::MethodNotAllowed { allow: allowed })
    }
}
