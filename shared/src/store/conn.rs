//! The connection: standalone or cluster, how a request that failed on it leads to a probe
//! or a replacement, and how a batch is sent over it (see the [module](super) doc).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, Slot, SlotAddr};
use redis::{
    Client, Cmd, ConnectionAddr, FromRedisValue, IntoConnectionInfo, RedisError, TlsCertificates,
    Value,
};
use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};

use super::budget::Limit;
use super::script::{in_time, run_pipeline, timed_out, Batch, ScriptCall};
use crate::config::{RedisMode, RedisSettings};
use crate::error::{is_demoted, shed};
use crate::tls::AMAZON_TRUST_SERVICES;

/// The shared connection, standalone or cluster, replaced when it fails as the
/// [module](super) doc says. Cheap to clone.
#[derive(Clone)]
pub struct Conn(Arc<Shared>);

struct Shared {
    mode: RedisMode,
    standalone: Standalone,
    cluster_client: ClusterClient,
    /// Resolved on first use (for `auto`, by asking the server), then fixed.
    resolved: OnceCell<RedisMode>,
    /// Created on first use in cluster mode; a failed attempt is retried on the next call.
    cluster: Current<Arc<OnceCell<ClusterConnection>>>,
    /// Set while a replacement cluster connection is being opened.
    renewing: AtomicBool,
    /// How long opening a replacement cluster connection may take.
    renew_within: Duration,
    /// How long a request waits for each reply (`REDIS_RESPONSE_TIMEOUT_MS`).
    reply_within: Duration,
    /// Set while a connection that timed out is being probed.
    probing: AtomicBool,
    /// One permit per request that may be in flight (`REDIS_MAX_IN_FLIGHT`). A request
    /// holds one until its reply comes, even after it stopped waiting for it; one that finds
    /// none left is shed.
    in_flight: Arc<Semaphore>,
    /// When a pipeline of plain reads next carries the primary guard (none yet: at once).
    next_primary_guard: Mutex<Option<Instant>>,
}

struct Standalone {
    client: Client,
    /// Its response timeout is a probe's: [`PROBE_PATIENCE`] times `reply_within`.
    config: ConnectionManagerConfig,
    current: Current<ConnectionManager>,
    /// Not before this instant is the connection replaced again for reaching a demoted
    /// server. Until a failover's new address is in DNS, a new connection reaches the same
    /// demoted node, and one per request would be a reconnection storm against it.
    next_demoted_replacement: Mutex<Option<Instant>>,
}

/// How many response timeouts a probe waits for its PING before the connection that timed
/// out is given up as dead (see [`Conn`]).
const PROBE_PATIENCE: u32 = 3;

/// The connection in use, numbered, so that when many requests fail on the same one at
/// once it is replaced once, not once per request.
struct Current<C> {
    numbered: RwLock<(u64, C)>,
}

impl<C: Clone> Current<C> {
    fn new(connection: C) -> Self {
        Current {
            numbered: RwLock::new((0, connection)),
        }
    }

