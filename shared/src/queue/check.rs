//! The gatekeeper's check: is this token active right now, or why not. No script: one
//! pipeline of plain commands, decoded here. An active buyer is answered from its session
//! (`ZSCORE`, `HGET`) against this container's clock, which AWS keeps within a millisecond
//! or so of true time; the other reads say why anyone else is turned away. A primary guard
//! in the same pipeline makes a read-only replica refuse the call, so a reader follows a
//! failover (see [`primary_guard`](crate::store::primary_guard)).

use redis::RedisError;

use super::keys::QueueKeys;
use super::{instant, Absence, WaitingRoom};
use crate::error::Error;
use crate::store::{primary_guard, Batch, Staged};
use crate::token::TokenClaims;

/// A gatekeeper's answer: the token is active until this instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub active_until: chrono::DateTime<chrono::Utc>,
}

/// Why the gatekeeper turns a genuine token away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Still in line, not yet admitted (or dropped for absence and not yet removed).
    Waiting,
    /// The session or place is over.
    Gone(crate::error::Departure),
    /// The queue does not know this token.
    Unknown,
    /// The queue sold out: nobody more is admitted.
    SoldOut,
}

impl From<Absence> for Refusal {
    fn from(absence: Absence) -> Self {
        match absence {
            Absence::Departed(departure) => Refusal::Gone(departure),
            Absence::Unknown => Refusal::Unknown,
        }
    }
}

impl Refusal {
    /// The deny reason: `waiting`, or what queue-api's status would answer as the problem
    /// type (`session-ended`, `dropped-for-absence`, `left`, `not-found`).
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Waiting => "waiting",
            Refusal::Gone(departure) => departure.kind(),
            Refusal::Unknown => "not-found",
            Refusal::SoldOut => "sold-out",
        }
    }
}

/// The reads of one check, each staged as a plain command. The lines are read before the
/// session and the session before the departure records, so a buyer moving on between two
/// reads (admitted, or its session ended) is still found where it went.
struct CheckReads {
    guard: Staged<i64>,
    waiting: Staged<Option<f64>>,
    lane: Staged<Option<f64>>,
    session_end: Staged<Option<f64>>,
    session: Staged<Option<String>>,
    sold_out: Staged<Option<String>>,
    gone: [Staged<Option<String>>; 2],
}

/// What the reads found, decoded.
#[derive(Debug, Default)]
struct Found {
    waiting: Option<f64>,
    lane: Option<f64>,
    /// The session's end in ms, and the active entry `ticket:since`.
    session_end: Option<f64>,
    session: Option<String>,
    now_ms: i64,
    sold_out: bool,
    /// The departure records for the ticket: `reason user`.
    gone: [Option<String>; 2],
}

impl CheckReads {
    fn stage(batch: &mut Batch, keys: &QueueKeys, claims: &TokenClaims) -> Self {
        let user = claims.user.as_str();
        let ticket = claims.ticket;
        let score = |key: &str| redis::cmd("ZSCORE").arg(key).arg(user).clone();
        CheckReads {
            guard: batch.stage_command(&keys.primary_guard, primary_guard(&keys.primary_guard)),
            waiting: batch.stage_command(&keys.waiting, score(&keys.waiting)),
            lane: batch.stage_command(&keys.lane, score(&keys.lane)),
            session_end: batch.stage_command(&keys.active, score(&keys.active)),
            session: batch.stage_command(
                &keys.active_tickets,
                redis::cmd("HGET")
                    .arg(&keys.active_tickets)
                    .arg(user)
                    .clone(),
            ),
            sold_out: batch.stage_command(
                &keys.settings,
                redis::cmd("HGET")
                    .arg(&keys.settings)
                    .arg("sold-out")
                    .clone(),
            ),
            gone: [0, 1].map(|i| {
                batch.stage_command(
                    &keys.gone[i],
                    redis::cmd("HGET").arg(&keys.gone[i]).arg(ticket).clone(),
                )
            }),
        }
    }

    /// What the reads found, at `now_ms`.
    fn read(&self, replies: &[redis::Value], now_ms: i64) -> Result<Found, RedisError> {
        self.guard.read(replies)?;
        Ok(Found {
            waiting: self.waiting.read(replies)?,
            lane: self.lane.read(replies)?,
            session_end: self.session_end.read(replies)?,
            session: self.session.read(replies)?,
            now_ms,
            sold_out: self.sold_out.read(replies)?.as_deref() == Some("1"),
            gone: [self.gone[0].read(replies)?, self.gone[1].read(replies)?],
        })
    }
}

