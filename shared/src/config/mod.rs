//! Settings, read from the environment once at start-up. A bad value stops the process with
//! a message that names the variable, instead of surfacing later as a wrong answer.
//!
//! Cold start reads what every function needs ([`Config`]: Redis and the key prefix), and the
//! token key where the function signs or checks tokens. Each function's `Deps::new` reads the
//! slices it uses from the [`Environment`], so a function never parses, or fails on, another's
//! settings. README's configuration table says which functions read each variable, and a test
//! holds it to what each function reads.
//!
//! One file a slice: `queue.rs` (the waiting room's settings, who creates a queue, how many
//! may be live, the promoter's budget), `rate_limits.rs` (arrivals per buyer and per source),
//! `ranking.rs` (the rankings), `connection.rs` (Redis), `jwt.rs` (the buyer's identity),
//! `admission.rs` (the admission JWT), `local.rs` (what only the local stack reads). `vars.rs`
//! reads and checks one variable; `error.rs` says which variable could not be used.

mod admission;
mod connection;
mod error;
mod jwt;
mod local;
mod queue;
mod ranking;
mod rate_limits;
mod vars;

use std::sync::Arc;

pub use connection::{RedisMode, RedisSettings, MAX_IN_FLIGHT_DEFAULT};
use error::bad;
pub use error::ConfigError;
pub use jwt::JwtSettings;
pub use local::LocalSettings;
pub use queue::{PromoterSettings, QueueConfig, QueueCreation, RoomSettings};
pub use ranking::RankingSettings;
pub use rate_limits::RateLimits;

use crate::token::TokenKey;
use vars::Vars;

/// Whether cold start reads `TOKEN_SECRET`, and whether a missing one is fatal. The functions
/// that sign or check tokens (queue-api, queue-authorizer, coupon-api) must share one secret,
/// so they refuse to start without it; the local stack (which checks only its own tokens)
/// makes one up for its lifetime; the other functions never read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretPolicy {
    Required,
    GenerateIfMissing,
    /// The function signs and checks no token: `TOKEN_SECRET` is not read, and the token
    /// key is made up for the process's lifetime.
    Unused,
}

/// The variables a function started with, its secrets filled in. Cheap to clone.
#[derive(Clone)]
pub struct Environment(Arc<Lookup>);

