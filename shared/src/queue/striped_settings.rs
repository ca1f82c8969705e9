//! What a settings change does on the striped line: what it may change (the draw, which
//! decides each buyer's stripe, is set once, with the queue), and the halt it leaves on every
//! stripe.

use super::settings::QueueSettings;
use super::{SettingsChange, WaitingRoom};
use crate::error::Error;
use crate::ids::QueueId;
use crate::line::{Halt, Lines};

impl WaitingRoom {
    /// Whether `change` may be made to `queue` on the line. A draw decides each buyer's
    /// stripe, so an opening is set in the settings that create the queue; then it may move
    /// while it is pending (keeping its seed), and is neither removed nor set again. Reads the
    /// queue's settings only when the change names `opensAt`.
    pub(super) async fn check_line_change(
        &self,
        queue: &QueueId,
        change: &SettingsChange,
    ) -> Result<(), Error> {
        let Some(opens_at) = &change.opens_at else {
            return Ok(());
        };
        let terms = self.read_terms(queue).await?;
        let pending = terms
            .draw
            .as_ref()
            .is_some_and(|draw| self.clock.now_ms() < draw.opens_at);
        let locked = |why: &str| Err(Error::Conflict(format!("opensAt: {why}")));
        match (opens_at, &terms.draw) {
            (Some(_), None) if !terms.created => Ok(()),
            (Some(_), Some(_)) if pending => Ok(()),
            (None, None) => Ok(()),
            (Some(_), None) => locked(
                "on the striped line the opening is set in the settings that create the queue, \
                 since the draw decides each buyer's stripe",
            ),
            (Some(_), Some(_)) => {
                locked("the opening has passed; on the striped line it is set once")
            }
            (None, Some(_)) => locked(
                "on the striped line the opening is not removed (the draw decides each buyer's \
                 stripe): postpone it instead",
            ),
        }
    }

    /// `queue`'s line, in a queue an operator created (404 otherwise): the draw, which decides
    /// each buyer's stripe, is set with the queue.
    pub(super) async fn created_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
    ) -> Result<std::sync::Arc<crate::line::Line>, Error> {
        self.forget_terms(queue);
        let (terms, line) = self.line_of(lines, queue, self.clock.now_ms()).await?;
        if !terms.created {
            return Err(Error::NotFound(
                "no such queue: on the striped line an operator creates it with PUT \
                 /queues/{queueId}/settings first"
                    .into(),
            ));
        }
        Ok(line)
    }

    /// After a settings change on the line: a sold-out or paused queue's stripes all halt
    /// before the change's call returns; otherwise they admit again. This container reads
    /// the queue's settings afresh from now on.
    pub(super) async fn settle_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
        settings: &QueueSettings,
    ) -> Result<(), Error> {
        self.forget_terms(queue);
        let line = lines.any(queue);
        if settings.availability.sold_out {
            line.halt(Halt::SoldOut).await
        } else if settings.paused {
            line.halt(Halt::Paused).await
        } else {
            line.resume().await
        }
    }
}
