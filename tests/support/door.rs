//! The door's client side in tests: ALTCHA challenges solved by the ALTCHA project's own
//! library (`altcha/lib` on npm, in `tests/browser/node_modules`, through
//! `tests/browser/altcha-solve.mjs`), never by lineup's code.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

fn browser_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("browser")
}

/// Whether Node and the ALTCHA library are here. Without them a test says it skipped, unless
/// `LINEUP_REQUIRE_BROWSER=1` (CI), where that fails it.
pub fn solver_ready() -> bool {
    let node = std::process::Command::new("node").arg("--version").output();
    let ready = node.is_ok_and(|out| out.status.success())
        && browser_dir().join("node_modules/altcha/dist/lib").exists();
    if !ready {
        assert!(
            std::env::var("LINEUP_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "LINEUP_REQUIRE_BROWSER=1 but no node or no tests/browser/node_modules/altcha"
        );
        eprintln!("skipped: no node or no altcha in tests/browser/node_modules");
    }
    ready
}

/// The payload (base64 of `{challenge, solution}`) that solves `challenge`, from ALTCHA's own
/// solver.
pub async fn solve(challenge: &Value) -> String {
    let mut node = Command::new("node")
        .arg("altcha-solve.mjs")
        .current_dir(browser_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut stdin = node.stdin.take().expect("stdin");
    stdin
        .write_all(challenge.to_string().as_bytes())
        .await
        .expect("challenge written");
    drop(stdin);
    let out = node.wait_with_output().await.expect("node ends");
    assert!(out.status.success(), "the ALTCHA solver failed");
    String::from_utf8(out.stdout).expect("base64")
}
