//! Test support: a real Redis per test (a private `redis-server` on a free port, or
//! `REDIS_URL` with a unique key prefix), the functions wired to it exactly as their
//! `main.rs` wires them, and helpers to build the events AWS would send. The calls and
//! checks that several suites share live here too: [`queue`] (a buyer's and an operator's
//! calls), [`rankings`] (payment events and board reads) and [`outage`] (Redis out of reach).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use lambda_http::{Body, Response};
use lineup::cold_start::{Publishing, Started};
use lineup::config::{Config, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup::publish::Publisher;
use lineup::queue::WaitingRoom;
use lineup_local::embedded_redis::EmbeddedRedis;
use lineup_local::Stack;

pub mod cli;
mod cluster;
mod cpu_cap;
pub mod door;
pub mod draw;
pub mod issuer;
mod link;
pub mod logs;
mod moto;
pub mod outage;
pub mod queue;
pub mod rankings;
mod throttle;
mod tls;
pub mod verifiers;
pub use cluster::{slot_ranges, EmbeddedCluster};
pub use cpu_cap::{CpuCap, Throttling};
pub use link::Link;
pub use moto::{aws_config_for, Moto};
use serde_json::{json, Value};
pub use throttle::ThrottlingEndpoint;
pub use tls::{Certificates, CERTIFIED_HOST};

/// A running test environment.
/// The admission issuer of a test app that serves nothing over HTTP.
pub const ADMISSION_ISSUER: &str = "http://127.0.0.1:9";
/// The audience test apps sign admissions for.
pub const ADMISSION_AUDIENCE: &str = "booking-test";
/// The test apps' admission key set: one RS256 key, `test-1`, signing since 2026-01-01.
pub const ADMISSION_KEYS: &str = include_str!("../fixtures/admission/keys.json");
/// A key that is in no test app's set, `stranger`.
pub const STRANGER_KEYS: &str = include_str!("../fixtures/admission/stranger.json");

pub struct TestApp {
    pub config: Config,
    /// The variables `config` was read from.
    vars: HashMap<String, String>,
    pub stack: Stack,
    /// Every EMF line the functions wrote.
    pub metrics: MetricsSink,
    /// Present when the test started its own server.
    pub redis: Option<EmbeddedRedis>,
    /// Present when the test runs against a local cluster (`LINEUP_TEST_REDIS=cluster`).
    pub cluster: Option<EmbeddedCluster>,
    /// The replica of `redis`, in a replication group ([`TestApp::spawn_on_replication_group`]).
    pub replica: Option<EmbeddedRedis>,
    /// A connection for inspecting Redis directly (cluster-aware in cluster mode).
    pub inspect: Inspect,
    /// Every node, for per-node statistics.
    nodes: Vec<String>,
    /// The certificate files of a TLS server, kept while it runs.
    _certificates: Option<Certificates>,
    /// The proxies the functions reach Redis through, when they do: one, or one per
    /// cluster node, in node order.
    pub links: Vec<Link>,
}

/// What becomes of the old primary in [`TestApp::fail_over`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OldPrimary {
    /// It replicates from the new primary.
    Follows,
    /// It cannot reach the new primary, and keeps the data it had.
    CutOff,
}

static NEXT_PREFIX: AtomicU64 = AtomicU64::new(0);

/// The local stack's own settings with the reaper running every second, as the tests of the
/// local stack's schedules run it.
pub fn reaping_every_second() -> lineup::config::LocalSettings {
    lineup::config::LocalSettings {
        reap_interval: Duration::from_secs(1),
    }
}

/// The tests that load both cores (`load::`, the crash under load of `faults::`, the Chromium
/// scripts of `browser::`) and the overload test's capped Redis take turns with each other and
/// with the real-clock on-sales of `estimates::`: each holds the write lock. The on-sales load
/// little (300 buyers, a tick a second), so they share the read lock. A test waiting here holds
/// a test thread and runs nothing, so `.cargo/config.toml` gives the tests four on two cores.
pub static CPU_HEAVY: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

