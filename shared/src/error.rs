//! The one error type of lineup. Every handler returns it; [`crate::http::problem`] maps it
//! to an HTTP status in exactly one place, and only `detail`s meant for clients leave it.
//! Which Redis failures are an outage (503) rather than a bug (500) is decided here too.

use std::time::Duration;

use redis::{ErrorKind, RedisError, ServerErrorKind};

/// What went wrong, in terms a caller can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A field, parameter or body failed validation (400).
    #[error("invalid {field}: {detail}")]
    Invalid { field: &'static str, detail: String },
    /// The caller's identity is missing: no verified JWT where one is required (401).
    #[error("{0}")]
    Unauthorized(String),
    /// The caller is authenticated as someone else (403).
    #[error("{0}")]
    Forbidden(String),
    /// The thing named does not exist, or is not the caller's to see (404).
    #[error("{0}")]
    NotFound(String),
    /// A domain turned the request away for a reason of its own ([`Refusal`]): a token whose
    /// place is over, a queue that takes no arrivals, a coupon campaign given out.
    #[error("{0}")]
    Refused(Box<dyn Refusal>),
    /// The request conflicts with the current state, such as closing a queue in use (409).
    #[error("{0}")]
    Conflict(String),
    /// The route exists but not with this method (405).
    #[error("method not allowed; allowed: {allow}")]
    MethodNotAllowed { allow: String },
    /// Too many requests from this user or source; retry after the given delay (429).
    #[error("too many requests; retry after {} s", retry_after.as_secs())]
    RateLimited { retry_after: Duration },
    /// The request body is larger than the API accepts (413).
    #[error("request body exceeds {limit} bytes")]
    PayloadTooLarge { limit: usize },
    /// Redis did not answer; the caller should retry after the given delay (503).
    #[error("the queue store is unavailable")]
    Unavailable {
        retry_after: Duration,
        #[source]
        source: RedisError,
    },
    /// A bug or an unexpected reply; details go to the log, never to the client (500).
    #[error("internal error: {0}")]
    Internal(String),
}

/// What kind of answer a domain's refusal is. [`crate::http::problem`] maps each to its
/// status; the domain never names one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turned {
    /// The caller may not do this (403).
    Forbidden,
    /// What the caller held is over for good (410).
    Gone,
    /// The thing's state does not allow it now (409).
    Conflict,
    /// Not now: retry after [`Refusal::retry_after`] (429, a 4xx: the service itself is well).
    Busy,
}

/// A domain's refusal, in the domain's own type and words. The edge needs only these: which
/// kind of answer it is, the problem type's last segment, its title, its detail (`Display`),
/// and when to retry. A caller that needs the domain's type gets it back with
/// [`Error::refusal`].
pub trait Refusal: std::fmt::Display + std::fmt::Debug + Send + Sync + std::any::Any {
    fn turned(&self) -> Turned;
    /// The problem type's last segment, and the gatekeeper's deny reason where it has one.
    fn kind(&self) -> &'static str;
    /// The problem title.
    fn title(&self) -> &'static str;
    /// When to retry, for a refusal that lifts by itself.
    fn retry_after(&self) -> Option<Duration> {
        None
    }
    /// A resource that lifts the refusal, as its relation and path: sent as a `Link` header
    /// and as a member of the problem named by the relation.
    fn link(&self) -> Option<(&'static str, &str)> {
        None
    }
}

impl Error {
    /// `refusal` as an error.
    pub fn refused(refusal: impl Refusal) -> Self {
        Error::Refused(Box::new(refusal))
    }

    /// The domain's refusal this error carries, if it carries one of type `R`.
    pub fn refusal<R: Refusal>(&self) -> Option<&R> {
        match self {
            Error::Refused(refusal) => (&**refusal as &dyn std::any::Any).downcast_ref(),
            _ => None,
        }
    }

