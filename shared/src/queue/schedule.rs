//! A queue's schedule and its draw (docs/draw.md). `opensAt`, `closesAt` and
//! `prequeueOpensAt` are settings, read by the prelude's one settings read. Before the
//! opening arrivals join a pre-queue; each member's place is decided by its draw value, the
//! top 28 bits of HMAC-SHA256(seed, userId). The function computes the top 52 bits (Redis Lua
//! has no SHA-256) and passes them to the issue script, which makes the member's ticket of
//! the first 28 followed by a 24-bit presence index (the queue's counter, from 1): the draw
//! orders the pre-queue, members with equal draw values by arrival. Later arrivals' tickets start
//! at 2^52, so the one waiting sorted set holds the draw first and nothing moves at the
//! opening.
//!
//! The seed is 32 bytes from the OS CSPRNG, made when a schedule is set, stored with its
//! SHA-256 (the commitment the summary publishes). A container keeps the seeds it learnt
//! ([`SeedCache`]); the issue script tells the function a queue's seed when the function
//! names no commitment or an old one, so a container's first pre-queue join per queue costs
//! a second round trip.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use rand::RngCore;
use redis::{FromRedisValue, ParsingError, Value};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::instant;
use crate::error::Error;
use crate::ids::{QueueId, UserId};

/// 2^52: draw values are below it, and so are pre-queue members' tickets.
pub const DRAW_BASE: u64 = 1 << 52;

/// The low bits of a pre-queue member's ticket that hold its presence index, not its draw
/// value (`common.lua` DRAW_INDEX_SPAN is 2 to this power).
pub const DRAW_INDEX_BITS: u32 = 24;

/// The draw value of the pre-queue member holding `ticket` (or of the top 52 bits
/// [`DrawSeed::value`] gives), as the API shows it: 7 lowercase hex digits, the top 28 bits
/// of HMAC-SHA256(seed, userId).
pub fn value_hex(ticket: u64) -> String {
    format!("{:07x}", ticket >> DRAW_INDEX_BITS)
}

/// Most queues whose seed a container keeps; past it the cache starts afresh.
const SEED_CACHE_QUEUES: usize = 1024;

/// The schedule in force, part of [`super::QueueSettings`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    /// When the line opens: the draw places the pre-queue, and admissions start.
    pub opens_at: Option<String>,
    /// From when new arrivals are refused; those in line keep their places.
    pub closes_at: Option<String>,
    /// From when arrivals may join the pre-queue.
    pub prequeue_opens_at: Option<String>,
}

/// `ms` as RFC 3339 with milliseconds, or `None` for `''`.
fn rfc3339(raw: &str) -> Result<Option<String>, ParsingError> {
    if raw.is_empty() {
        return Ok(None);
    }
    let ms: i64 = raw
        .parse()
        .map_err(|_| format!("schedule time {raw:?} is not ms"))?;
    Ok(Some(
        instant(ms)?.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
    ))
}

/// The scripts' `{opens at, closes at, pre-queue opens at}` (`settings_reply`).
impl FromRedisValue for Schedule {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (opens, closes, prequeue): (String, String, String) =
            FromRedisValue::from_redis_value(v)?;
        Ok(Schedule {
            opens_at: rfc3339(&opens)?,
            closes_at: rfc3339(&closes)?,
            prequeue_opens_at: rfc3339(&prequeue)?,
        })
    }
}

/// The schedule part of a settings change: each field left alone when absent, set when
/// given, removed when `null`.
pub struct ScheduleChange<'a> {
    pub opens_at: &'a Option<Option<DateTime<Utc>>>,
    pub closes_at: &'a Option<Option<DateTime<Utc>>>,
    pub prequeue_opens_at: &'a Option<Option<DateTime<Utc>>>,
}

impl ScheduleChange<'_> {
    /// Adds the script arguments (stored field and ms, empty for a removal) to `args`.
    pub(super) fn arguments(&self, args: &mut Vec<(&'static str, String)>) -> Result<(), Error> {
        for (field, stored, change) in [
            ("opensAt", "opens-at", self.opens_at),
            ("closesAt", "closes-at", self.closes_at),
            (
                "prequeueOpensAt",
                "prequeue-opens-at",
                self.prequeue_opens_at,
            ),
        ] {
            match change {
                None => {}
                Some(None) => args.push((stored, String::new())),
                Some(Some(at)) => {
                    let ms = at.timestamp_millis();
                    if ms < 0 {
                        return Err(Error::invalid(field, "must be after 1970"));
                    }
                    args.push((stored, ms.to_string()));
                }
            }
        }
        Ok(())
    }

    /// Whether the change sets an opening, which may start a new draw.
    pub(super) fn sets_opening(&self) -> bool {
        matches!(self.opens_at, Some(Some(_)))
    }
}

