//! The operator's lists of buyers on the striped line, the presale access list and the
//! priority list ([`List`]): each user id on its own stripe's set, so the join checks it on
//! the buyer's stripe, in the join's one call. Edited by the operator in chunks of at most
//! [`ACCESS_CHUNK`] ids a command; reading a list's size reads every stripe, on the
//! operator's path only.

use std::collections::BTreeMap;

use super::handle::Line;
use super::keys::{Stripe, StripeKeys};
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{Batch, Staged};

/// The most ids one command takes, so no call holds Redis long.
pub const ACCESS_CHUNK: usize = 500;

/// An operator's list of buyers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum List {
    /// Who may take a place in a presale (`access: list`).
    Access,
    /// Who takes a place in the priority lane.
    Priority,
}

impl List {
    /// The list's set on a stripe.
    fn key(self, keys: &StripeKeys) -> &str {
        match self {
            List::Access => &keys.access,
            List::Priority => &keys.priority,
        }
    }
}

impl Line {
    /// `users` by stripe.
    fn by_stripe<'a>(&self, users: &'a [UserId]) -> BTreeMap<Stripe, Vec<&'a str>> {
        let mut by: BTreeMap<Stripe, Vec<&'a str>> = BTreeMap::new();
        for user in users {
            by.entry(self.stripe_of(user))
                .or_default()
                .push(user.as_str());
        }
        by
    }

    /// How many of `users` `list` lacks, and how many ids it holds: one pipeline over
    /// every stripe.
    async fn list_size(&self, list: List, users: &[UserId]) -> Result<(u64, u64), Error> {
        let mut batch = Batch::new();
        let sizes: Vec<Staged<u64>> = self
            .stripe_keys
            .iter()
            .map(|keys| {
                let key = list.key(keys);
                batch.stage_command(key, redis::cmd("SCARD").arg(key).clone())
            })
            .collect();
        let mut held: Vec<Staged<Vec<u8>>> = Vec::new();
        for (stripe, ids) in self.by_stripe(users) {
            let key = list.key(self.keys(stripe));
            for chunk in ids.chunks(ACCESS_CHUNK) {
                held.push(
                    batch.stage_command(key, redis::cmd("SMISMEMBER").arg(key).arg(chunk).clone()),
                );
            }
        }
        let replies = self.conn.send(&batch).await?;
        let mut size = 0;
        for staged in &sizes {
            size += staged.read(&replies)?;
        }
        let mut lacking = 0;
        for staged in &held {
            lacking += staged.read(&replies)?.iter().filter(|m| **m == 0).count() as u64;
        }
        Ok((lacking, size))
    }

    /// Puts `users` on `list`, unless it would then hold more than `most` ids; returns how
    /// many it holds, or `None` when refused. Two round trips: the sizes, then the
    /// additions, so two uploads at once may pass `most` by the second's ids.
    pub async fn add_to(
        &self,
        list: List,
        users: &[UserId],
        most: u64,
    ) -> Result<Option<u64>, Error> {
        let (lacking, size) = self.list_size(list, users).await?;
        if size + lacking > most {
            return Ok(None);
        }
        let mut batch = Batch::new();
        for (stripe, ids) in self.by_stripe(users) {
            let key = list.key(self.keys(stripe));
            for chunk in ids.chunks(ACCESS_CHUNK) {
                batch.stage_command::<u64>(key, redis::cmd("SADD").arg(key).arg(chunk).clone());
            }
        }
        if !batch.is_empty() {
            self.conn.send(&batch).await?;
        }
        Ok(Some(size + lacking))
    }

    /// Takes `user` off `list`; returns how many ids it holds.
    pub async fn remove_from(&self, list: List, user: &UserId) -> Result<u64, Error> {
        let key = list.key(self.keys(self.stripe_of(user)));
        let _: u64 = self
            .conn
            .query(key, redis::cmd("SREM").arg(key).arg(user.as_str()).clone())
            .await?;
        Ok(self.list_size(list, &[]).await?.1)
    }

    /// Deletes the lists and the access codes from every stripe: the queue is closed.
    pub async fn forget_access(&self) -> Result<(), Error> {
        let mut batch = Batch::new();
        for keys in &self.stripe_keys {
            batch.stage_command::<u64>(
                &keys.access,
                redis::cmd("UNLINK")
                    .arg(&keys.access)
                    .arg(&keys.codes)
                    .arg(&keys.priority)
                    .clone(),
            );
        }
        self.conn.send(&batch).await?;
        Ok(())
    }
}
