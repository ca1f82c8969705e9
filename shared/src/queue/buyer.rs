//! What a buyer does: take a ticket, ask where they stand, leave; the release after payment (read from the payment
//! event's waiting-room fields); and the queue summary. Each script's reply is decoded here,
//! once, into the named type at the end of this file.

use std::net::IpAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use super::access::AccessCode;
use super::door;
use super::events::{admitted_events, seat_events, Admission, Seat};
use super::keys::{queue_payment_key, redeemed_key};
use super::pace::Pace;
use super::schedule::{Draw, DrawReply, Schedule};
use super::settings::QueueSettings;
use super::{
    instant, parse_rate, Absence, Arrival, QueueEvent, QueueEventKind, Standing, TokenState,
    WaitRange, WaitingRoom, ISSUE, LEAVE, RELEASE, STATUS, SUMMARY,
};
use crate::door::{Proof, Refused, Scope};
use crate::error::Error;
use crate::ids::{PaymentId, QueueId, UserId};
use crate::store::{Batch, Staged};
use crate::token::TokenClaims;

/// The outcome of asking for a token.
#[derive(Debug, Clone)]
pub struct Issued {
    /// False when the buyer already held a live token, which is returned again.
    pub created: bool,
    pub claims: TokenClaims,
    pub state: TokenState,
}

impl Issued {
    /// The admission to report when the new token was active at once.
    pub fn events(&self) -> Vec<QueueEvent> {
        match (&self.state.standing, self.created) {
            (super::Standing::Active { until, .. }, true) => vec![QueueEvent::activated(
                &self.claims.queue,
                self.claims.user.as_str(),
                self.claims.ticket,
                *until,
            )],
            _ => Vec::new(),
        }
    }
}

/// The outcome of leaving: the release itself and whoever took the freed place.
#[derive(Debug, Clone, Default)]
pub struct Left {
    pub events: Vec<QueueEvent>,
}

/// A payment that ends the buyer's session it was made in: the waiting-room part of a
/// `PaymentCompleted` event.
#[derive(Debug, Clone, PartialEq)]
pub struct Paid {
    pub queue: QueueId,
    pub user: UserId,
    pub payment: PaymentId,
    /// The producer's `completedAt`: bounded by the server's clock, never trusted alone.
    pub completed_at: DateTime<Utc>,
    /// The ticket of the session paid for, when the event names it.
    pub ticket: Option<u64>,
}

/// The waiting-room fields of a `PaymentCompleted` detail; the rankings read the rest.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PaidDetail {
    #[serde(default)]
    queue_id: Option<String>,
    #[serde(default)]
    user_id: Option<String>,
    #[serde(default)]
    ticket: Option<u64>,
}

impl Paid {
    /// The release a `PaymentCompleted` detail asks for: `Some` when it names both `queueId`
    /// and `userId`. Each is validated even alone, so a malformed id is caught at the edge;
    /// a `ticket` needs both. `payment` and `completed_at` come from the rest of the event.
    pub fn from_detail(
        detail: &serde_json::Value,
        payment: &PaymentId,
        completed_at: DateTime<Utc>,
    ) -> Result<Option<Paid>, Error> {
        let d: PaidDetail = serde_path_to_error::deserialize(detail)
            .map_err(|err| Error::invalid_at("detail", err))?;
        let queue = d.queue_id.as_deref().map(QueueId::parse).transpose()?;
        let user = d.user_id.as_deref().map(UserId::parse).transpose()?;
        let buyer = queue.zip(user);
        match d.ticket {
            Some(0) => return Err(Error::invalid("ticket", "must be at least 1")),
            Some(_) if buyer.is_none() => {
                return Err(Error::invalid("ticket", "needs queueId and userId"))
            }
            _ => {}
        }
        Ok(buyer.map(|(queue, user)| Paid {
            queue,
            user,
            payment: payment.clone(),
            completed_at,
            ticket: d.ticket,
        }))
    }
}

