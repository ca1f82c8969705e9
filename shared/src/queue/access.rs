//! Presale access: who may take a new place in a queue (the setting `access`, see
//! docs/door.md). `open` lets anyone in; `list` only the user ids on the queue's access list;
//! `code` only a buyer bringing an access code, bound to the first buyer who uses it. The
//! check runs inside the issue script (`issue.lua`), in issue's one round trip; a buyer who
//! already holds a place is not checked again.
//!
//! Codes are minted here from 128 bits of the CSPRNG, returned once, and stored only as their
//! SHA-256. Lists and codes are the operator's: no TTL; they go when the queue is closed.
//! Writes go in script calls of at most [`ACCESS_CHUNK`] values, so none holds Redis for
//! more than about a millisecond; a bulk request sends its calls in one pipeline.

use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::Number;
use sha2::{Digest, Sha256};

use super::{WaitingRoom, ACCESS};
use crate::bounds::Bounds;
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::line::List;
use crate::store::{Batch, Staged};

/// Who may take a new place in a queue.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// Anyone (the default).
    #[default]
    Open,
    /// Only the user ids on the queue's access list.
    List,
    /// Only a buyer with an access code, bound to the first buyer who uses it.
    Code,
}

impl Access {
    /// The value stored in the settings hash; `None` for the default, which is not stored.
    pub(crate) fn stored(self) -> Option<&'static str> {
        match self {
            Access::Open => None,
            Access::List => Some("list"),
            Access::Code => Some("code"),
        }
    }
}

/// The most values one script call takes.
pub const ACCESS_CHUNK: usize = 500;
/// The most user ids one bulk upload takes.
pub const ACCESS_BULK_MAX: usize = 10_000;
/// The most user ids one queue's access list holds.
pub const ACCESS_LIST_MAX: u64 = 100_000;
/// How many codes one mint request makes: 1 to 10 000.
pub const ACCESS_MINT: Bounds = Bounds::new(1, 10_000);
/// The most codes one queue holds.
pub const ACCESS_CODES_MAX: u64 = 100_000;
/// The longest access code a buyer may send (minted ones are 32 characters).
pub const ACCESS_CODE_MAX_CHARS: usize = 64;

/// An access code as a buyer sends it: 1 to [`ACCESS_CODE_MAX_CHARS`] ASCII letters and
/// digits. Only its hash is ever sent to Redis.
#[derive(Clone, PartialEq, Eq)]
pub struct AccessCode(String);

impl AccessCode {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        if raw.is_empty()
            || raw.len() > ACCESS_CODE_MAX_CHARS
            || !raw.bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(Error::invalid(
                "accessCode",
                format!("1 to {ACCESS_CODE_MAX_CHARS} ASCII letters and digits"),
            ));
        }
        Ok(AccessCode(raw.to_owned()))
    }

    /// A fresh code: 128 bits of the CSPRNG as 32 lowercase hex digits.
    fn mint() -> Self {
        let mut bytes = [0u8; 16];
        rand::rng().fill_bytes(&mut bytes);
        AccessCode(hex::encode(bytes))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// What Redis holds of it: its SHA-256, 64 lowercase hex digits.
    pub(crate) fn hash(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }
}

/// Never shows the code itself (logs stay free of it).
impl std::fmt::Debug for AccessCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessCode(…)")
    }
}

/// The answer of the routes that edit a list of buyers (access, priority).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListSize {
    /// How many user ids the list holds now.
    pub size: u64,
}

impl WaitingRoom {
    /// Puts `users` (at most [`ACCESS_BULK_MAX`]) on `queue`'s access list, creating the queue
    /// as a settings change does: one script call per [`ACCESS_CHUNK`] ids, all in one
    /// pipeline (one round trip). A list that would pass [`ACCESS_LIST_MAX`] is
    /// [`Error::Conflict`]; the chunks before the one that would are kept. On the striped
    /// line each id goes on its own stripe's list, in a queue an operator created
    /// ([`crate::line::Line::add_to`]).
    pub async fn add_access(&self, queue: &QueueId, users: &[UserId]) -> Result<u64, Error> {
        if users.len() > ACCESS_BULK_MAX {
            return Err(Error::invalid(
                "userIds",
                format!("at most {ACCESS_BULK_MAX} user ids a request"),
            ));
        }
        let size = match &self.lines {
            Some(lines) => {
                let line = self.created_line(lines, queue).await?;
                line.add_to(List::Access, users, ACCESS_LIST_MAX).await?
            }
            None => {
                let ids: Vec<&str> = users.iter().map(UserId::as_str).collect();
                self.write_chunks(queue, "add", ACCESS_LIST_MAX, &ids)
                    .await?
            }
        };
        size.ok_or_else(|| {
            Error::Conflict(format!(
                "the access list would pass its most user ids ({ACCESS_LIST_MAX})"
            ))
        })
    }