/// How a variable's value is found.
type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Environment {
    pub fn new(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        Environment(Arc::new(lookup))
    }

    fn vars(&self) -> Vars<'_> {
        Vars(&*self.0)
    }

    /// What every call of the waiting room's scripts carries: queue-api, queue-authorizer,
    /// queue-promoter, queue-reaper and event-applier (which marks queues sold out).
    pub fn waiting_room(&self) -> Result<RoomSettings, ConfigError> {
        RoomSettings::read(&self.vars())
    }

    /// Who may create a queue: queue-api and queue-reaper.
    pub fn queue_creation(&self) -> Result<QueueCreation, ConfigError> {
        QueueCreation::read(&self.vars())
    }

    /// Most queues live at once: queue-api.
    pub fn max_queues(&self) -> Result<u32, ConfigError> {
        queue::max_queues(&self.vars())
    }

    /// How long one invocation keeps ticking: queue-promoter.
    pub fn promoter(&self) -> Result<PromoterSettings, ConfigError> {
        PromoterSettings::read(&self.vars())
    }

    /// What both ranking functions read, the snapshots' rows and the morning fallback at
    /// their defaults: ranking-api and event-applier.
    pub fn ranking(&self) -> Result<RankingSettings, ConfigError> {
        RankingSettings::read(&self.vars())
    }

    /// The rows an hourly snapshot of a live board keeps: event-applier.
    pub fn snapshot_top(&self) -> Result<u32, ConfigError> {
        RankingSettings::snapshot_top(&self.vars())
    }

    /// The local time before which a read without a date falls back: ranking-api.
    pub fn early_cutoff(&self) -> Result<Option<chrono::NaiveTime>, ConfigError> {
        RankingSettings::early_cutoff(&self.vars())
    }

    /// The limits on arrivals per buyer and per source: queue-api and coupon-api.
    pub fn rate_limits(&self) -> Result<RateLimits, ConfigError> {
        RateLimits::read(&self.vars())
    }

    /// Where queue state events and coupon claims go (`EVENT_BUS_NAME`); `None` turns
    /// publishing off. Read at cold start by the functions that publish.
    pub fn event_bus(&self) -> Option<String> {
        self.vars().string("EVENT_BUS_NAME")
    }

    /// The buyers' JWT issuer, for queue-authorizer; `None` (the local stack): the gatekeeper
    /// checks the queue token only.
    pub fn jwt(&self) -> Result<Option<JwtSettings>, ConfigError> {
        JwtSettings::read(&self.vars())
    }

    /// `ALLOW_BODY_USER_ID=unsafe`: a buyer without a verified JWT is whoever the body's
    /// `userId` names. Only for the local stack and tests: anyone can then be anyone. Read by
    /// queue-api and coupon-api.
    pub fn body_user_id(&self) -> Result<bool, ConfigError> {
        self.vars()
            .one_of("ALLOW_BODY_USER_ID", &[("no", false), ("unsafe", true)])
    }

    /// The path parameter queue-authorizer reads the queue id from, when the `x-queue-id`
    /// header is absent.
    pub fn authorizer_queue_path_parameter(&self) -> String {
        self.vars()
            .string("AUTHORIZER_QUEUE_PATH_PARAMETER")
            .unwrap_or_else(|| "queueId".into())
    }

    /// The admission JWT's issuer and keys, for queue-api; `None` without
    /// `ADMISSION_ISSUER`: no admission is issued.
    pub fn admission(&self) -> Result<Option<crate::admission::Issuer>, ConfigError> {
        admission::read(&self.vars())
    }

    /// What only the local stack reads.
    pub fn local(&self) -> Result<LocalSettings, ConfigError> {
        LocalSettings::read(&self.vars())
    }
}

/// What every lineup function needs to know at cold start.
#[derive(Clone)]
pub struct Config {
    pub redis: RedisSettings,
    /// Every key lineup writes starts with this.
    pub key_prefix: String,
    /// `TOKEN_SECRET`'s key, or one made up for the process ([`SecretPolicy`]).
    pub token_key: TokenKey,
    /// Where each function reads its own slices.
    pub env: Environment,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("redis", &self.redis.url.as_deref().map(|_| "<set>"))
            .field("key_prefix", &self.key_prefix)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env(secrets: SecretPolicy) -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok(), secrets)
    }

    /// Reads variables from `lookup`.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
        secrets: SecretPolicy,
    ) -> Result<Self, ConfigError> {
        let env = Environment::new(lookup);
        let vars = env.vars();
        // Read in this order: of several bad variables, the first here is the one named.
        let key_prefix = key_prefix(&vars)?;
        let redis = RedisSettings::read(&vars)?;
        let token_key = token_key(&vars, secrets)?;
        Ok(Config {
            key_prefix,
            redis,
            token_key,
            env,
        })
    }

    /// The Redis URL, or an error naming `REDIS_URL` when it is missing.
    pub fn require_redis_url(&self) -> Result<&str, ConfigError> {
        self.redis
            .url
            .as_deref()
            .ok_or_else(|| bad("REDIS_URL", "is required"))
    }
}

/// `KEY_PREFIX`: letters, digits and `. _ : -`, never a brace, which would break the hash tags.
fn key_prefix(vars: &Vars) -> Result<String, ConfigError> {
    let key_prefix = vars.string("KEY_PREFIX").unwrap_or_else(|| "lineup".into());
    if key_prefix.len() > 64
        || !key_prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
    {
        return Err(bad(
            "KEY_PREFIX",
            "must be up to 64 characters of letters, digits and . _ : - (no braces)",
        ));
    }
    Ok(key_prefix)
}

