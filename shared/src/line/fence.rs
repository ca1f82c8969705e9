//! The fence a tick's writes carry (`lease.rs` grants it): each stripe keeps the highest it
//! has seen and refuses a lower one.

/// The fence a tick's writes carry: a lease's number, higher for each new holder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Fence(pub u64);
