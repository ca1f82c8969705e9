//! Sales rankings: boards of seats sold per concert, per period bucket, overall and per
//! genre, fed by payment events exactly once; beside each, a rate board of sell-through for
//! the concerts whose capacity concert events gave (their details, latest `updatedAt` wins);
//! rolling last-24h and last-7d boards that a tick keeps current, and trending boards (see
//! `windows.rs`), each with an hourly snapshot of its top rows to show movement.
//!
//! An apply call records its payments and refunds (dedupe, the payment record) and queues
//! them in the fold queue; the fold (`fold.lua`) writes their boards, within a budget of
//! board entries per call, at the end of the same call and in the tick. So a call's Redis
//! time does not grow with the boards a payment counts on, and a burst of sales of one
//! concert writes each board once per fold call.
//!
//! The top of a board, once read, is kept rendered in the page cache (`cache.lua`,
//! `page.lua`), and so is the answer for a set of concerts (`concerts.lua`): a read that
//! finds its answer is one `HGET`. Every script call that writes boards, details or
//! snapshots deletes the cache, so a read after a write shows it.
//!
//! The writing scripts (apply, the tick's fold and roll, the snapshots) answer a tag and named
//! fields, which each call decodes beside itself into its own enum (`store/reply.rs` reads
//! them); the reads (`page.lua`, `concerts.lua`) answer rendered JSON and flat rows.
//!
//! Every ranking key carries the one hash tag `{rk}`, so a batch of events is one atomic
//! script on one shard. The trade-off: one shard carries all ranking writes. A shard takes
//! tens of thousands of small scripts a second, far above a ticketing site's payment rate;
//! if it ever is not, split the tag per period or per genre and route each event's writes
//! by it.
//!
//! Scores are stored negated (−seats), so that Redis's ascending order, which breaks ties
//! by member name, gives most seats first and equal scores by `concertId` ascending.
//!
//! The module is split by concern: `rankings.rs` holds [`Rankings`] and the writing scripts'
//! preludes; `keys.rs` names every key (boards, rates, the windows'
//! watermarks, the fold queue, details, the page cache); `record.rs` says where a payment's
//! dedupe record lives and what it keeps (`record.lua` writes and reads it); `apply.rs` turns
//! commands into one apply call per batch; `tick.rs` is the tick (the fold, the windows'
//! roll and the snapshots); `snapshot.rs` keeps the live boards' hourly snapshots;
//! `compare.rs` says what a read's movement compares with; `read.rs` reads pages of a board,
//! with movement, and owns the page cache; `concerts.rs` reads many concerts' standing on one board. `events.rs`
//! parses the events, `period.rs` the calendar and `windows.rs` the rolling and trending
//! windows.

mod apply;
mod compare;
mod concerts;
mod events;
mod keys;
mod period;
mod rankings;
mod read;
mod record;
mod snapshot;
mod tick;
pub mod windows;

pub use apply::{
    Outcome, StagedApply, EVENTS_PER_CALL, FOLD_BUDGET_APPLY, FUTURE_SKEW, MAX_PENDING_REFUNDS,
};
pub use compare::Against;
pub use concerts::{Standing, Standings, KEPT_SETS, MAX_CONCERTS};
pub use events::{parse_event, Command, ConcertDetails, Parsed, MAX_CAPACITY, MAX_TEXT_CHARS};
pub use keys::{Board, Order};
pub use period::{default_day, local_day, parse_date, Period};
pub use rankings::Rankings;
#[cfg(feature = "bench")]
pub(crate) use read::page_script;
pub use read::{percentile, Around, Movement, Page, Ranked, CACHED_LIMIT, MAX_AROUND};
pub use snapshot::{Snapshots, SNAPSHOT_BUDGET, SNAPSHOT_CALLS};
#[cfg(feature = "bench")]
pub(crate) use tick::roll_fields;
pub use tick::{Fold, Tick, FOLD_BUDGET_TICK, FOLD_CALLS};

#[cfg(test)]
mod tests {
    /// Each ranking script binds its keys and arguments by the names Rust sends them under.
    #[test]
    fn each_script_binds_its_keys_and_arguments_by_the_names_rust_sends_them_under() {
        use super::{apply::APPLY, concerts::CONCERTS, read::PAGE, tick::FOLD, tick::ROLL};
        use super::{compare::COMPARE_LUA, read::CACHE_LUA, snapshot::SNAPSHOT};
        use crate::store::bindings::assert_binds;
        let boards = include_str!("boards.lua");
        let fold = [
            include_str!("windows.lua"),
            include_str!("record.lua"),
            include_str!("fold.lua"),
        ]
        .concat();
        assert_binds(&[boards, &fold, include_str!("apply.lua")].concat(), &APPLY);
        assert_binds(
            &[boards, &fold, include_str!("fold_tick.lua")].concat(),
            &FOLD,
        );
        assert_binds(&[boards, include_str!("roll.lua")].concat(), &ROLL);
        assert_binds(
            &[COMPARE_LUA, CACHE_LUA, include_str!("page.lua")].concat(),
            &PAGE,
        );
        assert_binds(
            &[COMPARE_LUA, CACHE_LUA, include_str!("concerts.lua")].concat(),
            &CONCERTS,
        );
        assert_binds(&[boards, include_str!("snapshot.lua")].concat(), &SNAPSHOT);
    }
}
