//! Settings, read from the environment once at start-up. A bad value stops the process with
//! a message that names the variable, instead of surfacing later as a wrong answer.

use std::time::Duration;

use crate::bounds::{self, Bounds};
use crate::tls::read_root_bundle;
use crate::token::TokenKey;

/// A setting that could not be used.
#[derive(Debug, thiserror::Error)]
#[error("configuration variable {variable}: {reason}")]
pub struct ConfigError {
    pub variable: &'static str,
    pub reason: String,
}

fn bad(variable: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError {
        variable,
        reason: reason.into(),
    }
}

/// Whether a missing `TOKEN_SECRET` is fatal. `queue-api` instances must share one secret, so
/// they refuse to start without it; functions that never sign tokens, and the local stack
/// (which checks only its own tokens), make one up for their lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretPolicy {
    Required,
    GenerateIfMissing,
}

/// Who may create a queue (`QUEUE_CREATION`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueCreation {
    /// Only an operator, with `PUT /queues/{queueId}/settings`; a token request for any
    /// other queue is 404 and writes nothing. The default.
    Operator,
    /// Any buyer's first token request creates the queue (the local stack, tests).
    Open,
}

impl QueueCreation {
    /// The issue script's argument.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueCreation::Operator => "operator",
            QueueCreation::Open => "open",
        }
    }
}

/// How the waiting room behaves: the defaults of every queue's own settings, and the
/// timing of the scheduled work.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// Most buyers active at once per queue.
    pub capacity: u32,
    /// How long an admitted buyer stays active.
    pub session: Duration,
    /// Most buyers one promotion tick admits per queue.
    pub admit_per_tick: u32,
    /// A waiter unseen this long is abandoned.
    pub waiting_idle: Duration,
    /// Pause between promotion ticks.
    pub promote_tick: Duration,
    /// How long one promoter invocation keeps ticking.
    pub promote_budget: Duration,
    /// Pause between reaper runs in the local stack.
    pub reap_interval: Duration,
    /// An empty queue without arrivals this long leaves the registry.
    pub retire_after: Duration,
    /// Most token requests per user per queue per minute; 0 turns the limit off.
    pub rate_limit_user_per_minute: u32,
    /// Most token requests per source IP per queue per minute; 0 turns the limit off.
    pub rate_limit_ip_per_minute: u32,
    /// Who may create a queue.
    pub creation: QueueCreation,
    /// Most queues live (in the registry) at once: the promoter and the reaper visit each
    /// of them every run.
    pub max_queues: u32,
}

/// How the rankings behave.
#[derive(Debug, Clone)]
pub struct RankingSettings {
    /// The EventBridge `source` of payment events; others are ignored.
    pub event_source: String,
    /// The zone whose calendar decides a payment's day, week and month.
    pub time_zone: chrono_tz::Tz,
    pub daily_retention_days: u32,
    pub weekly_retention_weeks: u32,
    pub monthly_retention_months: u32,
    /// How long a payment's or refund's dedupe record lives.
    pub dedupe: Duration,
    /// The trending board's half-life: a sale weighs half as much this much later.
    pub trending_half_life: Duration,
    /// `RANKING_EARLY_CUTOFF`: before this local time, a daily read without a date serves
    /// yesterday's board, and a weekly one on a Monday last week's. `None`: never.
    pub early_cutoff: Option<chrono::NaiveTime>,
}

/// Whether Redis is one primary (with replicas) or a cluster (Redis Cluster, ElastiCache
/// cluster mode, ElastiCache Serverless).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisMode {
    Standalone,
    Cluster,
    /// Ask the server (`INFO cluster`) on first use.
    Auto,
}

/// How to reach Redis.
#[derive(Clone)]
pub struct RedisSettings {
    pub mode: RedisMode,
    /// `redis://` or `rediss://` URL; `None` lets the local stack start its own server.
    pub url: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    /// Most requests in flight on the connection (`REDIS_MAX_IN_FLIGHT`); one more is shed
    /// with 503 at once (see [`crate::store`]).
    pub max_in_flight: u32,
    /// PEM roots a `rediss://` server's certificate must chain to (`REDIS_CA_FILE`), in place
    /// of the bundled Amazon roots that ElastiCache's certificates chain to; for a Redis
    /// behind a private CA or another provider's.
    pub ca_roots: Option<Vec<u8>>,
}