    fn get(&self) -> (u64, C) {
        self.numbered
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts a fresh connection in place of connection number `stale`, unless that one is
    /// gone already. Says whether it did.
    fn replace(&self, stale: u64, fresh: impl FnOnce() -> Option<C>) -> bool {
        let mut numbered = self
            .numbered
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if numbered.0 != stale {
            return false;
        }
        match fresh() {
            Some(connection) => {
                *numbered = (stale + 1, connection);
                true
            }
            None => false,
        }
    }
}

/// Creates the connection without waiting for Redis, so a process started during an outage
/// still answers (with 503) and recovers once Redis is back. [`Conn::open`] connects ahead.
pub fn connect(settings: &RedisSettings, url: &str) -> Result<Conn, RedisError> {
    let mut info = url.into_connection_info()?;
    // No `CLIENT SETINFO` after connecting: without AUTH it is a round trip of its own, on
    // every cold start and reconnect, to label the connection in `CLIENT LIST`.
    let mut redis_settings = info.redis_settings().clone().set_skip_set_lib_name();
    if let Some(user) = &settings.username {
        redis_settings = redis_settings.set_username(user);
    }
    if let Some(password) = &settings.password {
        redis_settings = redis_settings.set_password(password);
    }
    info = info.set_redis_settings(redis_settings);
    let config = ConnectionManagerConfig::new()
        .set_connection_timeout(Some(settings.connect_timeout))
        // Requests time out sooner, by `reply_within`; this bound is the probe's.
        .set_response_timeout(Some(settings.response_timeout * PROBE_PATIENCE))
        // Fail fast: a request that cannot reach Redis answers 503 at once and the next
        // request tries again, instead of one request waiting through a long backoff.
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(200));
    // `rediss://` trusts `REDIS_CA_FILE`, or else the Amazon roots ElastiCache's certificates
    // chain to: the roots the AWS SDK client trusts too, not the whole public web's.
    let roots = matches!(info.addr(), ConnectionAddr::TcpTls { .. }).then(|| {
        settings
            .ca_roots
            .as_deref()
            .unwrap_or(AMAZON_TRUST_SERVICES)
    });
    let client = match roots {
        Some(roots) => Client::build_with_tls(info.clone(), trusting(roots))?,
        None => Client::open(info.clone())?,
    };
    let current = ConnectionManager::new_lazy_with_config(client.clone(), config.clone())?;
    let mut cluster = ClusterClient::builder(vec![info])
        .connection_timeout(settings.connect_timeout)
        // As for standalone: requests time out sooner, by `reply_within`.
        .response_timeout(settings.response_timeout * PROBE_PATIENCE)
        .retries(2);
    if let Some(user) = &settings.username {
        cluster = cluster.username(user);
    }
    if let Some(password) = &settings.password {
        cluster = cluster.password(password);
    }
    if let Some(roots) = roots {
        cluster = cluster.certs(trusting(roots));
    }
    Ok(Conn(Arc::new(Shared {
        mode: settings.mode,
        standalone: Standalone {
            client,
            config,
            current: Current::new(current),
            next_demoted_replacement: Mutex::new(None),
        },
        cluster_client: cluster.build()?,
        resolved: OnceCell::new(),
        cluster: Current::new(Arc::new(OnceCell::new())),
        renewing: AtomicBool::new(false),
        // Connect to the endpoint, read the slot map, connect to each primary and ask it.
        renew_within: (settings.connect_timeout + settings.response_timeout) * 2,
        reply_within: settings.response_timeout,
        probing: AtomicBool::new(false),
        in_flight: Arc::new(Semaphore::new(settings.max_in_flight as usize)),
        next_primary_guard: Mutex::new(None),
    })))
}

/// Whether the instant in `next` has come (or none is set); if so, the next one is `every`
/// from now. So whatever it gates happens at most once `every`.
fn once_a_period(next: &Mutex<Option<Instant>>, every: Duration) -> bool {
    let mut next = next.lock().unwrap_or_else(PoisonError::into_inner);
    let now = Instant::now();
    if next.is_some_and(|at| now < at) {
        return false;
    }
    *next = Some(now + every);
    true
}

/// TLS that trusts only `roots` (PEM).
fn trusting(roots: &[u8]) -> TlsCertificates {
    TlsCertificates {
        client_tls: None,
        root_cert: Some(roots.to_vec()),
    }
}

impl Conn {
    /// Runs one script call.
    pub async fn invoke<T: FromRedisValue>(&self, call: ScriptCall) -> Result<T, RedisError> {
        let mut batch = Batch::new();
        batch.script(call);
        self.single(batch).await
    }

    /// Sends one command on `key`.
    pub async fn query<T: FromRedisValue>(&self, key: &str, cmd: Cmd) -> Result<T, RedisError> {
        let mut batch = Batch::new();
        batch.command(key, cmd);
        self.single(batch).await
    }

    async fn single<T: FromRedisValue>(&self, batch: Batch) -> Result<T, RedisError> {
        let reply = self.send(&batch).await?.pop().unwrap_or(Value::Nil);
        Ok(redis::from_redis_value(reply)?)
    }

    /// Opens the connection now, during the Lambda init phase, so the first request does not
    /// pay for TCP, TLS, AUTH and (for `auto`) the mode check. Bounded by the connect timeout;
    /// if Redis cannot be reached the connection simply stays lazy, and the first request
    /// tries again (and answers 503 if Redis is still down).
    pub async fn open(&self, timeout: Duration) {
        let mut batch = Batch::new();
        batch.command("", redis::cmd("PING"));
        match tokio::time::timeout(timeout, self.send(&batch)).await {
            Ok(Ok(_)) => {}
            Ok(Err(err)) => {
                tracing::warn!(%err, "redis unreachable at cold start; requests will retry")
            }
            Err(_) => tracing::warn!("redis did not answer at cold start; requests will retry"),
        }
    }