/// A release staged with [`WaitingRoom::stage_release`]: reads the event for the session it
/// ended, if it ended one.
pub struct StagedRelease {
    reply: ReleaseStaged,
    queue: QueueId,
    user: UserId,
}

/// The staged call: the queue's script, or the striped line's.
enum ReleaseStaged {
    Queue(Staged<ReleaseReply>),
    Line(Staged<crate::line::Released>),
}

impl StagedRelease {
    pub fn read(&self, replies: &[redis::Value]) -> Result<Option<QueueEvent>, Error> {
        let released = match &self.reply {
            ReleaseStaged::Queue(reply) => reply.read(replies)?.0,
            ReleaseStaged::Line(reply) => match reply.read(replies)? {
                crate::line::Released::Ended { ticket } => Some(ticket),
                crate::line::Released::Kept => None,
            },
        };
        Ok(released
            .map(|ticket| QueueEvent::released(&self.queue, self.user.as_str(), ticket, "paid")))
    }
}

/// A queue at a glance. Cacheable for a few seconds: a client that knows its own ticket
/// estimates its place as `ticket − admittedThrough` without a call of its own.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub queue_id: QueueId,
    pub waiting: u64,
    pub active: u64,
    /// The highest ticket admitted so far (0 before the first admission).
    pub admitted_through: u64,
    pub admission_rate_per_minute: Option<f64>,
    pub settings: QueueSettings,
    /// The schedule, as in `settings`, at the top level too, where a page reads it with the
    /// draw.
    #[serde(flatten)]
    pub schedule: Schedule,
    /// The draw of a scheduled queue, from when the pre-queue opens (see docs/draw.md).
    pub draw: Option<Draw>,
    /// The capacity in force and what limits it (see [`super::pace`]).
    pub pace: Pace,
}

impl WaitingRoom {
    /// Gives `user` a place in `queue`, or their existing one, unless the user or the
    /// source address is over its rate limit ([`Error::RateLimited`]). A queue that no
    /// operator created is [`Error::NotFound`] unless creation is open. A queue's first buyer
    /// also registers it, within `MAX_QUEUES` ([`Arrival::QueueLimit`]): two more round trips,
    /// once per queue; nothing is written for a queue that could not register.
    ///
    /// Before a scheduled opening the buyer joins the pre-queue with the draw value this
    /// container computes from the seed it knows for the queue; when it knows none (or an
    /// old one) the script answers with the seed and the call is made again: a second round
    /// trip, once per container and draw.
    pub async fn issue(
        &self,
        queue: &QueueId,
        user: &UserId,
        source: Option<IpAddr>,
    ) -> Result<Issued, Error> {
        self.issue_at_door(queue, user, source, None, &Proof::Absent)
            .await
    }

