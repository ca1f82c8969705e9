//! Where a striped line lives: one hash tag per stripe, so a large queue's keys spread over as
//! many slots as it has stripes, evenly over the slot range, and which stripe a buyer is on.
//!
//! Stripe `k` of `S` has the tag `{l:<queue>:<k>.<n>}`, `n` the least number that puts the tag
//! in the `k`-th of `S` equal shares of the 16 384 slots. A cluster's primaries own equal runs
//! of slots, so with `S` a multiple of the primaries each holds the same number of stripes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::ids::{QueueId, UserId};

/// One stripe of a queue's line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Stripe(pub u16);

impl Stripe {
    /// The stripe `user` is on, of `stripes`: the first eight bytes of SHA-256 over the queue
    /// and the user, so buyers spread evenly and each always lands on the same stripe.
    pub fn of(queue: &QueueId, user: &UserId, stripes: u16) -> Stripe {
        let digest = Sha256::new()
            .chain_update(queue.as_str())
            .chain_update([0])
            .chain_update(user.as_str())
            .finalize();
        let mut head = [0; 8];
        head.copy_from_slice(&digest[..8]);
        Stripe((u64::from_be_bytes(head) % u64::from(stripes.max(1))) as u16)
    }
}

/// One stripe's keys, all under its tag.
#[derive(Debug, Clone)]
pub struct StripeKeys {
    base: String,
    /// Sorted set: user → the place's score, the arrival instant in ms (or the seal).
    pub line: String,
    /// Sorted set: user → the instant its session ends, in ms.
    pub active: String,
    /// Set: the segments (arrival ms ÷ the segment length) that have had places since the
    /// tick last found them empty.
    pub segments: String,
    /// String: the instant (ms) before which no new place is scored, the seal.
    pub sealed: String,
    /// String: what the last tick published for this stripe's polls ([`super::Published`]).
    pub published: String,
    /// Counter: the draw places taken on this stripe, which orders equal draw values.
    pub draws: String,
    /// String: the highest lease fence a tick has written this stripe with.
    pub fence: String,
    /// String, while admissions are halted: why ([`super::Halt`]).
    pub halt: String,
    /// Set: the user ids of this stripe on the queue's presale access list. The operator's:
    /// no TTL; it goes when the queue is closed.
    pub access: String,
    /// Hash: the SHA-256 of each of the queue's presale access codes that lies on this
    /// stripe, to the user id it is bound to ('' while free). The operator's: no TTL; it goes
    /// when the queue is closed.
    pub codes: String,
    /// Counter: the last challenge serial handed out to this stripe's buyers (`door`). Kept
    /// a challenge's lifetime and the redemption slack past the last.
    pub door: String,
    /// Counter: the admissions on arrival this stripe may still make (mode `passthrough`):
    /// the tick's allowance, taken by each such join. Lives [`super::ALLOW_FOR`] past
    /// the last tick.
    pub allow: String,
    /// Set: the user ids of this stripe on the queue's priority list. The operator's: no TTL;
    /// it goes when the queue is closed.
    pub priority: String,
}

/// The slots of a cluster.
const SLOTS: u32 = 16_384;

/// The slot a hash tag's keys are in.
fn slot_of(tag: &str) -> u32 {
    u32::from(crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes())) % SLOTS
}

/// Stripe `stripe` of `stripes`'s hash tag: in its share of the slots.
fn tag(queue: &QueueId, stripe: Stripe, stripes: u16) -> String {
    let stripes = u32::from(stripes.max(1));
    let k = u32::from(stripe.0).min(stripes - 1);
    let share = (k * SLOTS / stripes)..((k + 1) * SLOTS / stripes);
    (0u32..)
        .map(|n| format!("l:{queue}:{k}.{n}"))
        .find(|tag| share.contains(&slot_of(tag)))
        .unwrap_or_default()
}

