//! The promoter's tick on the striped line: each queue's line ticked under this container's
//! lease, with the capacity its settings give, reported as the single-tag queue's promotion
//! is.

use std::time::Duration;

use futures::future::try_join_all;

use super::striped::instant;
use super::{PromotionReport, QueueEvent, QueueEventKind, QueuePromotion, WaitingRoom};
use crate::error::Error;
use crate::ids::QueueId;
use crate::line::{self, Lease, Lines};

/// How long a promoter's lease on a line lasts unless renewed: three ticks.
pub const LEASE_FOR: Duration = Duration::from_secs(3);

/// How many queues' lines a promoter ticks at once.
const TICKING_AT_ONCE: usize = 32;

impl WaitingRoom {
    /// One tick of each queue's line, under this container's lease: a queue whose lease
    /// another promoter holds is left to it. [`TICKING_AT_ONCE`] queues tick at once.
    pub(super) async fn tick_lines(
        &self,
        lines: &Lines,
        queues: &[QueueId],
    ) -> Result<PromotionReport, Error> {
        let mut report = PromotionReport::default();
        for some in queues.chunks(TICKING_AT_ONCE) {
            let ticked =
                try_join_all(some.iter().map(|queue| self.tick_line(lines, queue))).await?;
            report.queues.extend(ticked.into_iter().flatten());
        }
        Ok(report)
    }

    /// One tick of `queue`'s line, if this container holds or takes its lease: the queue's
    /// settings (one `HMGET`, fresh), the lease (one small script) and the tick.
    async fn tick_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
    ) -> Result<Option<QueuePromotion>, Error> {
        self.forget_terms(queue);
        let now = self.clock.now_ms();
        let (terms, line) = self.line_of(lines, queue, now).await?;
        let Lease::Granted(fence) = line.lease(lines.holder(), LEASE_FOR).await? else {
            return Ok(None);
        };
        let capacity = terms.capacity.unwrap_or(self.config.capacity);
        let ticked = line.tick(fence, &*self.clock, u64::from(capacity)).await?;
        if let Some(refused) = ticked.refused {
            tracing::warn!(%queue, ?refused, "a line's tick wrote nothing");
        }
        let until = instant(ticked.until)?;
        let ticket = |user: &String| line::ticket_of(ticked.scores.get(user).copied().unwrap_or(0));
        let mut events: Vec<QueueEvent> = ticked
            .admitted
            .iter()
            .map(|user| QueueEvent::activated(queue, user.as_str(), ticket(user), until))
            .collect();
        events.extend(ticked.dropped.iter().map(|user| {
            QueueEvent::new(
                QueueEventKind::Abandoned,
                queue,
                user.as_str(),
                ticket(user),
            )
        }));
        Ok(Some(QueuePromotion {
            queue_id: queue.clone(),
            admitted: ticked.admitted.len() as u64,
            abandoned: ticked.dropped.len() as u64,
            expired: 0,
            waiting: ticked.placed,
            active: ticked.live,
            admission_rate_per_minute: None,
            pace: None,
            waits_ms: Vec::new(),
            events,
        }))
    }
}
