//! Cold start: each function binary from process start to its first Runtime API poll
//! (configuration, the EventBridge client where the function publishes, and the Redis
//! connection opened), with a local stub of the Runtime API, against a do-nothing
//! `lambda_runtime` binary (and, for reference, the same on the current-thread runtime the
//! functions use). Also the binaries' sizes, and those of `target/lambda/` (and
//! `target/lambda-all-zones/`) when `cargo lambda build` has filled it. Needs `cargo build
//! --release --bins`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use axum::routing::get;
use axum::Router;
use tokio::sync::mpsc;

use crate::measure::Bench;
use crate::report::Report;

const FUNCTIONS: [&str; 8] = [
    "coupon-api",
    "coupon-publisher",
    "queue-api",
    "queue-authorizer",
    "queue-promoter",
    "queue-reaper",
    "ranking-api",
    "ranking-updater",
];
const CURRENT_THREAD_HELLO: &str = "hello-lambda-current-thread";
const RUNS: usize = 31;

/// A Runtime API that reports each `GET …/invocation/next` and never answers it.
async fn stub() -> (SocketAddr, mpsc::UnboundedReceiver<Instant>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let app = Router::new().route(
        "/2018-06-01/runtime/invocation/next",
        get(move || {
            let tx = tx.clone();
            async move {
                let _ = tx.send(Instant::now());
                std::future::pending::<()>().await;
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("stub port");
    let addr = listener.local_addr().expect("stub address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (addr, rx)
}

async fn init_time(
    binary: &PathBuf,
    api: SocketAddr,
    polls: &mut mpsc::UnboundedReceiver<Instant>,
    bench: &Bench,
) -> Option<Duration> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(binary)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", api.to_string())
        .env("AWS_LAMBDA_FUNCTION_NAME", "bench")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_LOG_STREAM_NAME", "bench")
        .env("AWS_LAMBDA_LOG_GROUP_NAME", "bench")
        // What the template gives every function: the bus (so the publishing functions build
        // their EventBridge client at init, as deployed) and Lambda's AWS variables.
        .env("EVENT_BUS_NAME", "bench")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "bench")
        .env("AWS_SECRET_ACCESS_KEY", "bench")
        .env("AWS_SESSION_TOKEN", "bench")
        // Cold start opens the connection, so the figure includes connecting to Redis.
        .env("REDIS_URL", bench.url())
        .env("TOKEN_SECRET", "bench-secret-0123456789abcdef0123456789")
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .ok()?;
    let polled = tokio::time::timeout(Duration::from_secs(10), polls.recv())
        .await
        .ok()??;
    let _ = child.kill().await;
    Some(polled - started)
}

pub async fn run(bench: &Bench, report: &mut Report) {
    report.section(&format!(
        "Cold start (process start to first Runtime API poll, median of {RUNS}, runs interleaved) and size"
    ));
    let dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(PathBuf::from))
        .unwrap_or_default();
    let (api, mut polls) = stub().await;
    let binaries: Vec<(&str, PathBuf)> = ["hello-lambda", CURRENT_THREAD_HELLO]
        .into_iter()
        .chain(FUNCTIONS)
        .map(|name| (name, dir.join(name)))
        .collect();
    // Round by round, every binary once, so that whatever else the machine does falls on
    // the yardstick and the functions alike.
    let mut times = vec![Vec::new(); binaries.len()];
    for _ in 0..RUNS {
        for ((_, binary), times) in binaries.iter().zip(&mut times) {
            if let Some(t) = init_time(binary, api, &mut polls, bench).await {
                times.push(t);
            }
        }
    }
    let medians: Vec<Option<Duration>> = times
        .into_iter()
        .map(|mut t| {
            t.sort();
            t.get(t.len() / 2).copied()
        })
        .collect();
    // The goal is in MB; MiB is what `ls -h` shows.
    let size = |path: &PathBuf| {
        let bytes = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0) as f64;
        format!("{:.2} MB ({:.1} MiB)", bytes / 1e6, bytes / 1_048_576.0)
    };
    let Some(hello_median) = medians[0] else {
        report.row(
            "hello-lambda",
            "not built",
            "run `cargo build --release --bins` first",
        );
        return;
    };
    report.row(
        "hello-lambda (yardstick)",
        &format!("{:.1} ms", hello_median.as_secs_f64() * 1000.0),
        &size(&binaries[0].1),
    );
    // The functions run on the current-thread runtime, so their ratio to a current-thread
    // hello is shown too: the part of the gain that is only the runtime flavour.
    let current_thread_median = medians[1];
    for ((function, binary), median) in binaries.iter().zip(&medians).skip(1) {
        match median {
            Some(median) if *function == CURRENT_THREAD_HELLO => report.row(
                &format!("{function} (reference)"),
                &format!("{:.1} ms", median.as_secs_f64() * 1000.0),
                &format!(
                    "{:.2} × hello: the runtime flavour's share; {}",
                    median.as_secs_f64() / hello_median.as_secs_f64(),
                    size(binary)
                ),
            ),
            Some(median) => report.row(
                function,
                &format!("{:.1} ms", median.as_secs_f64() * 1000.0),
                &format!(
                    "{:.2} × hello (goal ≤ 1.5){}; {} (goal ≤ 4 MB)",
                    median.as_secs_f64() / hello_median.as_secs_f64(),
                    current_thread_median
                        .map(|base| format!(
                            ", {:.2} × current-thread hello",
                            median.as_secs_f64() / base.as_secs_f64()
                        ))
                        .unwrap_or_default(),
                    size(binary)
                ),
            ),
            None => report.row(
                function,
                "not built",
                "run `cargo build --release --bins` first",
            ),
        }
    }
    // What is deployed is `cargo lambda build`'s output (arm64 in template.yaml), when built;
    // it is not rebuilt here, so it is as fresh as the last such build. `target/lambda-all-zones/`
    // holds the ranking functions built with every IANA zone (BENCHMARKS.md has the command).
    for (output, label, against) in [
        ("../lambda", "`cargo lambda build` output", "goal ≤ 4 MB"),
        (
            "../lambda-all-zones",
            "`cargo lambda build` output with every zone",
            "not deployed: what `.cargo/config.toml`'s zone list saves",
        ),
    ] {
        for function in FUNCTIONS {
            let bootstrap = dir.join(output).join(function).join("bootstrap");
            if bootstrap.exists() {
                report.row(&format!("{function}, {label}"), &size(&bootstrap), against);
            }
        }
    }
}
