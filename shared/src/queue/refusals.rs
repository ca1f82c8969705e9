//! What the waiting room tells a buyer it turns away: a token whose place is over
//! ([`Departure`]), or an arrival the queue does not take ([`Arrival`]). Each is a
//! [`Refusal`]: the waiting room names the reason and its kind of answer, and
//! [`crate::http::problem`] picks the status.

use std::time::Duration;

use crate::error::{Error, Refusal, Turned};

/// Why a token no longer holds a place: the `410 Gone` a buyer is told. The waiting room
/// records it for one to two generations of `max(session, idle period, 5 min)`; after that
/// the token is unknown.
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

impl Refusal for Departure {
    fn turned(&self) -> Turned {
        Turned::Gone
    }

    fn kind(&self) -> &'static str {
        match self {
            Departure::Expired | Departure::Paid => "session-ended",
            Departure::Dropped => "dropped-for-absence",
            Departure::Left => "left",
            Departure::SoldOut => "sold-out",
        }
    }

    fn title(&self) -> &'static str {
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

/// Why a token holds no place, as the scripts say it: its departure, or `unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Absence {
    Departed(Departure),
    Unknown,
}

impl Absence {
    /// The absence a script names, if it names one. The scripts' words: a session
    /// `expired` or was `paid` for, a waiter `dropped` for absence or who `left`, a place
    /// `given-back` when the queue sold out, or `unknown`.
    pub(super) fn from_script(raw: &str) -> Option<Self> {
        let departed = match raw {
            "unknown" => return Some(Absence::Unknown),
            "expired" => Departure::Expired,
            "paid" => Departure::Paid,
            "dropped" => Departure::Dropped,
            "left" => Departure::Left,
            "given-back" => Departure::SoldOut,
            _ => return None,
        };
        Some(Absence::Departed(departed))
    }
}

/// A token that holds no place is refused with its departure, or not found.
impl From<Absence> for Error {
    fn from(absence: Absence) -> Self {
        match absence {
            Absence::Departed(departure) => departure.into(),
            Absence::Unknown => Error::unknown_token(),
        }
    }
}

impl From<Departure> for Error {
    fn from(departure: Departure) -> Self {
        Error::refused(departure)
    }
}

/// Why a queue takes no new arrival, or no new queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arrival {
    /// The queue is sold out (410), with the operator's message if any.
    SoldOut { message: Option<String> },
    /// The queue's mode is `closed`: those in line keep their places (409), with the
    /// operator's message if any.
    Closed { message: Option<String> },
    /// The pre-queue has not opened yet; retry after the given delay (409).
    NotOpen { retry_after: Duration },
    /// The queue holds its most waiters, or in passthrough mode has no free place; retry
    /// after the given delay, with the operator's message if any.
    Full {
        retry_after: Duration,
        message: Option<String>,
    },
    /// A presale's access (list or code) does not let this buyer take a place (403).
    AccessDenied,
    /// The deployment already holds its most live queues, `MAX_QUEUES` (409).
    QueueLimit { max: u32 },
}

impl Refusal for Arrival {
    fn turned(&self) -> Turned {
        match self {
            Arrival::SoldOut { .. } => Turned::Gone,
            Arrival::Closed { .. } | Arrival::NotOpen { .. } | Arrival::QueueLimit { .. } => {
                Turned::Conflict
            }
            Arrival::Full { .. } => Turned::Busy,
            Arrival::AccessDenied => Turned::Forbidden,
        }
    }

    fn kind(&self) -> &'static str {
        match self {
            Arrival::SoldOut { .. } => "sold-out",
            Arrival::Closed { .. } => "queue-closed",
            Arrival::NotOpen { .. } => "queue-not-open",
            Arrival::Full { .. } => "queue-full",
            Arrival::AccessDenied => "access-denied",
            Arrival::QueueLimit { .. } => "too-many-queues",
        }
    }

    fn title(&self) -> &'static str {
        match self {
            Arrival::SoldOut { .. } => "Sold out",
            Arrival::Closed { .. } => "Queue closed",
            Arrival::NotOpen { .. } => "Queue not open",
            Arrival::Full { .. } => "Queue full",
            Arrival::AccessDenied => "Access denied",
            Arrival::QueueLimit { .. } => "Too many queues",
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Arrival::NotOpen { retry_after } | Arrival::Full { retry_after, .. } => {
                Some(*retry_after)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for Arrival {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Arrival::SoldOut {
                message: Some(message),
            }
            | Arrival::Closed {
                message: Some(message),
            }
            | Arrival::Full {
                message: Some(message),
                ..
            } => f.write_str(message),
            Arrival::SoldOut { message: None } => f.write_str("this queue is sold out"),
            Arrival::Closed { message: None } => f.write_str("this queue takes no new arrivals"),
            Arrival::NotOpen { retry_after } => write!(
                f,
                "this queue does not take arrivals yet; retry after {} s",
                retry_after.as_secs()
            ),
            Arrival::Full {
                retry_after,
                message: None,
            } => write!(
                f,
                "this queue is full; retry after {} s",
                retry_after.as_secs()
            ),
            Arrival::AccessDenied => f.write_str(
                "this presale takes only buyers on its access list or with a valid access code",
            ),
            Arrival::QueueLimit { max } => write!(
                f,
                "this deployment holds its most live queues ({max}); a queue leaves when it \
                 retires"
            ),
        }
    }
}

impl From<Arrival> for Error {
    fn from(arrival: Arrival) -> Self {
        Error::refused(arrival)
    }
}