impl TestApp {
    /// Starts everything with the documented defaults (except a promoter budget of 0)
    /// overridden by `vars`.
    pub async fn spawn(vars: &[(&str, &str)]) -> TestApp {
        TestApp::spawn_with(vars, Publisher::disabled(), false).await
    }

    /// The same, with queue state events going to `publisher`.
    pub async fn spawn_publishing(vars: &[(&str, &str)], publisher: Publisher) -> TestApp {
        TestApp::spawn_with(vars, publisher, false).await
    }

    /// The same, on a private server with the append-only file fsynced on every write, so
    /// a restart after a kill keeps every acknowledged write. Always a private server.
    pub async fn spawn_durable(vars: &[(&str, &str)]) -> TestApp {
        TestApp::spawn_with(vars, Publisher::disabled(), true).await
    }

    /// The same, always on a private local cluster of three primaries (`replicas` adds a
    /// replica to each), whatever `LINEUP_TEST_REDIS` says.
    pub async fn spawn_on_cluster(vars: &[(&str, &str)], replicas: bool) -> TestApp {
        let cluster = EmbeddedCluster::start(replicas).await;
        TestApp::build(vars, Publisher::disabled(), None, Some(cluster)).await
    }

    /// The same, on a private server that the functions reach only through [`Link`], a
    /// proxy that holds every byte back `delay` each way and can be partitioned (the tests
    /// inspect the server directly).
    pub async fn spawn_behind_link(vars: &[(&str, &str)], delay: Duration) -> TestApp {
        let server = EmbeddedRedis::start().await.expect("start redis-server");
        let link = Link::start(server.port(), delay).await;
        let url = format!("redis://127.0.0.1:{}", link.port);
        let mut app = TestApp::build_on(vars, Publisher::disabled(), Some(server), None, url).await;
        app.links = vec![link];
        app
    }

