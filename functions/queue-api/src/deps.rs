//! queue-api's dependencies ([`Deps`]), built once per container from what cold start
//! built and the settings this function reads.

use lineup::admission::Issuer;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, QueueConfig, SecretPolicy};
use lineup::door::DoorKey;
use lineup::metrics::MetricsSink;
use lineup::publish::Publisher;
use lineup::queue::WaitingRoom;
use lineup::token::TokenKey;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    pub token_key: TokenKey,
    /// Signs and checks the door's challenges; derived from the token key.
    pub door_key: DoorKey,
    pub publisher: Publisher,
    /// `ALLOW_BODY_USER_ID=unsafe`: without a JWT, the body's `userId` is the buyer.
    pub allow_body_user_id: bool,
    /// Where the door's counts go.
    pub metrics: MetricsSink,
    /// Signs the admission JWT; `None` without `ADMISSION_ISSUER`.
    pub admission: Option<Issuer>,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Required;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::QueueEvents;

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads, writing metrics to `metrics`: the one place they are wired.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        let env = &started.config.env;
        Ok(Deps {
            room: started.room_with(QueueConfig {
                creation: env.queue_creation()?,
                max_queues: env.max_queues()?,
                rate_limits: env.rate_limits()?,
                ..QueueConfig::new(env.waiting_room()?)
            }),
            token_key: started.config.token_key.clone(),
            door_key: DoorKey::derive(&started.config.token_key),
            publisher: started.publisher.clone(),
            allow_body_user_id: env.body_user_id()?,
            metrics,
            admission: env.admission()?,
        })
    }
}
