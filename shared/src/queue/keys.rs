//! The names of the waiting room's keys. Every key starts with `KEY_PREFIX`. The keys of one
//! queue share the hash tag `{q:<queueId>}`, so each queue script runs on one shard of Redis
//! Cluster or ElastiCache Serverless. The queue registry is the one key outside any tag; the
//! one script that touches it touches nothing else.
//!
//! [`QueueKeys::all`] gives the order of `KEYS` that `common.lua` reads: heartbeat hashes,
//! then the ticket clock, the priority list and the priority lane, last.

use crate::ids::{PaymentId, QueueId};

/// The names of one queue's keys.
#[derive(Debug, Clone)]
pub struct QueueKeys {
    /// Sorted set: member user id, score ticket. One entry per waiter.
    pub waiting: String,
    /// Sorted set: member user id, score the millisecond the session ends.
    pub active: String,
    /// Hash: user id → `ticket:since` of each active buyer, so a token can be matched and
    /// a payment can tell whether it belongs to this session.
    pub active_tickets: String,
    /// Hash: ticket counter, admission counters, rate estimate, heartbeat window bookkeeping,
    /// the registration mark. Expires `SESSION + WAITING_IDLE + QUEUE_RETIRE_AFTER` after the
    /// queue's last buyer reply, settings change or promotion tick (the long presence period in
    /// place of `WAITING_IDLE` while a long heartbeat is live); deleted on retirement.
    pub meta: String,
    /// Hash: the queue's own settings, where they differ from the environment's defaults, and
    /// when an operator created the queue. The operator's: no TTL, kept on retirement.
    pub settings: String,
    /// Hashes of issue requests per user and per source IP in a one-minute window, two
    /// used in turn.
    pub rate: [String; 2],
    /// Hashes of ticket → why it lost its place (`expired`, `paid`, `dropped`, `left`) and whose it was, one
    /// per generation of `max(session, idle period, 5 min)`, used in turn, each expiring
    /// two generations after its last write: a record lives one to two generations.
    pub gone: [String; 2],
    /// Hashes of heartbeats, one per time window, reused in rotation: field ticket ÷ 32,
    /// value the 32-bit mask of that chunk's tickets seen in the window.
    pub seen: Vec<String>,
    /// Sorted set, the ticket clock: member the ms an issue ran, score the ticket it issued,
    /// at most one entry a second. Trimmed by the promoter below the entry the line's head
    /// needs; expires with meta; deleted on retirement.
    pub clock: String,
    /// Set: the operator's priority list of user ids, at most `PRIORITY_MAX`. The
    /// operator's: no TTL, deleted when the queue is closed.
    pub priority: String,
    /// Sorted set: member user id, score ticket. The priority lane's waiters, admitted before
    /// the main line; empties as they are admitted or dropped.
    pub lane: String,
    /// The long presence's heartbeat hashes, in the same format: the windows of a waiter told
    /// to poll past a third of the idle period (`common.lua`, `LONG_IDLE_MS`).
    pub long_seen: Vec<String>,
}

/// How many heartbeat hashes rotate per queue: one per window of the idle period plus
/// the window being written.
pub const SEEN_WINDOWS: usize = super::IDLE_WINDOWS as usize + 1;

/// How many long-presence heartbeat hashes rotate per queue: two windows per long period plus
/// the window being written.
pub const LONG_WINDOWS: usize = 3;

impl QueueKeys {
    pub fn new(prefix: &str, queue: &QueueId) -> Self {
        let base = format!("{prefix}:{{q:{queue}}}");
        QueueKeys {
            waiting: format!("{base}:waiting"),
            active: format!("{base}:active"),
            active_tickets: format!("{base}:active-tickets"),
            meta: format!("{base}:meta"),
            settings: format!("{base}:settings"),
            rate: [format!("{base}:rate:0"), format!("{base}:rate:1")],
            gone: [format!("{base}:gone:0"), format!("{base}:gone:1")],
            seen: (0..SEEN_WINDOWS)
                .map(|i| format!("{base}:seen:{i}"))
                .collect(),
            long_seen: (0..LONG_WINDOWS)
                .map(|i| format!("{base}:seen-long:{i}"))
                .collect(),
            clock: format!("{base}:clock"),
            priority: format!("{base}:priority"),
            lane: format!("{base}:lane"),
        }
    }

    /// All keys in the order every queue script expects them in `KEYS`.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        [
            &self.waiting,
            &self.active,
            &self.active_tickets,
            &self.meta,
            &self.settings,
            &self.rate[0],
            &self.rate[1],
            &self.gone[0],
            &self.gone[1],
        ]
        .into_iter()
        .chain(self.seen.iter())
        .chain(self.long_seen.iter())
        .chain([&self.clock, &self.priority, &self.lane])
        .map(String::as_str)
    }
}

/// The marker of a payment's release in `queue`, under the queue's hash tag: set by the
/// payment's first delivery, so a redelivery releases nothing.
pub fn queue_payment_key(prefix: &str, queue: &QueueId, payment: &PaymentId) -> String {
    format!("{prefix}:{{q:{queue}}}:paid:{payment}")
}

/// The set of live queue ids (at most `MAX_QUEUES`), so the promoter and reaper find queues
/// without scanning the keyspace. A queue leaves it when the reaper retires it.
pub fn queue_registry_key(prefix: &str) -> String {
    format!("{prefix}:queues")
}

#[cfg(test)]
mod tests {
    use super::{LONG_WINDOWS, SEEN_WINDOWS};

    /// The prelude finds a script's own keys after the heartbeat hashes, so it must know
    /// how many there are.
    #[test]
    fn the_prelude_counts_the_heartbeat_hashes_the_keys_carry() {
        let line = format!("local SEEN_SLOTS = {SEEN_WINDOWS}\n");
        assert!(include_str!("common.lua").contains(&line), "{line}");
        let line = format!("local LONG_SLOTS = {LONG_WINDOWS}\n");
        assert!(include_str!("common.lua").contains(&line), "{line}");
    }
}