    /// [`Self::issue`] with what the buyer brought to the door: in a queue whose `access` is
    /// `list` or `code`, a new arrival the setting does not let in is
    /// [`Arrival::AccessDenied`] ([`super::access`]); in a queue whose `challenge` is on, one
    /// without a `proof` that holds and was not redeemed yet is [`Refused`] ([`super::door`]). Both are checked in the same round
    /// trip; a buyer who already holds a place is not checked again.
    pub async fn issue_at_door(
        &self,
        queue: &QueueId,
        user: &UserId,
        source: Option<IpAddr>,
        code: Option<&AccessCode>,
        proof: &Proof,
    ) -> Result<Issued, Error> {
        if let Some(lines) = self.lines.clone() {
            return self.join_line(&lines, queue, user, code, proof).await;
        }
        let code_hash = code.map(AccessCode::hash).unwrap_or_default();
        let (door, redeemed_until) = door::issue_args(proof);
        let redeemed = redeemed_key(&self.prefix, queue, door::serial(proof));
        let call = |registered_now: bool, draw: &Option<(String, u64)>, again: bool| {
            let mut invocation = self.invocation(&ISSUE, queue);
            let (commitment, value) = match draw {
                Some((commitment, value)) => (commitment.as_str(), value.to_string()),
                None => ("", String::new()),
            };
            invocation
                .key(&redeemed)
                .named("user", user.as_str())
                .named("ip", source.map(|ip| ip.to_string()).unwrap_or_default())
                .named("user_limit", self.config.rate_limits.user_per_minute)
                .named("ip_limit", self.config.rate_limits.ip_per_minute)
                .named("creation", self.config.creation.as_str())
                .named("registered_now", u8::from(registered_now))
                .named("commitment", commitment)
                .named("draw_value", value)
                .named("again", u8::from(again))
                .named("code_hash", &code_hash)
                .named("door", &door)
                .named("redeemed_until", redeemed_until);
            invocation
        };
        let mut draw = self.seeds.value(queue, user);
        let mut registered_now = false;
        let mut reply: TokenReply = self.conn.invoke(call(false, &draw, false)).await?;
        if let TokenAnswer::Unregistered = reply.answer {
            self.register(queue).await?;
            registered_now = true;
            reply = self.conn.invoke(call(true, &draw, false)).await?;
        }
        if let TokenAnswer::DrawSeed(seed) = &reply.answer {
            draw = self.seeds.learn(queue, seed, user);
            if draw.is_none() {
                return Err(Error::Internal("issue script: no valid draw seed".into()));
            }
            // Counted against the rate limits once, by the first call.
            reply = self.conn.invoke(call(registered_now, &draw, true)).await?;
        }
        if reply.register {
            self.reregister(queue).await?;
        }
        if let TokenAnswer::Door(refusal) = reply.answer {
            let replayed = refusal == DoorRefusal::Replayed;
            return Err(Refused::of(Scope::Queue(queue), proof, replayed).into());
        }
        let state = reply.answer.into_state()?;
        Ok(Issued {
            created: reply.created,
            claims: TokenClaims {
                queue: queue.clone(),
                user: user.clone(),
                ticket: state.ticket,
            },
            state,
        })
    }

    /// Where the token stands. Counts as the waiter's heartbeat. A token that is neither
    /// waiting nor active is refused with its [`super::Departure`], or not found.
    pub async fn status(&self, claims: &TokenClaims) -> Result<TokenState, Error> {
        if let Some(lines) = self.lines.clone() {
            return self.line_status(&lines, claims).await;
        }
        let mut invocation = self.invocation(&STATUS, &claims.queue);
        invocation
            .named("user", claims.user.as_str())
            .named("ticket", claims.ticket);
        let reply: TokenReply = self.conn.invoke(invocation).await?;
        if reply.register {
            self.reregister(&claims.queue).await?;
        }
        reply.answer.into_state()
    }

    /// Gives up the token's place. A token that held none is refused with its
    /// departure, or not found.
    pub async fn leave(&self, claims: &TokenClaims) -> Result<Left, Error> {
        if let Some(lines) = self.lines.clone() {
            return self.leave_line(&lines, claims).await;
        }
        let mut invocation = self.invocation(&LEAVE, &claims.queue);
        invocation
            .named("user", claims.user.as_str())
            .named("ticket", claims.ticket);
        let (from_session, admitted, dropped) = match self.conn.invoke(invocation).await? {
            LeaveReply::Left {
                from_session,
                admitted,
                dropped,
            } => (from_session, admitted, dropped),
            LeaveReply::Absent(absence) => return Err(absence.into()),
        };
        let queue = &claims.queue;
        let reason = if from_session {
            "left-session"
        } else {
            "left-line"
        };
        let mut events = vec![QueueEvent::released(
            queue,
            claims.user.as_str(),
            claims.ticket,
            reason,
        )];
        events.extend(admitted_events(queue, admitted));
        events.extend(seat_events(QueueEventKind::Abandoned, queue, dropped));
        Ok(Left { events })
    }

