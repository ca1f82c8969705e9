//! What a buyer does: take a ticket, ask where they stand, leave; what a gatekeeper asks
//! (is this token active right now?); the release after payment; and the queue summary.

use std::net::IpAddr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::events::{admitted_events, seat_events, AdmittedReply, SeatsReply};
use super::keys::{queue_payment_key, queue_registry_key, QueueKeys};
use super::settings::{QueueSettings, SettingsReply};
use super::{
    decode_reply, gone, instant, parse_rate, Departure, QueueEvent, QueueEventKind, ScriptReply,
    TokenState, WaitingRoom, CHECK, ISSUE, LEAVE, REGISTER, RELEASE, STATUS, SUMMARY,
};
use crate::error::Error;
use crate::ids::{PaymentId, QueueId, UserId};
use crate::store::{Batch, ScriptCall};
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
            (super::Standing::Active { until }, true) => vec![QueueEvent::activated(
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

/// A payment that ends the buyer's session it was made in.
#[derive(Debug, Clone)]
pub struct Paid<'a> {
    pub queue: &'a QueueId,
    pub user: &'a UserId,
    pub payment: &'a PaymentId,
    /// The producer's `completedAt`: bounded by the server's clock, never trusted alone.
    pub completed_at: DateTime<Utc>,
    /// The ticket of the session paid for, when the event names it.
    pub ticket: Option<u64>,
}

/// A gatekeeper's answer: the token is active until this instant.
#[derive(Debug, Clone, PartialEq)]
pub struct Gate {
    pub active_until: DateTime<Utc>,
}

/// Why the gatekeeper turns a genuine token away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Still in line, not yet admitted.
    Waiting,
    /// The session or place is over.
    Gone(Departure),
    /// The queue does not know this token.
    Unknown,
}

impl Refusal {
    /// The deny reason: `waiting`, or what queue-api's status would answer as the problem
    /// type (`session-ended`, `dropped-for-absence`, `left`, `not-found`).
    pub fn reason(self) -> &'static str {
        match self {
            Refusal::Waiting => "waiting",
            Refusal::Gone(departure) => departure.kind(),
            Refusal::Unknown => "not-found",
        }
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
}

impl WaitingRoom {
    /// Gives `user` a place in `queue`, or their existing one, unless the user or the
    /// source address is over its rate limit ([`Error::RateLimited`]). A queue that no
    /// operator created is [`Error::NotFound`] unless creation is open. A queue's first buyer
    /// also registers it, within `MAX_QUEUES` ([`Error::QueueLimit`]): two more round trips,
    /// once per queue; nothing is written for a queue that could not register.
    pub async fn issue(
        &self,
        queue: &QueueId,
        user: &UserId,
        source: Option<IpAddr>,
    ) -> Result<Issued, Error> {
        let call = |registered_now: bool| {
            let mut invocation = self.invocation(&ISSUE, queue);
            invocation
                .arg(user.as_str())
                .arg(source.map(|ip| ip.to_string()).unwrap_or_default())
                .arg(self.config.rate_limit_user_per_minute)
                .arg(self.config.rate_limit_ip_per_minute)
                .arg(self.config.creation.as_str())
                .arg(u8::from(registered_now));
            invocation
        };
        let mut reply: ScriptReply = self.conn.invoke(call(false)).await?;
        if reply.1 == "unregistered" {
            self.register(queue).await?;
            reply = self.conn.invoke(call(true)).await?;
        }
        self.register_if_needed(queue, &reply).await?;
        let (created, state) = decode_reply(reply)?;
        Ok(Issued {
            created,
            claims: TokenClaims {
                queue: queue.clone(),
                user: user.clone(),
                ticket: state.ticket,
            },
            state,
        })
    }

    /// Where the token stands. Counts as the waiter's heartbeat. A token that is neither
    /// waiting nor active is [`Error::Gone`] with its departure, or not found.
    pub async fn status(&self, claims: &TokenClaims) -> Result<TokenState, Error> {
        let mut invocation = self.invocation(&STATUS, &claims.queue);
        invocation.arg(claims.user.as_str()).arg(claims.ticket);
        let reply: ScriptReply = self.conn.invoke(invocation).await?;
        self.register_if_needed(&claims.queue, &reply).await?;
        Ok(decode_reply(reply)?.1)
    }

    /// Adds `queue` to the registry unless it already holds `MAX_QUEUES` others.
    async fn register(&self, queue: &QueueId) -> Result<(), Error> {
        let mut call = ScriptCall::new(&REGISTER);
        call.key(queue_registry_key(&self.prefix))
            .arg(queue.as_str())
            .arg(self.config.max_queues);
        let registered: u8 = self.conn.invoke(call).await?;
        if registered == 0 {
            return Err(Error::QueueLimit {
                max: self.config.max_queues,
            });
        }
        Ok(())
    }

