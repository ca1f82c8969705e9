//! What a buyer does: take a ticket, ask where they stand, leave. Plus the queue summary.

use serde::Serialize;

use super::{
    decode_reply, parse_rate, ScriptReply, TokenState, WaitingRoom, ISSUE, LEAVE, STATUS, SUMMARY,
};
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::store::queue_registry_key;
use crate::token::TokenClaims;

/// The outcome of asking for a token.
#[derive(Debug, Clone)]
pub struct Issued {
    /// False when the buyer already held a live token, which is returned again.
    pub created: bool,
    pub claims: TokenClaims,
    pub state: TokenState,
}

/// A queue at a glance.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub queue_id: QueueId,
    pub waiting: u64,
    pub active: u64,
    pub capacity: u32,
    pub session_seconds: u64,
    pub admit_per_tick: u32,
    pub waiting_idle_seconds: u64,
    pub admission_rate_per_minute: Option<f64>,
}

impl WaitingRoom {
    /// Gives `user` a place in `queue`, or their existing one. Registers the queue in the
    /// same round trip (registry first, so a crash in between never hides a waiter).
    pub async fn issue(&self, queue: &QueueId, user: &UserId) -> Result<Issued, Error> {
        let invocation = {
            let mut inv = self.invocation(&ISSUE, queue);
            inv.arg(user.as_str());
            inv
        };
        let (reply,): (ScriptReply,) = self
            .conn
            .pipeline(self.registered(queue).invoke_script(&invocation), &[&ISSUE])
            .await?;
        let (created, state) = decode_reply(reply)?
            .ok_or_else(|| Error::Internal("issue script found no entry".into()))?;
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

    /// Where the token stands, or `None` when it is neither waiting nor active. Counts as the
    /// waiter's heartbeat.
    pub async fn status(&self, claims: &TokenClaims) -> Result<Option<TokenState>, Error> {
        let mut invocation = self.invocation(&STATUS, &claims.queue);
        invocation.arg(claims.user.as_str()).arg(claims.ticket);
        let (reply,): (ScriptReply,) = self
            .conn
            .pipeline(
                self.registered(&claims.queue).invoke_script(&invocation),
                &[&STATUS],
            )
            .await?;
        Ok(decode_reply(reply)?.map(|(_, state)| state))
    }

    /// A pipeline that first (re-)registers `queue`, so the promoter finds it. Issue and
    /// status both start with it: a queue the reaper retired while a buyer arrived is back
    /// in the registry by that buyer's next poll.
    fn registered(&self, queue: &QueueId) -> redis::Pipeline {
        let mut pipe = redis::pipe();
        pipe.sadd(queue_registry_key(&self.prefix), queue.as_str())
            .ignore();
        pipe
    }

    /// Gives up the token's place. Returns false when it held none.
    pub async fn leave(&self, claims: &TokenClaims) -> Result<bool, Error> {
        let mut invocation = self.invocation(&LEAVE, &claims.queue);
        invocation
            .arg(claims.user.as_str())
            .arg(claims.ticket)
            .arg(self.settings.admit_per_tick);
        let left: u8 = self.conn.invoke(&invocation).await?;
        Ok(left == 1)
    }

    pub async fn summary(&self, queue: &QueueId) -> Result<QueueSummary, Error> {
        let (waiting, active, rate): (u64, u64, String) =
            self.conn.invoke(&self.invocation(&SUMMARY, queue)).await?;
        Ok(QueueSummary {
            queue_id: queue.clone(),
            waiting,
            active,
            capacity: self.settings.capacity,
            session_seconds: self.settings.session.as_secs(),
            admit_per_tick: self.settings.admit_per_tick,
            waiting_idle_seconds: self.settings.waiting_idle.as_secs(),
            admission_rate_per_minute: parse_rate(&rate),
        })
    }
}
