//! `lineup watch` in a real terminal: the built binary runs in tmux, 80×24, against the local
//! stack over HTTP, and the screen is read back with `capture-pane`. Buyers join and the
//! promoter admits them through the same handlers; the test polls the screen until the
//! numbers it expects show, or fails with the last screen after a generous deadline.
//!
//! Each test has a tmux server of its own (`tmux -L`), killed when the test ends, passed or
//! failed. Without tmux the tests say they skipped; `.ci/run` installs it and sets
//! `LINEUP_REQUIRE_TMUX=1`, where a missing tmux fails them.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use lineup_tests::cli::cli_binary;
use lineup_tests::outage::{join_until_served, QUICK_TO_GIVE_UP};
use lineup_tests::queue::{join, promote, put_settings};
use lineup_tests::{sleep, TestApp};
use serde_json::json;

use crate::local_stack::serve;

/// How long the screen may take to show what the test expects: far more than a refresh
/// (1 s) takes, so it tells "shows it" from "never does" on a loaded machine.
const DEADLINE: Duration = Duration::from_secs(60);

/// Whether tmux is here; without it, the test skips, or fails under `LINEUP_REQUIRE_TMUX=1`.
fn tmux_here() -> bool {
    let found = std::process::Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        assert!(
            std::env::var("LINEUP_REQUIRE_TMUX").as_deref() != Ok("1"),
            "LINEUP_REQUIRE_TMUX=1 but no tmux"
        );
        eprintln!("skipped: no tmux (LINEUP_REQUIRE_TMUX=1 makes this fail)");
    }
    found
}

static NEXT_SOCKET: AtomicU32 = AtomicU32::new(0);

/// A tmux server of the test's own, with one session, `watch`, running `lineup watch` and,
/// once it ends, a line with its exit code and one with the terminal's modes; then the shell
/// waits (a sleep) so the pane stays as lineup left it. Its status line is off, so the pane is
/// the whole terminal. Dropping it kills the server and what runs in it and removes its
/// socket, whatever happened.
struct Terminal {
    socket: String,
    /// Where the server's socket is, once it runs: removed with the server.
    socket_path: Option<std::path::PathBuf>,
    _config: tempfile::TempDir,
}

impl Terminal {
    /// `lineup --url http://{addr} watch {queues} --every 1` in a `width`×`height` terminal.
    async fn watch(
        addr: std::net::SocketAddr,
        queues: &[&str],
        width: u16,
        height: u16,
    ) -> Terminal {
        let config = tempfile::tempdir().expect("a temporary directory");
        let file = config.path().join("tmux.conf");
        std::fs::write(&file, "set -g status off\n").unwrap();
        let mut terminal = Terminal {
            socket_path: None,
            socket: format!(
                "lineup-watch-{}-{}",
                std::process::id(),
                NEXT_SOCKET.fetch_add(1, Ordering::Relaxed)
            ),
            _config: config,
        };
        let binary = cli_binary().display().to_string();
        // After lineup: its exit code, then whether the terminal is back in cooked mode
        // (`icanon echo`; raw mode would print `-icanon -echo`).
        let command = format!(
            "'{binary}' --url http://{addr} watch {} --every 1; \
             echo \"lineup exited $?\"; \
             echo \"modes: $(stty -a | tr ' ;' '\\n\\n' | grep -xE -- '-?(icanon|echo)' | tr '\\n' ' ')\"; \
             exec sleep 3600",
            queues.join(" ")
        );
        terminal
            .tmux(&[
                "-f",
                &file.display().to_string(),
                "new-session",
                "-d",
                "-s",
                "watch",
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
                // No config file of the machine's, no named target: the URL alone.
                "-e",
                "LINEUP_CONFIG=/nonexistent/lineup-config.toml",
                "-e",
                "LINEUP_TARGET=",
                &command,
            ])
            .await;
        let path = terminal
            .tmux(&["display-message", "-p", "#{socket_path}"])
            .await;
        terminal.socket_path = Some(path.trim().into());
        terminal
    }

