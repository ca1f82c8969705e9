//! The priority lane's list: an operator-managed, bounded set of user ids (staff,
//! accessibility needs, presale winners). Someone on it who takes a place waits in the
//! queue's priority lane, admitted before the main line, first come, first served among
//! themselves, within capacity (`promotion.lua`'s `promote`). Ids are added and removed one at a
//! time, so each call is one small script whatever the list's size.

use super::{WaitingRoom, PRIORITY};
use crate::error::Error;
use crate::ids::{QueueId, UserId};

/// The most user ids one queue's priority list holds.
pub const PRIORITY_MAX: u64 = 10_000;

impl WaitingRoom {
    /// Puts `user` on `queue`'s priority list (creating the queue, as a settings change
    /// does); returns how many ids the list holds. A list already holding [`PRIORITY_MAX`]
    /// others is [`Error::Conflict`].
    pub async fn add_priority(&self, queue: &QueueId, user: &UserId) -> Result<u64, Error> {
        self.refuse_on_line("the priority lane")?;
        let (done, size): (u8, u64) = self.change_priority(queue, "add", user).await?;
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
        let (_, size): (u8, u64) = self.change_priority(queue, "remove", user).await?;
        Ok(size)
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