    /// The same on a non-cluster replication group: a private primary (`redis`, which the
    /// tests inspect) and its replica (`replica`), in sync before this returns. The functions
    /// reach the primary only through [`Link`], which stands for the group's primary
    /// endpoint: [`Link::retarget`] is the endpoint's move in a failover.
    pub async fn spawn_on_replication_group(vars: &[(&str, &str)]) -> TestApp {
        let mut app = TestApp::spawn_behind_link(vars, Duration::ZERO).await;
        let replica = EmbeddedRedis::start().await.expect("start redis-server");
        let primary_port = app.redis.as_ref().expect("a private primary").port();
        // Sync at once, not after the default 5 s wait for more replicas to join.
        redis::cmd("CONFIG")
            .arg("SET")
            .arg("repl-diskless-sync-delay")
            .arg(0)
            .query_async::<()>(&mut app.inspect.clone())
            .await
            .expect("CONFIG SET");
        let mut to_replica = redis::Client::open(replica.url())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("replica connection");
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(primary_port)
            .query_async::<()>(&mut to_replica)
            .await
            .expect("REPLICAOF");
        for _ in 0..100 {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut to_replica)
                .await
                .expect("INFO");
            if info.contains("master_link_status:up") {
                app.replica = Some(replica);
                return app;
            }
            sleep(Duration::from_millis(50)).await;
        }
        panic!("the replica did not sync with its primary within 5 s");
    }

    /// Fails the replication group over as ElastiCache does: the replica is promoted and the
    /// primary endpoint moves to it ([`Link::retarget`]), so new connections reach it. The
    /// old primary (`redis`, still reached by the connections opened before) is demoted:
    /// it refuses writes from then on, and answers reads from what it has, in step with the
    /// new primary or, cut off from it, frozen at the failover.
    pub async fn fail_over(&self, old_primary: OldPrimary) {
        self.promote_replica().await;
        let replica = self.replica.as_ref().expect("a replication group");
        self.link().retarget(replica.port());
        let follows = match old_primary {
            OldPrimary::Follows => replica.port(),
            // Nothing listens there: the old primary keeps trying, and serves stale reads.
            OldPrimary::CutOff => free_port(),
        };
        self.demote_old_primary(follows).await;
    }

    /// The same, except that the endpoint still leads to the demoted old primary, as while a
    /// failover's new address has not yet reached DNS; [`Link::retarget`] moves it.
    pub async fn fail_over_without_moving_the_endpoint(&self) {
        self.promote_replica().await;
        let replica = self.replica.as_ref().expect("a replication group");
        self.demote_old_primary(replica.port()).await;
    }

    async fn promote_replica(&self) {
        let replica = self.replica.as_ref().expect("a replication group");
        let mut new_primary = redis::Client::open(replica.url())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("replica connection");
        redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query_async::<()>(&mut new_primary)
            .await
            .expect("promote the replica");
    }

    async fn demote_old_primary(&self, follows: u16) {
        redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(follows)
            .query_async::<()>(&mut self.inspect.clone())
            .await
            .expect("demote the old primary");
    }

    /// Waits until the replica has applied every write the primary has (`WAIT` would only
    /// wait for the inspecting connection's own writes).
    pub async fn until_replica_caught_up(&self) {
        let replica = self.replica.as_ref().expect("a replication group");
        let mut to_replica = redis::Client::open(replica.url())
            .expect("url")
            .get_multiplexed_async_connection()
            .await
            .expect("replica connection");
        let primary_offset = self.info_number("replication", "master_repl_offset").await;
        for _ in 0..100 {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut to_replica)
                .await
                .expect("INFO");
            if info_field(&info, "slave_repl_offset").is_some_and(|offset| offset >= primary_offset)
            {
                return;
            }
            sleep(Duration::from_millis(50)).await;
        }
        panic!("the replica did not reach offset {primary_offset} within 5 s");
    }

    /// The same on a private cluster of three primaries, each of which the functions reach
    /// only through its own [`Link`] (`links`, in the order of `cluster.nodes`).
    pub async fn spawn_on_cluster_behind_links(vars: &[(&str, &str)]) -> TestApp {
        let cluster = EmbeddedCluster::start(false).await;
        let links = cluster.announce_through_links().await;
        let url = format!("redis://127.0.0.1:{}", links[0].port);
        let mut app =
            TestApp::build_on(vars, Publisher::disabled(), None, Some(cluster), url).await;
        app.links = links;
        app
    }

    /// The proxy between the functions and Redis ([`TestApp::spawn_behind_link`]).
    pub fn link(&self) -> &Link {
        self.links.first().expect("spawned behind a link")
    }

    /// The same, on a private server that the functions reach only over TLS, at
    /// `rediss://{host}`, trusting the CA that issued its certificate (`REDIS_CA_FILE`)
    /// unless `vars` says otherwise. The certificate is for [`CERTIFIED_HOST`] only.
    pub async fn spawn_over_tls(vars: &[(&str, &str)], host: &str) -> TestApp {
        let certificates = Certificates::issue(&[CERTIFIED_HOST]);
        let tls_port = free_port();
        let server = EmbeddedRedis::start_on_port(
            free_port(),
            &certificates
                .server_args(tls_port)
                .iter()
                .map(String::as_str)
                .collect::<Vec<_>>(),
        )
        .await
        .expect("redis-server with TLS (a build with TLS support)");
        let url = format!("rediss://{host}:{tls_port}");
        TestApp::build_over_tls(vars, certificates, Some(server), None, url).await
    }

    /// The same on a private cluster of three primaries that speaks only TLS to clients
    /// (and on its bus), with a certificate for 127.0.0.1, the address its nodes announce.
    pub async fn spawn_on_tls_cluster(vars: &[(&str, &str)]) -> TestApp {
        let certificates = Certificates::issue(&["127.0.0.1"]);
        let cluster = EmbeddedCluster::start_tls(&certificates).await;
        let url = format!("rediss://127.0.0.1:{}", cluster.tls_ports[0]);
        TestApp::build_over_tls(vars, certificates, None, Some(cluster), url).await
    }

    async fn build_over_tls(
        vars: &[(&str, &str)],
        certificates: Certificates,
        redis: Option<EmbeddedRedis>,
        cluster: Option<EmbeddedCluster>,
        url: String,
    ) -> TestApp {
        let mut all = vec![("REDIS_CA_FILE", certificates.ca_path())];
        all.extend_from_slice(vars);
        let mut app = TestApp::build_on(&all, Publisher::disabled(), redis, cluster, url).await;
        app._certificates = Some(certificates);
        app
    }

    async fn spawn_with(vars: &[(&str, &str)], publisher: Publisher, durable: bool) -> TestApp {
        if !durable && std::env::var("LINEUP_TEST_REDIS").as_deref() == Ok("cluster") {
            let cluster = EmbeddedCluster::start(false).await;
            return TestApp::build(vars, publisher, None, Some(cluster)).await;
        }
        let redis = match std::env::var("REDIS_URL") {
            Ok(url) if !url.is_empty() && !durable => {
                return TestApp::build_on(vars, publisher, None, None, url).await
            }
            _ if durable => EmbeddedRedis::start_durable().await,
            _ => EmbeddedRedis::start().await,
        }
        .expect("start redis-server");
        TestApp::build(vars, publisher, Some(redis), None).await
    }

    async fn build(
        vars: &[(&str, &str)],
        publisher: Publisher,
        redis: Option<EmbeddedRedis>,
        cluster: Option<EmbeddedCluster>,
    ) -> TestApp {
        let url = match (&redis, &cluster) {
            (Some(server), _) => server.url(),
            (_, Some(cluster)) => cluster.url(),
            _ => unreachable!("a server or a cluster"),
        };
        TestApp::build_on(vars, publisher, redis, cluster, url).await
    }

    async fn build_on(
        vars: &[(&str, &str)],
        publisher: Publisher,
        redis: Option<EmbeddedRedis>,
        cluster: Option<EmbeddedCluster>,
        url: String,
    ) -> TestApp {
        logs::anchor();
        let prefix = format!(
            "lineup-test-{}-{}",
            std::process::id(),
            NEXT_PREFIX.fetch_add(1, Ordering::Relaxed)
        );
        let mut all: HashMap<String, String> = HashMap::from([
            ("REDIS_URL".into(), url.clone()),
            ("KEY_PREFIX".into(), prefix),
            (
                "TOKEN_SECRET".into(),
                "test-secret-0123456789abcdef0123456789".into(),
            ),
            // One promotion tick per promoter invocation unless a test asks for more.
            ("PROMOTE_BUDGET_SECONDS".into(), "0".into()),
            // The admission JWT, signed with the fixed test key; a test that serves the
            // discovery routes over HTTP names its own address as the issuer.
            ("ADMISSION_ISSUER".into(), ADMISSION_ISSUER.into()),
            ("ADMISSION_AUDIENCE".into(), ADMISSION_AUDIENCE.into()),
            ("ADMISSION_KEYS".into(), ADMISSION_KEYS.into()),
        ]);
        // The local stack's defaults (a body `userId` names the buyer, any buyer creates a
        // queue); a test of the deployed defaults overrides them.
        for (k, v) in lineup_local::LOCAL_DEFAULTS {
            all.insert(k.to_string(), v.to_string());
        }
        if cluster.is_some() {
            all.insert("REDIS_MODE".into(), "cluster".into());
        }
        for (k, v) in vars {
            all.insert(k.to_string(), v.to_string());
        }
        let read = all.clone();
        let config =
            Config::from_lookup(move |name| read.get(name).cloned(), SecretPolicy::Required)
                .expect("test config");
        let mut started = Started::connect(config.clone(), &url, Publishing::Nothing)
            .await
            .expect("connect");
        started.publisher = publisher;
        let metrics = MetricsSink::memory();
        let stack = Stack::new(&started, metrics.clone()).expect("test settings");
        // Private servers' plaintext ports, even when the functions use TLS.
        let plain = redis.as_ref().map_or(url.clone(), EmbeddedRedis::url);
        let (inspect, nodes) = match &cluster {
            Some(cluster) => (
                Inspect::Cluster(
                    redis::cluster::ClusterClient::new(vec![cluster.url()])
                        .expect("cluster url")
                        .get_async_connection()
                        .await
                        .expect("inspect connection"),
                ),
                cluster.nodes.iter().map(|n| n.url()).collect(),
            ),
            None => (
                Inspect::Single(
                    redis::Client::open(plain.clone())
                        .expect("url")
                        .get_multiplexed_async_connection()
                        .await
                        .expect("inspect connection"),
                ),
                vec![plain],
            ),
        };
        TestApp {
            config,
            vars: all,
            stack,
            metrics,
            redis,
            cluster,
            replica: None,
            inspect,
            nodes,
            _certificates: None,
            links: Vec::new(),
        }
    }

    /// Replaces the functions by those of a freshly started container: the same settings
    /// and publisher, on a new connection opened the way cold start opens it.
    pub async fn new_container(&mut self) {
        self.stack = self.another_container().await;
    }

    /// The functions as an operator's redeploy with `vars` changed starts them: the same
    /// server, key prefix and publisher, the other settings as before, on a connection of
    /// their own, opened the way cold start opens it.
    pub async fn redeployed(&self, vars: &[(&str, &str)]) -> Stack {
        let mut all = self.vars.clone();
        for (k, v) in vars {
            all.insert(k.to_string(), v.to_string());
        }
        let config =
            Config::from_lookup(move |name| all.get(name).cloned(), SecretPolicy::Required)
                .expect("redeployed config");
        let url = config.redis.url.clone().expect("REDIS_URL is set");
        let mut started = Started::connect(config, &url, Publishing::Nothing)
            .await
            .expect("connect");
        started.publisher = self.stack.queue_api.publisher.clone();
        Stack::new(&started, self.metrics.clone()).expect("redeployed settings")
    }

    /// The functions of another container beside this one: the same settings and
    /// publisher, on a connection of its own, opened the way cold start opens it.
    pub async fn another_container(&self) -> Stack {
        self.redeployed(&[]).await
    }

    pub fn room(&self) -> &WaitingRoom {
        &self.stack.queue_api.room
    }

    /// Sends an HTTP API request through the queue API handler.
    pub async fn queue_api(&self, request: lambda_http::Request) -> Reply {
        let response = queue_api::handle(request, &self.stack.queue_api)
            .await
            .expect("infallible");
        Reply::from(response)
    }

    /// Sends an HTTP API request through the coupon API handler.
    pub async fn coupon_api(&self, request: lambda_http::Request) -> Reply {
        let response = coupon_api::handle(request, &self.stack.coupon_api)
            .await
            .expect("infallible");
        Reply::from(response)
    }

    /// `INFO section` of every node that answers.
    pub async fn infos(&self, section: &str) -> Vec<String> {
        let mut infos = Vec::new();
        for node in &self.nodes {
            let Ok(client) = redis::Client::open(node.as_str()) else {
                continue;
            };
            let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
                continue;
            };
            if let Ok(info) = redis::cmd("INFO")
                .arg(section)
                .query_async::<String>(&mut conn)
                .await
            {
                infos.push(info);
            }
        }
        infos
    }

    /// Sends an HTTP API request to the function that owns its path: the ranking API for
    /// `/rankings…`, the coupon API for `/coupons…`, the queue API otherwise.
    pub async fn http(&self, method: &str, path: &str, body: Option<&str>) -> Reply {
        let request = api_request(method, path, body);
        if path.starts_with("/rankings") {
            let response = ranking_api::handle(request, &self.stack.ranking_api)
                .await
                .expect("infallible");
            Reply::from(response)
        } else if path.starts_with("/coupons") {
            self.coupon_api(request).await
        } else {
            self.queue_api(request).await
        }
    }

    /// Runs the gatekeeper on an authorizer request; whether it allows, and its context.
    pub async fn authorize(&self, request: Value) -> (bool, Value) {
        let answer = queue_authorizer::handle(
            lambda_runtime::LambdaEvent::new(request, lambda_runtime::Context::default()),
            &self.stack.authorizer,
        )
        .await
        .expect("infallible");
        (answer.is_authorized, answer.context)
    }

    /// Every key under this app's `KEY_PREFIX`, on every node, with its TTL in seconds (-1:
    /// none).
    pub async fn keys_with_ttl(&self) -> Vec<(String, i64)> {
        let pattern = format!("{}:*", self.config.key_prefix);
        let mut found = Vec::new();
        for node in &self.nodes {
            let mut conn = redis::Client::open(node.as_str())
                .expect("url")
                .get_multiplexed_async_connection()
                .await
                .expect("node connection");
            let mut cursor = 0u64;
            loop {
                let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                    .arg(cursor)
                    .arg("MATCH")
                    .arg(&pattern)
                    .arg("COUNT")
                    .arg(1000)
                    .query_async(&mut conn)
                    .await
                    .expect("SCAN");
                for key in keys {
                    let ttl: i64 = redis::cmd("TTL")
                        .arg(&key)
                        .query_async(&mut conn)
                        .await
                        .expect("TTL");
                    // -2: gone since the scan saw it.
                    if ttl != -2 {
                        found.push((key, ttl));
                    }
                }
                if next == 0 {
                    break;
                }
                cursor = next;
            }
        }
        found.sort();
        found
    }

    /// One numeric field of an `INFO` section, summed over the nodes.
    pub async fn info_number(&self, section: &str, field: &str) -> i64 {
        self.infos(section)
            .await
            .iter()
            .map(|info| {
                info_field(info, field)
                    .unwrap_or_else(|| panic!("INFO {section} has no numeric {field}"))
            })
            .sum()
    }

    /// Per-command call counts from `INFO commandstats`, summed over the nodes.
    pub async fn command_calls(&self) -> HashMap<String, u64> {
        let mut total: HashMap<String, u64> = HashMap::new();
        for info in self.infos("commandstats").await {
            for (name, calls) in parse_commandstats(&info) {
                *total.entry(name).or_default() += calls;
            }
        }
        total
    }

    /// Counts of the commands a client sent during `op`: scripts and the few commands
    /// lineup sends outside scripts. Commands run inside scripts are not round trips.
    pub async fn client_commands_during<F, T>(&self, op: F) -> (T, HashMap<&'static str, u64>)
    where
        F: std::future::Future<Output = T>,
    {
        const CLIENT_SIDE: [&str; 5] = ["evalsha", "eval", "script|load", "sadd", "smembers"];
        let before = self.command_calls().await;
        let out = op.await;
        let after = self.command_calls().await;
        let counts = CLIENT_SIDE
            .iter()
            .map(|name| {
                let delta = after.get(*name).copied().unwrap_or(0)
                    - before.get(*name).copied().unwrap_or(0);
                (*name, delta)
            })
            .filter(|(_, delta)| *delta > 0)
            .collect();
        (out, counts)
    }
}

