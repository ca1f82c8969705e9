//! A private `redis-server` on a free loopback port, in a temporary directory, stopped when
//! dropped. The local stack uses it when `REDIS_URL` is unset; the tests use one per run so
//! they never touch a server someone else is using.

use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A running private server.
pub struct EmbeddedRedis {
    child: Child,
    port: u16,
    dir: std::sync::Arc<tempfile::TempDir>,
    /// The `redis-server` arguments beyond port and directory, kept for a restart.
    args: std::sync::Arc<Vec<String>>,
}

/// Why a private server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum EmbeddedRedisError {
    #[error(
        "could not run `redis-server` ({0}). Install Redis (Debian/Ubuntu: `apt-get install redis-server`; \
         macOS: `brew install redis`), or start one with `docker compose up -d` and set \
         REDIS_URL=redis://127.0.0.1:6379"
    )]
    NotInstalled(std::io::Error),
    #[error("redis-server did not start: {0}")]
    DidNotStart(String),
}

/// `redis-server` arguments for a server that keeps nothing on disk.
const EPHEMERAL: &[&str] = &["--save", "", "--appendonly", "no"];
/// The append-only file on and fsynced on every write.
const DURABLE: &[&str] = &[
    "--save",
    "",
    "--appendonly",
    "yes",
    "--appendfsync",
    "always",
];

impl EmbeddedRedis {
    /// The Redis to use: `configured` when given; otherwise a private server started now,
    /// returned beside its URL so the caller keeps it alive (dropping it stops the server).
    pub async fn or_configured(
        configured: Option<&String>,
    ) -> Result<(String, Option<Self>), EmbeddedRedisError> {
        if let Some(url) = configured {
            return Ok((url.clone(), None));
        }
        let server = Self::start().await?;
        tracing::info!(
            port = server.port(),
            "REDIS_URL unset: started a private redis-server"
        );
        Ok((server.url(), Some(server)))
    }

    /// Starts a server that keeps nothing on disk, and waits until it answers.
    pub async fn start() -> Result<Self, EmbeddedRedisError> {
        Self::start_with(EPHEMERAL).await
    }

    /// Starts a server with the append-only file on and fsynced on every write, so a
    /// [`EmbeddedRedis::restart`] after a kill keeps every acknowledged write.
    pub async fn start_durable() -> Result<Self, EmbeddedRedisError> {
        Self::start_with(DURABLE).await
    }

    /// Starts a server that keeps nothing on disk on `port`, with `extra` arguments (a
    /// cluster node's, say).
    pub async fn start_on_port(port: u16, extra: &[&str]) -> Result<Self, EmbeddedRedisError> {
        let dir =
            tempfile::tempdir().map_err(|e| EmbeddedRedisError::DidNotStart(e.to_string()))?;
        let args = EPHEMERAL
            .iter()
            .chain(extra)
            .map(|a| a.to_string())
            .collect();
        Self::start_on(port, std::sync::Arc::new(dir), std::sync::Arc::new(args)).await
    }

    async fn start_with(persistence: &[&str]) -> Result<Self, EmbeddedRedisError> {
        let args: std::sync::Arc<Vec<String>> =
            std::sync::Arc::new(persistence.iter().map(|a| a.to_string()).collect());
        let mut last_error = String::new();
        // A port found free can be taken before the server binds it; try a few.
        for _ in 0..5 {
            let port = free_port().map_err(|e| EmbeddedRedisError::DidNotStart(e.to_string()))?;
            let dir =
                tempfile::tempdir().map_err(|e| EmbeddedRedisError::DidNotStart(e.to_string()))?;
            match Self::start_on(port, std::sync::Arc::new(dir), args.clone()).await {
                Ok(server) => return Ok(server),
                Err(EmbeddedRedisError::DidNotStart(reason)) => last_error = reason,
                Err(other) => return Err(other),
            }
        }
        Err(EmbeddedRedisError::DidNotStart(last_error))
    }

    async fn start_on(
        port: u16,
        dir: std::sync::Arc<tempfile::TempDir>,
        args: std::sync::Arc<Vec<String>>,
    ) -> Result<Self, EmbeddedRedisError> {
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(args.iter())
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(EmbeddedRedisError::NotInstalled)?;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(EmbeddedRedisError::DidNotStart(format!(
                    "exited with {status}"
                )));
            }
            if ping(port).await {
                return Ok(EmbeddedRedis {
                    child,
                    port,
                    dir,
                    args,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let _ = child.start_kill();
        Err(EmbeddedRedisError::DidNotStart(
            "no answer within 5 s".into(),
        ))
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills the server (SIGKILL, as a crash would) and waits for it to exit.
    pub async fn stop(&mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }

    /// Kills the server if it runs and starts it again on the same port and directory, as
    /// after a crash: a durable server comes back with every acknowledged write, any other
    /// comes back empty. Either way its script cache is empty.
    pub async fn restart(&mut self) -> Result<(), EmbeddedRedisError> {
        self.stop().await;
        let fresh = Self::start_on(self.port, self.dir.clone(), self.args.clone()).await?;
        *self = fresh;
        Ok(())
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

async fn ping(port: u16) -> bool {
    let Ok(client) = redis::Client::open(format!("redis://127.0.0.1:{port}")) else {
        return false;
    };
    let Ok(mut conn) = client.get_multiplexed_async_connection().await else {
        return false;
    };
    redis::cmd("PING")
        .query_async::<String>(&mut conn)
        .await
        .is_ok()
}
