//! Times for a schedule, and the draw recomputed by the recipe of docs/draw.md, written again
//! here so a test checks the queue's draw the way a buyer would.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::sleep;

/// `seconds` from now, to the millisecond (as the settings keep times).
pub fn in_seconds(seconds: i64) -> DateTime<Utc> {
    let at = Utc::now() + chrono::Duration::seconds(seconds);
    DateTime::from_timestamp_millis(at.timestamp_millis()).expect("a time in range")
}

/// `at` as the settings and the summary write it.
pub fn rfc(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Sleeps until `at` has passed by the millisecond the server's clock counts in (at once when
/// it has). The wait is rounded up, never down: a wake a fraction of a millisecond early would
/// find the server's `NOW` still before `at`.
pub async fn until(at: DateTime<Utc>) {
    let left = (at - Utc::now()).num_microseconds().unwrap_or(i64::MAX);
    if left >= 0 {
        sleep(Duration::from_micros(left as u64) + Duration::from_millis(1)).await;
    }
}

/// The first 52 bits (big-endian) of HMAC-SHA256(key = the seed's bytes, message = the user id).
pub fn draw_value(seed: &[u8], user: &str) -> u64 {
    let mut mac = Hmac::<Sha256>::new_from_slice(seed).expect("any key length");
    mac.update(user.as_bytes());
    let digest = mac.finalize().into_bytes();
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes")) >> 12
}

/// `user`'s draw value as the API shows it: 7 hex digits, the top 28 bits.
pub fn draw_value_hex(seed: &[u8], user: &str) -> String {
    format!("{:07x}", placing(seed, user))
}

/// The part of [`draw_value`] that places `user`: its top 28 bits.
pub fn placing(seed: &[u8], user: &str) -> u64 {
    draw_value(seed, user) >> 24
}

/// `users` in the order the draw places them: by the top 28 bits of their value, then by user
/// id. lineup places equal values by arrival: among a few hundred members they are too rare to
/// meet (one pair in about 2^28 / n²).
pub fn draw_order(seed: &[u8], users: &[String]) -> Vec<String> {
    let mut order: Vec<(u64, String)> = users
        .iter()
        .map(|u| (placing(seed, u), u.clone()))
        .collect();
    order.sort();
    order.into_iter().map(|(_, u)| u).collect()
}

/// The seed a draw (as the summary or a `QueueOpened` event shows it) reveals, after checking
/// it against the commitment published before.
pub fn revealed_seed(draw: &serde_json::Value, commitment: &str) -> Vec<u8> {
    let seed = hex::decode(draw["seed"].as_str().expect("seed revealed")).expect("the seed in hex");
    assert_eq!(seed.len(), 32);
    assert_eq!(draw["seedSha256"], commitment, "{draw}");
    assert_eq!(
        hex::encode(Sha256::digest(&seed)),
        commitment,
        "the seed revealed is the one committed to"
    );
    seed
}