impl Found {
    /// The answer for `user`'s `ticket`. Active: a session holding that ticket that ends
    /// after now. Otherwise, in order: sold out, a session of that ticket past its end,
    /// still in line, the departure recorded for the ticket (when recorded for this user),
    /// else unknown.
    fn answer(&self, user: &str, ticket: u64) -> Result<Result<Gate, Refusal>, RedisError> {
        let held = self
            .session
            .as_deref()
            .and_then(|entry| entry.split(':').next()?.parse::<u64>().ok());
        let mut expired = false;
        if let (Some(end), Some(held)) = (self.session_end, held) {
            if held == ticket {
                let end = end as i64;
                if end > self.now_ms {
                    return Ok(Ok(Gate {
                        active_until: instant(end)?,
                    }));
                }
                expired = true;
            }
        }
        if self.sold_out {
            return Ok(Err(Refusal::SoldOut));
        }
        if expired {
            return Ok(Err(Refusal::Gone(crate::error::Departure::Expired)));
        }
        // Tickets are below 2^53, exact as a score.
        let in_line = |score: Option<f64>| score == Some(ticket as f64);
        if in_line(self.waiting) || in_line(self.lane) {
            return Ok(Err(Refusal::Waiting));
        }
        let Some(record) = self.gone.iter().flatten().next() else {
            return Ok(Err(Refusal::Unknown));
        };
        let (reason, holder) = record.split_once(' ').unwrap_or((record.as_str(), ""));
        if holder != user {
            return Ok(Err(Refusal::Unknown));
        }
        let absence = Absence::from_script(reason).ok_or_else(|| {
            redis::ParsingError::from(format!("a departure record names {reason:?}"))
        })?;
        Ok(Err(absence.into()))
    }
}

impl WaitingRoom {
    /// Whether the token is active right now: the gatekeeper's question, or why not.
    /// Read-only; a waiter's check is not a heartbeat. One round trip.
    pub async fn check(&self, claims: &TokenClaims) -> Result<Result<Gate, Refusal>, Error> {
        let keys = QueueKeys::new(&self.prefix, &claims.queue);
        let mut batch = Batch::new();
        let reads = CheckReads::stage(&mut batch, &keys, claims);
        let replies = self.conn.send(&batch).await?;
        Ok(reads
            .read(&replies, chrono::Utc::now().timestamp_millis())?
            .answer(claims.user.as_str(), claims.ticket)?)
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Refusal};
    use crate::error::Departure;

    const NOW: i64 = 1_800_000_000_000;

    fn found() -> Found {
        Found {
            now_ms: NOW,
            ..Found::default()
        }
    }

    #[test]
    fn an_active_session_holding_the_ticket_is_let_through_until_its_end() {
        let active = Found {
            session_end: Some((NOW + 60_000) as f64),
            session: Some(format!("7:{}", NOW - 1_000)),
            ..found()
        };
        let gate = active.answer("buyer", 7).unwrap().unwrap();
        assert_eq!(gate.active_until.timestamp_millis(), NOW + 60_000);
        // Another ticket of the same buyer's (an old token) is not that session.
        assert_eq!(active.answer("buyer", 6).unwrap(), Err(Refusal::Unknown));
        let lapsed = Found {
            session_end: Some(NOW as f64),
            ..active
        };
        assert_eq!(
            lapsed.answer("buyer", 7).unwrap(),
            Err(Refusal::Gone(Departure::Expired))
        );
    }

    #[test]
    fn everyone_else_is_told_why_not() {
        let waiting = Found {
            waiting: Some(7.0),
            ..found()
        };
        assert_eq!(waiting.answer("buyer", 7).unwrap(), Err(Refusal::Waiting));
        assert_eq!(waiting.answer("buyer", 8).unwrap(), Err(Refusal::Unknown));
        let laned = Found {
            lane: Some(4_503_599_627_370_497.0),
            ..found()
        };
        assert_eq!(
            laned.answer("buyer", 4_503_599_627_370_497).unwrap(),
            Err(Refusal::Waiting)
        );
        let sold_out = Found {
            sold_out: true,
            ..waiting
        };
        assert_eq!(sold_out.answer("buyer", 7).unwrap(), Err(Refusal::SoldOut));
        let left = Found {
            gone: [None, Some("left buyer".into())],
            ..found()
        };
        assert_eq!(
            left.answer("buyer", 7).unwrap(),
            Err(Refusal::Gone(Departure::Left))
        );
        // A ticket number reused after the queue retired: someone else's record.
        assert_eq!(left.answer("other", 7).unwrap(), Err(Refusal::Unknown));
        let given_back = Found {
            gone: [Some("given-back buyer".into()), None],
            ..found()
        };
        assert_eq!(
            given_back.answer("buyer", 7).unwrap(),
            Err(Refusal::Gone(Departure::SoldOut))
        );
        assert_eq!(found().answer("buyer", 7).unwrap(), Err(Refusal::Unknown));
        let garbled = Found {
            gone: [Some("vanished buyer".into()), None],
            ..found()
        };
        assert!(garbled.answer("buyer", 7).is_err());
    }
}