    /// Sends `batch`; one reply per staged call, in order. Standalone: one pipeline.
    /// Cluster: one pipeline per hash slot, all in flight at once.
    ///
    /// Shed at once, without reaching Redis, when the connection already has
    /// `REDIS_MAX_IN_FLIGHT` requests in flight (an outage error: 503 with `Retry-After`).
    /// Every reply waits at most a response timeout, and all of them together at most what
    /// is left of the request's budget (see [`super::request`]).
    pub async fn send(&self, batch: &Batch) -> Result<Vec<Value>, RedisError> {
        self.send_each(batch).await?.into_iter().collect()
    }

    /// Sends `batch` as [`Conn::send`] does, and answers each call on its own: on a cluster a
    /// shard that fails fails only its own calls, and the others' replies stand. For a caller
    /// that can go on without one shard (the line's tick, during a failover). Standalone, and
    /// where the connection itself fails, the whole send fails.
    pub async fn send_each(
        &self,
        batch: &Batch,
    ) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        let Ok(permit) = self.0.in_flight.clone().try_acquire_owned() else {
            return Err(shed());
        };
        let in_flight = Arc::new(permit);
        let limit = Limit::starting_now(self.0.reply_within);
        match self.mode(&limit).await? {
            RedisMode::Cluster => self.send_cluster(batch, &limit, &in_flight).await,
            _ => {
                let (number, manager) = self.0.standalone.current.get();
                let mut pipe = redis::pipe();
                for (_, cmd) in &batch.entries {
                    pipe.add_command(cmd.clone());
                }
                let result =
                    run_pipeline(&manager, &pipe, &batch.scripts, &limit, &in_flight).await;
                if let Err(err) = &result {
                    self.after_standalone_failure(number, manager, err);
                }
                Ok(result?.into_iter().map(Ok).collect())
            }
        }
    }

    async fn send_cluster(
        &self,
        batch: &Batch,
        limit: &Limit,
        in_flight: &Arc<OwnedSemaphorePermit>,
    ) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
        let (number, cell) = self.0.cluster.get();
        let result = self.send_on_cluster(&cell, batch, limit, in_flight).await;
        let timed_out = match &result {
            Err(err) => err.is_timeout(),
            Ok(replies) => replies
                .iter()
                .any(|reply| reply.as_ref().is_err_and(RedisError::is_timeout)),
        };
        if timed_out {
            let slots = batch.entries.iter().map(|(slot, _)| *slot).collect();
            self.probe_cluster(number, cell, slots);
        }
        result
    }

    /// The cluster's [`Conn::probe_standalone`]: PINGs the primaries of `slots` through
    /// cluster connection number `number`, and opens a replacement ([`Conn::renew_cluster`])
    /// only if one of them gives no answer within [`PROBE_PATIENCE`] response timeouts.
    fn probe_cluster(
        &self,
        number: u64,
        cell: Arc<OnceCell<ClusterConnection>>,
        slots: HashSet<Slot>,
    ) {
        let patience = self.0.reply_within * PROBE_PATIENCE;
        let ping = async move {
            let Some(cluster) = cell.get() else {
                // Never connected: nothing to probe.
                return Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into());
            };
            let pings = slots.into_iter().map(|slot| {
                let mut cluster = cluster.clone();
                async move {
                    cluster
                        .route_command(
                            redis::cmd("PING"),
                            RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                                Route::with_slot(slot, SlotAddr::Master),
                            )),
                        )
                        .await
                }
            });
            in_time(patience, futures::future::try_join_all(pings))
                .await
                .map(drop)
        };
        self.probe(ping, move |conn, _| conn.renew_cluster(number));
    }

    /// Opens a new cluster connection in the background, to take the place of connection
    /// number `stale` once it reaches every primary. One at a time.
    fn renew_cluster(&self, stale: u64) {
        if self.0.renewing.swap(true, Ordering::AcqRel) {
            return;
        }
        let conn = self.clone();
        tokio::spawn(async move {
            let shared = &conn.0;
            let opened = tokio::time::timeout(shared.renew_within, async {
                let mut fresh = shared.cluster_client.get_async_connection().await?;
                reaches_every_primary(&mut fresh).await?;
                Ok::<_, RedisError>(fresh)
            })
            .await;
            match opened {
                Ok(Ok(fresh)) => {
                    if shared
                        .cluster
                        .replace(stale, || Some(Arc::new(OnceCell::from(fresh))))
                    {
                        tracing::warn!("redis did not answer in time; now on a new connection");
                    }
                }
                Ok(Err(err)) => {
                    tracing::warn!(%err, "could not open a new redis connection; keeping the old")
                }
                Err(_) => tracing::warn!("no new redis connection in time; keeping the old"),
            }
            shared.renewing.store(false, Ordering::Release);
        });
    }

    async fn send_on_cluster(
        &self,
        cell: &Arc<OnceCell<ClusterConnection>>,
        batch: &Batch,
        limit: &Limit,
        in_flight: &Arc<OwnedSemaphorePermit>,
    ) -> Result<Vec<Result<Value, RedisError>>, RedisError> {
        let conn = self.cluster_connection(cell, limit).await?;
        let mut groups: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (index, (slot, _)) in batch.entries.iter().enumerate() {
            groups.entry(*slot).or_default().push(index);
        }
        let sends = groups.into_values().map(|indices| {
            let conn = &conn;
            let mut pipe = redis::pipe();
            for index in &indices {
                pipe.add_command(batch.entries[*index].1.clone());
            }
            async move {
                let replies = run_pipeline(conn, &pipe, &batch.scripts, limit, in_flight).await;
                (indices, replies)
            }
        });
        let mut replies: Vec<Result<Value, RedisError>> = vec![Ok(Value::Nil); batch.entries.len()];
        for (indices, group) in futures::future::join_all(sends).await {
            match group {
                Ok(group) => {
                    for (index, reply) in indices.into_iter().zip(group) {
                        replies[index] = Ok(reply);
                    }
                }
                Err(err) => {
                    for index in indices {
                        replies[index] = Err(err.clone());
                    }
                }
            }
        }
        Ok(replies)
    }

    /// The cluster connection in `cell`, opened first if it is not yet. The opening goes on
    /// in the background when the request has no time left to wait for it, so that requests
    /// that each wait less than it takes still end up with a connection.
    async fn cluster_connection(
        &self,
        cell: &Arc<OnceCell<ClusterConnection>>,
        limit: &Limit,
    ) -> Result<ClusterConnection, RedisError> {
        if let Some(conn) = cell.get() {
            return Ok(conn.clone());
        }
        let opening = {
            let (cell, client) = (cell.clone(), self.0.cluster_client.clone());
            tokio::spawn(async move {
                cell.get_or_try_init(|| client.get_async_connection())
                    .await
                    .cloned()
            })
        };
        match tokio::time::timeout(limit.remaining(), opening).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(panicked)) => Err(std::io::Error::other(panicked).into()),
            Err(_) => Err(timed_out()),
        }
    }

    /// Standalone or cluster, as configured, or as the server says for `auto`.
    async fn mode(&self, limit: &Limit) -> Result<RedisMode, RedisError> {
        match self.0.mode {
            RedisMode::Auto => self
                .0
                .resolved
                .get_or_try_init(|| async {
                    let (number, mut manager) = self.0.standalone.current.get();
                    let info: String = in_time(
                        limit.next_reply(),
                        redis::cmd("INFO").arg("cluster").query_async(&mut manager),
                    )
                    .await
                    .inspect_err(|err| {
                        self.after_standalone_failure(number, manager.clone(), err)
                    })?;
                    Ok::<_, RedisError>(if info.contains("cluster_enabled:1") {
                        RedisMode::Cluster
                    } else {
                        RedisMode::Standalone
                    })
                })
                .await
                .copied(),
            fixed => Ok(fixed),
        }
    }

    /// Whether a pipeline of plain reads carries the primary guard
    /// ([`primary_guard`](super::primary_guard)) now: the first time, then at most once
    /// `every`. A read-only replica refuses the guarded pipeline, which replaces the
    /// connection, so a container that only reads follows a failover within `every`, at one
    /// command a period rather than one a request.
    pub fn primary_guard_due(&self, every: Duration) -> bool {
        once_a_period(&self.0.next_primary_guard, every)
    }

    /// What a failed request on standalone connection number `number` says about it. A
    /// demoted server (`READONLY`) is of no more use: the connection is replaced, at most
    /// once a response timeout. A timeout means Redis is slow, or the connection is dead: a
    /// probe tells which.
    fn after_standalone_failure(&self, number: u64, manager: ConnectionManager, err: &RedisError) {
        if is_demoted(err) {
            if self.demoted_replacement_due() {
                self.replace_standalone(number, err);
            }
        } else if err.is_timeout() {
            self.probe_standalone(number, manager);
        }
    }

    /// Whether a connection that reached a demoted server may be replaced now; if so, the
    /// next such replacement waits a response timeout.
    fn demoted_replacement_due(&self) -> bool {
        once_a_period(
            &self.0.standalone.next_demoted_replacement,
            self.0.reply_within,
        )
    }

    /// Sends standalone connection number `number` a PING, and replaces the connection if no
    /// answer comes within [`PROBE_PATIENCE`] response timeouts (the manager's own timeout).
    fn probe_standalone(&self, number: u64, mut manager: ConnectionManager) {
        let ping = async move { redis::cmd("PING").query_async::<()>(&mut manager).await };
        self.probe(ping, move |conn, err| conn.replace_standalone(number, &err));
    }

    /// Runs `ping` in the background, one probe at a time, and calls `give_up` if it fails.
    /// An answer, however late, shows Redis is slow, not gone: reconnecting then would only
    /// add TCP, TLS and AUTH work to a server that is already behind, from every container
    /// at once.
    fn probe(
        &self,
        ping: impl std::future::Future<Output = Result<(), RedisError>> + Send + 'static,
        give_up: impl FnOnce(&Conn, RedisError) + Send + 'static,
    ) {
        if self.0.probing.swap(true, Ordering::AcqRel) {
            return;
        }
        let conn = self.clone();
        tokio::spawn(async move {
            match ping.await {
                Ok(()) => tracing::info!("redis answered late; keeping the connection"),
                Err(err) => give_up(&conn, err),
            }
            conn.0.probing.store(false, Ordering::Release);
        });
    }

    /// Puts a new, lazily opened connection in place of standalone connection number `stale`.
    fn replace_standalone(&self, stale: u64, err: &RedisError) {
        let standalone = &self.0.standalone;
        let replaced = standalone.current.replace(stale, || {
            ConnectionManager::new_lazy_with_config(
                standalone.client.clone(),
                standalone.config.clone(),
            )
            .inspect_err(|err| tracing::warn!(%err, "could not create a new redis connection"))
            .ok()
        });
        if replaced {
            tracing::warn!(%err, "redis connection given up; the next request opens a new one");
        }
    }
}

