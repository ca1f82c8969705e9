//! `cargo run --release --bin lineup-local`: the whole stack on http://127.0.0.1:3000.

use lineup::cold_start::{Publishing, Started};
use lineup::config::{Config, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup_local::embedded_redis::EmbeddedRedis;
use lineup_local::{local_settings, serve, shutdown_signal, spawn_schedules, Stack};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    lineup::telemetry::init_text();
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".into());
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".into());
    let listener = tokio::net::TcpListener::bind(format!("{host}:{port}"))
        .await
        .map_err(|err| format!("cannot listen on {host}:{port} ({err}); set HOST or PORT"))?;
    let address = listener.local_addr()?;
    // The admission issuer is this address, so its discovery document is served here.
    let settings = local_settings(address, |name| std::env::var(name).ok())?;
    let config = Config::from_lookup(settings, SecretPolicy::GenerateIfMissing)?;
    let local = config.env.local()?;

    // Kept alive for the life of the process; dropping it stops the server.
    let (url, embedded) = EmbeddedRedis::or_configured(config.redis.url.as_ref()).await?;
    let started = Started::connect(config, &url, Publishing::QueueEvents).await?;
    let stack = Stack::new(&started, MetricsSink::Stdout)?;

    println!("lineup-local listening on http://{address}");

    let schedules = spawn_schedules(&stack, &local);
    serve(listener, stack, shutdown_signal()).await?;
    schedules.abort();
    if let Some(mut server) = embedded {
        server.stop().await;
    }
    Ok(())
}