/// A handler's response, decoded.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: lambda_http::http::HeaderMap,
    pub body: Value,
}

impl From<Response<Body>> for Reply {
    fn from(response: Response<Body>) -> Self {
        let (parts, body) = response.into_parts();
        let bytes: &[u8] = body.as_ref();
        let content_type = parts
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        Reply {
            status: parts.status.as_u16(),
            // A page, script or stylesheet is kept as text; anything else must be JSON.
            body: if bytes.is_empty() {
                Value::Null
            } else if content_type.starts_with("text/") {
                Value::String(String::from_utf8_lossy(bytes).into_owned())
            } else {
                serde_json::from_slice(bytes).expect("JSON body")
            },
            content_type,
            headers: parts.headers,
        }
    }
}

impl Reply {
    /// Asserts an RFC 9457 problem with `status`.
    pub fn assert_problem(&self, status: u16) {
        assert_eq!(self.status, status, "{:?}", self.body);
        assert_eq!(self.content_type, "application/problem+json");
        for field in ["type", "title", "detail"] {
            assert!(
                self.body[field].is_string(),
                "problem lacks {field}: {}",
                self.body
            );
        }
        assert_eq!(self.body["status"], status);
        assert_eq!(
            self.headers
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-store"),
            "an error is never cached"
        );
    }