/// A fresh draw seed: 32 bytes from the OS CSPRNG.
pub struct DrawSeed([u8; 32]);

impl DrawSeed {
    pub fn random() -> Self {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        DrawSeed(bytes)
    }

    /// The seed as 64 lowercase hex digits.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The commitment: SHA-256 of the seed's 32 bytes, as 64 lowercase hex digits.
    pub fn commitment(&self) -> String {
        hex::encode(Sha256::digest(self.0))
    }

    pub(super) fn from_hex(raw: &str) -> Option<Self> {
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(raw, &mut bytes).ok()?;
        Some(DrawSeed(bytes))
    }

    /// The first 52 bits (big-endian) of HMAC-SHA256(seed, user id): `user`'s draw value
    /// ([`value_hex`]) and the bits the issue script replaces with a presence index.
    pub fn value(&self, user: &UserId) -> u64 {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(user.as_str().as_bytes());
        let digest = mac.finalize().into_bytes();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_be_bytes(first) >> 12
    }
}

/// The seeds a container has learnt, by queue: (commitment, seed). Bounded; a seed replaced
/// by a new schedule is learnt again from the issue script.
#[derive(Clone, Default)]
pub struct SeedCache(Arc<Mutex<HashMap<QueueId, KnownSeed>>>);

/// A seed a container learnt, with its commitment.
type KnownSeed = (String, Arc<DrawSeed>);

impl SeedCache {
    /// The commitment and `user`'s value under the seed known for `queue`, if any.
    pub(super) fn value(&self, queue: &QueueId, user: &UserId) -> Option<(String, u64)> {
        let seeds = self.0.lock().ok()?;
        let (commit, seed) = seeds.get(queue)?;
        Some((commit.clone(), seed.value(user)))
    }

    /// Keeps `seed_hex` (as the issue script told it) for `queue`; returns the commitment and
    /// `user`'s value, or `None` for a seed that is not 64 hex digits.
    pub(super) fn learn(
        &self,
        queue: &QueueId,
        seed_hex: &str,
        user: &UserId,
    ) -> Option<(String, u64)> {
        let seed = DrawSeed::from_hex(seed_hex)?;
        let commit = seed.commitment();
        let value = seed.value(user);
        if let Ok(mut seeds) = self.0.lock() {
            if seeds.len() >= SEED_CACHE_QUEUES {
                seeds.clear();
            }
            seeds.insert(queue.clone(), (commit.clone(), Arc::new(seed)));
        }
        Some((commit, value))
    }
}

/// The draw as the summary publishes it: the commitment from when the pre-queue opens, the
/// seed and the number placed from the opening.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Draw {
    pub seed_sha256: String,
    pub seed: Option<String>,
    pub members: Option<u64>,
}

/// The summary script's `{commitment, seed, members}`, each `''` while not public.
pub(super) struct DrawReply(pub Option<Draw>);

impl FromRedisValue for DrawReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (commit, seed, members): (String, String, String) =
            FromRedisValue::from_redis_value(v)?;
        if commit.is_empty() {
            return Ok(DrawReply(None));
        }
        Ok(DrawReply(Some(Draw {
            seed_sha256: commit,
            seed: (!seed.is_empty()).then_some(seed),
            members: members.parse().ok(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recipe of docs/draw.md, on a fixed seed (checked there with Python).
    #[test]
    fn the_prelude_keeps_the_same_index_bits() {
        let span = 1u64 << super::DRAW_INDEX_BITS;
        assert!(include_str!("common.lua").contains(&format!("local DRAW_INDEX_SPAN = {span}\n")));
        assert_eq!(super::value_hex(0xa_bcde_f012_3456), "abcdef0");
    }

    #[test]
    fn the_draw_value_is_the_top_28_bits_of_the_hmac() {
        let seed = DrawSeed::from_hex(&"00".repeat(32)).unwrap();
        let user = UserId::parse("alice").unwrap();
        let mac = {
            let mut mac = Hmac::<Sha256>::new_from_slice(&[0u8; 32]).unwrap();
            mac.update(b"alice");
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(value_hex(seed.value(&user)), mac[..7]);
        assert_eq!(value_hex(seed.value(&user)), "ce3837f");
        assert!(seed.value(&user) < DRAW_BASE);
        let fresh = DrawSeed::random();
        assert_eq!(DrawSeed::from_hex(&fresh.hex()).unwrap().0, fresh.0);
        assert_eq!(fresh.commitment().len(), 64);
        assert!(DrawSeed::from_hex("zz").is_none());
    }
}
