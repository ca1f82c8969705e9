//! A local Redis Cluster for the tests: `EmbeddedRedis` nodes on free loopback ports,
//! joined with `redis-cli --cluster create`. Three primaries (or more), optionally each with a
//! replica (for failover), or three primaries that speak TLS. Stopped when dropped.

use std::process::Stdio;
use std::time::{Duration, Instant};

use lineup_local::embedded_redis::EmbeddedRedis;
use tokio::process::Command;

use crate::free_port;
use crate::link::Link;
use crate::tls::Certificates;

/// A running cluster.
pub struct EmbeddedCluster {
    pub nodes: Vec<EmbeddedRedis>,
    /// Each node's TLS port, when the cluster speaks TLS (node for node).
    pub tls_ports: Vec<u16>,
}

impl EmbeddedCluster {
    /// Three primaries, with one replica each when `replicas` is set.
    pub async fn start(replicas: bool) -> EmbeddedCluster {
        EmbeddedCluster::start_with(3, replicas, None).await
    }

    /// `count` primaries (at least 3), no replicas: each owns an equal run of the slots.
    pub async fn start_primaries(count: usize) -> EmbeddedCluster {
        EmbeddedCluster::start_with(count.max(3), false, None).await
    }

    /// Three primaries whose clients and bus speak TLS with `certificates`; each keeps a
    /// plaintext port, where plaintext clients are told the other nodes' plaintext ports.
    pub async fn start_tls(certificates: &Certificates) -> EmbeddedCluster {
        EmbeddedCluster::start_with(3, false, Some(certificates)).await
    }