impl StripeKeys {
    /// Stripe `stripe`'s keys, of a line of `stripes`.
    pub fn new(prefix: &str, queue: &QueueId, stripe: Stripe, stripes: u16) -> StripeKeys {
        let base = format!("{prefix}:{{{}}}", tag(queue, stripe, stripes));
        StripeKeys {
            line: format!("{base}:line"),
            active: format!("{base}:active"),
            segments: format!("{base}:segments"),
            sealed: format!("{base}:sealed"),
            published: format!("{base}:published"),
            draws: format!("{base}:draws"),
            fence: format!("{base}:fence"),
            halt: format!("{base}:halt"),
            access: format!("{base}:access"),
            codes: format!("{base}:codes"),
            door: format!("{base}:door"),
            allow: format!("{base}:allow"),
            priority: format!("{base}:priority"),
            base,
        }
    }

    /// `user`'s mark: present until its TTL runs out, and what became of its place: `w` while
    /// it waits, `a:<until>:<score>` once admitted, `d` once passed over as absent, `l` once
    /// it left, `p` once its session was paid for.
    pub fn mark(&self, user: &str) -> String {
        format!("{}:mark:{user}", self.base)
    }

    /// Counter: the challenges handed out to this stripe's buyers in minute `window` (ms ÷
    /// 60 000), kept two minutes.
    pub fn challenges(&self, window: i64) -> String {
        format!("{}:challenges:{window}", self.base)
    }

    /// Bitmap: the redeemed serials `bitmap × 2^20` up, each a bit, kept until the last
    /// challenge it redeemed may expire.
    pub fn redeemed(&self, bitmap: u64) -> String {
        format!("{}:redeemed:{bitmap}", self.base)
    }

    /// The marker of `payment`'s release, on the paying buyer's stripe: a payment ends a
    /// session once.
    pub fn paid(&self, payment: &str) -> String {
        format!("{}:paid:{payment}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buyers_spread_over_every_stripe_and_keep_theirs() {
        let queue = QueueId::parse("sale").unwrap();
        let mut counts = [0u32; 8];
        for i in 0..8000 {
            let user = UserId::parse(&format!("u{i}")).unwrap();
            let stripe = Stripe::of(&queue, &user, 8);
            assert_eq!(stripe, Stripe::of(&queue, &user, 8));
            counts[stripe.0 as usize] += 1;
        }
        assert!(counts.iter().all(|c| (850..1150).contains(c)), "{counts:?}");
    }

    #[test]
    fn stripes_spread_evenly_over_the_slots() {
        let queue = QueueId::parse("sale").unwrap();
        let slots: Vec<u32> = (0..64)
            .map(|k| slot_of(&tag(&queue, Stripe(k), 64)))
            .collect();
        for (k, slot) in slots.iter().enumerate() {
            assert_eq!(
                *slot as usize * 64 / SLOTS as usize,
                k,
                "stripe {k}: slot {slot}"
            );
        }
        // The slot of a key is its tag's, as Redis computes it (the CRC16 of redis-rs).
        let key = StripeKeys::new("lineup", &queue, Stripe(5), 64).line;
        assert_eq!(
            redis::cluster_routing::Slot::for_key(&key),
            redis::cluster_routing::Slot::new(slots[5] as u16).unwrap()
        );
        assert_eq!(tag(&queue, Stripe(0), 1), "l:sale:0.0");
    }

    #[test]
    fn a_stripes_keys_share_its_tag() {
        let keys = StripeKeys::new("lineup", &QueueId::parse("sale").unwrap(), Stripe(3), 8);
        let tag = format!(
            "lineup:{{{}}}:",
            super::tag(&QueueId::parse("sale").unwrap(), Stripe(3), 8)
        );
        for key in [
            &keys.line,
            &keys.active,
            &keys.segments,
            &keys.published,
            &keys.draws,
            &keys.fence,
            &keys.halt,
            &keys.mark("u1"),
        ] {
            assert!(key.starts_with(&tag), "{key}");
        }
    }
}
