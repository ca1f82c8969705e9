//! A TCP proxy on a free loopback port that holds every byte back for a fixed time in each
//! direction, without limiting bandwidth: a Redis that is slow but answers, as from another
//! region. Stopped, with its connections, when dropped.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

pub struct SlowLink {
    pub port: u16,
    proxy: JoinHandle<()>,
}

impl SlowLink {
    /// Forwards to `127.0.0.1:upstream`, each way `delay` late.
    pub async fn start(upstream: u16, delay: Duration) -> SlowLink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let port = listener.local_addr().expect("its address").port();
        let proxy = tokio::spawn(async move {
            // Dropped with the proxy task, which aborts every connection's pumps.
            let mut pumps = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                pumps.spawn(pump(client_read, server_write, delay));
                pumps.spawn(pump(server_read, client_write, delay));
            }
        });
        SlowLink { port, proxy }
    }
}

impl Drop for SlowLink {
    fn drop(&mut self) {
        self.proxy.abort();
    }
}

/// Copies `from` to `to`, each chunk written `delay` after it was read. Reading goes on
/// meanwhile, so the delay adds latency, not a limit on how much is in flight.
async fn pump(mut from: OwnedReadHalf, mut to: OwnedWriteHalf, delay: Duration) {
    let (chunks, mut due) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buffer = vec![0; 64 * 1024];
        while let Ok(read @ 1..) = from.read(&mut buffer).await {
            if chunks
                .send((Instant::now() + delay, buffer[..read].to_vec()))
                .is_err()
            {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((at, bytes)) = due.recv().await {
            tokio::time::sleep_until(at).await;
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}