    async fn start_with(
        primaries: usize,
        replicas: bool,
        tls: Option<&Certificates>,
    ) -> EmbeddedCluster {
        let count = if replicas { 2 * primaries } else { primaries };
        let mut nodes = Vec::new();
        let mut tls_ports = Vec::new();
        for _ in 0..count {
            let mut args: Vec<String> = [
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "1000",
                // Fail over however long the replica was cut off: the cluster is seconds old.
                "--cluster-replica-validity-factor",
                "0",
                // A replica's first sync starts at once (Redis 7 waits 5 s by default), so
                // a test that kills a primary finds its replica holding its data.
                "--repl-diskless-sync-delay",
                "0",
                // As a deployment's parameter group has it (docs/deploy.md): a shard whose
                // primary is down stops its own slots only, not the whole cluster's.
                "--cluster-require-full-coverage",
                "no",
            ]
            .map(String::from)
            .to_vec();
            if let Some(certificates) = tls {
                // The bus listens on the TLS port + 10 000.
                let tls_port = free_port();
                args.extend(certificates.server_args(tls_port));
                args.extend(["--tls-cluster".into(), "yes".into()]);
                tls_ports.push(tls_port);
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            nodes.push(start_node(&args).await);
        }
        let mut create = Command::new("redis-cli");
        create.arg("--cluster").arg("create");
        for node in &nodes {
            create.arg(format!("127.0.0.1:{}", node.port()));
        }
        create
            .args([
                "--cluster-replicas",
                if replicas { "1" } else { "0" },
                "--cluster-yes",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let status = create.status().await.expect("redis-cli --cluster create");
        assert!(status.success(), "redis-cli --cluster create failed");
        for node in &nodes {
            wait_for(&node.url(), "CLUSTER INFO", "cluster_state:ok").await;
        }
        // Each replica has taken its primary's data before a test begins.
        if replicas {
            for node in &nodes {
                if !reply_contains(&node.url(), "INFO replication", "role:slave").await {
                    continue;
                }
                wait_for(&node.url(), "INFO replication", "master_link_status:up").await;
            }
        }
        EmbeddedCluster { nodes, tls_ports }
    }

    /// The URL clients start from (any node will do).
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }

    /// Puts a [`Link`] in front of each node (in node order) and has the node announce the
    /// link's port, so that clients reach every node only through its link. The nodes keep
    /// talking to each other directly.
    pub async fn announce_through_links(&self) -> Vec<Link> {
        let mut links = Vec::new();
        for node in &self.nodes {
            let link = Link::start(node.port(), Duration::ZERO).await;
            let client = redis::Client::open(node.url()).expect("node url");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .expect("node connection");
            redis::cmd("CONFIG")
                .arg("SET")
                .arg("cluster-announce-port")
                .arg(link.port)
                .arg("cluster-announce-bus-port")
                .arg(u32::from(node.port()) + 10_000)
                .query_async::<()>(&mut conn)
                .await
                .expect("CONFIG SET cluster-announce-port");
            links.push(link);
        }
        // Until gossip has told every node every link.
        for node in &self.nodes {
            for link in &links {
                wait_for(&node.url(), "CLUSTER NODES", &format!(":{}@", link.port)).await;
            }
        }
        links
    }

    /// The ports of the nodes that are primaries right now.
    pub async fn primaries(&self) -> Vec<u16> {
        let mut primaries = Vec::new();
        for node in &self.nodes {
            if let Ok(role) = query_role(&node.url()).await {
                if role == "master" {
                    primaries.push(node.port());
                }
            }
        }
        primaries
    }

    /// Starts one more primary and gives it `slot` alone, taken from its owner while the slot
    /// holds no key: a primary of the slot's own, whose `INFO cpu` is that slot's.
    pub async fn add_primary_for_slot(&mut self, slot: u16) {
        let node = start_node(&[
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            "1000",
            "--cluster-require-full-coverage",
            "no",
        ])
        .await;
        let status = Command::new("redis-cli")
            .args(["--cluster", "add-node"])
            .arg(format!("127.0.0.1:{}", node.port()))
            .arg(format!("127.0.0.1:{}", self.nodes[0].port()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .await
            .expect("redis-cli --cluster add-node");
        assert!(status.success(), "redis-cli --cluster add-node failed");
        let id = query_string(&node.url(), &["CLUSTER", "MYID"]).await;
        for other in &self.nodes {
            wait_for(&other.url(), "CLUSTER NODES", &id).await;
        }
        // The slot's owner, by its slot map.
        let mut owner = None;
        for other in &self.nodes {
            let ranges = query_string(&other.url(), &["CLUSTER", "NODES"]).await;
            let me = ranges.lines().find(|line| line.contains("myself"));
            if me.is_some_and(|line| slot_ranges(line).any(|(a, b)| (a..=b).contains(&slot))) {
                owner = Some(other);
            }
        }
        let owner = owner.expect("the slot's owner");
        let owner_id = query_string(&owner.url(), &["CLUSTER", "MYID"]).await;
        let slot = slot.to_string();
        // The documented move of a slot, with no key to migrate: the new owner first.
        let steps: [(&str, [&str; 5]); 4] = [
            (
                &node.url(),
                ["CLUSTER", "SETSLOT", &slot, "IMPORTING", &owner_id],
            ),
            (
                &owner.url(),
                ["CLUSTER", "SETSLOT", &slot, "MIGRATING", &id],
            ),
            (&node.url(), ["CLUSTER", "SETSLOT", &slot, "NODE", &id]),
            (&owner.url(), ["CLUSTER", "SETSLOT", &slot, "NODE", &id]),
        ];
        for (url, command) in steps {
            query_string(url, &command).await;
        }
        for other in &self.nodes {
            query_string(&other.url(), &["CLUSTER", "SETSLOT", &slot, "NODE", &id]).await;
        }
        self.nodes.push(node);
        for other in &self.nodes {
            wait_for(&other.url(), "CLUSTER INFO", "cluster_state:ok").await;
        }
    }

    /// Waits until every live node reports `cluster_state:ok`.
    pub async fn wait_healthy(&self, live: &[u16]) {
        for node in self.nodes.iter().filter(|n| live.contains(&n.port())) {
            wait_for(&node.url(), "CLUSTER INFO", "cluster_state:ok").await;
        }
    }
}

/// The slot ranges a line of `CLUSTER NODES` gives its node (importing and migrating marks
/// left out), first to last slot.
pub fn slot_ranges(line: &str) -> impl Iterator<Item = (u16, u16)> + '_ {
    line.split_whitespace().skip(8).filter_map(|range| {
        let mut ends = range.split('-').map(|n| n.parse::<u16>().ok());
        let start = ends.next()??;
        let end = ends.next().map_or(Some(start), |end| end)?;
        Some((start, end))
    })
}

/// A node on a free port and that port + 10 000 (its bus). Another test can take a port
/// found free before the node binds it, so a few are tried.
async fn start_node(args: &[&str]) -> EmbeddedRedis {
    let mut last_error = None;
    for _ in 0..5 {
        match EmbeddedRedis::start_on_port(free_port(), args).await {
            Ok(node) => return node,
            Err(err) => last_error = Some(err),
        }
    }
    panic!("no cluster node started: {last_error:?}");
}

/// The node at `url`'s answer to `command`, as text.
async fn query_string(url: &str, command: &[&str]) -> String {
    let client = redis::Client::open(url).expect("node url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("node connection");
    let mut cmd = redis::cmd(command[0]);
    for part in &command[1..] {
        cmd.arg(*part);
    }
    cmd.query_async(&mut conn)
        .await
        .unwrap_or_else(|err| panic!("{command:?}: {err}"))
}

async fn query_role(url: &str) -> redis::RedisResult<String> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let role: Vec<redis::Value> = redis::cmd("ROLE").query_async(&mut conn).await?;
    match role.first() {
        Some(redis::Value::BulkString(bytes)) => Ok(String::from_utf8_lossy(bytes).into_owned()),
        Some(redis::Value::SimpleString(s)) => Ok(s.clone()),
        _ => Ok(String::new()),
    }
}

async fn wait_for(url: &str, command: &str, expected: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if reply_contains(url, command, expected).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{url} never answered {command} with {expected}");
}

/// Whether the node at `url` answers `command` (words split on spaces) with `expected` in it.
async fn reply_contains(url: &str, command: &str, expected: &str) -> bool {
    let Ok(client) = redis::Client::open(url) else {
        return false;
    };
    let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
        return false;
    };
    let mut parts = command.split(' ');
    let mut cmd = redis::cmd(parts.next().unwrap_or_default());
    for part in parts {
        cmd.arg(part);
    }
    cmd.query_async::<String>(&mut conn)
        .await
        .is_ok_and(|reply| reply.contains(expected))
}
