//! The gatekeeper's check: is this token active right now, or why not. No script: one
//! pipeline of plain commands, decoded here. An active buyer is answered from its active
//! entry (one `HGET`: ticket, start and end) against this container's clock, which AWS keeps
//! within a millisecond or so of true time; the other reads say why anyone else is turned
//! away. Once a second per connection, a primary guard in the same pipeline makes a
//! read-only replica refuse the call, so a reader follows a failover within a second (see
//! [`primary_guard`](crate::store::primary_guard)).

use std::time::Duration;

use redis::RedisError;

use super::keys::QueueKeys;
use super::{instant, Absence, WaitingRoom};
use crate::error::Error;
use crate::error::Refusal as _;
use crate::store::{primary_guard, Batch, Staged};
use crate::token::TokenClaims;

/// How often a connection's check carries the primary guard. Between two guards a check may
/// read a primary demoted since the last one: it lags the new primary by the replication
/// delay, and if cut off from it, by up to this long.
pub const PRIMARY_GUARD_EVERY: Duration = Duration::from_secs(1);

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
    Gone(super::Departure),
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
/// reads (admitted, or its session ended) is still found where it went. The primary guard
/// goes in at most once a [`PRIMARY_GUARD_EVERY`] per connection.
struct CheckReads {
    guard: Option<Staged<i64>>,
    waiting: Staged<Option<f64>>,
    lane: Staged<Option<f64>>,
    session: Staged<Option<String>>,
    settings: Staged<(Option<String>, Option<i64>)>,
    gone: [Staged<Option<String>>; 2],
}

/// What the reads found, decoded.
#[derive(Debug, Default)]
struct Found {
    waiting: Option<f64>,
    lane: Option<f64>,
    /// The active entry `ticket:since:until` (`ticket:since` when written before the end
    /// was added to it).
    session: Option<String>,
    /// The queue's session length setting, in ms, if set: the end of an entry without one.
    session_ms: Option<i64>,
    /// The environment's session length, in ms, where the queue sets none.
    default_session_ms: i64,
    now_ms: i64,
    sold_out: bool,
    /// The departure records for the ticket: `reason user`.
    gone: [Option<String>; 2],
}

impl CheckReads {
    fn stage(batch: &mut Batch, keys: &QueueKeys, claims: &TokenClaims, guard: bool) -> Self {
        let user = claims.user.as_str();
        let ticket = claims.ticket;
        let score = |key: &str| redis::cmd("ZSCORE").arg(key).arg(user).clone();
        CheckReads {
            guard: guard.then(|| {
                batch.stage_command(&keys.primary_guard, primary_guard(&keys.primary_guard))
            }),
            waiting: batch.stage_command(&keys.waiting, score(&keys.waiting)),
            lane: batch.stage_command(&keys.lane, score(&keys.lane)),
            session: batch.stage_command(
                &keys.active_tickets,
                redis::cmd("HGET")
                    .arg(&keys.active_tickets)
                    .arg(user)
                    .clone(),
            ),
            settings: batch.stage_command(
                &keys.settings,
                redis::cmd("HMGET")
                    .arg(&keys.settings)
                    .arg("sold-out")
                    .arg("session-ms")
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
    fn read(
        &self,
        replies: &[redis::Value],
        now_ms: i64,
        default_session_ms: i64,
    ) -> Result<Found, RedisError> {
        if let Some(guard) = &self.guard {
            guard.read(replies)?;
        }
        let (sold_out, session_ms) = self.settings.read(replies)?;
        Ok(Found {
            waiting: self.waiting.read(replies)?,
            lane: self.lane.read(replies)?,
            session: self.session.read(replies)?,
            session_ms,
            default_session_ms,
            now_ms,
            sold_out: sold_out.as_deref() == Some("1"),
            gone: [self.gone[0].read(replies)?, self.gone[1].read(replies)?],
        })
    }
}

impl Found {
    /// The session's ticket and its end in ms, from the active entry. An entry written
    /// before the end was added to it ends a session length after it began: such entries
    /// end within a session length of the deployment that adds the end, so this fallback
    /// can go one session length after every deployment writes it.
    fn session(&self) -> Option<(u64, i64)> {
        let mut parts = self.session.as_deref()?.split(':');
        let ticket = parts.next()?.parse().ok()?;
        let since: i64 = parts.next()?.parse().ok()?;
        let end = match parts.next() {
            Some(end) => end.parse().ok()?,
            None => since + self.session_ms.unwrap_or(self.default_session_ms),
        };
        Some((ticket, end))
    }

    /// The answer for `user`'s `ticket`. Active: a session holding that ticket that ends
    /// after now. Otherwise, in order: sold out, a session of that ticket past its end,
    /// still in line, the departure recorded for the ticket (when recorded for this user),
    /// else unknown.
    fn answer(&self, user: &str, ticket: u64) -> Result<Result<Gate, Refusal>, RedisError> {
        let mut expired = false;
        if let Some((held, end)) = self.session() {
            if held == ticket {
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
            return Ok(Err(Refusal::Gone(super::Departure::Expired)));
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
        if let Some(lines) = self.lines.clone() {
            return self.check_line(&lines, claims).await;
        }
        let keys = QueueKeys::new(&self.prefix, &claims.queue);
        let mut batch = Batch::new();
        let guard = self.conn.primary_guard_due(PRIMARY_GUARD_EVERY);
        let reads = CheckReads::stage(&mut batch, &keys, claims, guard);
        let replies = self.conn.send(&batch).await?;
        let default_session_ms =
            i64::try_from(self.config.room.session.as_millis()).unwrap_or(i64::MAX);
        Ok(reads
            .read(
                &replies,
                chrono::Utc::now().timestamp_millis(),
                default_session_ms,
            )?
            .answer(claims.user.as_str(), claims.ticket)?)
    }
}

#[cfg(test)]
mod tests {
    use super::{Found, Refusal};
    use crate::queue::Departure;

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
            session: Some(format!("7:{}:{}", NOW - 1_000, NOW + 60_000)),
            ..found()
        };
        let gate = active.answer("buyer", 7).unwrap().unwrap();
        assert_eq!(gate.active_until.timestamp_millis(), NOW + 60_000);
        // Another ticket of the same buyer's (an old token) is not that session.
        assert_eq!(active.answer("buyer", 6).unwrap(), Err(Refusal::Unknown));
        let lapsed = Found {
            session: Some(format!("7:{}:{NOW}", NOW - 60_000)),
            ..found()
        };
        assert_eq!(
            lapsed.answer("buyer", 7).unwrap(),
            Err(Refusal::Gone(Departure::Expired))
        );
    }

    #[test]
    fn an_entry_written_without_its_end_ends_a_session_length_after_it_began() {
        let old = |since: i64, session_ms: Option<i64>| Found {
            session: Some(format!("7:{since}")),
            session_ms,
            default_session_ms: 600_000,
            ..found()
        };
        let gate = old(NOW - 1_000, None).answer("buyer", 7).unwrap().unwrap();
        assert_eq!(gate.active_until.timestamp_millis(), NOW + 599_000);
        // The queue's own session length, where it sets one.
        let gate = old(NOW - 1_000, Some(60_000))
            .answer("buyer", 7)
            .unwrap()
            .unwrap();
        assert_eq!(gate.active_until.timestamp_millis(), NOW + 59_000);
        assert_eq!(
            old(NOW - 60_000, Some(60_000)).answer("buyer", 7).unwrap(),
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
