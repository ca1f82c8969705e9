//! Queue tokens. A token is `base64url(version ‖ ticket ‖ queue ‖ user ‖ tag)` where `tag` is
//! the first 128 bits of HMAC-SHA256 under `TOKEN_SECRET`. Carrying the ticket inside the
//! signed token means Redis keeps no per-token record (a waiter costs one sorted-set entry),
//! and re-issuing to the same buyer re-derives the very same token. Whether the token is
//! still waiting or active is always decided in Redis.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

use crate::ids::{QueueId, UserId};

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 1;
const TAG_LEN: usize = 16;
/// Shortest secret accepted, in bytes.
pub const MIN_SECRET_LEN: usize = 32;

/// The signing key. Its bytes never leave this module and never reach a log.
#[derive(Clone)]
pub struct TokenKey(Vec<u8>);

impl TokenKey {
    pub fn new(secret: &[u8]) -> Result<Self, String> {
        if secret.len() < MIN_SECRET_LEN {
            return Err(format!("must be at least {MIN_SECRET_LEN} bytes"));
        }
        Ok(TokenKey(secret.to_vec()))
    }

    /// A fresh key from the OS CSPRNG, for a process that issues and checks its own tokens.
    pub fn random() -> Self {
        let mut bytes = vec![0u8; MIN_SECRET_LEN];
        rand::rng().fill_bytes(&mut bytes);
        TokenKey(bytes)
    }

    /// A key for another purpose, named by `label`: HMAC-SHA256 of the label under this key.
    /// It rotates with `TOKEN_SECRET`; the secret itself never leaves this module.
    pub fn derive(&self, label: &[u8]) -> [u8; 32] {
        let mut mac = self.mac();
        mac.update(label);
        mac.finalize().into_bytes().into()
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length, so this cannot fail.
        HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }
}

/// What a valid token says: who holds which ticket in which queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenClaims {
    pub queue: QueueId,
    pub user: UserId,
    pub ticket: u64,
}

impl TokenClaims {
    /// The token for these claims. The same claims always give the same token.
    pub fn sign(&self, key: &TokenKey) -> String {
        let queue = self.queue.as_str().as_bytes();
        let user = self.user.as_str().as_bytes();
        let mut bytes = Vec::with_capacity(1 + 8 + 1 + queue.len() + user.len() + TAG_LEN);
        bytes.push(VERSION);
        bytes.extend_from_slice(&self.ticket.to_be_bytes());
        // Ids are at most 64 bytes, so the length fits in one byte.
        bytes.push(queue.len() as u8);
        bytes.extend_from_slice(queue);
        bytes.extend_from_slice(user);
        let mut mac = key.mac();
        mac.update(&bytes);
        bytes.extend_from_slice(&mac.finalize().into_bytes()[..TAG_LEN]);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The claims of a genuine token, or `None` for anything malformed, forged or altered.
    pub fn verify(token: &str, key: &TokenKey) -> Option<TokenClaims> {
        if token.len() > 256 {
            return None;
        }
        let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
        let body_len = bytes.len().checked_sub(TAG_LEN)?;
        let (body, tag) = bytes.split_at(body_len);
        let mut mac = key.mac();
        mac.update(body);
        mac.verify_truncated_left(tag).ok()?;

        let (&version, rest) = body.split_first()?;
        if version != VERSION || rest.len() < 9 {
            return None;
        }
        let ticket = u64::from_be_bytes(rest[..8].try_into().ok()?);
        let queue_len = usize::from(rest[8]);
        let ids = &rest[9..];
        if ids.len() < queue_len {
            return None;
        }
        let (queue, user) = ids.split_at(queue_len);
        Some(TokenClaims {
            queue: QueueId::parse(std::str::from_utf8(queue).ok()?).ok()?,
            user: UserId::parse(std::str::from_utf8(user).ok()?).ok()?,
            ticket,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claims() -> TokenClaims {
        TokenClaims {
            queue: QueueId::parse("concert-1").unwrap(),
            user: UserId::parse("user-123456").unwrap(),
            ticket: 42,
        }
    }

    #[test]
    fn round_trips_and_is_deterministic() {
        let key = TokenKey::random();
        let token = claims().sign(&key);
        assert_eq!(token, claims().sign(&key));
        assert!(token
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'));
        assert_eq!(TokenClaims::verify(&token, &key), Some(claims()));
    }

    #[test]
    fn rejects_other_keys_and_any_altered_byte() {
        let key = TokenKey::random();
        let token = claims().sign(&key);
        assert_eq!(TokenClaims::verify(&token, &TokenKey::random()), None);
        let bytes = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..bytes.len() {
            let mut altered = bytes.clone();
            altered[i] ^= 1;
            assert_eq!(
                TokenClaims::verify(&URL_SAFE_NO_PAD.encode(altered), &key),
                None
            );
        }
    }

    #[test]
    fn malformed_tokens_are_rejected_not_panicking() {
        let key = TokenKey::random();
        for junk in [
            "",
            "x",
            "!!!!",
            "%7B%7D",
            &"A".repeat(300),
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert_eq!(TokenClaims::verify(junk, &key), None);
        }
    }
}
