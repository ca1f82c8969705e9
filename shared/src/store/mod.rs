//! Redis access: the connection every function creates once per container ([`Conn`], in
//! `conn.rs`: its health and renewal), and the script and pipeline plumbing every owner of
//! keys sends its work through ([`ScriptCall`], [`Batch`], in `script.rs`; each script's text
//! is put together from its Lua files by [`assemble`], in `assemble.rs`; a script's reply, a
//! tag and named fields, is read by [`Tagged`], in `reply.rs`).
//!
//! Every key starts with `KEY_PREFIX`. Each owner names its own keys under one hash tag per
//! script call (the waiting room in [`crate::queue::keys`], the rankings in
//! [`crate::ranking`]), so each call runs on one shard of Redis Cluster or ElastiCache
//! Serverless.
//!
//! Standalone (`REDIS_MODE=standalone`, the default): one multiplexed connection that
//! reconnects by itself after Redis closes or resets it, and is replaced when the server it
//! reached has stopped being the primary (`READONLY` after a failover), so a warm container
//! never sticks to a demoted node. That replacement happens at most once a response timeout:
//! while DNS still leads to the demoted node, so does each new connection.
//!
//! Cluster (`REDIS_MODE=cluster`, or `auto` against a cluster): redis-rs's cluster client,
//! which follows MOVED and ASK, refreshes the topology, and reconnects. Every operation goes
//! through the same [`Batch`] either way; in cluster mode a batch is sent as one pipeline
//! per hash slot, all at once, so it still costs one round trip of wall time.
//!
//! Either way, a reply that times out can replace the connection too. Neither client does
//! that by itself: a connection whose peer vanished without a reset (a partition, a replaced
//! node, a failover to a new address) would otherwise time out every request until the
//! kernel gave up on it, about 15 minutes later. Standalone, a timeout starts a probe: a
//! PING on the same connection, allowed `PROBE_PATIENCE` response timeouts. No answer, and
//! the next request opens a new connection. An answer means Redis is slow, not gone, and the
//! connection stays, so that a Redis already behind is not also sent a reconnection from
//! every container on every timeout. Cluster, the probe PINGs the primaries the request went
//! to, and if one does not answer, a new connection is opened beside the old one and takes
//! over only once every primary in its slot map answers: the old one knows every node, a new
//! one only the configured endpoint, so if that is what went away, the old one stays and
//! finds the new topology itself.

//!
//! Load is shed, not queued without bound. A connection carries at most
//! `REDIS_MAX_IN_FLIGHT` requests at once (64 by default); one more fails at once, before it
//! reaches Redis, as an outage: 503 with `Retry-After: 1`. A request holds its place until
//! its reply comes, even after it stopped waiting for it, because Redis still has that work
//! queued; so a slow Redis never has more than the cap waiting on one connection. Every
//! reply waits at most `REDIS_RESPONSE_TIMEOUT_MS`, and all the calls of one request
//! together at most four of them ([`request`], in `budget.rs`); past that it answers 503. A
//! Lambda container serves one request at a time, so there the cap rarely binds: the
//! functions' concurrency bounds what waits on Redis, and each request's budget how long.

mod assemble;
mod budget;
mod conn;
mod reply;
mod script;

pub use assemble::assemble;
pub use reply::Tagged;

/// A fixed-window rate limit per user and per source IP, in two hashes used in turn, that any
/// script may begin with (`over_rate_limit`); assembled out of a script that never calls it.
pub const RATE_LIMIT_LUA: &str = include_str!("rate_limit.lua");
/// `write_fields`: sets a hash's changed fields and deletes those changed to `''`; a helper any
/// script may begin with, assembled out of a script that never calls it.
pub const FIELDS_LUA: &str = include_str!("fields.lua");
pub use budget::{request, REQUEST_BUDGET};
pub use conn::{connect, Conn};
#[cfg(test)]
pub(crate) use reply::test_reply;
#[cfg(test)]
pub(crate) use script::bindings;
#[cfg(feature = "bench")]
pub(crate) use script::script_source;
pub use script::{
    lua_script, primary_guard, primary_read_script, Batch, NamedScript, ScriptCall, Staged,
};
