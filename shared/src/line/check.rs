//! The gatekeeper's check on the striped line: whether a buyer holds a live session, and if
//! not, why, in one plain command on the buyer's stripe.

use super::buyer::Mark;
use super::buyer::Standing;
use super::handle::Line;
use crate::error::Error;
use crate::ids::UserId;

/// What the gatekeeper's check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked {
    /// A live session until `until` (ms).
    Active { until: i64 },
    /// In line, not admitted yet.
    Waiting,
    /// Passed over as absent.
    Dropped,
    /// It left the line or gave up its session.
    Left,
    /// Its session ended.
    Ended,
    /// Its session ended with its payment.
    Paid,
    /// Nothing here names the buyer.
    Unknown,
}

impl Line {
    /// `user`'s session at `now`, or why it has none: one `GET` of its mark on its stripe,
    /// which the tick writes with the session's end when it admits, and a leave overwrites.
    /// Read-only: a check is not a heartbeat.
    pub async fn check(&self, user: &UserId, now: i64) -> Result<Checked, Error> {
        let mark = self.keys(self.stripe_of(user)).mark(user.as_str());
        let marked: Option<Mark> = self
            .conn
            .query(&mark, redis::cmd("GET").arg(&mark).clone())
            .await?;
        Ok(match marked {
            Some(Mark::Waiting) => Checked::Waiting,
            mark => match Mark::gone(mark, now) {
                Standing::Active { until } => Checked::Active { until },
                Standing::Dropped => Checked::Dropped,
                Standing::Left => Checked::Left,
                Standing::Ended => Checked::Ended,
                Standing::Paid => Checked::Paid,
                _ => Checked::Unknown,
            },
        })
    }
}
