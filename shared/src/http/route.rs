//! Path matching: a function's routes as one list ([`Route`]) that drives its dispatch
//! ([`find`]), its contract tests and the docs' table of routes; a request's path as its
//! decoded segments; the error of a path no route takes, and of a method a route does not
//! take.

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
        Err(Error::MethodNotAllowed {
            allow: allowed.into(),
        })
    }
}

/// One route a function serves: its method and path as `openapi.yaml` writes them, what it
/// does (a line of the docs' table of routes), and `op`, the function's own name for it,
/// which its dispatch matches on.
#[derive(Debug, Clone, Copy)]
pub struct Route<Op: 'static> {
    pub method: &'static str,
    pub path: &'static str,
    pub does: &'static str,
    pub op: Op,
}

impl<Op> Route<Op> {
    /// `(method, path)`.
    pub fn pair(&self) -> (&'static str, &'static str) {
        (self.method, self.path)
    }

    /// The values of the path's `{name}` segments in `segments`, in order, when the path
    /// matches them.
    fn matches<'s>(&self, segments: &'s [String]) -> Option<Vec<&'s str>> {
        let pattern: Vec<&str> = self.path.trim_start_matches('/').split('/').collect();
        if pattern.len() != segments.len() {
            return None;
        }
        let mut values = Vec::new();
        for (want, got) in pattern.iter().zip(segments) {
            if want.starts_with('{') {
                values.push(got.as_str());
            } else if want != got {
                return None;
            }
        }
        Some(values)
    }
}

/// The values of a matched path's `{name}` segments, in order.
#[derive(Debug)]
pub struct PathValues<'s>(Vec<&'s str>);

impl<'s> PathValues<'s> {
    /// The `n`-th `{name}` value (0-based); a route list that names fewer is a bug, answered
    /// 500, never a panic.
    pub fn get(&self, n: usize) -> Result<&'s str, Error> {
        self.0
            .get(n)
            .copied()
            .ok_or_else(|| Error::Internal(format!("the route has no path value {n}")))
    }
}

/// The first of `routes` whose path matches the request's and which takes its method: its
/// `op` and the path's `{name}` values. A path no route matches is the 404 of [`no_route`];
/// a path matched only under other methods, the 405 that names them.
pub fn find<'s, Op: Copy>(
    routes: &[Route<Op>],
    request: &Request,
    segments: &'s [String],
) -> Result<(Op, PathValues<'s>), Error> {
    let mut allowed: Vec<&str> = Vec::new();
    for route in routes {
        if let Some(values) = route.matches(segments) {
            if route.method == request.method().as_str() {
                return Ok((route.op, PathValues(values)));
            }
            if !allowed.contains(&route.method) {
                allowed.push(route.method);
            }
        }
    }
    if allowed.is_empty() {
        Err(no_route(request))
    } else {
        Err(Error::MethodNotAllowed {
            allow: allowed.join(", "),
        })
    }
}

/// The docs' table of `routes`: `| route | does |`, a row each, in their order.
pub fn routes_table<Op>(routes: &[Route<Op>]) -> String {
    let mut table = String::from("| route | does |\n|---|---|\n");
    for route in routes {
        table.push_str(&format!(
            "| `{} {}` | {} |\n",
            route.method, route.path, route.does
        ));
    }
    table
}
