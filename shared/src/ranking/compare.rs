//! What a board read compares with to show movement ([`Against`]): a calendar board's bucket
//! before, or a live board's last snapshot (`snapshot.rs`). `compare.lua`, the prelude of the
//! page and many-concerts scripts, reads each row's rank there.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};

use super::keys::{Board, Order};
use super::rankings::Rankings;
use crate::store::ScriptCall;

/// The Lua both board reads begin with.
pub(super) const COMPARE_LUA: &str = include_str!("compare.lua");

/// What a read's rows are compared with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Against {
    /// The same calendar board one bucket before, as it stands now.
    Bucket(Board),
    /// The last snapshot of the live board read (its period and genre).
    Snapshot(Board),
}

impl Rankings {
    /// What a read of `board` compares with at `now`: for a calendar board holding `day`,
    /// the bucket before while it is kept ([`Rankings::previous_board`]); for a live board,
    /// its last snapshot; nothing for the all-time board.
    pub fn against(
        &self,
        board: &Board,
        day: Option<NaiveDate>,
        now: DateTime<Utc>,
    ) -> Option<Against> {
        if board.period.is_live() {
            return Some(Against::Snapshot(board.clone()));
        }
        self.previous_board(board.period, day?, board.genre.clone(), now)
            .map(Against::Bucket)
    }

    /// The key a read ranked by `order` compares with, if any.
    pub(super) fn previous_key(&self, against: Option<&Against>, order: Order) -> Option<String> {
        Some(match against? {
            Against::Bucket(board) => self.ranked_key(board, order),
            Against::Snapshot(board) => {
                self.snapshot_key(board.period, order, board.genre.as_ref())
            }
        })
    }

    /// Adds the arguments `against` and `half` (`compare.lua`) to a read's call.
    pub(super) fn compare_args(&self, call: &mut ScriptCall, against: Option<&Against>) {
        let (kind, half) = match against {
            None => ("none", String::new()),
            Some(Against::Bucket(_)) => ("bucket", String::new()),
            Some(Against::Snapshot(board)) => (
                "snapshot",
                if board.period == super::period::Period::Trending {
                    self.trend().half_life_ms.to_string()
                } else {
                    String::new()
                },
            ),
        };
        call.named("against", kind).named("half", half);
    }
}

/// A snapshot's time, as the scripts give it (ms), in RFC 3339.
pub(super) fn snapshot_time(ms: Option<i64>) -> Result<Option<String>, String> {
    ms.map(|ms| {
        DateTime::<Utc>::from_timestamp_millis(ms)
            .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
            .ok_or_else(|| format!("a snapshot time of {ms} ms"))
    })
    .transpose()
}
