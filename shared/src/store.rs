//! Redis access: the connection every function creates once per container, how its
//! failures are classified, and the key layout.
//!
//! Every key starts with `KEY_PREFIX`. The keys of one queue share the hash tag
//! `{q:<queueId>}`, so each queue script runs on one shard of Redis Cluster or ElastiCache
//! Serverless; the ranking keys share `{rk}` (see [`crate::ranking`]). The queue registry
//! is the one key outside any tag, and no script touches it.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{
    Client, FromRedisValue, IntoConnectionInfo, RedisError, Script, ScriptInvocation,
    ServerErrorKind,
};

use crate::config::RedisSettings;
use crate::ids::QueueId;

/// The shared connection. Cheap to clone. Reconnects by itself after Redis comes back, and
/// replaces its connection when the server it reached has stopped being the primary
/// (`READONLY` after a failover), so a warm container never sticks to a demoted node.
#[derive(Clone)]
pub struct Conn(Arc<Shared>);

struct Shared {
    client: Client,
    config: ConnectionManagerConfig,
    current: RwLock<ConnectionManager>,
}

/// Creates the connection without waiting for Redis, so a process started during an outage
/// still answers (with 503) and recovers once Redis is back.
pub fn connect(settings: &RedisSettings, url: &str) -> Result<Conn, RedisError> {
    let mut info = url.into_connection_info()?;
    let mut redis_settings = info.redis_settings().clone();
    if let Some(user) = &settings.username {
        redis_settings = redis_settings.set_username(user);
    }
    if let Some(password) = &settings.password {
        redis_settings = redis_settings.set_password(password);
    }
    info = info.set_redis_settings(redis_settings);
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(settings.connect_timeout))
        .set_response_timeout(Some(settings.response_timeout))
        // Fail fast: a request that cannot reach Redis answers 503 at once and the next
        // request tries again, instead of one request waiting through a long backoff.
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(200));
    let client = Client::open(info)?;
    let current = ConnectionManager::new_lazy_with_config(client.clone(), config.clone())?;
    Ok(Conn(Arc::new(Shared {
        client,
        config,
        current: RwLock::new(current),
    })))
}

impl Conn {
    fn manager(&self) -> ConnectionManager {
        self.0
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Passes `result` through, first replacing the connection if the error says the
    /// server is no longer the primary.
    fn observe<T>(&self, result: Result<T, RedisError>) -> Result<T, RedisError> {
        if let Err(err) = &result {
            if is_demoted(err) {
                tracing::warn!("redis answered {err}; reconnecting to reach the new primary");
                match ConnectionManager::new_lazy_with_config(
                    self.0.client.clone(),
                    self.0.config.clone(),
                ) {
                    Ok(fresh) => {
                        *self
                            .0
                            .current
                            .write()
                            .unwrap_or_else(PoisonError::into_inner) = fresh
                    }
                    Err(err) => tracing::warn!(%err, "could not create a new redis connection"),
                }
            }
        }
        result
    }

    /// Runs one script invocation (EVALSHA; loads the script if the server lacks it).
    pub async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, RedisError> {
        let result = invocation.invoke_async(&mut self.manager()).await;
        self.observe(result)
    }

    /// Sends one command.
    pub async fn query<T: FromRedisValue>(&self, cmd: &redis::Cmd) -> Result<T, RedisError> {
        let result = cmd.query_async(&mut self.manager()).await;
        self.observe(result)
    }

    /// Sends `pipe` in one round trip. If the server lost its script cache, loads `scripts`
    /// and sends the pipeline once more; every script in lineup is safe to re-run.
    pub async fn pipeline<T: FromRedisValue>(
        &self,
        pipe: &redis::Pipeline,
        scripts: &[&Script],
    ) -> Result<T, RedisError> {
        let mut conn = self.manager();
        let result = match pipe.query_async(&mut conn).await {
            Err(err) if is_noscript(&err) => {
                let mut reloaded = Ok(());
                for script in scripts {
                    if let Err(err) = script.load_async(&mut conn).await {
                        reloaded = Err(err);
                        break;
                    }
                }
                match reloaded {
                    Ok(()) => pipe.query_async(&mut conn).await,
                    Err(err) => Err(err),
                }
            }
            other => other,
        };
        self.observe(result)
    }
}

/// Commands from several owners (the rankings and the waiting room, say) sent together in
/// one round trip. Each owner stages its part and later reads its own replies back by the
/// range [`Batch::stage`] gave it.
#[derive(Default)]
pub struct Batch {
    pipe: redis::Pipeline,
    scripts: Vec<&'static Script>,
    len: usize,
}

impl Batch {
    pub fn new() -> Self {
        Batch::default()
    }