    /// Stages the release of the session `paid` was made in; the handle reads the reply.
    /// Once per payment: its first delivery leaves a marker for `remember`,
    /// and a redelivery releases nothing. That delivery ends the session with the ticket the
    /// payment names or, without one, a session that began before the payment by the
    /// server's clock; a payment more than `skew` ahead of that clock releases nothing. On
    /// the striped line, the buyer's stripe follows the queue's draw: its settings are read
    /// first where this container holds none fresh.
    pub async fn stage_release(
        &self,
        batch: &mut Batch,
        paid: &Paid,
        remember: Duration,
        skew: Duration,
    ) -> Result<StagedRelease, Error> {
        if let Some(lines) = &self.lines {
            let now = self.clock.now_ms();
            let (_, line) = self.line_of(lines, &paid.queue, now).await?;
            let payment = crate::line::Payment {
                user: &paid.user,
                id: &paid.payment,
                paid_at: paid.completed_at.timestamp_millis(),
                ticket: paid.ticket,
            };
            let reply = line.stage_release(batch, &payment, now, remember, skew);
            return Ok(StagedRelease {
                reply: ReleaseStaged::Line(reply),
                queue: paid.queue.clone(),
                user: paid.user.clone(),
            });
        }
        let mut invocation = self.invocation(&RELEASE, &paid.queue);
        invocation
            .key(queue_payment_key(&self.prefix, &paid.queue, &paid.payment))
            .named("user", paid.user.as_str())
            .named("paid_at", paid.completed_at.timestamp_millis())
            .named("paid_ticket", paid.ticket.unwrap_or(0))
            .named("remember", remember.as_secs().max(1))
            .named("skew", skew.as_millis() as u64);
        Ok(StagedRelease {
            reply: ReleaseStaged::Queue(batch.stage(invocation)),
            queue: paid.queue.clone(),
            user: paid.user.clone(),
        })
    }

    /// The queue's counts and the settings in force. On the striped line, the counts are
    /// those its last tick found, read beside the settings (under their tag): one round trip.
    pub async fn summary(&self, queue: &QueueId) -> Result<QueueSummary, Error> {
        let mut batch = Batch::new();
        let reply: Staged<SummaryReply> = batch.stage(self.invocation(&SUMMARY, queue));
        let counts = self
            .lines
            .as_ref()
            .map(|lines| lines.any(queue).stage_counts(&mut batch));
        let replies = self.conn.send(&batch).await?;
        let reply = reply.read(&replies)?;
        let (waiting, active) = match counts {
            Some(counts) => {
                let counts = counts.read(&replies)?.unwrap_or_default();
                (counts.waiting, counts.active)
            }
            None => (reply.waiting, reply.active),
        };
        Ok(QueueSummary {
            queue_id: queue.clone(),
            waiting,
            active,
            admitted_through: reply.admitted_through,
            admission_rate_per_minute: reply.admission_rate_per_minute,
            schedule: reply.settings.schedule.clone(),
            settings: reply.settings,
            draw: reply.draw,
            pace: reply.pace,
        })
    }
}

/// What issue and status answer for a token: `token_reply` in `replies.lua`,
/// `{created, status, ticket, position, active_until_ms, wait_ms, present_ms, paused, register,
/// message, drawn}`.
struct TokenReply {
    /// Whether the script gave a new ticket.
    created: bool,
    answer: TokenAnswer,
    /// The queue is live but not marked registered: the caller puts it back in the registry.
    register: bool,
}

/// The token's state, or why the script gave none.
enum TokenAnswer {
    Live(TokenState),
    /// The token holds no place.
    Absent(Absence),
    /// Over the issue rate limit until the window ends.
    Limited {
        retry_after: Duration,
    },
    /// No operator created the queue, and creation is not open.
    NoQueue,
    /// The queue is not in the registry; issue wrote nothing.
    Unregistered,
    /// A new arrival refused: sold out, closed, not open yet, full or not on the access list.
    Refused(Arrival),
    /// A new arrival refused at the door: no solution, a bad one, or one used already.
    Door(DoorRefusal),
    /// The queue's draw seed (hex), for the function alone: compute the draw value, call again.
    DrawSeed(String),
}