    pub fn invalid(field: &'static str, detail: impl Into<String>) -> Self {
        Error::Invalid {
            field,
            detail: detail.into(),
        }
    }

    /// A token that this queue does not know: malformed, forged, another queue's, or one
    /// whose departure is no longer recorded (404).
    pub fn unknown_token() -> Self {
        Error::NotFound("no waiting or active token like this in this queue".into())
    }

    /// A deserialisation failure of `field`, naming the path inside it that did not fit.
    pub fn invalid_at<E: std::fmt::Display>(
        field: &'static str,
        err: serde_path_to_error::Error<E>,
    ) -> Self {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if path == "." {
            Error::invalid(field, inner.to_string())
        } else {
            Error::invalid(field, format!("{path}: {inner}"))
        }
    }
}

/// How long a client should wait before retrying after Redis failed.
pub const RETRY_AFTER_UNAVAILABLE: Duration = Duration::from_secs(2);

/// How long a client should wait before retrying a request that was shed ([`shed`]). The
/// connection's backlog drains in milliseconds, so a second later is a fresh chance; and a
/// waiter who retries every second gets many tries within its idle period.
pub const RETRY_AFTER_SHED: Duration = Duration::from_secs(1);

impl From<RedisError> for Error {
    fn from(err: RedisError) -> Self {
        if is_outage(&err) {
            Error::Unavailable {
                retry_after: if is_shed(&err) {
                    RETRY_AFTER_SHED
                } else {
                    RETRY_AFTER_UNAVAILABLE
                },
                source: err,
            }
        } else {
            Error::Internal(format!("redis: {err}"))
        }
    }
}

/// What a request refused before it reached Redis says: its connection already had
/// `REDIS_MAX_IN_FLIGHT` requests in flight.
const SHED: &str = "too many requests in flight on this connection";

/// The error of a request shed by the connection's cap on requests in flight (see
/// [`crate::store`]): an outage, answered 503 with `Retry-After` like any other.
pub(crate) fn shed() -> RedisError {
    (ErrorKind::Client, "shed", SHED.to_owned()).into()
}

/// Whether `err` is a request shed by its connection ([`shed`]).
pub(crate) fn is_shed(err: &RedisError) -> bool {
    err.kind() == ErrorKind::Client && err.detail() == Some(SHED)
}

/// Whether the server reached is no longer a writable primary.
pub(crate) fn is_demoted(err: &RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(ServerErrorKind::ReadOnly)
        || err.to_string().contains("READONLY")
}

/// Whether `err` means Redis is unreachable or not serving right now, as opposed to a bug.
/// `READONLY` and friends come from a failover in progress; the connection is replaced.
pub(crate) fn is_outage(err: &RedisError) -> bool {
    if err.is_io_error()
        || is_shed(err)
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_cluster_error()
        || is_demoted(err)
    {
        return true;
    }
    matches!(
        err.kind(),
        redis::ErrorKind::Server(
            ServerErrorKind::BusyLoading
                | ServerErrorKind::MasterDown
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
        )
    ) || matches!(err.code(), Some("LOADING" | "MASTERDOWN" | "BUSY"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shed_request_is_an_outage_retried_sooner_than_a_timeout() {
        let Error::Unavailable { retry_after, .. } = Error::from(shed()) else {
            panic!("a shed request is not an outage");
        };
        assert_eq!(retry_after, RETRY_AFTER_SHED);
        let timed_out: RedisError = std::io::Error::from(std::io::ErrorKind::TimedOut).into();
        assert!(!is_shed(&timed_out));
        let Error::Unavailable { retry_after, .. } = Error::from(timed_out) else {
            panic!("a timeout is not an outage");
        };
        assert_eq!(retry_after, RETRY_AFTER_UNAVAILABLE);
        // Another client-side error is a bug, not an outage.
        let other: RedisError = (ErrorKind::Client, "shed", "something else".to_owned()).into();
        assert!(matches!(Error::from(other), Error::Internal(_)));
    }
}