/// The default of `REDIS_MAX_IN_FLIGHT`. A request costs Redis about 50–120 µs, so 64 in
/// flight are well under 10 ms of its time: Redis has to be a hundred times slower than that
/// before the last of them waits past the 1 s response timeout, and pipelining gains little
/// beyond a few dozen. A Lambda container has one request in flight at a time.
pub const MAX_IN_FLIGHT_DEFAULT: u32 = 64;

/// Without the password (or a URL, which may carry one), so a settings dump in a log never
/// holds a secret.
impl std::fmt::Debug for RedisSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let set = |value: bool| if value { "<set>" } else { "<unset>" };
        f.debug_struct("RedisSettings")
            .field("mode", &self.mode)
            .field("url", &set(self.url.is_some()))
            .field("username", &self.username)
            .field("password", &set(self.password.is_some()))
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .field("max_in_flight", &self.max_in_flight)
            .field("ca_roots", &set(self.ca_roots.is_some()))
            .finish()
    }
}

/// Who issues the buyers' JWTs, for the gatekeeper's check of the buyer (`JWT_ISSUER`,
/// `JWT_AUDIENCE`): the values the template's JWT authorizer is configured with.
#[derive(Debug, Clone)]
pub struct JwtSettings {
    /// The `iss` a JWT must carry, exactly; its keys are found through
    /// `<issuer>/.well-known/openid-configuration`. An `https://` URL, or `http://` on a
    /// loopback host (tests).
    pub issuer: String,
    /// The `aud` a JWT must carry (or its `client_id`, when it has no `aud`).
    pub audience: String,
    /// Most often the issuer's keys are fetched again for a key id not in hand
    /// (`JWT_KEYS_REFETCH_SECONDS`, default 60).
    pub keys_refetch: Duration,
    /// PEM roots the issuer's certificate must chain to (`JWT_CA_FILE`), in place of the
    /// bundled Amazon roots Cognito's chain to.
    pub ca_roots: Option<Vec<u8>>,
}

/// Everything a lineup function needs to know.
#[derive(Clone)]
pub struct Config {
    pub redis: RedisSettings,
    /// Every key lineup writes starts with this.
    pub key_prefix: String,
    pub queue: QueueConfig,
    pub ranking: RankingSettings,
    pub token_key: TokenKey,
    /// Where queue state events go; `None` turns publishing off.
    pub event_bus: Option<String>,
    /// The path parameter `queue-authorizer` reads the queue id from, when the
    /// `x-queue-id` header is absent.
    pub authorizer_queue_path_parameter: String,
    /// `ALLOW_BODY_USER_ID=unsafe`: a buyer without a verified JWT is whoever the body's
    /// `userId` names. Only for the local stack and tests: anyone can then be anyone.
    pub allow_body_user_id: bool,
    /// The buyers' JWT issuer; `None` (the local stack): the gatekeeper checks the queue
    /// token only.
    pub jwt: Option<JwtSettings>,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("redis", &self.redis.url.as_deref().map(|_| "<set>"))
            .field("key_prefix", &self.key_prefix)
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}

/// Reads variables through `lookup`, so tests can supply their own environment.
struct Vars<'a>(&'a dyn Fn(&str) -> Option<String>);

