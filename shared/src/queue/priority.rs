//! The priority lane's list: an operator-managed, bounded set of user ids (staff,
//! accessibility needs, presale winners). Someone on it who takes a place waits in the
//! queue's priority lane, admitted before the main line, first come, first served among
//! themselves, within capacity (`promotion.lua`'s `promote`). Ids are added and removed one at a
//! time, so each call is one small script whatever the list's size. On the striped line each
//! id lies on its buyer's stripe ([`crate::line::List::Priority`]), and the settings field
//! `lane` says the list holds anyone, so a join asks its stripe only then.

use super::keys::QueueKeys;
use super::{WaitingRoom, PRIORITY};
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::line::List;

/// The most user ids one queue's priority list holds.
pub const PRIORITY_MAX: u64 = 10_000;

impl WaitingRoom {
    /// Puts `user` on `queue`'s priority list (creating the queue, as a settings change
    /// does); returns how many ids the list holds. A list already holding [`PRIORITY_MAX`]
    /// others is [`Error::Conflict`].
    pub async fn add_priority(&self, queue: &QueueId, user: &UserId) -> Result<u64, Error> {
        let (done, size): (u8, u64) = match self.lines.clone() {
            Some(lines) => {
                let line = self.created_line(&lines, queue).await?;
                let added = line
                    .add_to(List::Priority, std::slice::from_ref(user), PRIORITY_MAX)
                    .await?;
                self.mark_lane(queue, true).await?;
                added.map_or((0, PRIORITY_MAX), |size| (1, size))
            }
            None => self.change_priority(queue, "add", user).await?,
        };
        if done == 0 {
            return Err(Error::Conflict(format!(
                "the priority list holds its most user ids ({size}); remove one first"
            )));
        }
        Ok(size)
    }

    /// Takes `user` off `queue`'s priority list; returns how many ids it still holds. One
    /// already waiting in the lane keeps their place there.
    pub async fn remove_priority(&self, queue: &QueueId, user: &UserId) -> Result<u64, Error> {
        if let Some(lines) = self.lines.clone() {
            let line = self.created_line(&lines, queue).await?;
            let size = line.remove_from(List::Priority, user).await?;
            if size == 0 {
                self.mark_lane(queue, false).await?;
            }
            return Ok(size);
        }
        let (_, size): (u8, u64) = self.change_priority(queue, "remove", user).await?;
        Ok(size)
    }

    /// On the striped line: marks in `queue`'s settings whether its priority list holds
    /// anyone (`lane`), so its joins ask their stripe's list only then. This container reads
    /// the settings afresh; another within a second.
    async fn mark_lane(&self, queue: &QueueId, on: bool) -> Result<(), Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let write = if on {
            redis::cmd("HSET").arg(&key).arg("lane").arg(1).clone()
        } else {
            redis::cmd("HDEL").arg(&key).arg("lane").clone()
        };
        let _: u64 = self.conn.query(&key, write).await?;
        self.forget_terms(queue);
        Ok(())
    }

    async fn change_priority(
        &self,
        queue: &QueueId,
        op: &str,
        user: &UserId,
    ) -> Result<(u8, u64), Error> {
        let mut call = self.invocation(&PRIORITY, queue);
        call.named("op", op)
            .named("user", user.as_str())
            .named("most", PRIORITY_MAX);
        Ok(self.conn.invoke(call).await?)
    }
}
