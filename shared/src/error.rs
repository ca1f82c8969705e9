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
    /// A presale's access (list or code) does not let this buyer take a place (403).
    #[error("{0}")]
    AccessDenied(String),
    /// The thing named does not exist, or is not the caller's to see (404).
    #[error("{0}")]
    NotFound(String),
    /// The token's session or place is over, for the reason given (410).
    #[error("{0}")]
    Gone(Departure),
    /// A coupon campaign has given out every coupon it holds (410), until an operator raises
    /// its quantity.
    #[error("all {quantity} coupons of this campaign are claimed")]
    SoldOut { quantity: u64 },
    /// The queue is sold out: no new arrivals (410), with the operator's message if any.
    #[error("{}", message.as_deref().unwrap_or("this queue is sold out"))]
    QueueSoldOut { message: Option<String> },
    /// The queue's mode is `closed`: no new arrivals; those in line keep their places (409),
    /// with the operator's message if any.
    #[error("{}", message.as_deref().unwrap_or("this queue takes no new arrivals"))]
    QueueClosed { message: Option<String> },
    /// The queue's pre-queue has not opened yet; retry after the given delay (409).
    #[error("this queue does not take arrivals yet; retry after {} s", retry_after.as_secs())]
    QueueNotOpen { retry_after: Duration },
    /// The queue holds its most waiters, or in passthrough mode has no free place; retry
    /// after the given delay (429: a 4xx, as the service itself is well), with the operator's
    /// message if any.
    #[error("{}", full_detail(message.as_deref(), *retry_after))]
    QueueFull {
        retry_after: Duration,
        message: Option<String>,
    },
    /// The request conflicts with the current state, such as closing a queue in use (409).
    #[error("{0}")]
    Conflict(String),
    /// The deployment already holds its most live queues, `MAX_QUEUES` (409).
    #[error("this deployment holds its most live queues ({max}); a queue leaves when it retires")]
    QueueLimit { max: u32 },
    /// The route exists but not with this method (405).
    #[error("method not allowed; allowed: {allow}")]
    MethodNotAllowed { allow: &'static str },
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

/// Why a token no longer holds a place: the `410 Gone` a buyer is told. The waiting room
/// records it for one to two generations of `max(session, idle period, 5 min)`; after that
/// the token is unknown. Which words of its scripts name which departure is the waiting
/// room's own (`queue::Absence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Departure {
    /// The session ran out.
    Expired,
    /// The session was released after its payment.
    Paid,
    /// Dropped from the line for not polling within the idle period.
    Dropped,
    /// The buyer left the line or gave up the session.
    Left,
    /// The queue sold out while the buyer waited, and the reaper gave the place back.
    SoldOut,
}

impl Departure {
    /// The problem type's last segment, and the gatekeeper's deny reason.
    pub fn kind(self) -> &'static str {
        match self {
            Departure::Expired | Departure::Paid => "session-ended",
            Departure::Dropped => "dropped-for-absence",
            Departure::Left => "left",
            Departure::SoldOut => "sold-out",
        }
    }

    /// The problem title.
    pub fn title(self) -> &'static str {
        match self {
            Departure::Expired | Departure::Paid => "Session ended",
            Departure::Dropped => "Dropped for absence",
            Departure::Left => "Left the queue",
            Departure::SoldOut => "Sold out",
        }
    }
}

impl std::fmt::Display for Departure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Departure::Expired => {
                "the session ended when its time ran out; joining again takes a new place at the \
                 back of the line"
            }
            Departure::Paid => "the session ended with its payment",
            Departure::Dropped => {
                "dropped from the line for not polling within the idle period; joining again \
                 takes a new place at the back of the line"
            }
            Departure::Left => "this token left the queue",
            Departure::SoldOut => {
                "the queue sold out while this token waited, and its place was given up"
            }
        })
    }
}

impl Error {
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

/// A full queue's detail: the operator's message, else what happened and when to retry.
fn full_detail(message: Option<&str>, retry_after: Duration) -> String {
    match message {
        Some(message) => message.to_owned(),
        None => format!(
            "this queue is full; retry after {} s",
            retry_after.as_secs()
        ),
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