    /// Takes `user` off `queue`'s access list; returns how many ids it still holds. One who
    /// already holds a place keeps it.
    pub async fn remove_access(&self, queue: &QueueId, user: &UserId) -> Result<u64, Error> {
        if let Some(lines) = &self.lines {
            let line = self.created_line(lines, queue).await?;
            return line.remove_from(List::Access, user).await;
        }
        let size = self
            .write_chunks(queue, "remove", ACCESS_LIST_MAX, &[user.as_str()])
            .await?;
        size.ok_or_else(|| Error::Internal("access script refused a removal".into()))
    }

    /// Mints `count` (a whole number within [`ACCESS_MINT`]) access codes for `queue`, creating the queue
    /// as a settings change does. Returns the codes; only their hashes are stored. A queue
    /// that would hold more than [`ACCESS_CODES_MAX`] is [`Error::Conflict`], and none is
    /// minted by the chunk that would pass it. On the striped line each code goes on a stripe
    /// of its own, in a queue an operator created ([`crate::line::Line::mint_codes`]), and
    /// none is minted when the whole would pass the most.
    pub async fn mint_access_codes(
        &self,
        queue: &QueueId,
        count: &Number,
    ) -> Result<Vec<AccessCode>, Error> {
        let count = ACCESS_MINT
            .json(count)
            .map_err(|err| Error::invalid("count", err.to_string()))?;
        let codes: Vec<AccessCode> = (0..count).map(|_| AccessCode::mint()).collect();
        let hashes: Vec<String> = codes.iter().map(AccessCode::hash).collect();
        let minted = match &self.lines {
            Some(lines) => {
                let line = self.created_line(lines, queue).await?;
                line.mint_codes(&hashes, ACCESS_CODES_MAX).await?
            }
            None => {
                let hashes: Vec<&str> = hashes.iter().map(String::as_str).collect();
                self.write_chunks(queue, "mint", ACCESS_CODES_MAX, &hashes)
                    .await?
            }
        };
        match minted {
            Some(_) => Ok(codes),
            None => Err(Error::Conflict(format!(
                "the queue would hold more than {ACCESS_CODES_MAX} access codes"
            ))),
        }
    }

    /// Sends `values` in calls of at most [`ACCESS_CHUNK`], in one pipeline. The entries held
    /// after the last call, or `None` when a call refused (over `most`).
    async fn write_chunks(
        &self,
        queue: &QueueId,
        op: &str,
        most: u64,
        values: &[&str],
    ) -> Result<Option<u64>, Error> {
        let mut batch = Batch::new();
        let mut staged: Vec<Staged<(u8, u64)>> = Vec::new();
        for chunk in values.chunks(ACCESS_CHUNK) {
            let mut call = self.invocation(&ACCESS, queue);
            call.named("op", op).named("most", most);
            for value in chunk {
                call.named("values", *value);
            }
            staged.push(batch.stage(call));
        }
        let replies = self.conn.send(&batch).await?;
        let mut held = None;
        for call in &staged {
            let (done, size) = call.read(&replies)?;
            if done == 0 {
                return Ok(None);
            }
            held = Some(size);
        }
        Ok(held)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_minted_code_has_128_random_bits_and_only_its_hash_is_kept() {
        let code = AccessCode::mint();
        assert_eq!(code.as_str().len(), 32);
        assert!(AccessCode::parse(code.as_str()).is_ok());
        assert_ne!(code.as_str(), AccessCode::mint().as_str());
        assert_eq!(code.hash().len(), 64);
        assert!(!code.hash().contains(code.as_str()));
        assert_eq!(format!("{code:?}"), "AccessCode(…)");
    }

    #[test]
    fn a_code_is_letters_and_digits() {
        for bad in ["", "a b", "é", &"a".repeat(ACCESS_CODE_MAX_CHARS + 1)] {
            assert!(AccessCode::parse(bad).is_err(), "{bad:?}");
        }
    }
}