    /// Adds `invocation` of `script`; returns the index its reply will have.
    pub fn stage(&mut self, script: &'static Script, invocation: &ScriptInvocation<'_>) -> usize {
        self.pipe.invoke_script(invocation);
        if !self.scripts.iter().any(|s| std::ptr::eq(*s, script)) {
            self.scripts.push(script);
        }
        self.len += 1;
        self.len - 1
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Conn {
    /// Sends `batch` in one round trip; one reply per staged call, in order.
    pub async fn send(&self, batch: &Batch) -> Result<Vec<redis::Value>, RedisError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        self.pipeline(&batch.pipe, &batch.scripts).await
    }
}

/// Whether `err` says a script is not in the server's cache (after a restart or failover).
fn is_noscript(err: &RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(ServerErrorKind::NoScript)
        || err.to_string().contains("NOSCRIPT")
}

/// Whether the server reached is no longer a writable primary.
fn is_demoted(err: &RedisError) -> bool {
    err.kind() == redis::ErrorKind::Server(ServerErrorKind::ReadOnly)
        || err.to_string().contains("READONLY")
}

/// Whether `err` means Redis is unreachable or not serving right now, as opposed to a bug.
/// `READONLY` and friends come from a failover in progress; the connection is replaced.
pub fn is_outage(err: &RedisError) -> bool {
    if err.is_io_error()
        || err.is_timeout()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_cluster_error()
        || is_demoted(err)
    {
        return true;
    }
    matches!(
        err.kind(),
        redis::ErrorKind::Server(
            ServerErrorKind::BusyLoading
                | ServerErrorKind::MasterDown
                | ServerErrorKind::TryAgain
                | ServerErrorKind::ClusterDown
        )
    ) || matches!(err.code(), Some("LOADING" | "MASTERDOWN" | "BUSY"))
}

/// The names of one queue's keys.
#[derive(Debug, Clone)]
pub struct QueueKeys {
    /// Sorted set: member user id, score ticket. One entry per waiter.
    pub waiting: String,
    /// Sorted set: member user id, score the millisecond the session ends.
    pub active: String,
    /// Hash: user id → `ticket:since` of each active buyer, so a token can be matched and
    /// a payment can tell whether it belongs to this session.
    pub active_tickets: String,
    /// Hash: ticket counter, admission counters, rate estimate, heartbeat window bookkeeping.
    pub meta: String,
    /// Hash: the queue's own settings, where they differ from the environment's defaults.
    pub settings: String,
    /// Hashes of issue requests per user and per source IP in a one-minute window, two
    /// used in turn.
    pub rate: [String; 2],
    /// Bitmaps of heartbeats by ticket, one per time window, reused in rotation.
    pub seen: Vec<String>,
}

/// How many heartbeat bitmaps rotate per queue: one per window of the idle period plus
/// the window being written.
pub const SEEN_WINDOWS: usize = crate::queue::IDLE_WINDOWS as usize + 1;

impl QueueKeys {
    pub fn new(prefix: &str, queue: &QueueId) -> Self {
        let base = format!("{prefix}:{{q:{queue}}}");
        QueueKeys {
            waiting: format!("{base}:waiting"),
            active: format!("{base}:active"),
            active_tickets: format!("{base}:active-tickets"),
            meta: format!("{base}:meta"),
            settings: format!("{base}:settings"),
            rate: [format!("{base}:rate:0"), format!("{base}:rate:1")],
            seen: (0..SEEN_WINDOWS)
                .map(|i| format!("{base}:seen:{i}"))
                .collect(),
        }
    }

    /// All keys in the order every queue script expects them in `KEYS`.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        [
            &self.waiting,
            &self.active,
            &self.active_tickets,
            &self.meta,
            &self.settings,
            &self.rate[0],
            &self.rate[1],
        ]
        .into_iter()
        .chain(self.seen.iter())
        .map(String::as_str)
    }
}

/// The set of queue ids that have ever had a buyer, so the promoter and reaper find queues
/// without scanning the keyspace.
pub fn queue_registry_key(prefix: &str) -> String {
    format!("{prefix}:queues")
}
