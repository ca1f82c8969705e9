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
//! - `shutdown`: Ctrl-C or SIGTERM ends the stack.

pub mod embedded_redis;
mod gateway;
mod shutdown;
mod stack;
mod timers;

pub use gateway::{router, serve};
pub use shutdown::shutdown_signal;
pub use stack::{local_settings, Stack, LOCAL_DEFAULTS};
pub use timers::spawn_schedules;
