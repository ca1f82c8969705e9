//! The names of a coupon campaign's keys. Every key starts with `KEY_PREFIX`.
//!
//! A campaign without a queue keeps its keys under its own hash tag `{c:<couponId>}`, so
//! campaigns spread across the shards of a cluster. A campaign with a queue keeps them under
//! that queue's tag `{q:<queueId>}`, beside the queue's active sessions, so the claim script
//! checks the buyer's session and claims in one call on one shard. Its own tag then holds
//! only a locator (the campaign hash with the field `locator`), which tells a claim without a
//! queue token which queue's token it needs.
//!
//! The campaign registry is the one key outside any tag; the scripts that touch it touch
//! nothing else.

use crate::ids::{CouponId, QueueId};
use crate::queue::keys::QueueKeys;

/// Where a campaign's keys live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Home {
    /// Under the campaign's own tag.
    Own,
    /// Under this queue's tag.
    Queue(QueueId),
}

/// The names of one campaign's keys.
#[derive(Debug, Clone)]
pub struct CouponKeys {
    /// Hash: quantity, claimed (the last claim number), opens-at, closes-at (ms), queue,
    /// expires-at (ms); or, under the own tag of a campaign with a queue, only `locator` and
    /// expires-at. Expires at expires-at.
    pub campaign: String,
    /// Hash: user id → `claimNumber:claimedAtMs`. Expires with the campaign.
    pub claims: String,
    /// Sorted set: member user id, score claim number: the claims not yet accepted by
    /// EventBridge. Expires with the campaign.
    pub outbox: String,
    /// Hashes of claim requests per user and per source IP in a one-minute window, two used
    /// in turn; each expires two minutes after its window began.
    pub rate: [String; 2],
    /// The queue's active sorted set and active-tickets hash, for a campaign with a queue.
    pub queue_sessions: Option<[String; 2]>,
}

impl CouponKeys {
    pub fn new(prefix: &str, coupon: &CouponId, home: &Home) -> Self {
        let (base, queue_sessions) = match home {
            Home::Own => (format!("{prefix}:{{c:{coupon}}}"), None),
            Home::Queue(queue) => {
                let keys = QueueKeys::new(prefix, queue);
                (
                    format!("{prefix}:{{q:{queue}}}:coupon:{coupon}"),
                    Some([keys.active, keys.active_tickets]),
                )
            }
        };
        CouponKeys {
            campaign: format!("{base}:campaign"),
            claims: format!("{base}:claims"),
            outbox: format!("{base}:outbox"),
            rate: [format!("{base}:rate:0"), format!("{base}:rate:1")],
            queue_sessions,
        }
    }

    /// The keys the claim script expects, in order, each under the name it binds.
    pub fn claim(&self) -> impl Iterator<Item = (&'static str, &str)> {
        let [active, tickets] = match &self.queue_sessions {
            Some([active, tickets]) => [Some(active), Some(tickets)],
            None => [None, None],
        };
        [
            ("CAMPAIGN", Some(&self.campaign)),
            ("CLAIMS", Some(&self.claims)),
            ("OUTBOX", Some(&self.outbox)),
            ("RATE_0", Some(&self.rate[0])),
            ("RATE_1", Some(&self.rate[1])),
            ("QUEUE_ACTIVE", active),
            ("QUEUE_TICKETS", tickets),
        ]
        .into_iter()
        .filter_map(|(name, key)| Some((name, key?.as_str())))
    }

    /// The keys the configure and pending scripts expect, each under the name it binds:
    /// campaign, claims, outbox.
    pub fn stored(&self) -> [(&'static str, &str); 3] {
        [
            ("CAMPAIGN", &self.campaign),
            ("CLAIMS", &self.claims),
            ("OUTBOX", &self.outbox),
        ]
    }
}

/// The registry of campaigns (a sorted set: member [`registry_member`], score the instant
/// the campaign's keys expire), so the publisher finds every outbox without scanning the
/// keyspace. At most [`super::MAX_CAMPAIGNS`]; a member leaves when its campaign expires.
pub fn coupon_registry_key(prefix: &str) -> String {
    format!("{prefix}:coupons")
}

/// A campaign's registry member: its id, then a space and its queue when it has one (ids
/// hold no spaces).
pub fn registry_member(coupon: &CouponId, home: &Home) -> String {
    match home {
        Home::Own => coupon.to_string(),
        Home::Queue(queue) => format!("{coupon} {queue}"),
    }
}