    /// Runs `tmux -L <socket> args`; its output.
    async fn tmux(&self, args: &[&str]) -> String {
        let out = tokio::process::Command::new("tmux")
            .arg("-u")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .output()
            .await
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The pane as it shows now.
    async fn screen(&self) -> Screen {
        let screen = self.tmux(&["capture-pane", "-p", "-t", "watch"]).await;
        Screen(screen.lines().map(str::to_owned).collect())
    }

    /// Reads the screen every 200 ms until `done` holds for it: that screen. Fails with the
    /// last screen after [`DEADLINE`].
    async fn until(&self, what: &str, done: impl Fn(&Screen) -> bool) -> Screen {
        let started = Instant::now();
        loop {
            let screen = self.screen().await;
            if done(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "the view did not show {what} within {DEADLINE:?}:\n{}",
                screen.0.join("\n")
            );
            sleep(Duration::from_millis(200)).await;
        }
    }

    /// Presses `q`, then checks that lineup ended with 0 and gave the terminal back: off the
    /// alternate screen, out of raw mode, the cursor shown.
    async fn quit(&self) {
        self.tmux(&["send-keys", "-t", "watch", "q"]).await;
        let screen = self
            .until("lineup ending after q", |screen| {
                screen.text().contains("modes:")
            })
            .await;
        assert!(
            screen.text().contains("lineup exited 0"),
            "{}",
            screen.text()
        );
        assert!(
            screen.text().contains("modes: icanon echo"),
            "the terminal is left in raw mode:\n{}",
            screen.text()
        );
        let state = self
            .tmux(&[
                "display-message",
                "-p",
                "-t",
                "watch",
                "#{alternate_on} #{cursor_flag}",
            ])
            .await;
        assert_eq!(state.trim(), "0 1", "alternate screen, cursor shown");
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = std::process::Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .env_remove("TMUX")
            .output();
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A captured screen, one string a row.
struct Screen(Vec<String>);

impl Screen {
    fn text(&self) -> String {
        self.0.join("\n")
    }

    /// The rows inside the box titled `queue` (empty when there is none).
    fn queue(&self, queue: &str) -> Vec<String> {
        let title = format!("┌ {queue} ");
        let Some((top, line)) = self
            .0
            .iter()
            .enumerate()
            .find(|(_, row)| row.contains(&title))
        else {
            return Vec::new();
        };
        let chars: Vec<char> = line.chars().collect();
        let left = line[..line.find(&title).unwrap()].chars().count();
        let Some(right) = (left + 1..chars.len()).find(|x| chars[*x] == '┐') else {
            return Vec::new();
        };
        self.0[top + 1..]
            .iter()
            .take_while(|row| row.chars().nth(left) == Some('│'))
            .map(|row| row.chars().skip(left + 1).take(right - left - 1).collect())
            .collect()
    }

    /// The number on `queue`'s line labelled `label` (`waiting  1,234`), if it shows.
    fn number(&self, queue: &str, label: &str) -> Option<u64> {
        let rows = self.queue(queue);
        let line = rows
            .iter()
            .find(|row| row.starts_with(&format!("{label} ")))?;
        line[label.len()..]
            .split_whitespace()
            .next()?
            .replace(',', "")
            .parse()
            .ok()
    }

    /// Whether `queue`'s box has a line beginning with `start`.
    fn line(&self, queue: &str, start: &str) -> bool {
        self.queue(queue).iter().any(|row| row.starts_with(start))
    }

    /// The last row: the footer.
    fn footer(&self) -> &str {
        self.0.last().map_or("", String::as_str)
    }
}

/// Buyers join a paused queue and the waiting count rises on the screen; once it resumes, the
/// promoter admits them up to its capacity and the active count rises; the other queue, sold
/// out, says so. Every number's line shows whole at 80 columns. `q` ends it and gives the
/// terminal back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_counts_buyers_joining_and_admitted_and_shows_pause_and_sold_out() {
    if !tmux_here() {
        return;
    }
    let app = TestApp::spawn(&[]).await;
    let (addr, server) = serve(&app).await;
    let reply = put_settings(&app, "w1", &json!({ "paused": true, "capacity": 3 })).await;
    assert_eq!(reply.status, 200, "{}", reply.body);

    let terminal = Terminal::watch(addr, &["w1", "w2"], 80, 24).await;
    let first = terminal
        .until("both queues' first numbers", |s| {
            s.number("w1", "waiting") == Some(0) && s.number("w2", "waiting") == Some(0)
        })
        .await;
    for (queue, line) in [
        ("w1", "PAUSED"),
        ("w1", "active   0"),
        ("w1", "cap      3 · capacity"),
        ("w1", "health   1"),
        ("w1", "updated "),
        ("w2", "OPEN"),
        ("w2", "cap      100 · capacity"),
    ] {
        assert!(
            first.line(queue, line),
            "{queue}: {line:?}\n{}",
            first.text()
        );
    }
    assert!(first.footer().contains("q quits"), "{}", first.text());

    // Joining a paused queue, buyers wait: the count rises with each pair.
    for (round, users) in [["ana", "ben"], ["cai", "dee"]].iter().enumerate() {
        for user in users {
            let reply = join(&app, "w1", user).await;
            assert_eq!(reply.status, 201, "{}", reply.body);
            assert_eq!(reply.body["status"], "waiting", "{}", reply.body);
        }
        let expected = 2 * (round as u64 + 1);
        terminal
            .until(&format!("{expected} waiting in w1"), |s| {
                s.number("w1", "waiting") == Some(expected) && s.number("w1", "active") == Some(0)
            })
            .await;
    }

    // Resumed, the promoter's tick admits three, the capacity; one still waits.
    let reply = put_settings(&app, "w1", &json!({ "paused": false })).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    promote(&app).await;
    let admitted = terminal
        .until("three admitted in w1, one waiting, no longer paused", |s| {
            s.number("w1", "active") == Some(3)
                && s.number("w1", "waiting") == Some(1)
                && s.line("w1", "OPEN")
        })
        .await;
    assert!(!admitted.text().contains("PAUSED"), "{}", admitted.text());

    let reply = put_settings(&app, "w2", &json!({ "soldOut": true })).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    terminal
        .until("w2 sold out", |s| s.line("w2", "SOLD OUT"))
        .await;

    terminal.quit().await;
    server.abort();
}

/// Redis goes away under the view: it says a refresh failed, with the 503 the stack answers,
/// and keeps the last numbers on screen; Redis comes back (the same data, from its
/// append-only file), a buyer joins, and the view shows the fresh count with the failure gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_view_keeps_the_last_numbers_through_a_redis_restart_and_says_so() {
    if !tmux_here() {
        return;
    }
    // A private server always: the test stops it.
    let mut app = TestApp::spawn_durable(QUICK_TO_GIVE_UP).await;
    let (addr, server) = serve(&app).await;
    let reply = put_settings(&app, "r1", &json!({ "capacity": 1 })).await;
    assert_eq!(reply.status, 200, "{}", reply.body);
    for user in ["ana", "ben", "cai"] {
        assert_eq!(join(&app, "r1", user).await.status, 201);
    }

    let terminal = Terminal::watch(addr, &["r1", "r2"], 80, 24).await;
    terminal
        .until("r1's numbers", |s| {
            s.number("r1", "waiting") == Some(2) && s.number("r1", "active") == Some(1)
        })
        .await;

    app.redis.as_mut().expect("a private server").stop().await;
    let failing = terminal
        .until("a failed refresh", |s| {
            s.line("r1", "refresh failed") && s.line("r2", "refresh failed")
        })
        .await;
    // The last numbers stay, with how old they are and why they are not newer.
    assert_eq!(
        failing.number("r1", "waiting"),
        Some(2),
        "{}",
        failing.text()
    );
    assert_eq!(
        failing.number("r1", "active"),
        Some(1),
        "{}",
        failing.text()
    );
    assert!(failing.line("r1", "updated "), "{}", failing.text());
    assert!(failing.line("r1", "503 "), "{}", failing.text());
    assert!(
        failing.footer().contains("2 refreshes failing, retrying"),
        "{}",
        failing.text()
    );

    app.redis
        .as_mut()
        .expect("a private server")
        .restart()
        .await
        .expect("redis restarts");
    let (reply, _, _) = join_until_served(&app, "r1", "dee").await;
    assert_eq!(reply.status, 201, "{}", reply.body);
    let back = terminal
        .until("fresh numbers and no failure", |s| {
            s.number("r1", "waiting") == Some(3)
                && !s.text().contains("refresh failed")
                && !s.footer().contains("failing")
        })
        .await;
    assert_eq!(back.number("r1", "active"), Some(1), "{}", back.text());

    terminal.quit().await;
    server.abort();
}