    /// Adds `queue` to the registry when the status script found a live queue unmarked,
    /// whatever `MAX_QUEUES` says: its buyers hold places that must be promoted. The registry
    /// is written first and the mark second: a crash in between leaves the queue unmarked,
    /// and the next issue or status registers it again.
    async fn register_if_needed(&self, queue: &QueueId, reply: &ScriptReply) -> Result<(), Error> {
        if reply.8 == 0 {
            return Ok(());
        }
        let registry = queue_registry_key(&self.prefix);
        self.conn
            .query::<()>(
                &registry,
                redis::cmd("SADD")
                    .arg(&registry)
                    .arg(queue.as_str())
                    .clone(),
            )
            .await?;
        let meta = QueueKeys::new(&self.prefix, queue).meta;
        self.conn
            .query::<()>(
                &meta,
                redis::cmd("HSET")
                    .arg(&meta)
                    .arg("registered")
                    .arg(1)
                    .clone(),
            )
            .await?;
        Ok(())
    }

    /// Whether the token is active right now: the gatekeeper's question, or why not.
    /// Read-only; a waiter's check is not a heartbeat.
    pub async fn check(&self, claims: &TokenClaims) -> Result<Result<Gate, Refusal>, Error> {
        let mut invocation = self.invocation(&CHECK, &claims.queue);
        invocation.arg(claims.user.as_str()).arg(claims.ticket);
        let (until_ms, why): (i64, String) = self.conn.invoke(invocation).await?;
        if until_ms != 0 {
            return Ok(Ok(Gate {
                active_until: instant(until_ms)?,
            }));
        }
        Ok(Err(match why.as_str() {
            "waiting" => Refusal::Waiting,
            "unknown" => Refusal::Unknown,
            other => Refusal::Gone(
                Departure::from_script(other)
                    .ok_or_else(|| Error::Internal(format!("check script returned {other:?}")))?,
            ),
        }))
    }

    /// Gives up the token's place. A token that held none is [`Error::Gone`] with its
    /// departure, or not found.
    pub async fn leave(&self, claims: &TokenClaims) -> Result<Left, Error> {
        let mut invocation = self.invocation(&LEAVE, &claims.queue);
        invocation.arg(claims.user.as_str()).arg(claims.ticket);
        let (left, place, admitted, dropped): (u8, String, AdmittedReply, SeatsReply) =
            self.conn.invoke(invocation).await?;
        if left == 0 {
            return Err(gone(&place)
                .unwrap_or_else(|| Error::Internal(format!("leave script returned {place:?}"))));
        }
        let queue = &claims.queue;
        let reason = if place == "active" {
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

    /// Stages the release of the session `paid` was made in; [`WaitingRoom::released`]
    /// reads the reply. Once per payment: its first delivery leaves a marker for `remember`,
    /// and a redelivery releases nothing. That delivery ends the session with the ticket the
    /// payment names or, without one, a session that began before the payment by the
    /// server's clock; a payment more than `skew` ahead of that clock releases nothing.
    pub fn stage_release(
        &self,
        batch: &mut Batch,
        paid: &Paid<'_>,
        remember: Duration,
        skew: Duration,
    ) -> usize {
        let mut invocation = self.invocation(&RELEASE, paid.queue);
        invocation
            .key(queue_payment_key(&self.prefix, paid.queue, paid.payment))
            .arg(paid.user.as_str())
            .arg(paid.completed_at.timestamp_millis())
            .arg(paid.ticket.unwrap_or(0))
            .arg(remember.as_secs().max(1))
            .arg(skew.as_millis() as u64);
        batch.script(invocation)
    }

    /// The event for a staged release's reply, if it ended a session.
    pub fn released(
        queue: &QueueId,
        user: &UserId,
        reply: &redis::Value,
    ) -> Result<Option<QueueEvent>, Error> {
        let (released, ticket): (u8, u64) = redis::from_redis_value_ref(reply)
            .map_err(|err| Error::Internal(format!("release reply: {err}")))?;
        Ok((released == 1).then(|| QueueEvent::released(queue, user.as_str(), ticket, "paid")))
    }

    /// The queue's counts and the settings in force.
    pub async fn summary(&self, queue: &QueueId) -> Result<QueueSummary, Error> {
        let (waiting, active, rate, admitted_through, settings): (
            u64,
            u64,
            String,
            u64,
            SettingsReply,
        ) = self.conn.invoke(self.invocation(&SUMMARY, queue)).await?;
        Ok(QueueSummary {
            queue_id: queue.clone(),
            waiting,
            active,
            admitted_through,
            admission_rate_per_minute: parse_rate(&rate),
            settings: QueueSettings::from_reply(settings),
        })
    }
}
