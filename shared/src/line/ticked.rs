//! What a line's tick is given and what it leaves: the room it admits within ([`Room`]), what
//! it did ([`Ticked`], or why it wrote nothing: [`TickRefused`]).

use std::collections::BTreeMap;

use super::fence::Fence;
use super::halt::Halt;
use super::keys::Stripe;

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

/// Why a tick wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickRefused {
    /// Its reads were `age_ms` old when it came to write: more than [`DECIDED_FOR`].
    Stale { age_ms: i64 },
    /// A newer lease's tick has written a stripe: that fence is higher than this tick's.
    Fenced { by: Fence },
}