/// The issue script's refusals at the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DoorRefusal {
    Required,
    Failed,
    Replayed,
}

impl TokenAnswer {
    /// The token's state, or the error the buyer is answered with.
    fn into_state(self) -> Result<TokenState, Error> {
        match self {
            TokenAnswer::Live(state) => Ok(state),
            TokenAnswer::Absent(absence) => Err(absence.into()),
            TokenAnswer::Limited { retry_after } => Err(Error::RateLimited { retry_after }),
            TokenAnswer::NoQueue => Err(Error::NotFound(
                "no such queue: an operator creates it with PUT /queues/{queueId}/settings".into(),
            )),
            TokenAnswer::Unregistered => Err(Error::Internal(
                "issue script: the queue is still not registered".into(),
            )),
            TokenAnswer::Refused(arrival) => Err(arrival.into()),
            TokenAnswer::Door(_) => Err(Error::Internal(
                "issue script: a door refusal outside issue".into(),
            )),
            TokenAnswer::DrawSeed(_) => Err(Error::Internal(
                "issue script: still asks for the draw value".into(),
            )),
        }
    }
}

/// `token_reply`'s fields in `replies.lua`, in order: created, status, ticket, position (for
/// an active buyer, the ms its session began),
/// active_until_ms, wait_ms, present_ms, paused, register, message, drawn, range.
type TokenReplyFields = (
    u8,
    String,
    u64,
    u64,
    i64,
    String,
    u64,
    u8,
    u8,
    String,
    u8,
    Vec<String>,
);

impl FromRedisValue for TokenReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (
            created,
            status,
            ticket,
            position,
            until_ms,
            wait_ms,
            present_ms,
            paused,
            register,
            message,
            drawn,
            range,
        ): TokenReplyFields = FromRedisValue::from_redis_value(v)?;
        let wait_range = match range.as_slice() {
            [low, high] => match (low.parse(), high.parse()) {
                (Ok(low), Ok(high)) => Some(WaitRange {
                    low: Duration::from_millis(low),
                    high: Duration::from_millis(high),
                }),
                _ => None,
            },
            _ => None,
        };
        let message = (!message.is_empty()).then_some(message);
        let live = |standing| {
            TokenAnswer::Live(TokenState {
                ticket,
                standing,
                expected_wait: wait_ms.parse().ok().map(Duration::from_millis),
                wait_range,
                present_for: Duration::from_millis(present_ms),
                paused: paused == 1,
                message: message.clone(),
                drawn: drawn == 1,
            })
        };
        let answer = match status.as_str() {
            "waiting" => live(Standing::Waiting { position }),
            "active" => live(Standing::Active {
                since: instant(position as i64)?,
                until: instant(until_ms)?,
            }),
            "soldout" => live(Standing::SoldOut),
            "prequeue" => live(Standing::Prequeue {
                opens_at: instant(until_ms)?,
            }),
            "draw-seed" => TokenAnswer::DrawSeed(wait_ms.clone()),
            "not-open" => TokenAnswer::Refused(Arrival::NotOpen {
                retry_after: Duration::from_millis(until_ms.max(0) as u64)
                    .max(Duration::from_secs(1)),
            }),
            "sold-out" => TokenAnswer::Refused(Arrival::SoldOut {
                message: message.clone(),
            }),
            "closed" => TokenAnswer::Refused(Arrival::Closed {
                message: message.clone(),
            }),
            "full" => TokenAnswer::Refused(Arrival::Full {
                retry_after: Duration::from_millis(until_ms.max(0) as u64)
                    .max(Duration::from_secs(1)),
                message: message.clone(),
            }),
            "limited" => TokenAnswer::Limited {
                retry_after: Duration::from_millis(until_ms.max(0) as u64)
                    .max(Duration::from_secs(1)),
            },
            "access-denied" => TokenAnswer::Refused(Arrival::AccessDenied),
            "challenge-required" => TokenAnswer::Door(DoorRefusal::Required),
            "challenge-failed" => TokenAnswer::Door(DoorRefusal::Failed),
            "challenge-replayed" => TokenAnswer::Door(DoorRefusal::Replayed),
            "no-queue" => TokenAnswer::NoQueue,
            "unregistered" => TokenAnswer::Unregistered,
            other => TokenAnswer::Absent(
                Absence::from_script(other)
                    .ok_or_else(|| format!("queue script returned status {other:?}"))?,
            ),
        };
        Ok(TokenReply {
            created: created == 1,
            answer,
            register: register == 1,
        })
    }
}

