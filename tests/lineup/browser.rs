//! The buyer's pages in a real browser: Debian's Chromium, driven from Node by the scripts in
//! `tests/browser/` (playwright-core, axe-core), each against the local stack's own HTTP
//! server on a free port, with the promoter and reaper ticking, a Redis this test stops and
//! starts, and the live boards' snapshots it takes, when the script asks. `pages.test.mjs` reaches every state of both pages;
//! `languages.test.mjs` reaches them again in every language; `turn.test.mjs` brings the turn
//! to a page in the background.
//!
//! Runs under `cargo test --workspace` when `node`, Chromium (`CHROMIUM`, default
//! `/usr/bin/chromium`) and `tests/browser/node_modules` are there, and says it skipped
//! otherwise; `.ci/run` installs them and sets `LINEUP_REQUIRE_BROWSER=1`, where a missing
//! piece fails the test. Screenshots of every state go to `target/screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use lineup_tests::{reaping_every_second, TestApp};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// What the browser test needs, or why it cannot run.
fn tools() -> Result<PathBuf, String> {
    let chromium =
        PathBuf::from(std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into()));
    if !chromium.exists() {
        return Err(format!("no Chromium at {}", chromium.display()));
    }
    let node = std::process::Command::new("node").arg("--version").output();
    if !node.is_ok_and(|out| out.status.success()) {
        return Err("no node".into());
    }
    if !repo()
        .join("tests/browser/node_modules/playwright-core")
        .exists()
    {
        return Err("no tests/browser/node_modules (npm ci in tests/browser)".into());
    }
    Ok(chromium)
}

/// Runs `tests/browser/<script>` in Node against a fresh local stack, stopping and starting
/// its Redis when the script asks; fails if the script fails.
async fn run_in_chromium(script: &str) {
    let chromium = match tools() {
        Ok(chromium) => chromium,
        Err(missing) if std::env::var("LINEUP_REQUIRE_BROWSER").as_deref() != Ok("1") => {
            eprintln!("skipped: {missing} (LINEUP_REQUIRE_BROWSER=1 makes this fail)");
            return;
        }
        Err(missing) => panic!("LINEUP_REQUIRE_BROWSER=1 but {missing}"),
    };
    // One script at a time, and never beside the real-clock on-sales: Chromium takes both
    // cores, and the scripts wait on real timers.
    let _turn = lineup_tests::CPU_HEAVY.write().await;
    let mut app = TestApp::spawn_durable(&[
        ("PROMOTE_TICK_SECONDS", "1"),
        ("WAITING_IDLE_SECONDS", "15"),
        ("RATE_LIMIT_USER_PER_MINUTE", "0"),
        ("RATE_LIMIT_IP_PER_MINUTE", "0"),
        ("RANKING_DEDUPE_DAYS", "3660"),
    ])
    .await;
    let mut redis = app.redis.take().expect("a private redis-server");
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(lineup_local::serve(
        listener,
        app.stack.clone(),
        std::future::pending(),
    ));
    let schedules = lineup_local::spawn_schedules(&app.stack, &reaping_every_second());

    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| repo().join("target"));
    let mut node = Command::new("node")
        .arg(script)
        .current_dir(repo().join("tests/browser"))
        .env("BASE_URL", &base)
        .env("CHROMIUM", &chromium)
        .env("SCREENSHOTS", target.join("screenshots"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("node starts");
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    // Each snapshot the script asks for is taken an hour ahead of now and of the last, so
    // that its hour is past any round the running tick started: a round the tick starts at
    // the turn of a real hour would otherwise leave the script's snapshot nothing to do.
    let mut snapshot_at = 0;
    while let Some(line) = lines.next_line().await.unwrap() {
        let answer = match line.as_str() {
            "lineup:redis stop" => {
                redis.stop().await;
                "ok".to_owned()
            }
            "lineup:redis start" => {
                redis.restart().await.expect("redis restarts");
                "ok".to_owned()
            }
            "lineup:snapshot" => {
                snapshot_at = (snapshot_at + 3_600_000)
                    .max(chrono::Utc::now().timestamp_millis() + 3_600_000);
                let rankings = &app.stack.event_applier.rankings;
                let round = rankings.snapshot(&snapshot_at).await.expect("a snapshot");
                assert!(!round.more && round.boards > 0, "{round:?}");
                snapshot_at.to_string()
            }
            other => {
                println!("{other}");
                continue;
            }
        };
        stdin
            .write_all(format!("{answer}\n").as_bytes())
            .await
            .unwrap();
    }
    let status = node.wait().await.unwrap();
    schedules.abort();
    server.abort();
    assert!(status.success(), "{script} failed: {status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_work_in_chromium_for_every_state_that_exists() {
    run_in_chromium("pages.test.mjs").await;
}

/// Every state of both pages in English, Korean, Japanese, Simplified and Traditional
/// Chinese, each from a browser in that language; the language menu; the tags' mapping.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_state_of_both_pages_reads_in_every_language() {
    run_in_chromium("languages.test.mjs").await;
}

/// The buyer's turn with the waiting room in a background tab (`tests/browser/turn.test.mjs`):
/// the tab's title, the sound, the notification through the service worker, how long the
/// place is held, near the turn, a poll as soon as the page shows again, and a throttled
/// tab that keeps its place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_turn_reaches_a_buyer_whose_page_is_in_the_background() {
    run_in_chromium("turn.test.mjs").await;
}

/// The door's solver is ALTCHA's own PBKDF2 worker, unchanged: the file of the `altcha` npm
/// package that `tests/browser/package.json` pins.
#[test]
fn the_door_serves_altchas_own_worker_unchanged() {
    let pinned = repo().join("tests/browser/node_modules/altcha/dist/workers/pbkdf2.js");
    let Ok(pinned) = std::fs::read_to_string(&pinned) else {
        assert!(
            std::env::var("LINEUP_REQUIRE_BROWSER").as_deref() != Ok("1"),
            "LINEUP_REQUIRE_BROWSER=1 but no {}",
            pinned.display()
        );
        eprintln!("skipped: no tests/browser/node_modules/altcha (npm ci in tests/browser)");
        return;
    };
    assert!(
        lineup::pages::ALTCHA_WORKER == pinned,
        "shared/src/pages/altcha/pbkdf2.js differs from the pinned altcha package's worker"
    );
}
