//! The shared core of lineup.
//!
//! A short tour:
//! - [`ids`]: the validated identifiers (`QueueId`, `UserId`, …); `parse` is the only way in.
//! - [`cold_start`]: what every Lambda binary does before serving.
//! - [`config`]: every setting, read from the environment and checked once at start-up.
//! - [`error`]: the one error type every handler returns.
//! - [`http`]: JSON and `application/problem+json` responses, request bodies and caller identity.
//! - [`token`]: signed queue tokens (HMAC-SHA256) carrying queue, user and ticket.
//! - [`store`]: the Redis connection, key layout and script plumbing.
//! - [`queue`]: the waiting room: issue, status, leave, the gatekeeper check, release after
//!   payment, per-queue settings, summary, promotion and reaping, each one Lua script
//!   beside the Rust function that calls it.
//! - [`publish`]: queue state events to EventBridge.
//! - [`aws`]: the AWS SDK configuration and the one HTTPS client its clients share.
//! - [`metrics`]: CloudWatch Embedded Metric Format lines.
//! - [`ranking`]: sales boards fed by payment events exactly once, and their reads.
//! - [`secrets`]: `TOKEN_SECRET` and the Redis password from Secrets Manager at cold start.
//! - [`embedded_redis`]: a private `redis-server` for the local stack and the tests.
//! - [`telemetry`]: tracing set-up shared by every binary.

pub mod aws;
pub mod bounds;
pub mod cold_start;
pub mod config;
pub mod embedded_redis;
pub mod error;
pub mod http;
pub mod ids;
pub mod metrics;
pub mod publish;
pub mod queue;
pub mod ranking;
pub mod secrets;
pub mod store;
pub mod telemetry;
pub mod tls;
pub mod token;

pub use config::Config;
pub use error::Error;