/// Whether `conn` gets an answer from every primary in the slot map it was given. Only
/// such a connection is better than one that timed out: redis-rs's fan-out skips nodes it
/// has no connection to, so each primary is asked by address.
async fn reaches_every_primary(conn: &mut ClusterConnection) -> Result<(), RedisError> {
    let slots: Vec<Value> = redis::from_redis_value(
        conn.route_command(
            redis::cmd("CLUSTER").arg("SLOTS").clone(),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
        )
        .await?,
    )?;
    let mut primaries = HashSet::new();
    for range in slots {
        // [first slot, last slot, [host, port, id, ...], replicas...]
        let Value::Array(parts) = range else { continue };
        let Some(Value::Array(primary)) = parts.get(2) else {
            continue;
        };
        if let (Some(host), Some(port)) = (primary.first(), primary.get(1)) {
            primaries.insert((
                redis::from_redis_value::<String>(host.clone())?,
                redis::from_redis_value::<u16>(port.clone())?,
            ));
        }
    }
    for (host, port) in primaries {
        conn.route_command(
            redis::cmd("PING"),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port }),
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Current;

    #[test]
    fn a_connection_is_replaced_once_however_many_requests_failed_on_it() {
        let current = Current::new("first");
        let (number, _) = current.get();
        assert!(current.replace(number, || Some("second")));
        // A later failure on the first connection leaves the second in place.
        assert!(!current.replace(number, || panic!("not even built")));
        assert_eq!(current.get(), (1, "second"));
        // A failure on the second replaces it.
        assert!(current.replace(1, || Some("third")));
        assert!(!current.replace(2, || None));
        assert_eq!(current.get(), (2, "third"));
    }
}
