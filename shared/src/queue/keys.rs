//! The names of the waiting room's keys. Every key starts with `KEY_PREFIX`. The keys of one
//! queue share the hash tag `{q:<queueId>}`, so each queue script runs on one shard of Redis
//! Cluster or ElastiCache Serverless. The queue registry is the one key outside any tag; the
//! one script that touches it touches nothing else.
//!
//! [`QueueKeys::NAMES`] names the keys every queue script is given, in the order of `KEYS`;
//! `common.lua` lists the same names in its header, and a unit test holds the two equal.

use crate::ids::{PaymentId, QueueId};

/// The names of one queue's keys.
#[derive(Debug, Clone)]
pub struct QueueKeys {
    /// Sorted set: member user id, score ticket. One entry per waiter.
    pub waiting: String,
    /// Sorted set: member user id, score the millisecond the session ends.
    pub active: String,
    /// Hash: user id → `ticket:since:until[:1]` of each active buyer (`:1`: admitted on
    /// joining), so a token can be matched and a payment can tell whether it belongs to this
    /// session.
    pub active_tickets: String,
    /// Hash: ticket counter, admission counters, rate estimate, presence bookkeeping (the span,
    /// when a poll was last seen, the grace), the registration mark. Expires `SESSION + WAITING_IDLE + QUEUE_RETIRE_AFTER` after the
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
    /// String of each waiter's presence deadline: unsigned 32-bit counts of a quarter second,
    /// one at each ticket's presence index (the ticket modulo the queue's presence span, 128
    /// to 2^24 places, doubling as the line fills). Expires with meta; deleted on retirement.
    pub presence: String,
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
    /// Set: the user ids allowed to take a place while the setting `access` is `list`
    /// (`access.rs`). The operator's: no TTL, deleted when the queue is closed.
    pub access: String,
    /// Hash: SHA-256 (hex) of each access code → the user id it is bound to, empty until its
    /// first use (`access.rs`). The operator's: no TTL, deleted when the queue is closed.
    pub access_codes: String,
    /// A key nothing ever writes: the gatekeeper's check `UNLINK`s it as its primary guard
    /// (`store::primary_guard`). Not one of [`Self::NAMES`]: no script is given it.
    pub primary_guard: String,
}

impl QueueKeys {
    /// The keys every queue script is given, in the order of `KEYS`: each key is the queue's
    /// base, a colon and its name.
    pub const NAMES: [&'static str; 15] = [
        "waiting",
        "active",
        "active-tickets",
        "meta",
        "settings",
        "rate:0",
        "rate:1",
        "gone:0",
        "gone:1",
        "presence",
        "clock",
        "priority",
        "lane",
        "access",
        "access-codes",
    ];

    pub fn new(prefix: &str, queue: &QueueId) -> Self {
        let base = format!("{prefix}:{{q:{queue}}}");
        let key = |name: &str| format!("{base}:{name}");
        QueueKeys {
            waiting: key("waiting"),
            active: key("active"),
            active_tickets: key("active-tickets"),
            meta: key("meta"),
            settings: key("settings"),
            rate: [key("rate:0"), key("rate:1")],
            gone: [key("gone:0"), key("gone:1")],
            presence: key("presence"),
            clock: key("clock"),
            priority: key("priority"),
            lane: key("lane"),
            access: key("access"),
            access_codes: key("access-codes"),
            primary_guard: key("primary-guard"),
        }
    }

    /// The key called `name` (one of [`Self::NAMES`]).
    pub fn named(&self, name: &str) -> &str {
        let index = Self::NAMES
            .iter()
            .position(|n| *n == name)
            .unwrap_or_else(|| panic!("no queue key is called {name}"));
        self.all()[index]
    }

    /// All keys in the order every queue script expects them in `KEYS` ([`Self::NAMES`]).
    pub fn all(&self) -> Vec<&str> {
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
            &self.presence,
            &self.clock,
            &self.priority,
            &self.lane,
            &self.access,
            &self.access_codes,
        ]
        .into_iter()
        .map(String::as_str)
        .collect()
    }
}

/// The door's hash in `queue`, under the queue's hash tag: the last challenge serial handed
/// out and the arrival-rate window `adaptive` reads (`challenge.lua`). Expires
/// [`super::door::CHALLENGE_TTL`] and a minute after the last challenge.
pub fn door_key(prefix: &str, queue: &QueueId) -> String {
    format!("{prefix}:{{q:{queue}}}:door")
}

/// The redemption bitmap holding `serial` in `queue`: one bit per challenge serial, set when
/// its solution takes a place, [`crate::door::SERIALS_PER_BITMAP`] serials to a bitmap
/// (`issue.lua`). Expires a minute after the last challenge it redeemed could, which is never
/// after the door hash: a serial is never handed out again while its bit is kept.
pub fn redeemed_key(prefix: &str, queue: &QueueId, serial: u64) -> String {
    let bitmap = serial / crate::door::SERIALS_PER_BITMAP;
    format!("{prefix}:{{q:{queue}}}:redeemed:{bitmap}")
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
    use super::QueueKeys;
    use crate::ids::QueueId;

    /// Rust and the prelude name the same keys in the same order: the header line of
    /// `common.lua` lists them, and [`QueueKeys::all`] gives each key under its name.
    #[test]
    fn the_prelude_and_rust_name_the_same_keys_in_the_same_order() {
        let header = include_str!("common.lua")
            .lines()
            .skip_while(|line| !line.starts_with("-- KEYS, in this order"))
            .nth(1)
            .expect("the prelude lists its KEYS");
        let lua: Vec<&str> = header.trim_start_matches("--").split_whitespace().collect();
        assert_eq!(lua, QueueKeys::NAMES);
        let keys = QueueKeys::new("lineup", &QueueId::parse("show").unwrap());
        for (key, name) in keys.all().iter().zip(QueueKeys::NAMES) {
            assert_eq!(*key, format!("lineup:{{q:show}}:{name}"));
        }
        // Each name stands for one local in the prelude, assigned from its place in KEYS.
        let prelude = include_str!("common.lua");
        for (line, index) in [
            ("local WAITING, ACTIVE, TICKETS, META, SETTINGS = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]", 1),
            ("local RATE_KEYS = {KEYS[6], KEYS[7]}", 6),
            ("local GONE_KEYS = {KEYS[8], KEYS[9]}", 8),
            ("local PRESENCE = KEYS[10]", 10),
            ("local CLOCK = KEYS[11]", 11),
            ("local PRIORITY, LANE = KEYS[12], KEYS[13]", 12),
            ("local ACCESS, ACCESS_CODES = KEYS[14], KEYS[15]", 14),
        ] {
            assert!(prelude.contains(line), "{line}");
            assert!(line.contains(&format!("KEYS[{index}]")));
        }
        assert!(prelude.contains(&format!(
            "local WINDOW_MS = math.ceil(IDLE_MS / {})\n",
            super::super::IDLE_WINDOWS
        )));
        assert!(prelude.contains(&format!(
            "local OWN_KEYS = {}\n",
            QueueKeys::NAMES.len() + 1
        )));
    }
}