    pub fn token(&self) -> String {
        self.body["token"].as_str().expect("token").to_owned()
    }
}

/// An API Gateway HTTP API (payload 2.0) request, as AWS sends it.
pub fn api_request(method: &str, path: &str, body: Option<&str>) -> lambda_http::Request {
    api_request_with_claims(method, path, body, None)
}

/// The same, from the given source address.
pub fn api_request_from(
    method: &str,
    path: &str,
    body: Option<&str>,
    source_ip: &str,
) -> lambda_http::Request {
    build_api_request(method, path, body, None, source_ip)
}

/// The same, as if a JWT authorizer had verified a token with these claims.
pub fn api_request_with_claims(
    method: &str,
    path: &str,
    body: Option<&str>,
    claims: Option<Value>,
) -> lambda_http::Request {
    build_api_request(method, path, body, claims, "192.0.2.1")
}

fn build_api_request(
    method: &str,
    path: &str,
    body: Option<&str>,
    claims: Option<Value>,
    source_ip: &str,
) -> lambda_http::Request {
    let event = api_event_text(method, path, body, claims, source_ip);
    lambda_http::request::from_str(&event).expect("API Gateway event")
}

/// The API Gateway HTTP API (payload 2.0) event for a request, as the JSON text the Lambda
/// runtime hands a function; `lambda_http::request::from_str` turns it into the request.
pub fn api_event_text(
    method: &str,
    path: &str,
    body: Option<&str>,
    claims: Option<Value>,
    source_ip: &str,
) -> String {
    let (raw_path, query) = path.split_once('?').unwrap_or((path, ""));
    let mut context = json!({
        "accountId": "123456789012",
        "apiId": "api",
        "domainName": "api.example.com",
        "domainPrefix": "api",
        "http": {"method": method, "path": raw_path, "protocol": "HTTP/1.1", "sourceIp": source_ip, "userAgent": "test"},
        "requestId": "req",
        "routeKey": "$default",
        "stage": "$default",
        "time": "22/Nov/2026:02:00:00 +0000",
        "timeEpoch": 1_795_312_800_000i64
    });
    if let Some(claims) = claims {
        context["authorizer"] = json!({"jwt": {"claims": claims, "scopes": null}});
    }
    let event = json!({
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": {"content-type": "application/json", "host": "api.example.com"},
        "requestContext": context,
        "body": body,
        "isBase64Encoded": false
    });
    event.to_string()
}

