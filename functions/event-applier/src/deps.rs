//! event-applier's dependencies ([`Deps`]), built once per container from what cold start
//! built and the settings this function reads.

use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, RankingSettings, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup::publish::Outlet;
use lineup::queue::WaitingRoom;
use lineup::ranking::Rankings;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub rankings: Rankings,
    pub room: WaitingRoom,
    pub outlet: Outlet,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Unused;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::QueueEvents;

impl Deps {
    /// The handler's dependencies from what cold start built, writing metrics to `metrics`:
    /// the one place they are wired.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        Ok(Deps {
            rankings: started.rankings(RankingSettings {
                snapshot_top: started.config.env.snapshot_top()?,
                ..started.config.env.ranking()?
            }),
            room: started.room()?,
            outlet: started.outlet(metrics),
        })
    }
}
