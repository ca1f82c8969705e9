//! Redis access: the connection every function creates once per container, how its
//! failures are classified, and the key layout.
//!
//! Every key starts with `KEY_PREFIX`. The keys of one queue share the hash tag
//! `{q:<queueId>}`, so each queue script runs on one shard of Redis Cluster or ElastiCache
//! Serverless; the ranking keys share `{rk}` (see [`crate::ranking`]). The queue registry
//! is the one key outside any tag; the one script that touches it touches nothing else.

use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, Slot, SlotAddr};
use redis::{
    Client, Cmd, ConnectionAddr, FromRedisValue, IntoConnectionInfo, ParsingError, RedisError,
    Script, ServerErrorKind, TlsCertificates, ToRedisArgs, Value,
};
use tokio::sync::OnceCell;

use crate::aws::AMAZON_TRUST_SERVICES;
use crate::config::{RedisMode, RedisSettings};
use crate::ids::{PaymentId, QueueId};

/// The shared connection. Cheap to clone.
///
/// Standalone (`REDIS_MODE=standalone`, the default): one multiplexed connection that
/// reconnects by itself after Redis closes or resets it, and is replaced when the server it
/// reached has stopped being the primary (`READONLY` after a failover), so a warm container
/// never sticks to a demoted node. That replacement happens at most once a response timeout:
/// while DNS still leads to the demoted node, so does each new connection.
///
/// Cluster (`REDIS_MODE=cluster`, or `auto` against a cluster): redis-rs's cluster client,
/// which follows MOVED and ASK, refreshes the topology, and reconnects. Every operation goes
/// through the same [`Batch`] either way; in cluster mode a batch is sent as one pipeline
/// per hash slot, all at once, so it still costs one round trip of wall time.
///
/// Either way, a reply that times out can replace the connection too. Neither client does
/// that by itself: a connection whose peer vanished without a reset (a partition, a replaced
/// node, a failover to a new address) would otherwise time out every request until the
/// kernel gave up on it, about 15 minutes later. Standalone, a timeout starts a probe: a
/// PING on the same connection, allowed [`PROBE_PATIENCE`] response timeouts. No answer, and
/// the next request opens a new connection. An answer means Redis is slow, not gone, and the
/// connection stays, so that a Redis already behind is not also sent a reconnection from
/// every container on every timeout. Cluster, the probe PINGs the primaries the request went
/// to, and if one does not answer, a new connection is opened beside the old one and takes
/// over only once every primary in its slot map answers: the old one knows every node, a new
/// one only the configured endpoint, so if that is what went away, the old one stays and
/// finds the new topology itself.
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
    })))
}

/// TLS that trusts only `roots` (PEM).
fn trusting(roots: &[u8]) -> TlsCertificates {
    TlsCertificates {
        client_tls: None,
        root_cert: Some(roots.to_vec()),
    }
}

/// A script that only reads, yet must read the primary. Its Redis 7 flags leave out
/// `no-writes`, so a read-only replica refuses it with `READONLY`, as it refuses a write.
/// A container that only reads (the gatekeeper, the ranking reads) then replaces its
/// connection after a failover and follows the primary endpoint, instead of reading the
/// demoted primary for as long as it lives: that one lags, and if cut off from the new
/// primary it stays frozen at the failover. `allow-oom` keeps reads working when Redis is
/// full.
pub fn primary_read_script(body: &str) -> Script {
    Script::new(&format!("#!lua flags=allow-oom\n{body}"))
}

/// One script call: the script, its keys (all under one hash tag) and its arguments. Sent
/// as EVALSHA; a server that lacks the script gets it loaded and the call sent again.
pub struct ScriptCall {
    script: &'static Script,
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
}

impl ScriptCall {
    pub fn new(script: &'static Script) -> Self {
        ScriptCall {
            script,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }

    pub fn key(&mut self, key: impl Into<String>) -> &mut Self {
        self.keys.push(key.into());
        self
    }

    pub fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    fn command(&self) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }

    /// The call as one command line (`EVALSHA`, hash, key count, keys, arguments), for a tool
    /// that sends it itself: the benchmark's `redis-benchmark` runs.
    pub fn command_line(&self) -> Vec<Vec<u8>> {
        self.command()
            .args_iter()
            .filter_map(|arg| match arg {
                redis::Arg::Simple(bytes) => Some(bytes.to_vec()),
                _ => None,
            })
            .collect()
    }
}