/// `TOKEN_SECRET`, or a key made up for this process where `secrets` allows it; not read
/// under [`SecretPolicy::Unused`].
fn token_key(vars: &Vars, secrets: SecretPolicy) -> Result<TokenKey, ConfigError> {
    if secrets == SecretPolicy::Unused {
        return Ok(TokenKey::random());
    }
    match vars.string("TOKEN_SECRET") {
        Some(secret) => {
            TokenKey::new(secret.as_bytes()).map_err(|reason| bad("TOKEN_SECRET", reason))
        }
        None if secrets == SecretPolicy::GenerateIfMissing => Ok(TokenKey::random()),
        None => Err(bad(
            "TOKEN_SECRET",
            "is required: tokens are signed with it (at least 32 bytes)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// What the functions read between them: cold start's settings and every slice.
    #[derive(Debug)]
    struct Read {
        config: Config,
        room: RoomSettings,
        creation: QueueCreation,
        max_queues: u32,
        promoter: PromoterSettings,
        rate_limits: RateLimits,
        ranking: RankingSettings,
        early_cutoff: Option<chrono::NaiveTime>,
        snapshot_top: u32,
        jwt: Option<JwtSettings>,
        allow_body_user_id: bool,
    }

    impl std::ops::Deref for Read {
        type Target = Config;
        fn deref(&self) -> &Config {
            &self.config
        }
    }

    fn config(vars: &[(&str, &str)]) -> Result<Read, ConfigError> {
        let owned: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let config = Config::from_lookup(
            move |name| {
                owned
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            },
            SecretPolicy::Required,
        )?;
        let env = &config.env;
        Ok(Read {
            room: env.waiting_room()?,
            creation: env.queue_creation()?,
            max_queues: env.max_queues()?,
            promoter: env.promoter()?,
            rate_limits: env.rate_limits()?,
            ranking: env.ranking()?,
            early_cutoff: env.early_cutoff()?,
            snapshot_top: env.snapshot_top()?,
            jwt: env.jwt()?,
            allow_body_user_id: env.body_user_id()?,
            config,
        })
    }

    const SECRET: (&str, &str) = ("TOKEN_SECRET", "0123456789abcdef0123456789abcdef");

    #[test]
    fn defaults_match_the_documentation() {
        let c = config(&[SECRET]).unwrap();
        assert_eq!(c.key_prefix, "lineup");
        assert_eq!(c.room.capacity, 100);
        assert_eq!(c.room.admit_per_tick, 100);
        assert_eq!(c.room.session, Duration::from_secs(600));
        assert_eq!(c.room.waiting_idle, Duration::from_secs(120));
        assert_eq!(c.room.promote_tick, Duration::from_secs(10));
        assert_eq!(c.room.retire_after, Duration::from_secs(86_400));
        assert_eq!(c.room.line_stripes, None);
        assert_eq!(c.promoter.budget, Duration::from_secs(50));
        assert_eq!(c.creation, QueueCreation::Operator);
        assert_eq!(c.max_queues, 1_000);
        assert_eq!(c.rate_limits, RateLimits::DEFAULT);
        assert_eq!(c.snapshot_top, 100);
        assert_eq!(c.ranking.snapshot_top, c.snapshot_top);
        assert_eq!(c.early_cutoff, None);
        assert_eq!(c.ranking.early_cutoff, c.early_cutoff);
    }

    #[test]
    fn a_slice_a_function_does_not_read_holds_the_default_it_would_read() {
        let c = config(&[SECRET]).unwrap();
        let held = QueueConfig::new(c.room.clone());
        assert_eq!(held.creation, c.creation);
        assert_eq!(held.max_queues, c.max_queues);
        assert_eq!(held.rate_limits, c.rate_limits);
    }

    #[test]
    fn queue_creation_is_operator_or_open() {
        let open = config(&[SECRET, ("QUEUE_CREATION", "open")]).unwrap();
        assert_eq!(open.creation, QueueCreation::Open);
        let err = config(&[SECRET, ("QUEUE_CREATION", "anyone")]).unwrap_err();
        assert_eq!(err.variable, "QUEUE_CREATION");
        let err = config(&[SECRET, ("MAX_QUEUES", "0")]).unwrap_err();
        assert_eq!(err.variable, "MAX_QUEUES");
    }

    #[test]
    fn a_body_user_id_is_trusted_only_when_asked_for_by_name() {
        assert!(!config(&[SECRET]).unwrap().allow_body_user_id);
        assert!(
            !config(&[SECRET, ("ALLOW_BODY_USER_ID", "no")])
                .unwrap()
                .allow_body_user_id
        );
        assert!(
            config(&[SECRET, ("ALLOW_BODY_USER_ID", "unsafe")])
                .unwrap()
                .allow_body_user_id
        );
        for vague in ["true", "1", "yes"] {
            let err = config(&[SECRET, ("ALLOW_BODY_USER_ID", vague)]).unwrap_err();
            assert_eq!(err.variable, "ALLOW_BODY_USER_ID");
        }
    }

    #[test]
    fn the_early_cutoff_is_a_local_time_or_off() {
        assert_eq!(config(&[SECRET]).unwrap().early_cutoff, None);
        let c = config(&[SECRET, ("RANKING_EARLY_CUTOFF", "10:30")]).unwrap();
        assert_eq!(c.early_cutoff, chrono::NaiveTime::from_hms_opt(10, 30, 0));
        for bad in ["24:00", "10:60", "9:30", "10:30:00", "noon", "10h30"] {
            let err = config(&[SECRET, ("RANKING_EARLY_CUTOFF", bad)]).unwrap_err();
            assert_eq!(err.variable, "RANKING_EARLY_CUTOFF", "{bad}");
        }
    }

    #[test]
    fn admit_per_tick_defaults_to_capacity() {
        let c = config(&[SECRET, ("QUEUE_CAPACITY", "7")]).unwrap();
        assert_eq!(c.room.admit_per_tick, 7);
    }

    #[test]
    fn errors_name_the_variable() {
        let err = config(&[SECRET, ("SESSION_SECONDS", "ten")]).unwrap_err();
        assert_eq!(err.variable, "SESSION_SECONDS");
        let err = config(&[SECRET, ("QUEUE_CAPACITY", "0")]).unwrap_err();
        assert_eq!(err.variable, "QUEUE_CAPACITY");
        let err = config(&[SECRET, ("KEY_PREFIX", "a{b}")]).unwrap_err();
        assert_eq!(err.variable, "KEY_PREFIX");
        let err = config(&[SECRET, ("RANKING_TIME_ZONE", "Mars/Olympus")]).unwrap_err();
        assert_eq!(err.variable, "RANKING_TIME_ZONE");
        let err = config(&[SECRET, ("REDIS_URL", "http://x")]).unwrap_err();
        assert_eq!(err.variable, "REDIS_URL");
        // Too short for a buyer polling every second to have time for the round trip.
        let err = config(&[SECRET, ("WAITING_IDLE_SECONDS", "4")]).unwrap_err();
        assert_eq!(err.variable, "WAITING_IDLE_SECONDS");
    }

    #[test]
    fn errors_say_what_would_do() {
        let reason = |vars: &[(&str, &str)]| config(vars).unwrap_err().reason;
        assert_eq!(
            reason(&[SECRET, ("SESSION_SECONDS", "ten")]),
            "must be a whole number from 1 to 86400, not \"ten\""
        );
        assert_eq!(
            reason(&[SECRET, ("REDIS_MODE", "sentinel")]),
            "\"sentinel\" is not standalone, cluster or auto"
        );
        assert_eq!(
            reason(&[SECRET, ("QUEUE_CREATION", " anyone ")]),
            "\"anyone\" is not operator or open"
        );
        let c = config(&[SECRET, ("REDIS_MODE", " auto ")]).unwrap();
        assert_eq!(c.redis.mode, RedisMode::Auto);
    }

    #[test]
    fn a_redis_ca_file_must_hold_certificates_and_go_with_tls() {
        let bundle = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/tls/amazon-trust-services.pem"
        );
        let tls = ("REDIS_URL", "rediss://cache.example:6379");
        let c = config(&[SECRET, tls, ("REDIS_CA_FILE", bundle)]).unwrap();
        assert!(c.redis.ca_roots.is_some());

        let refused = |vars: &[(&str, &str)]| {
            let err = config(vars).unwrap_err();
            assert_eq!(err.variable, "REDIS_CA_FILE");
            err.reason
        };
        let missing = refused(&[SECRET, tls, ("REDIS_CA_FILE", "/nonexistent/ca.pem")]);
        assert!(
            missing.contains("cannot read /nonexistent/ca.pem"),
            "{missing}"
        );
        let not_pem = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        refused(&[SECRET, tls, ("REDIS_CA_FILE", not_pem)]);
        let plain = ("REDIS_URL", "redis://cache.example:6379");
        refused(&[SECRET, plain, ("REDIS_CA_FILE", bundle)]);
    }

    #[test]
    fn the_redis_settings_print_no_secret() {
        let c = config(&[
            SECRET,
            ("REDIS_URL", "rediss://lineup:url-secret@cache.example:6379"),
            ("REDIS_PASSWORD", "password-secret"),
        ])
        .unwrap();
        let printed = format!("{:?} {:?}", c.redis, c.config);
        assert!(!printed.contains("secret"), "{printed}");
        assert!(printed.contains("password: \"<set>\""), "{printed}");
    }

    #[test]
    fn a_jwt_issuer_comes_with_its_audience_and_is_https() {
        assert!(config(&[SECRET]).unwrap().jwt.is_none());
        let issuer = (
            "JWT_ISSUER",
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
        );
        let c = config(&[SECRET, issuer, ("JWT_AUDIENCE", " lineup ")]).unwrap();
        let jwt = c.jwt.unwrap();
        assert_eq!(jwt.issuer, issuer.1);
        assert_eq!(jwt.audience, "lineup");
        assert_eq!(jwt.keys_refetch, Duration::from_secs(60));
        assert!(jwt.ca_roots.is_none());

        let refused = |vars: &[(&str, &str)]| config(vars).unwrap_err().variable;
        assert_eq!(refused(&[SECRET, issuer]), "JWT_AUDIENCE");
        assert_eq!(
            refused(&[SECRET, ("JWT_AUDIENCE", "lineup")]),
            "JWT_AUDIENCE"
        );
        let audience = ("JWT_AUDIENCE", "lineup");
        for unusable in [
            "http://auth.example.com",
            "auth.example.com",
            "https://",
            "https://auth.example.com/?x=1",
            "https://auth.example.com/#x",
            "https://user:pw@auth.example.com",
            "ftp://auth.example.com",
        ] {
            let issuer = ("JWT_ISSUER", unusable);
            assert_eq!(
                refused(&[SECRET, issuer, audience]),
                "JWT_ISSUER",
                "{unusable}"
            );
        }
        for loopback in [
            "http://127.0.0.1:8080",
            "http://localhost:1/x",
            "http://[::1]:2",
        ] {
            assert!(config(&[SECRET, ("JWT_ISSUER", loopback), audience]).is_ok());
        }
        let long = "x".repeat(257);
        assert_eq!(
            refused(&[SECRET, issuer, ("JWT_AUDIENCE", long.as_str())]),
            "JWT_AUDIENCE"
        );
        for seconds in ["0", "3601", "soon"] {
            let refetch = ("JWT_KEYS_REFETCH_SECONDS", seconds);
            assert_eq!(
                refused(&[SECRET, issuer, audience, refetch]),
                "JWT_KEYS_REFETCH_SECONDS"
            );
        }
        let refetch = ("JWT_KEYS_REFETCH_SECONDS", "1");
        assert_eq!(
            refused(&[SECRET, refetch]),
            "JWT_KEYS_REFETCH_SECONDS",
            "a refetch period without an issuer"
        );
        let missing = ("JWT_CA_FILE", "/nonexistent/ca.pem");
        assert_eq!(refused(&[SECRET, issuer, audience, missing]), "JWT_CA_FILE");
    }

    #[test]
    fn lambdas_refuse_to_start_without_a_strong_secret() {
        assert_eq!(config(&[]).unwrap_err().variable, "TOKEN_SECRET");
        assert_eq!(
            config(&[("TOKEN_SECRET", "short")]).unwrap_err().variable,
            "TOKEN_SECRET"
        );
    }
}
