//! What this container remembers of a line's last tick for the next tick under the same
//! lease (`Seen`), and the last places walked on a stripe (`Heads`).

use super::fence::Fence;
use super::shape::Place;

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
