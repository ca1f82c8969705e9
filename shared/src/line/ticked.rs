//! What a line's tick is given and what it leaves: the room it admits within ([`Room`]), what
//! it did ([`Ticked`], or why it wrote nothing: [`TickRefused`]), and what this container
//! remembers of it for the next tick under the same lease (`Seen`).

use std::collections::BTreeMap;

use super::halt::Halt;
use super::lease::Fence;
use super::{Place, Stripe};

/// The room a tick admits within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Room {
    /// Live sessions the line may hold.
    pub capacity: u64,
    /// The most the tick admits from the line.
    pub most: u64,
    /// Mode `passthrough`: the room the walk leaves is allowed to the stripes, for
    /// admissions on arrival.
    pub passthrough: bool,
    /// The priority lane is admitted before the opening (`laneBeforeOpening`).
    pub lane_before_opening: bool,
}

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ticked {
    /// Why it wrote nothing, if it did not.
    pub refused: Option<TickRefused>,
    /// The buyers admitted, in order.
    pub admitted: Vec<String>,
    /// The buyers passed over as absent.
    pub dropped: Vec<String>,
    /// The score of each place admitted or passed over, by buyer: what names its token.
    pub scores: BTreeMap<String, i64>,
    /// When the sessions this tick began end (ms).
    pub until: i64,
    /// Why it admitted nobody, when the line is halted.
    pub halted: Option<Halt>,
    /// Live sessions after the tick.
    pub live: u64,
    /// Places in sealed segments after the tick.
    pub placed: u64,
    /// The draw's places, when this tick found every stripe sealed past the opening (the
    /// first of this container's ticks to admit from the draw): its members, counted before
    /// its walk.
    pub opened: Option<u64>,
    /// The stripes whose shard did not answer: their places waited, and the others were
    /// walked without them.
    pub dark: Vec<Stripe>,
}

/// What this container's last tick of a line found, under the lease `fence`: each stripe's
/// live sessions after it, to go on without a stripe whose shard does not answer, and each
/// stripe's head, the last place walked on it (`None` where not known: read from the stripe's
/// published state). A tick under another fence starts again from nothing: another holder
/// may have written since.
#[derive(Debug, Default, Clone)]
pub(super) struct Seen {
    pub(super) fence: Option<Fence>,
    pub(super) live: Vec<Option<u64>>,
    /// Each stripe's admissions on arrival left (passthrough) after the tick.
    pub(super) allowed: Vec<Option<u64>>,
    pub(super) heads: Vec<Option<Heads>>,
}

/// The last places walked on one stripe: in the main line (the draw's and the arrivals'), and
/// in the priority lane, which has its own since a new lane place sorts before the main
/// line's walked places.
#[derive(Debug, Default, Clone)]
pub(super) struct Heads {
    pub(super) main: Option<Place>,
    pub(super) lane: Option<Place>,
}

/// Why a tick wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickRefused {
    /// Its reads were `age_ms` old when it came to write: more than [`DECIDED_FOR`].
    Stale { age_ms: i64 },
    /// A newer lease's tick has written a stripe: that fence is higher than this tick's.
    Fenced { by: Fence },
}