impl Vars<'_> {
    fn string(&self, name: &'static str) -> Option<String> {
        (self.0)(name).filter(|v| !v.trim().is_empty())
    }

    fn number(&self, name: &'static str, default: u64, bounds: Bounds) -> Result<u64, ConfigError> {
        match self.string(name) {
            None => Ok(default),
            Some(raw) => bounds
                .parse(raw.trim())
                .map_err(|err| bad(name, format!("{err}, not {raw:?}"))),
        }
    }

    /// A number that fits `u32` by its bounds.
    fn count(&self, name: &'static str, default: u32, bounds: Bounds) -> Result<u32, ConfigError> {
        let value = self.number(name, default.into(), bounds)?;
        u32::try_from(value).map_err(|_| bad(name, format!("{value} is too large")))
    }

    fn seconds(
        &self,
        name: &'static str,
        default: u64,
        bounds: Bounds,
    ) -> Result<Duration, ConfigError> {
        self.number(name, default, bounds).map(Duration::from_secs)
    }

    fn millis(&self, name: &'static str, default: u64) -> Result<Duration, ConfigError> {
        self.number(name, default, Bounds::new(10, 60_000))
            .map(Duration::from_millis)
    }

    /// One of `choices`, by its word; the first when the variable is unset.
    fn one_of<T: Copy>(&self, name: &'static str, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let raw = self.string(name);
        let word = raw.as_deref().map(str::trim);
        choices
            .iter()
            .find(|(choice, _)| word.is_none_or(|word| word == *choice))
            .map(|(_, value)| *value)
            .ok_or_else(|| {
                let words: Vec<&str> = choices.iter().map(|(choice, _)| *choice).collect();
                let listed = match words.split_last() {
                    Some((last, rest)) if !rest.is_empty() => {
                        format!("{} or {last}", rest.join(", "))
                    }
                    _ => words.concat(),
                };
                bad(
                    name,
                    format!("{:?} is not {listed}", word.unwrap_or_default()),
                )
            })
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env(secrets: SecretPolicy) -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok(), secrets)
    }

    /// Reads variables from `lookup`.
    pub fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
        secrets: SecretPolicy,
    ) -> Result<Self, ConfigError> {
        let vars = Vars(&lookup);
        // Read in this order: of several bad variables, the first here is the one named.
        Ok(Config {
            key_prefix: key_prefix(&vars)?,
            queue: QueueConfig::read(&vars)?,
            ranking: RankingSettings::read(&vars)?,
            redis: RedisSettings::read(&vars)?,
            token_key: token_key(&vars, secrets)?,
            allow_body_user_id: vars
                .one_of("ALLOW_BODY_USER_ID", &[("no", false), ("unsafe", true)])?,
            event_bus: vars.string("EVENT_BUS_NAME"),
            authorizer_queue_path_parameter: vars
                .string("AUTHORIZER_QUEUE_PATH_PARAMETER")
                .unwrap_or_else(|| "queueId".into()),
            jwt: JwtSettings::read(&vars)?,
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

/// `TOKEN_SECRET`, or a key made up for this process where `secrets` allows it.
fn token_key(vars: &Vars, secrets: SecretPolicy) -> Result<TokenKey, ConfigError> {
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

impl QueueConfig {
    fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let capacity = vars.count("QUEUE_CAPACITY", 100, bounds::CAPACITY)?;
        Ok(QueueConfig {
            capacity,
            session: vars.seconds("SESSION_SECONDS", 600, bounds::SESSION_SECONDS)?,
            admit_per_tick: vars.count("ADMIT_PER_TICK", capacity, bounds::ADMIT_PER_TICK)?,
            waiting_idle: vars.seconds(
                "WAITING_IDLE_SECONDS",
                120,
                bounds::WAITING_IDLE_SECONDS,
            )?,
            promote_tick: vars.seconds("PROMOTE_TICK_SECONDS", 10, Bounds::new(1, 3_600))?,
            promote_budget: vars.seconds("PROMOTE_BUDGET_SECONDS", 50, Bounds::new(0, 890))?,
            reap_interval: vars.seconds("REAP_INTERVAL_SECONDS", 60, Bounds::new(1, 86_400))?,
            retire_after: vars.seconds(
                "QUEUE_RETIRE_AFTER_SECONDS",
                86_400,
                Bounds::new(1, 31_536_000),
            )?,
            rate_limit_user_per_minute: vars.count(
                "RATE_LIMIT_USER_PER_MINUTE",
                60,
                Bounds::new(0, 1_000_000),
            )?,
            rate_limit_ip_per_minute: vars.count(
                "RATE_LIMIT_IP_PER_MINUTE",
                600,
                Bounds::new(0, 1_000_000),
            )?,
            creation: vars.one_of(
                "QUEUE_CREATION",
                &[
                    ("operator", QueueCreation::Operator),
                    ("open", QueueCreation::Open),
                ],
            )?,
            max_queues: vars.count("MAX_QUEUES", 1_000, Bounds::new(1, 100_000))?,
        })
    }
}

/// A local time `HH:MM`. Read by hand rather than with chrono's format parser, which would
/// cost every function about 10 KB of code for one setting.
fn local_time(raw: &str) -> Option<chrono::NaiveTime> {
    let (hours, minutes) = raw.split_once(':')?;
    let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(hours) || !two_digits(minutes) {
        return None;
    }
    chrono::NaiveTime::from_hms_opt(hours.parse().ok()?, minutes.parse().ok()?, 0)
}

impl RankingSettings {
    fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let time_zone_name = vars
            .string("RANKING_TIME_ZONE")
            .unwrap_or_else(|| "UTC".into());
        Ok(RankingSettings {
            event_source: vars
                .string("PAYMENT_EVENT_SOURCE")
                .unwrap_or_else(|| "lineup.payments".into()),
            time_zone: time_zone_name.parse().map_err(|_| {
                bad(
                    "RANKING_TIME_ZONE",
                    format!(
                        "{time_zone_name:?} is not an IANA time zone name, or not one \
                         this build carries (.cargo/config.toml lists them)"
                    ),
                )
            })?,
            daily_retention_days: vars.count(
                "RANKING_DAILY_RETENTION_DAYS",
                8,
                Bounds::new(1, 3_660),
            )?,
            weekly_retention_weeks: vars.count(
                "RANKING_WEEKLY_RETENTION_WEEKS",
                5,
                Bounds::new(1, 520),
            )?,
            monthly_retention_months: vars.count(
                "RANKING_MONTHLY_RETENTION_MONTHS",
                13,
                Bounds::new(1, 120),
            )?,
            dedupe: Duration::from_secs(
                86_400 * vars.number("RANKING_DEDUPE_DAYS", 35, Bounds::new(1, 3_660))?,
            ),
            trending_half_life: Duration::from_secs(
                3_600 * vars.number("RANKING_TRENDING_HALF_LIFE_HOURS", 6, Bounds::new(1, 168))?,
            ),
            early_cutoff: vars
                .string("RANKING_EARLY_CUTOFF")
                .map(|raw| {
                    let raw = raw.trim();
                    local_time(raw).ok_or_else(|| {
                        bad(
                            "RANKING_EARLY_CUTOFF",
                            format!("must be a local time HH:MM (00:00 to 23:59), not {raw:?}"),
                        )
                    })
                })
                .transpose()?,
        })
    }
}

impl JwtSettings {
    /// `None` without `JWT_ISSUER`; then the other `JWT_` variables must be unset too.
    fn read(vars: &Vars) -> Result<Option<Self>, ConfigError> {
        let Some(issuer) = vars.string("JWT_ISSUER") else {
            for variable in ["JWT_AUDIENCE", "JWT_KEYS_REFETCH_SECONDS", "JWT_CA_FILE"] {
                if vars.string(variable).is_some() {
                    return Err(bad(variable, "is set, but JWT_ISSUER is not"));
                }
            }
            return Ok(None);
        };
        let issuer = issuer.trim().to_owned();
        if !issuer_url_is_usable(&issuer) {
            return Err(bad(
                "JWT_ISSUER",
                "must be an https:// URL (http:// only on a loopback host) of up to 2048 \
                 characters, without query or fragment",
            ));
        }
        let audience = vars
            .string("JWT_AUDIENCE")
            .map(|audience| audience.trim().to_owned())
            .ok_or_else(|| bad("JWT_AUDIENCE", "is required with JWT_ISSUER"))?;
        if audience.len() > 256 || audience.chars().any(char::is_control) {
            return Err(bad(
                "JWT_AUDIENCE",
                "must be up to 256 characters, none a control character",
            ));
        }
        Ok(Some(JwtSettings {
            issuer,
            audience,
            keys_refetch: vars.seconds("JWT_KEYS_REFETCH_SECONDS", 60, Bounds::new(1, 3_600))?,
            ca_roots: match vars.string("JWT_CA_FILE") {
                Some(path) => {
                    Some(read_root_bundle(&path).map_err(|reason| bad("JWT_CA_FILE", reason))?)
                }
                None => None,
            },
        }))
    }
}

/// Whether `issuer` is a URL the gatekeeper may fetch keys below: `https://`, or `http://` on
/// a loopback host; no user, query or fragment.
fn issuer_url_is_usable(issuer: &str) -> bool {
    let Ok(url) = url::Url::parse(issuer) else {
        return false;
    };
    let loopback = match url.host() {
        Some(url::Host::Domain(name)) => name == "localhost",
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => return false,
    };
    issuer.len() <= 2048
        && (url.scheme() == "https" || (url.scheme() == "http" && loopback))
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
}

impl RedisSettings {
    fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let redis = RedisSettings {
            mode: vars.one_of(
                "REDIS_MODE",
                &[
                    ("standalone", RedisMode::Standalone),
                    ("cluster", RedisMode::Cluster),
                    ("auto", RedisMode::Auto),
                ],
            )?,
            url: vars.string("REDIS_URL"),
            username: vars.string("REDIS_USERNAME"),
            password: vars.string("REDIS_PASSWORD"),
            connect_timeout: vars.millis("REDIS_CONNECT_TIMEOUT_MS", 1_000)?,
            response_timeout: vars.millis("REDIS_RESPONSE_TIMEOUT_MS", 1_000)?,
            max_in_flight: vars.count(
                "REDIS_MAX_IN_FLIGHT",
                MAX_IN_FLIGHT_DEFAULT,
                Bounds::new(1, 100_000),
            )?,
            ca_roots: match vars.string("REDIS_CA_FILE") {
                Some(path) => {
                    Some(read_root_bundle(&path).map_err(|reason| bad("REDIS_CA_FILE", reason))?)
                }
                None => None,
            },
        };
        if let Some(url) = &redis.url {
            if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
                return Err(bad("REDIS_URL", "must start with redis:// or rediss://"));
            }
            if redis.ca_roots.is_some() && !url.starts_with("rediss://") {
                return Err(bad(
                    "REDIS_CA_FILE",
                    "is set, but REDIS_URL is not rediss:// (TLS)",
                ));
            }
        }
        Ok(redis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let owned: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(
            move |name| {
                owned
                    .iter()
                    .find(|(k, _)| k == name)
                    .map(|(_, v)| v.clone())
            },
            SecretPolicy::Required,
        )
    }

    const SECRET: (&str, &str) = ("TOKEN_SECRET", "0123456789abcdef0123456789abcdef");

    #[test]
    fn defaults_match_the_documentation() {
        let c = config(&[SECRET]).unwrap();
        assert_eq!(c.key_prefix, "lineup");
        assert_eq!(c.queue.capacity, 100);
        assert_eq!(c.queue.admit_per_tick, 100);
        assert_eq!(c.queue.session, Duration::from_secs(600));
        assert_eq!(c.queue.waiting_idle, Duration::from_secs(120));
        assert_eq!(c.queue.promote_tick, Duration::from_secs(10));
        assert_eq!(c.queue.promote_budget, Duration::from_secs(50));
        assert_eq!(c.queue.creation, QueueCreation::Operator);
        assert_eq!(c.queue.max_queues, 1_000);
    }

    #[test]
    fn queue_creation_is_operator_or_open() {
        let open = config(&[SECRET, ("QUEUE_CREATION", "open")]).unwrap();
        assert_eq!(open.queue.creation, QueueCreation::Open);
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
        assert_eq!(config(&[SECRET]).unwrap().ranking.early_cutoff, None);
        let c = config(&[SECRET, ("RANKING_EARLY_CUTOFF", "10:30")]).unwrap();
        assert_eq!(
            c.ranking.early_cutoff,
            chrono::NaiveTime::from_hms_opt(10, 30, 0)
        );
        for bad in ["24:00", "10:60", "9:30", "10:30:00", "noon", "10h30"] {
            let err = config(&[SECRET, ("RANKING_EARLY_CUTOFF", bad)]).unwrap_err();
            assert_eq!(err.variable, "RANKING_EARLY_CUTOFF", "{bad}");
        }
    }

    #[test]
    fn admit_per_tick_defaults_to_capacity() {
        let c = config(&[SECRET, ("QUEUE_CAPACITY", "7")]).unwrap();
        assert_eq!(c.queue.admit_per_tick, 7);
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
        let printed = format!("{:?} {:?}", c.redis, c);
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