/// An HTTP API authorizer request (payload 2.0) as API Gateway sends it.
pub fn authorizer_request(
    token: Option<&str>,
    queue_header: Option<&str>,
    path_queue: Option<&str>,
) -> Value {
    authorizer_request_as(None, token, queue_header, path_queue)
}

/// The same, with `authorization: Bearer <jwt>` when a JWT is given.
pub fn authorizer_request_as(
    jwt: Option<&str>,
    token: Option<&str>,
    queue_header: Option<&str>,
    path_queue: Option<&str>,
) -> Value {
    let mut headers = json!({"host": "api.example.com", "user-agent": "test"});
    if let Some(jwt) = jwt {
        headers["authorization"] = json!(format!("Bearer {jwt}"));
    }
    if let Some(token) = token {
        headers["x-queue-token"] = json!(token);
    }
    if let Some(queue) = queue_header {
        headers["x-queue-id"] = json!(queue);
    }
    let path_parameters = path_queue.map(|q| json!({"queueId": q}));
    json!({
        "version": "2.0",
        "type": "REQUEST",
        "routeArn": "arn:aws:execute-api:us-east-1:123456789012:api/$default/POST/bookings/{queueId}",
        "identitySource": [token.unwrap_or("")],
        "routeKey": "POST /bookings/{queueId}",
        "rawPath": "/bookings/show",
        "rawQueryString": "",
        "headers": headers,
        "pathParameters": path_parameters,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
            "domainPrefix": "api", "requestId": "req", "routeKey": "POST /bookings/{queueId}",
            "stage": "$default", "time": "22/Nov/2026:02:00:00 +0000", "timeEpoch": 1_795_312_800_000i64,
            "http": {"method": "POST", "path": "/bookings/show", "protocol": "HTTP/1.1",
                     "sourceIp": "192.0.2.1", "userAgent": "test"}
        }
    })
}