/// The leave script's `{left, place, admitted, dropped}`: the place given up (`active` or
/// `waiting`) and whoever the freed place admitted or dropped; or, when nothing was left,
/// why the token held no place.
enum LeaveReply {
    Left {
        from_session: bool,
        admitted: Vec<Admission>,
        dropped: Vec<Seat>,
    },
    Absent(Absence),
}

impl FromRedisValue for LeaveReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (left, place, admitted, dropped): (u8, String, Vec<Admission>, Vec<Seat>) =
            FromRedisValue::from_redis_value(v)?;
        if left == 0 {
            return Ok(LeaveReply::Absent(
                Absence::from_script(&place)
                    .ok_or_else(|| format!("leave script returned {place:?}"))?,
            ));
        }
        Ok(LeaveReply::Left {
            from_session: place == "active",
            admitted,
            dropped,
        })
    }
}

/// The release script's `{released, ticket}`: the ticket of the session it ended, if any.
struct ReleaseReply(Option<u64>);

impl FromRedisValue for ReleaseReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (released, ticket): (u8, u64) = FromRedisValue::from_redis_value(v)?;
        Ok(ReleaseReply((released == 1).then_some(ticket)))
    }
}

/// The summary script's `{waiting, active, rate, admitted through, settings in force, draw}`.
struct SummaryReply {
    waiting: u64,
    active: u64,
    admission_rate_per_minute: Option<f64>,
    admitted_through: u64,
    settings: QueueSettings,
    draw: Option<Draw>,
    pace: Pace,
}

impl FromRedisValue for SummaryReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (waiting, active, rate, admitted_through, settings, DrawReply(draw), pace): (
            u64,
            u64,
            String,
            u64,
            QueueSettings,
            DrawReply,
            Pace,
        ) = FromRedisValue::from_redis_value(v)?;
        Ok(SummaryReply {
            waiting,
            active,
            admission_rate_per_minute: parse_rate(&rate),
            admitted_through,
            settings,
            draw,
            pace,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn a_ticket_comes_with_its_buyer() {
        let payment = PaymentId::parse("p1").unwrap();
        let at = Utc::now();
        let detail = |extra: Value| {
            let mut d =
                json!({"paymentId": "p1", "concertId": "c1", "queueId": "q1", "userId": "u1"});
            d.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            d
        };
        let paid = Paid::from_detail(&detail(json!({"ticket": 7})), &payment, at).unwrap();
        assert_eq!(
            paid,
            Some(Paid {
                queue: QueueId::parse("q1").unwrap(),
                user: UserId::parse("u1").unwrap(),
                payment: payment.clone(),
                completed_at: at,
                ticket: Some(7),
            })
        );
        let anonymous = json!({"paymentId": "p1", "concertId": "c1", "queueId": "q1"});
        assert_eq!(Paid::from_detail(&anonymous, &payment, at).unwrap(), None);
        for bad in [
            json!({"ticket": 0}),
            json!({"ticket": -1}),
            json!({"ticket": "7"}),
            json!({"ticket": 7, "userId": null}),
        ] {
            let err = Paid::from_detail(&detail(bad.clone()), &payment, at).unwrap_err();
            assert!(err.to_string().contains("ticket"), "{bad}: {err}");
        }
        let err = Paid::from_detail(&detail(json!({"queueId": "a b"})), &payment, at).unwrap_err();
        assert!(err.to_string().contains("queueId"), "{err}");
    }
}
