//! Cold start: each function binary from process start to its first Runtime API poll
//! (configuration, the EventBridge client where the function publishes, and the Redis
//! connection opened), with a local stub of the Runtime API, against a do-nothing
//! `lambda_runtime` binary (and, for reference, the same on the current-thread runtime the
//! functions use). Also the binaries' sizes, and those of `target/lambda/` (and
//! `target/lambda-all-zones/`) when `cargo lambda build` has filled it. Needs `cargo build
//! --release --bins`.
//!
//! # Method
//!
//! - Cold start runs from process start to the first Runtime API poll. Each binary starts 31
//!   times; the runs of all binaries are interleaved round by round; the median is kept. It
//!   includes logging, configuration, opening the Redis connection (TCP and a PING), and, in the
//!   four functions that publish, building the EventBridge client.
//! - The yardstick, hello-lambda, is the `lambda_runtime` example as written (`#[tokio::main]`,
//!   multi-thread). The functions run on the current-thread runtime, so a hello on that runtime
//!   is shown too.
//! - Sizes are those of `target/lambda/*/bootstrap` (arm64, as `template.yaml` deploys) and
//!   `target/lambda-all-zones/*/bootstrap`, when those directories exist. The bench does not
//!   rebuild them; rebuild them after a change.
//!
//! # Cold start
//!
//! What keeps it low:
//!
//! - the function binaries are linked at a fixed address (non-PIE, `functions/build.rs`). The
//!   dynamic loader would otherwise patch and copy 14 000–42 000 pointers at every start, most
//!   of them in the ranking functions' time-zone tables. The cost: the binary's own code is not
//!   placed at a random address; its libraries, stack and heap still are. The arm64 builds link
//!   the same way;
//! - tokio's current-thread runtime, since a sandbox serves one invocation at a time. The
//!   current-thread hello row shows that this alone starts a hello-world in about three quarters
//!   of the time;
//! - no `CLIENT SETINFO` after connecting: without AUTH it would be a round trip of its own;
//! - the SDK's HTTPS client builds no TLS connector at construction. The one it uses is built on
//!   the first request (`shared/src/aws.rs`);
//! - the start-up parsers (the SDK's endpoint partitions, PEM roots) are built at
//!   `opt-level = 3`.
//!
//! Not in the figure:
//!
//! - Lambda's own sandbox start;
//! - a deployed function with `REDIS_SECRET_ARN` or `TOKEN_SECRET_ARN` reads them from Secrets
//!   Manager at cold start: one HTTPS call through the VPC endpoint (a TLS handshake and a
//!   request), not measurable here.
//!
//! What would move it: creating the EventBridge client on first publish. That moves its cost
//! into a buyer's request rather than removing it.
//!
//! # Binary size
//!
//! Binary size is not a goal: cold start is. What keeps the binaries small, and so their cold
//! start short:
//!
//! - one TLS stack (rustls + *ring*) shared by Redis and the AWS SDK, instead of the SDK's
//!   aws-lc-rs plus a legacy rustls;
//! - no SSO, STS or SigV4a code, and no regex engine in logging;
//! - a release profile for size (`opt-level = "z"`, fat LTO, `panic = "abort"`). The throughput
//!   figures are from that profile;
//! - the non-PIE link, which drops the relocation records (0.2–1 MB);
//! - the Redis client trusts the bundled Amazon roots, as the AWS clients do, rather than
//!   webpki-roots (the public web's roots): about 60 KB less in every binary;
//! - board buckets are formatted with `format!`, not chrono's strftime (about 12 KB), and local
//!   logs have no ANSI colours (about 5 KB);
//! - the ranking functions carry only the 39 zones `.cargo/config.toml` lists (see
//!   docs/deploy.md, "Time zones").
//!
//! What is left in a queue function (x86_64, `size -A`):
//!
//! - 2.9 MB of code, 0.8 MB of read-only data, 0.6 MB of unwind tables and 0.2 MB of constant
//!   tables;
//! - the unwind tables are `.eh_frame`, which the precompiled standard library keeps even with
//!   `panic = "abort"`;
//! - by crate (`cargo bloat`): std, tokio and hyper with HTTP/2 (which the SDK's client always
//!   enables), about 0.45 MB of rustls + *ring*, the Redis client and the Smithy runtime.
//!
//! Time zones:
//!
//! - chrono-tz keeps each zone's transitions up to 2099, 32 bytes each. A zone with daylight
//!   saving costs about 10 KB; one without, under 1 KB.
//! - Every IANA zone is 1.17 MB of distinct tables, and puts the ranking functions at 5.0 MB.
//! - event-applier is 9 KB under 4 MB: not room for another zone with daylight saving.
//! - Zones that keep a listed zone's clock are left out (America/Toronto, Europe/Madrid,
//!   Europe/Rome: 30 KB).
//! - The tables cost no measurable cold start, since the non-PIE link leaves them nothing to
//!   patch at load.
//! - `sam build` reads `.cargo/config.toml` as `cargo lambda build` does.
//!   `CHRONO_TZ_TIMEZONE_FILTER` in the environment wins over it.
//!
//! What would move the rest:
//!
//! - dropping unwind tables (a nightly `build-std`);
//! - an HTTP/1-only HTTPS client for the SDK (h2 alone is 0.1 MB of code).
//!
//! What does not help:
//!
//! - on stable, `-C force-unwind-tables=no` with `panic = "abort"` takes 4 KB off queue-api and
//!   27 KB off ranking-api, because the standard library's precompiled code, and what is inlined
//!   from it, keep their tables;
//! - cargo-lambda's zig linker refuses `--icf=all`;
//! - `regex-lite` and `aws-smithy-json` (the SDK's endpoint partitions) at `opt-level = 3`:
//!   13 KB more in event-applier. At `"z"` the publishing functions start within 1.34 ×
//!   hello.

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
    "event-applier",
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