/// Every file in a directory of JSON events, by name.
pub fn json_files(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            (path.extension()? == "json").then(|| {
                let name = path.file_name()?.to_string_lossy().into_owned();
                Some((name, std::fs::read_to_string(&path).ok()?))
            })?
        })
        .collect();
    files.sort();
    files
}

/// A loopback port nobody listens on right now, whose cluster bus port (port + 10 000) is
/// free and valid too, so any server may take it, a cluster node included.
fn free_port() -> u16 {
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        if port <= 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// A numeric field of an `INFO` reply.
fn info_field(info: &str, field: &str) -> Option<i64> {
    info.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().parse().ok())
}

/// The longest a test outside `tests/real-time` sleeps at once on the real clock
/// (RELIABILITY.md, "Real-time suites").
pub const LONGEST_FAST_SLEEP: Duration = Duration::from_secs(2);

/// Waits `d`; tests that cross a time edge sleep real time against the server's clock. Every
/// test sleeps through here (a test of the binary keeps it so). A sleep longer than
/// [`LONGEST_FAST_SLEEP`] fails the test, unless `tests/real-time` lists it.
pub async fn sleep(d: Duration) {
    if d > LONGEST_FAST_SLEEP {
        assert_real_time(d);
    }
    tokio::time::sleep(d).await;
}

