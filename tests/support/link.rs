//! A TCP proxy on a free loopback port between the functions and Redis, for the faults a
//! network makes: latency (every byte held back a set time each way, without limiting
//! bandwidth: a Redis that is slow but answers, as from another region or when it falls
//! behind) and partitions
//! (bytes go nowhere and nothing is closed or reset, so only a timeout can tell), and an
//! endpoint that moves to another server (a failover), as a DNS name does: new connections
//! reach the new server, those already open stay with the old one. Stopped, with its
//! connections, when dropped.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

pub struct Link {
    pub port: u16,
    state: Arc<State>,
    proxy: JoinHandle<()>,
}

struct State {
    /// The port on 127.0.0.1 that new connections are forwarded to.
    upstream: AtomicU16,
    /// How long every chunk is held back, each way, in microseconds.
    delay_micros: AtomicU64,
    /// While set, every connection, old or new, is cut.
    partitioned: AtomicBool,
    /// One flag per connection ever accepted: set once it is cut, and never cleared.
    cut: Mutex<Vec<Arc<AtomicBool>>>,
}

impl Link {
    /// Forwards to `127.0.0.1:upstream`, each way `delay` late.
    pub async fn start(upstream: u16, delay: Duration) -> Link {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let state = Arc::new(State {
            upstream: AtomicU16::new(upstream),
            delay_micros: AtomicU64::new(delay.as_micros() as u64),
            partitioned: AtomicBool::new(false),
            cut: Mutex::new(Vec::new()),
        });
        let shared = state.clone();
        let proxy = tokio::spawn(async move {
            // Dropped with the proxy task, which aborts every connection's pumps.
            let mut pumps = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let cut = Arc::new(AtomicBool::new(shared.partitioned.load(Ordering::SeqCst)));
                shared
                    .cut
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(cut.clone());
                let (client_read, client_write) = client.into_split();
                if cut.load(Ordering::SeqCst) {
                    // Opened during a partition: the client's bytes reach nothing, ever.
                    pumps.spawn(swallow(client_read, client_write));
                    continue;
                }
                let upstream = shared.upstream.load(Ordering::SeqCst);
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let (server_read, server_write) = server.into_split();
                pumps.spawn(pump(client_read, server_write, shared.clone(), cut.clone()));
                pumps.spawn(pump(server_read, client_write, shared.clone(), cut));
            }
        });
        Link { port, state, proxy }
    }

    /// Partitions the network: from now on no byte gets through on any connection, and
    /// none is closed or reset, as when packets are dropped on the way.
    pub fn partition(&self) {
        self.state.partitioned.store(true, Ordering::SeqCst);
        for cut in self
            .state
            .cut
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            cut.store(true, Ordering::SeqCst);
        }
    }

    /// Ends the partition for new connections only. Those opened before stay dead, as
    /// when the server's address moved (a replaced node, a failover): the old peer is gone
    /// without a reset, and only a new connection reaches the server.
    pub fn heal(&self) {
        self.state.partitioned.store(false, Ordering::SeqCst);
    }

    /// How many connections the link has accepted so far.
    pub fn connections_accepted(&self) -> usize {
        self.state
            .cut
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Holds every byte back `delay` each way from now on, on every connection.
    pub fn set_delay(&self, delay: Duration) {
        self.state
            .delay_micros
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// Moves the endpoint to `127.0.0.1:upstream`: new connections reach it, while those
    /// already open stay with the server they reached, as after a failover updates the
    /// primary endpoint's DNS record.
    pub fn retarget(&self, upstream: u16) {
        self.state.upstream.store(upstream, Ordering::SeqCst);
    }
}

impl State {
    fn delay(&self) -> Duration {
        Duration::from_micros(self.delay_micros.load(Ordering::SeqCst))
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.proxy.abort();
    }
}

/// Copies `from` to `to`, each chunk written the link's delay after it was read, until `cut`. Reading
/// goes on meanwhile, so the delay adds latency, not a limit on how much is in flight. Once
/// cut, what arrives is dropped and neither side is closed.
async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    state: Arc<State>,
    cut: Arc<AtomicBool>,
) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buffer = vec![0; 64 * 1024];
        while let Ok(read @ 1..) = from.read(&mut buffer).await {
            if chunks
                .send((Instant::now() + state.delay(), buffer[..read].to_vec()))
                .is_err()
            {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if cut.load(Ordering::SeqCst) {
                continue;
            }
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        if !cut.load(Ordering::SeqCst) {
            let _ = to.shutdown().await;
        } else {
            // Held open until the proxy stops: a cut peer never says goodbye.
            std::future::pending::<()>().await;
        }
    };
    tokio::join!(reader, writer);
}

/// Reads and drops whatever the client sends, keeping its connection open.
async fn swallow(mut from: impl AsyncRead + Unpin, _to: OwnedWriteHalf) {
    let mut buffer = vec![0; 64 * 1024];
    while let Ok(1..) = from.read(&mut buffer).await {}
    std::future::pending::<()>().await;
}