/// queue-api as deployed with the admission JWT on: the issuer, and the key set it reads at
/// cold start (one RS256 key, as ring signs with it, checked by a probe signature).
const ADMISSION: &str = "queue-api, admission keys loaded";

/// Variables a binary starts with beyond every function's.
type Vars = Vec<(&'static str, String)>;

/// The variables that turn the admission JWT on, with a fresh RS256 key set.
fn admission_vars() -> Vars {
    let (_, keys) = lineup::admission::KeySet::generate(
        jsonwebtoken::Algorithm::RS256,
        "bench",
        chrono::Utc::now(),
        None,
    )
    .expect("an RS256 key");
    vec![
        ("ADMISSION_ISSUER", "https://queue.example".into()),
        ("ADMISSION_AUDIENCE", "booking".into()),
        ("ADMISSION_KEYS", keys),
    ]
}

async fn init_time(
    binary: &PathBuf,
    vars: &[(&'static str, String)],
    api: SocketAddr,
    polls: &mut mpsc::UnboundedReceiver<Instant>,
    bench: &Bench,
) -> Option<Duration> {
    let started = Instant::now();
    let mut child = tokio::process::Command::new(binary)
        .env_clear()
        .envs(vars.iter().map(|(name, value)| (name, value)))
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
    let binaries: Vec<(&str, PathBuf, Vars)> = ["hello-lambda", CURRENT_THREAD_HELLO]
        .into_iter()
        .chain(FUNCTIONS)
        .map(|name| (name, dir.join(name), Vec::new()))
        .chain([(ADMISSION, dir.join("queue-api"), admission_vars())])
        .collect();
    // Round by round, every binary once, so that whatever else the machine does falls on
    // the yardstick and the functions alike.
    let mut times = vec![Vec::new(); binaries.len()];
    for _ in 0..RUNS {
        for ((_, binary, vars), times) in binaries.iter().zip(&mut times) {
            if let Some(t) = init_time(binary, vars, api, &mut polls, bench).await {
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
    for ((function, binary, _), median) in binaries.iter().zip(&medians).skip(1) {
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