/// `tests/real-time`: the suites (`suite::`) and the tests whose subject is real time, one a
/// line (RELIABILITY.md, "Real-time suites").
pub const REAL_TIME: &str = include_str!("../real-time");

/// Whether `test`, a test's path in the binary, is listed in [`REAL_TIME`].
pub fn is_real_time(test: &str) -> bool {
    REAL_TIME.lines().any(|entry| {
        if entry.ends_with("::") {
            test.starts_with(entry)
        } else {
            test == entry
        }
    })
}

/// Fails unless the test on this thread is a real-time one. libtest names a test's thread
/// after the test; a thread with another name (a runtime's worker, a run of one thread) is
/// not checked.
fn assert_real_time(d: Duration) {
    let thread = std::thread::current();
    let Some(test) = thread.name().filter(|name| name.contains("::")) else {
        return;
    };
    assert!(
        is_real_time(test),
        "{test} sleeps {d:?} on the real clock: more than {LONGEST_FAST_SLEEP:?} is for the \
         tests listed in tests/real-time"
    );
}

/// `(command, calls)` of one node's `INFO commandstats`.
fn parse_commandstats(info: &str) -> Vec<(String, u64)> {
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .split(',')
                .next()?
                .strip_prefix("calls=")?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// A connection for inspecting Redis in tests: one server, or a cluster.
#[derive(Clone)]
pub enum Inspect {
    Single(redis::aio::MultiplexedConnection),
    Cluster(redis::cluster_async::ClusterConnection),
}

impl redis::aio::ConnectionLike for Inspect {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Inspect::Single(conn) => conn.req_packed_command(cmd),
            Inspect::Cluster(conn) => conn.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Inspect::Single(conn) => conn.req_packed_commands(cmd, offset, count),
            Inspect::Cluster(conn) => conn.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Inspect::Single(conn) => conn.get_db(),
            Inspect::Cluster(conn) => conn.get_db(),
        }
    }
}

/// A clock a test moves: it stands still until told to move.
pub struct MovedClock(AtomicI64);

impl MovedClock {
    /// A clock standing at `ms`.
    pub fn at(ms: i64) -> std::sync::Arc<MovedClock> {
        std::sync::Arc::new(MovedClock(AtomicI64::new(ms)))
    }

    /// Moves the clock on by `ms`.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl lineup::clock::Clock for MovedClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl TestApp {
    /// Times the striped line's calls of every function by `clock`.
    pub fn move_line_clock(&mut self, clock: std::sync::Arc<MovedClock>) {
        let stack = &mut self.stack;
        stack.queue_api.room = stack.queue_api.room.clone().with_clock(clock.clone());
        stack.promoter.room = stack.promoter.room.clone().with_clock(clock.clone());
        stack.authorizer.room = stack.authorizer.room.clone().with_clock(clock.clone());
        stack.event_applier.room = stack.event_applier.room.clone().with_clock(clock);
    }
}
