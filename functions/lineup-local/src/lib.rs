//! The local stack: every lineup HTTP route on one address, plus the promoter and reaper on
//! timers. Requests are converted to the same `lambda_http::Request` the Lambda runtime
//! builds and passed to the same handlers; nothing here reimplements their behaviour.
//! `GET /queues/{queueId}/admission` goes through `queue-authorizer` first, as the sample
//! protected route does behind API Gateway.
//!
//! - `stack`: every function's dependencies, wired once, and the local defaults.
//! - `gateway`: HTTP to Lambda events and back, the authorizer event included.
//! - `timers`: the promoter and reaper schedules.
//! - [`embedded_redis`]: a private `redis-server` when `REDIS_URL` is unset, and for the tests.

pub mod embedded_redis;
mod gateway;
mod stack;
mod timers;

pub use gateway::{router, serve};
pub use stack::{local_settings, Stack, LOCAL_DEFAULTS};
pub use timers::spawn_schedules;