/// Work from one or more owners (the rankings and the waiting room, say) sent together.
/// Each owner stages its calls ([`Batch::stage`], [`Batch::stage_command`]) and later reads
/// its own replies through the [`Staged`] handles they gave it.
#[derive(Default)]
pub struct Batch {
    entries: Vec<(Slot, Cmd)>,
    scripts: Vec<&'static Script>,
}

impl Batch {
    pub fn new() -> Self {
        Batch::default()
    }

    /// Adds a script call; returns the index its reply will have.
    fn script(&mut self, call: ScriptCall) -> usize {
        if !self.scripts.iter().any(|s| std::ptr::eq(*s, call.script)) {
            self.scripts.push(call.script);
        }
        let slot = Slot::for_key(call.keys.first().map(String::as_str).unwrap_or_default());
        self.entries.push((slot, call.command()));
        self.entries.len() - 1
    }

    /// Adds a plain command on `key`; returns the index its reply will have.
    fn command(&mut self, key: &str, cmd: Cmd) -> usize {
        self.entries.push((Slot::for_key(key), cmd));
        self.entries.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A call staged in a [`Batch`]: once the batch is sent, decodes its own reply as `T` from
/// the batch's replies. Owners hand these out from their `stage_*` methods, so no caller
/// counts pipeline indices or decodes another owner's reply.
pub struct Staged<T> {
    index: usize,
    reply: PhantomData<fn() -> T>,
}

impl<T: FromRedisValue> Staged<T> {
    /// This call's reply, from what [`Conn::send`] returned for the batch.
    pub fn read(&self, replies: &[Value]) -> Result<T, RedisError> {
        let reply = replies
            .get(self.index)
            .ok_or_else(|| ParsingError::from(format!("no reply {}", self.index)))?;
        Ok(T::from_redis_value_ref(reply)?)
    }
}

impl Batch {
    /// Adds a script call whose reply decodes as `T`.
    pub fn stage<T: FromRedisValue>(&mut self, call: ScriptCall) -> Staged<T> {
        Staged {
            index: self.script(call),
            reply: PhantomData,
        }
    }

    /// Adds a plain command on `key` whose reply decodes as `T`.
    pub fn stage_command<T: FromRedisValue>(&mut self, key: &str, cmd: Cmd) -> Staged<T> {
        Staged {
            index: self.command(key, cmd),
            reply: PhantomData,
        }
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
    pub async fn send(&self, batch: &Batch) -> Result<Vec<Value>, RedisError> {
        if batch.is_empty() {
            return Ok(Vec::new());
        }
        match self.mode().await? {
            RedisMode::Cluster => self.send_cluster(batch).await,
            _ => {
                let (number, mut manager) = self.0.standalone.current.get();
                let mut pipe = redis::pipe();
                for (_, cmd) in &batch.entries {
                    pipe.add_command(cmd.clone());
                }
                let result =
                    run_pipeline(&mut manager, &pipe, &batch.scripts, self.0.reply_within).await;
                if let Err(err) = &result {
                    self.after_standalone_failure(number, manager, err);
                }
                result
            }
        }
    }

    async fn send_cluster(&self, batch: &Batch) -> Result<Vec<Value>, RedisError> {
        let (number, cell) = self.0.cluster.get();
        let result = self.send_on_cluster(&cell, batch).await;
        if let Err(err) = &result {
            if err.is_timeout() {
                let slots = batch.entries.iter().map(|(slot, _)| *slot).collect();
                self.probe_cluster(number, cell, slots);
            }
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
        cell: &OnceCell<ClusterConnection>,
        batch: &Batch,
    ) -> Result<Vec<Value>, RedisError> {
        let conn = cell
            .get_or_try_init(|| self.0.cluster_client.get_async_connection())
            .await?
            .clone();
        let mut groups: HashMap<Slot, Vec<usize>> = HashMap::new();
        for (index, (slot, _)) in batch.entries.iter().enumerate() {
            groups.entry(*slot).or_default().push(index);
        }
        let sends = groups.into_values().map(|indices| {
            let mut conn = conn.clone();
            let mut pipe = redis::pipe();
            for index in &indices {
                pipe.add_command(batch.entries[*index].1.clone());
            }
            async move {
                let replies =
                    run_pipeline(&mut conn, &pipe, &batch.scripts, self.0.reply_within).await?;
                Ok::<_, RedisError>(indices.into_iter().zip(replies))
            }
        });
        let mut replies = vec![Value::Nil; batch.entries.len()];
        for group in futures::future::try_join_all(sends).await? {
            for (index, reply) in group {
                replies[index] = reply;
            }
        }
        Ok(replies)
    }

    /// Standalone or cluster, as configured, or as the server says for `auto`.
    async fn mode(&self) -> Result<RedisMode, RedisError> {
        match self.0.mode {
            RedisMode::Auto => self
                .0
                .resolved
                .get_or_try_init(|| async {
                    let (number, mut manager) = self.0.standalone.current.get();
                    let info: String = in_time(
                        self.0.reply_within,
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
        let mut next = self
            .0
            .standalone
            .next_demoted_replacement
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if next.is_some_and(|at| now < at) {
            return false;
        }
        *next = Some(now + self.0.reply_within);
        true
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

/// Sends `pipe` in one round trip. If the server lost its script cache (a restart, a
/// failover, `SCRIPT FLUSH`), loads `scripts` and sends the pipeline once more; every script
/// in lineup is safe to re-run after a NOSCRIPT, which runs nothing.
async fn run_pipeline<C: redis::aio::ConnectionLike>(
    conn: &mut C,
    pipe: &redis::Pipeline,
    scripts: &[&'static Script],
    reply_within: Duration,
) -> Result<Vec<Value>, RedisError> {
    match in_time(reply_within, pipe.query_async(conn)).await {
        Err(err) if is_noscript(&err) => {
            for script in scripts {
                in_time(reply_within, script.load_async(conn)).await?;
            }
            in_time(reply_within, pipe.query_async(conn)).await
        }
        other => other,
    }
}

/// What `reply` gives, or a timeout error (`is_timeout`) once `within` has passed.
async fn in_time<T>(
    within: Duration,
    reply: impl std::future::Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    tokio::time::timeout(within, reply)
        .await
        .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into()))
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
    /// Hash: ticket counter, admission counters, rate estimate, heartbeat window bookkeeping,
    /// the registration mark. Expires `SESSION + WAITING_IDLE + QUEUE_RETIRE_AFTER` after the
    /// queue's last buyer reply, settings change or promotion tick; deleted on retirement.
    pub meta: String,
    /// Hash: the queue's own settings, where they differ from the environment's defaults, and
    /// when an operator created the queue. The operator's: no TTL, kept on retirement.
    pub settings: String,
    /// Hashes of issue requests per user and per source IP in a one-minute window, two
    /// used in turn.
    pub rate: [String; 2],
    /// Hashes of ticket → why it lost its place (`expired`, `paid`, `dropped`, `left`) and whose it was, one
    /// per generation of `max(session, idle period, 5 min)`, used in turn, each expiring
    /// two generations after its last write: a record lives one to two generations.
    pub gone: [String; 2],
    /// Hashes of heartbeats, one per time window, reused in rotation: field ticket ÷ 32,
    /// value the 32-bit mask of that chunk's tickets seen in the window.
    pub seen: Vec<String>,
}

/// How many heartbeat hashes rotate per queue: one per window of the idle period plus
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
            gone: [format!("{base}:gone:0"), format!("{base}:gone:1")],
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
            &self.gone[0],
            &self.gone[1],
        ]
        .into_iter()
        .chain(self.seen.iter())
        .map(String::as_str)
    }
}

/// The marker of a payment's release in `queue`, under the queue's hash tag: set by the
/// payment's first delivery, so a redelivery releases nothing.
pub fn queue_payment_key(prefix: &str, queue: &QueueId, payment: &PaymentId) -> String {
    format!("{prefix}:{{q:{queue}}}:paid:{payment}")
}

/// The set of live queue ids (at most `MAX_QUEUES`), so the promoter and reaper find queues
/// without scanning the keyspace. A queue leaves it when the reaper retires it.
pub fn queue_registry_key(prefix: &str) -> String {
    format!("{prefix}:queues")
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
