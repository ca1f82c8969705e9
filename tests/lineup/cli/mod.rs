//! `lineup`, the operator's console, run as a process against the local stack: every
//! subcommand, with what it did read back through the API (or the stack's own code), its exit
//! code (README, "Exit codes"), and what an operator reads on stdout and stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::process::Stdio;

use lineup_cli::error::EXIT_CODES;
use lineup_cli::routes::Route;
use lineup_tests::cli::{cli_binary, run_cli, Ran};
use lineup_tests::queue::{join, leave, summary};
use lineup_tests::{api_request, Reply, TestApp};
use serde_json::{json, Value};

use crate::local_stack::{send, serve};

mod lists;
mod operator;
mod queue;
mod surface;

/// A test app served over real HTTP, as lineup-local serves it, and the console pointed at it.
pub(super) struct Local {
    app: TestApp,
    addr: SocketAddr,
    url: String,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Local {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Local {
    async fn start() -> Local {
        Local::on(TestApp::spawn(&[]).await).await
    }

    async fn on(app: TestApp) -> Local {
        let (addr, server) = serve(&app).await;
        Local {
            app,
            addr,
            url: format!("http://{addr}"),
            server,
        }
    }

    /// `lineup --url <this stack> args…`, no stdin.
    async fn lineup(&self, args: &[&str]) -> Ran {
        self.lineup_with(args, &[], None).await
    }

    async fn lineup_with(&self, args: &[&str], env: &[(&str, &str)], input: Option<&str>) -> Ran {
        let mut all = vec!["--url", self.url.as_str()];
        all.extend_from_slice(args);
        run_cli(&all, env, input).await
    }

    /// The queue's settings, as `GET /queues/{queue}` gives them.
    async fn settings(&self, queue: &str) -> Value {
        let reply = summary(&self.app, queue).await;
        assert_eq!(reply.status, 200, "{}", reply.body);
        reply.body["settings"].clone()
    }

    /// `GET path` over HTTP: the status and the JSON body (null when none).
    async fn get(&self, path: &str) -> (u16, Value) {
        let (status, _, body) = send(self.addr, "GET", path, None).await;
        (status, serde_json::from_str(&body).unwrap_or(Value::Null))
    }
}

/// `POST /queues/{queue}/tokens` for `user` with an access code.
pub(super) async fn join_with_code(app: &TestApp, queue: &str, user: &str, code: &str) -> Reply {
    let body = json!({ "userId": user, "accessCode": code }).to_string();
    app.queue_api(api_request(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
    ))
    .await
}

/// `POST /coupons/{coupon}/claims` with `body`.
pub(super) async fn claim(app: &TestApp, coupon: &str, body: Value) -> Reply {
    app.coupon_api(api_request(
        "POST",
        &format!("/coupons/{coupon}/claims"),
        Some(&body.to_string()),
    ))
    .await
}

/// The run's stderr: one line, `lineup: …`, the failure as the operator reads it.
#[track_caller]
pub(super) fn one_line(ran: &Ran) -> &str {
    let line = ran.stderr.trim_end();
    assert!(
        line.starts_with("lineup: ") && !line.contains('\n'),
        "one line on stderr: {ran:#?}"
    );
    line
}

/// A human table's or label list's lines, each split at runs of two or more spaces.
pub(super) fn cells(stdout: &str) -> Vec<Vec<String>> {
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.trim()
                .split("  ")
                .map(str::trim)
                .filter(|cell| !cell.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// Label and value rows (`queue show`, `pool show`, `coupon show`): the first value under
/// each label.
pub(super) fn pairs(stdout: &str) -> BTreeMap<String, String> {
    let mut pairs = BTreeMap::new();
    for row in cells(stdout) {
        if let [label, value] = &row[..] {
            pairs.entry(label.clone()).or_insert_with(|| value.clone());
        }
    }
    pairs
}

/// `queue set`'s table: the rows under `setting before after`, as a set.
#[track_caller]
pub(super) fn changed_rows(ran: &Ran) -> BTreeSet<Vec<String>> {
    let rows = cells(&ran.stdout);
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(&["setting".to_owned(), "before".into(), "after".into()][..]),
        "{ran:#?}"
    );
    rows.into_iter().skip(1).collect()
}

pub(super) fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

pub(super) fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}
