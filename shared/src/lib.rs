//! The shared core of lineup.
//!
//! A tour in layer order, bottom to top. A module uses only modules in the layers below its
//! own, and modules of its own layer where no circle results (`config` uses `token`;
//! `secrets` uses `aws`). The function crates sit on top. `tests/layers.rs` reads this list
//! and every module's `crate::` and `super::` paths, and fails if a module is missing here,
//! uses a module above it, or closes a circle in its layer.
//!
//! 1. What everything else builds on:
//!    - [`error`]: the one error type every handler returns, which Redis failures are an
//!      outage, and the `Refusal` each domain gives its own refusals (a departed token, a
//!      queue that takes no arrivals, a campaign given out) for the edge to map.
//!    - [`ids`]: the validated identifiers (`QueueId`, `UserId`, …); `parse` is the only way in.
//!    - [`bounds`]: the one range-checked number parser, and the queue settings' bounds.
//!    - [`clock`]: where time comes from, so that tests move it.
//!    - [`tls`]: the Amazon Trust Services roots and the reader of a PEM bundle replacing them.
//!    - [`metrics`]: CloudWatch Embedded Metric Format lines.
//!    - [`telemetry`]: tracing set-up shared by every binary.
//! 2. Settings and tokens:
//!    - [`token`]: signed queue tokens (HMAC-SHA256) carrying queue, user and ticket.
//!    - [`config`]: every setting, read from the environment and checked once at start-up:
//!      cold start's own, and the slices each function reads for itself.
//!    - [`admission`]: the admission JWT an active buyer shows the booking API: its signing
//!      keys (a private JWK set, each key with its span), claims, signature, JWKS and OpenID
//!      discovery document.
//!    - [`door`]: the door's proof of work (ALTCHA PoW v2): challenges signed with a key
//!      derived from the token key, solutions checked in the function, and the refusal.
//! 3. Redis access:
//!    - [`store`]: the Redis connection, its health and renewal, and the script and pipeline
//!      plumbing.
//! 4. AWS:
//!    - [`aws`]: the AWS SDK configuration and the one HTTPS client its clients share.
//!    - [`secrets`]: `TOKEN_SECRET` and the Redis password from Secrets Manager at cold start.
//! 5. The domain, each operation one Lua script beside the Rust function that calls it:
//!    - [`pages`]: the buyer's pages (waiting room, rankings): HTML, script, styles and
//!      string tables built in, the theme as CSS and the Content-Security-Policy, and the
//!      page's settings (theme, return-URL allow-list), which a queue stores with its own.
//!    - [`queue`]: the waiting room: its key layout, issue, status, leave, the gatekeeper
//!      check, release after payment, per-queue settings and availability (modes, sold out,
//!      maxWaiting, the operator's message), summary, promotion and reaping.
//!    - [`line`]: the striped line a sale of any size waits in: places spread over many hash
//!      tags by buyer, a poll of plain commands, and a tick that admits across the stripes in
//!      order and publishes each buyer's exact place.
//!    - [`coupon`]: first-come coupon campaigns: exactly `quantity` numbered claims, one per
//!      buyer, each written with its outbox entry for the publisher.
//!    - [`ranking`]: sales and sell-through boards fed by payment and concert events
//!      exactly once (recorded at once, folded onto the boards within a budget per call;
//!      calendar, rolling windows kept by a tick, trending by half-life generations), and
//!      their reads.
//! 6. The edges:
//!    - [`publish`]: queue state events to EventBridge.
//!    - [`http`]: JSON and `application/problem+json` responses, request bodies and caller
//!      identity.
//!    - [`bench_support`]: the benchmark's one door to the handlers' raw script calls, behind
//!      the `bench` feature, which only lineup-bench turns on.
//! 7. Start-up:
//!    - [`cold_start`]: what every Lambda binary does before serving, and the domains built
//!      with the settings the function reads.

pub mod admission;
pub mod aws;
#[cfg(feature = "bench")]
pub mod bench_support;
pub mod bounds;
pub mod clock;
pub mod cold_start;
pub mod config;
pub mod coupon;
pub mod door;
pub mod error;
pub mod http;
pub mod ids;
pub mod line;
pub mod metrics;
pub mod pages;
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
