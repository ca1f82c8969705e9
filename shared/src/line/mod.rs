//! The striped line: one queue's waiters spread over many hash tags, so that a sale of any size
//! uses every shard of a cluster and no slot runs hot, and a poll costs a few plain commands.
//!
//! - [`keys`]: a stripe's tag and keys, and which stripe a buyer is on.
//! - `access`: the operator's lists (presale access, priority), each id on its own stripe.
//! - `codes`: the presale access codes, each on a stripe of its own, bound to a buyer once.
//! - `door`: a challenge's serial and the redemption of a solved one, on the buyer's stripe.
//! - `draw`: how a line with an opening lays its draw's values over the stripes.
//! - `allowance`: passthrough's admissions on arrival, how the tick shares them among the
//!   stripes.
//! - `buyer`: what a buyer's calls do, each on its own stripe in one round trip: [`Line::join`]
//!   (a small script: the place depends on what is there), [`Line::poll`] and
//!   [`Line::leave`] (plain commands, pipelined).
//! - `check`: [`Line::check`], the gatekeeper's: a live session, one `ZSCORE`.
//! - `counts`: [`Line::counts`], how many wait and hold a session as of the last tick.
//! - `halt`: [`Line::halt`] and [`Line::resume`]: sold out, paused or unhealthy, on every
//!   stripe before the call returns.
//! - `lease`: [`Line::lease`], one promoter at a time, and the fence its tick's writes carry.
//! - `lines`: [`Lines`], one container's line of each queue it serves.
//! - `release`: [`Line::stage_release`], a paid session's end, staged into the caller's
//!   round trip.
//! - `speed`: how fast the line moves, measured by the promoter's ticks, and a waiter's
//!   [`Estimate`] from it.
//! - `apply`: the tick's work on one stripe (`apply.lua`), in calls of a bounded size.
//! - `ticked`: what a tick is given ([`Room`]) and what it did ([`Ticked`]).
//! - `tick`: [`Line::tick`], the only writer of admissions from the line (and of each stripe's
//!   allowance of admissions on arrival, in passthrough): it reads every stripe's head and
//!   counts, admits in order up to the free capacity, passes over the absent, and publishes on
//!   each stripe what its polls need to know their exact place.
//!
//! The order. A place's score is its arrival instant, in ms, by the clock the caller passes
//! (one `now` per call: tests move it). Time is cut into segments of `segment` length. Places
//! order by segment, then by stripe, then by score, then by user id. So two buyers on different
//! stripes swap places only when they arrive in the same segment: by less than `segment`, and
//! the clocks' disagreement, which `seal` bounds.
//!
//! The seal. The tick admits only from segments that ended `seal` ago or more, and publishes
//! that instant; a join scores a place no earlier than it. So no late place lands ahead of one
//! already admitted.
//!
//! A position. The tick publishes on each stripe one small value ([`Published`]): per sealed
//! segment, how many waiters of the other stripes are ahead of that segment's places, and the
//! last place it has walked. A function keeps it for up to [`PUBLISHED_FOR`]. A poll is two
//! plain commands in one pipeline: the buyer's rank on its own stripe (`ZRANK`, live) and its
//! mark kept alive (`PEXPIRE … GT`, which never shortens it); a third, `GET` of the published
//! value, when the function holds none fresh. The position is the published figure plus the
//! rank plus one: exact as of the tick the function last read, for the other stripes, and live
//! for its own. A place in a segment not sealed at that tick has no position yet.
//!
//! The draw. A line with an [`Opening`] orders the places taken before it by each buyer's draw
//! value, exactly, whatever stripe the buyer is on (`draw`): the values are cut into ranges,
//! consecutive ranges on stripes far apart, each range a segment of its own ahead of every
//! arrival's, in value order. So the draw's front moves over every stripe and primary in turn.
//! A draw place's score is below zero: the value, then the order of arrival on the stripe, for
//! equal values. The draw is admitted from only once every stripe has been sealed past the
//! opening, so no place joins it after the tick has started on it.
//!
//! The mark. Each buyer has one key with a TTL: `w` while it waits, set by the join and kept
//! alive by each poll for as long as the poll keeps it present; `a:<until>` once the tick
//! admits it; `d` once the tick passes it over as absent. When the line reaches a buyer whose
//! mark has lapsed, the tick passes it over. A buyer whose place the last read tick had walked
//! is answered from its session and its mark.

pub mod keys;

mod access;
mod allowance;
mod apply;
mod buyer;
mod check;
mod codes;
mod counts;
mod door;
mod draw;
mod fence;
mod halt;
mod handle;
mod lease;
mod lines;
mod release;
mod seen;
mod shape;
mod speed;
mod tick;
mod ticked;

pub use access::{List, ACCESS_CHUNK};
pub use allowance::ALLOW_FOR;
pub use buyer::{
    in_draw, score_of, ticket_of, Entry, Joined, Left, Standing, Welcome, STALE_AFTER,
};
pub use check::Checked;
pub use codes::{Bound, Unbound};
pub use counts::{counts_key, Counts};
pub use door::{Pass, Serial, Turned};
pub use draw::DRAW_VALUE_BITS;
pub use fence::Fence;
pub use halt::Halt;
pub use handle::Line;
pub use keys::{Stripe, StripeKeys};
pub use lease::Lease;
pub use lines::{Lines, NamedOpening};
pub use release::{Payment, Released};
pub(crate) use shape::is_lane;
pub use shape::{LineShape, Opening, Place, Published, PUBLISHED_FOR, TICK_EVERY};
pub use speed::{Estimate, Speed, BEST_WINDOW_MS, SPEED_WINDOW_MS};
pub use tick::{DECIDED_FOR, HEAD_WINDOW};
pub use ticked::{Room, TickRefused, Ticked};
