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

/// A test app served over real HTTP, as lineup-local serves it, and the console pointed at it.
struct Local {
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
async fn join_with_code(app: &TestApp, queue: &str, user: &str, code: &str) -> Reply {
    let body = json!({ "userId": user, "accessCode": code }).to_string();
    app.queue_api(api_request(
        "POST",
        &format!("/queues/{queue}/tokens"),
        Some(&body),
    ))
    .await
}

/// `POST /coupons/{coupon}/claims` with `body`.
async fn claim(app: &TestApp, coupon: &str, body: Value) -> Reply {
    app.coupon_api(api_request(
        "POST",
        &format!("/coupons/{coupon}/claims"),
        Some(&body.to_string()),
    ))
    .await
}

/// The run's stderr: one line, `lineup: …`, the failure as the operator reads it.
#[track_caller]
fn one_line(ran: &Ran) -> &str {
    let line = ran.stderr.trim_end();
    assert!(
        line.starts_with("lineup: ") && !line.contains('\n'),
        "one line on stderr: {ran:#?}"
    );
    line
}

/// A human table's or label list's lines, each split at runs of two or more spaces.
fn cells(stdout: &str) -> Vec<Vec<String>> {
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
fn pairs(stdout: &str) -> BTreeMap<String, String> {
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
fn changed_rows(ran: &Ran) -> BTreeSet<Vec<String>> {
    let rows = cells(&ran.stdout);
    assert_eq!(
        rows.first().map(Vec::as_slice),
        Some(&["setting".to_owned(), "before".into(), "after".into()][..]),
        "{ran:#?}"
    );
    rows.into_iter().skip(1).collect()
}

fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

#[tokio::test]
async fn queue_show_prints_the_summary_as_labelled_rows_and_as_json() {
    let local = Local::start().await;
    let put = lineup_tests::queue::put_settings(
        &local.app,
        "cli-show",
        &json!({ "capacity": 7, "message": "Doors at six" }),
    )
    .await;
    assert_eq!(put.status, 200, "{}", put.body);
    assert_eq!(
        join(&local.app, "cli-show", "ana").await.body["status"],
        "active"
    );

    let shown = local.lineup(&["queue", "show", "cli-show"]).await.expect(0);
    let rows = pairs(&shown.stdout);
    assert_eq!(rows["queue"], "cli-show", "{}", shown.stdout);
    assert_eq!(rows["state"], "open");
    assert_eq!(rows["waiting"], "0");
    assert_eq!(rows["active"], "1 of 7 (limited by capacity)");
    assert_eq!(rows["message"], "Doors at six");
    // The settings, one a row, under their own heading.
    assert!(
        shown.stdout.lines().any(|line| line == "settings"),
        "{}",
        shown.stdout
    );
    assert_eq!(rows["capacity"], "7");
    assert_eq!(rows["access"], "open");

    let shown = local
        .lineup(&["--json", "queue", "show", "cli-show"])
        .await
        .expect(0)
        .json();
    assert_eq!(shown["queueId"], "cli-show");
    assert_eq!(shown["active"], 1);
    assert_eq!(shown["settings"], local.settings("cli-show").await);
    assert_eq!(shown["settings"]["capacity"], 7);
}

#[tokio::test]
async fn queue_set_from_flags_changes_the_settings_and_lists_only_what_changed() {
    let local = Local::start().await;
    let before = local.settings("cli-set").await;
    let session = before["sessionSeconds"].to_string();
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-set",
            "--capacity",
            "7",
            "--admit-per-tick",
            "3",
            // The value in force: not a change, so not listed.
            "--session-seconds",
            &session,
            "--message",
            "Doors at six",
            "--access",
            "list",
        ])
        .await
        .expect(0);
    let expected: BTreeSet<Vec<String>> = [
        row(&["capacity", &before["capacity"].to_string(), "7"]),
        row(&["admitPerTick", &before["admitPerTick"].to_string(), "3"]),
        row(&["message", "-", "Doors at six"]),
        row(&["access", "open", "list"]),
    ]
    .into();
    assert_eq!(changed_rows(&ran), expected, "{}", ran.stdout);
    let after = local.settings("cli-set").await;
    assert_eq!(after["capacity"], 7);
    assert_eq!(after["admitPerTick"], 3);
    assert_eq!(after["message"], "Doors at six");
    assert_eq!(after["access"], "list");
    assert_eq!(after["sessionSeconds"], before["sessionSeconds"]);

    // --json: the settings in force and what changed, before and after.
    let ran = local
        .lineup(&["--json", "queue", "set", "cli-set", "--capacity", "8"])
        .await
        .expect(0)
        .json();
    assert_eq!(
        ran["changed"],
        json!({ "capacity": { "before": 7, "after": 8 } })
    );
    assert_eq!(ran["settings"]["capacity"], 8);
    assert_eq!(local.settings("cli-set").await["capacity"], 8);

    // The same value again changes nothing, and says so.
    let ran = local
        .lineup(&["queue", "set", "cli-set", "--capacity", "8"])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "cli-set: nothing changed");
}

#[tokio::test]
async fn queue_set_takes_a_json_file_set_and_reset_and_flags_win_over_the_file() {
    let local = Local::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("settings.json");
    std::fs::write(
        &file,
        r#"{"capacity": 9, "maxWaiting": 50, "message": "From the file"}"#,
    )
    .unwrap();
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-file",
            "--file",
            file.to_str().unwrap(),
            "--capacity",
            "11",
        ])
        .await
        .expect(0);
    let settings = local.settings("cli-file").await;
    assert_eq!(settings["capacity"], 11, "the flag wins: {}", ran.stdout);
    assert_eq!(settings["maxWaiting"], 50);
    assert_eq!(settings["message"], "From the file");

    // --set NAME=JSON for any field (and a bare word is a string); --reset returns a field
    // to its default.
    let ramp = json!({ "from": 2, "step": 2, "everySeconds": 60, "to": 10 });
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-file",
            "--set",
            &format!("capacityRamp={ramp}"),
            "--set",
            "laneBeforeOpening=true",
            "--set",
            "challenge=on",
            "--reset",
            "message",
            "--reset",
            "maxWaiting",
        ])
        .await
        .expect(0);
    let settings = local.settings("cli-file").await;
    assert_eq!(settings["capacityRamp"], ramp);
    assert_eq!(settings["laneBeforeOpening"], true);
    assert_eq!(settings["challenge"], "on");
    assert_eq!(settings["message"], Value::Null);
    assert_eq!(settings["maxWaiting"], Value::Null);
    let rows = changed_rows(&ran);
    assert!(
        rows.contains(&row(&["message", "From the file", "-"])),
        "{}",
        ran.stdout
    );
    assert!(
        rows.contains(&row(&["maxWaiting", "50", "-"])),
        "{}",
        ran.stdout
    );
    assert_eq!(rows.len(), 5, "{}", ran.stdout);

    // The file from stdin.
    local
        .lineup_with(
            &["queue", "set", "cli-file", "--file", "-"],
            &[],
            Some(r#"{"sessionSeconds": 321}"#),
        )
        .await
        .expect(0);
    assert_eq!(local.settings("cli-file").await["sessionSeconds"], 321);
}

#[tokio::test]
async fn queue_set_with_a_bad_value_says_so_on_one_line_and_changes_nothing() {
    let local = Local::start().await;
    local
        .lineup(&[
            "queue",
            "set",
            "cli-bad",
            "--capacity",
            "7",
            "--admit-per-tick",
            "3",
        ])
        .await
        .expect(0);
    let before = local.settings("cli-bad").await;

    // The API refuses the change as a whole: exit 1, the problem on one line.
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-bad",
            "--capacity",
            "8",
            "--admit-per-tick",
            "0",
        ])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(400)"), "{ran:#?}");
    assert!(ran.stdout.is_empty(), "{ran:#?}");
    let ramp_down = r#"capacityRamp={"from":5,"step":1,"everySeconds":60,"to":2}"#;
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-bad",
            "--capacity",
            "8",
            "--set",
            ramp_down,
        ])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(400)"), "{ran:#?}");
    // A value the console can check itself is bad usage, and nothing is sent.
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-bad",
            "--capacity",
            "8",
            "--opens-at",
            "tomorrow",
        ])
        .await
        .expect(2);
    assert!(one_line(&ran).contains("opensAt"), "{ran:#?}");
    let ran = local
        .lineup(&[
            "queue",
            "set",
            "cli-bad",
            "--capacity",
            "8",
            "--set",
            "capacity",
        ])
        .await
        .expect(2);
    one_line(&ran);
    local.lineup(&["queue", "set", "cli-bad"]).await.expect(2);
    assert_eq!(local.settings("cli-bad").await, before);
}

#[tokio::test]
async fn queue_pause_and_resume_flip_paused_and_carry_the_message() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "set", "cli-pause", "--capacity", "5"])
        .await
        .expect(0);
    let ran = local
        .lineup(&[
            "queue",
            "pause",
            "cli-pause",
            "--message",
            "Back in a minute",
        ])
        .await
        .expect(0);
    let expected: BTreeSet<Vec<String>> = [
        row(&["paused", "false", "true"]),
        row(&["message", "-", "Back in a minute"]),
    ]
    .into();
    assert_eq!(changed_rows(&ran), expected);
    let settings = local.settings("cli-pause").await;
    assert_eq!(settings["paused"], true);
    assert_eq!(settings["message"], "Back in a minute");
    // Buyers wait, and are told why.
    let joined = join(&local.app, "cli-pause", "ana").await;
    assert_eq!(joined.body["status"], "waiting", "{}", joined.body);
    assert_eq!(joined.body["paused"], true);
    assert_eq!(joined.body["message"], "Back in a minute");
    let shown = local
        .lineup(&["queue", "show", "cli-pause"])
        .await
        .expect(0);
    let rows = pairs(&shown.stdout);
    assert_eq!(rows["state"], "paused");
    assert_eq!(rows["message"], "Back in a minute");

    let ran = local
        .lineup(&["queue", "resume", "cli-pause"])
        .await
        .expect(0);
    assert_eq!(
        changed_rows(&ran),
        [row(&["paused", "true", "false"])].into()
    );
    assert_eq!(local.settings("cli-pause").await["paused"], false);
    assert_eq!(
        pairs(
            &local
                .lineup(&["queue", "show", "cli-pause"])
                .await
                .expect(0)
                .stdout
        )["state"],
        "open"
    );
}

#[tokio::test]
async fn queue_sold_out_asks_first_then_sells_out_and_undo_clears_it() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "set", "cli-sold", "--capacity", "5"])
        .await
        .expect(0);
    // No terminal to ask on and no --yes: refused, nothing changed.
    let ran = local
        .lineup(&["queue", "sold-out", "cli-sold"])
        .await
        .expect(5);
    assert!(one_line(&ran).contains("--yes"), "{ran:#?}");
    assert_eq!(local.settings("cli-sold").await["soldOut"], false);
    assert_eq!(join(&local.app, "cli-sold", "ana").await.status, 201);

    let ran = local
        .lineup(&[
            "queue",
            "sold-out",
            "cli-sold",
            "--yes",
            "--message",
            "All gone",
        ])
        .await
        .expect(0);
    assert!(
        changed_rows(&ran).contains(&row(&["soldOut", "false", "true"])),
        "{}",
        ran.stdout
    );
    let settings = local.settings("cli-sold").await;
    assert_eq!(settings["soldOut"], true);
    assert_eq!(settings["message"], "All gone");
    let refused = join(&local.app, "cli-sold", "ben").await;
    assert_eq!(refused.status, 410, "{}", refused.body);
    assert_eq!(
        pairs(
            &local
                .lineup(&["queue", "show", "cli-sold"])
                .await
                .expect(0)
                .stdout
        )["state"],
        "sold out"
    );

    // Undoing it does not ask.
    let ran = local
        .lineup(&["queue", "sold-out", "cli-sold", "--undo"])
        .await
        .expect(0);
    assert!(
        changed_rows(&ran).contains(&row(&["soldOut", "true", "false"])),
        "{}",
        ran.stdout
    );
    assert_eq!(local.settings("cli-sold").await["soldOut"], false);
    assert_eq!(join(&local.app, "cli-sold", "ben").await.status, 201);
}

#[tokio::test]
async fn queue_delete_asks_first_refuses_a_queue_with_buyers_and_closes_an_empty_one() {
    let local = Local::start().await;
    let untouched = local.settings("cli-never-set").await;
    local
        .lineup(&["queue", "set", "cli-del", "--capacity", "7"])
        .await
        .expect(0);
    let ana = join(&local.app, "cli-del", "ana").await;
    assert_eq!(ana.status, 201, "{}", ana.body);

    let ran = local
        .lineup(&["queue", "delete", "cli-del"])
        .await
        .expect(5);
    assert!(one_line(&ran).contains("--yes"), "{ran:#?}");
    assert_eq!(local.settings("cli-del").await["capacity"], 7);

    // A buyer holds a place: the API's 409, on one line.
    let ran = local
        .lineup(&["queue", "delete", "cli-del", "--yes"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(409)"), "{ran:#?}");
    assert!(ran.stdout.is_empty(), "{ran:#?}");
    assert_eq!(local.settings("cli-del").await["capacity"], 7);

    assert_eq!(leave(&local.app, "cli-del", &ana.token()).await.status, 204);
    let ran = local
        .lineup(&["queue", "delete", "cli-del", "--yes"])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "cli-del: deleted");
    // Its settings are gone: it reads as a queue nobody set.
    assert_eq!(local.settings("cli-del").await, untouched);
    let ran = local
        .lineup(&["--json", "queue", "delete", "cli-del", "--yes"])
        .await
        .expect(0);
    assert_eq!(ran.json(), json!({ "queueId": "cli-del", "deleted": true }));
}

#[tokio::test]
async fn priority_add_and_remove_take_ids_with_colons_and_a_bad_id_sends_nothing() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "pause", "cli-prio"])
        .await
        .expect(0);
    let ran = local
        .lineup(&["priority", "add", "cli-prio", "auth0:vip", "auth0:gone"])
        .await
        .expect(0);
    let rows = cells(&ran.stdout);
    assert!(
        rows.contains(&row(&["auth0:vip", "added"])),
        "{}",
        ran.stdout
    );
    assert!(
        rows.contains(&row(&["auth0:gone", "added"])),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("the list holds 2"), "{}", ran.stdout);
    let ran = local
        .lineup(&["--json", "priority", "remove", "cli-prio", "auth0:gone"])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["size"], 1);
    assert_eq!(
        ran["results"],
        json!([{ "userId": "auth0:gone", "result": "removed" }])
    );
    // A bad id anywhere: bad usage, and not one request is sent.
    for command in ["add", "remove"] {
        let ran = local
            .lineup(&["priority", command, "cli-prio", "auth0:probe", "bad id"])
            .await
            .expect(2);
        assert!(one_line(&ran).contains("userId"), "{ran:#?}");
    }
    let ran = local
        .lineup(&["--json", "priority", "add", "cli-prio", "auth0:vip"])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["size"], 1, "auth0:probe was never sent");

    // The effect, in a paused queue: auth0:gone (taken off) waits behind an earlier buyer in
    // the main line; auth0:vip, who came last, is first in the priority lane.
    assert_eq!(
        join(&local.app, "cli-prio", "plain").await.body["position"],
        1
    );
    let gone = join(&local.app, "cli-prio", "auth0:gone").await;
    assert_eq!(gone.body["position"], 2, "{}", gone.body);
    let vip = join(&local.app, "cli-prio", "auth0:vip").await;
    assert_eq!(vip.body["position"], 1, "{}", vip.body);
    assert_eq!(vip.body["status"], "waiting");
}

#[tokio::test]
async fn access_add_and_remove_change_who_gets_in_and_a_bad_id_sends_nothing() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "set", "cli-acc", "--access", "list"])
        .await
        .expect(0);
    let ran = local
        .lineup(&["access", "add", "cli-acc", "auth0:abc", "auth0:def"])
        .await
        .expect(0);
    assert!(
        cells(&ran.stdout).contains(&row(&["auth0:abc", "added"])),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("the list holds 2"), "{}", ran.stdout);
    let ran = local
        .lineup(&["--json", "access", "remove", "cli-acc", "auth0:def"])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["size"], 1);
    assert_eq!(ran["results"][0]["result"], "removed");
    let ran = local
        .lineup(&["access", "add", "cli-acc", "auth0:x", "bad id"])
        .await
        .expect(2);
    assert!(one_line(&ran).contains("userId"), "{ran:#?}");
    let ran = local
        .lineup(&["access", "remove", "cli-acc", "auth0:abc", "bad id"])
        .await
        .expect(2);
    one_line(&ran);

    assert_eq!(join(&local.app, "cli-acc", "auth0:abc").await.status, 201);
    let refused = join(&local.app, "cli-acc", "auth0:def").await;
    assert_eq!(refused.status, 403, "taken off the list: {}", refused.body);
    let refused = join(&local.app, "cli-acc", "auth0:x").await;
    assert_eq!(refused.status, 403, "never sent: {}", refused.body);
}

#[tokio::test]
async fn access_import_sends_batches_and_sums_up_bad_and_repeated_ids() {
    let local = Local::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Seven good ids, a bad one on line 3, a repeat and a blank line.
    let plain = dir.path().join("fans.txt");
    std::fs::write(
        &plain,
        "auth0:f1\nauth0:f2\nbad id\nauth0:f3\n\nauth0:f4\nauth0:f5\nauth0:f1\nauth0:f6\nauth0:f7\n",
    )
    .unwrap();
    let plain = plain.to_str().unwrap();

    // Some ids refused, the rest on the list: partly done (6).
    let ran = local
        .lineup(&["access", "import", "cli-imp", plain, "--batch", "3"])
        .await
        .expect(6);
    assert!(one_line(&ran).contains("1 ids refused"), "{ran:#?}");
    assert!(
        ran.stdout
            .contains("7 ids sent to cli-imp's access list; it holds 7"),
        "{}",
        ran.stdout
    );
    assert!(
        ran.stdout.contains("1 repeated ids sent once"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("line 3: \"bad id\""), "{}", ran.stdout);

    // Batches of 3 are three requests, each one pipeline of script calls: three times the
    // scripts of one batch of 7.
    let import = |queue: &'static str, batch: &'static str| {
        let local = &local;
        async move {
            let args = ["--json", "access", "import", queue, plain, "--batch", batch];
            local.lineup(&args).await.expect(6)
        }
    };
    let (_, warm) = local
        .app
        .client_commands_during(import("cli-imp-warm", "7"))
        .await;
    let (_, one) = local
        .app
        .client_commands_during(import("cli-imp-one", "7"))
        .await;
    let (ran, three) = local
        .app
        .client_commands_during(import("cli-imp-json", "3"))
        .await;
    assert!(one["evalsha"] > 0, "{warm:?} {one:?}");
    assert_eq!(three["evalsha"], 3 * one["evalsha"], "{one:?} {three:?}");
    let summed = ran.json();
    assert_eq!(summed["sent"], 7, "{summed}");
    assert_eq!(summed["notSent"], 0);
    assert_eq!(summed["repeated"], 1);
    // Three batches of at most 3, each adding to the list.
    assert_eq!(summed["size"], 7);
    assert_eq!(summed["stoppedBy"], Value::Null);
    let refused = summed["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{summed}");
    assert_eq!(refused[0]["line"], 3);
    assert_eq!(refused[0]["id"], "bad id");

    // The list lets in the last batch's id and nobody else.
    local
        .lineup(&["queue", "set", "cli-imp", "--access", "list"])
        .await
        .expect(0);
    assert_eq!(join(&local.app, "cli-imp", "auth0:f7").await.status, 201);
    assert_eq!(join(&local.app, "cli-imp", "auth0:f1").await.status, 201);
    assert_eq!(
        join(&local.app, "cli-imp", "auth0:nobody").await.status,
        403
    );

    // A CSV by column name.
    let csv = dir.path().join("fans.csv");
    std::fs::write(
        &csv,
        "name,user_id,email\nAda,auth0:c1,a@x\nBob,auth0:c2,b@x\nCy,auth0:c3,c@x\n",
    )
    .unwrap();
    let ran = local
        .lineup(&[
            "--json",
            "access",
            "import",
            "cli-imp-csv",
            csv.to_str().unwrap(),
            "--column",
            "user_id",
            "--batch",
            "2",
        ])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["sent"], 3, "{ran}");
    assert_eq!(ran["size"], 3);
    assert_eq!(ran["refused"], json!([]));
    local
        .lineup(&["queue", "set", "cli-imp-csv", "--access", "list"])
        .await
        .expect(0);
    assert_eq!(
        join(&local.app, "cli-imp-csv", "auth0:c3").await.status,
        201
    );
    assert_eq!(join(&local.app, "cli-imp-csv", "Ada").await.status, 403);
    let ran = local
        .lineup(&[
            "access",
            "import",
            "cli-imp-csv",
            csv.to_str().unwrap(),
            "--column",
            "uid",
        ])
        .await
        .expect(2);
    one_line(&ran);

    // From stdin.
    let ran = local
        .lineup_with(
            &["--json", "access", "import", "cli-imp-stdin", "-"],
            &[],
            Some("auth0:s1\nauth0:s2\n"),
        )
        .await
        .expect(0)
        .json();
    assert_eq!(ran["sent"], 2, "{ran}");
    assert_eq!(ran["size"], 2);
    local
        .lineup(&["access", "import", "cli-imp-stdin", "-", "--batch", "0"])
        .await
        .expect(2);
}

/// Every line of `text` as a minted code: 32 lowercase hex digits.
#[track_caller]
fn codes_of(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            assert!(
                line.len() == 32 && line.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "not a code: {line:?}"
            );
            line.to_owned()
        })
        .collect()
}

#[tokio::test]
async fn codes_create_writes_every_batch_and_a_minted_code_takes_a_place() {
    let local = Local::start().await;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("codes.txt");
    let out = out.to_str().unwrap();
    let ran = local
        .lineup(&[
            "codes",
            "create",
            "cli-codes",
            "--count",
            "7",
            "--batch",
            "3",
            "--out",
            out,
        ])
        .await
        .expect(0);
    assert!(ran.stdout.is_empty(), "codes go to the file: {ran:#?}");
    let progress: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(
        progress,
        [
            "3 of 7 codes written",
            "6 of 7 codes written",
            "7 of 7 codes written"
        ]
    );
    let first = codes_of(&std::fs::read_to_string(out).unwrap());
    assert_eq!(first.len(), 7);
    // --out appends.
    local
        .lineup(&["codes", "create", "cli-codes", "--count", "2", "--out", out])
        .await
        .expect(0);
    let all = codes_of(&std::fs::read_to_string(out).unwrap());
    assert_eq!(all.len(), 9);
    assert_eq!(all[..7], first[..]);

    // To stdout, one code a line.
    let ran = local
        .lineup(&[
            "codes",
            "create",
            "cli-codes",
            "--count",
            "4",
            "--batch",
            "3",
        ])
        .await
        .expect(0);
    let printed = codes_of(&ran.stdout);
    assert_eq!(printed.len(), 4);

    // --json: one JSON line per batch.
    let ran = local
        .lineup(&[
            "--json",
            "codes",
            "create",
            "cli-codes",
            "--count",
            "5",
            "--batch",
            "2",
        ])
        .await
        .expect(0);
    let batches: Vec<Value> = ran
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{line:?}: {err}")))
        .collect();
    assert_eq!(batches.len(), 3, "{}", ran.stdout);
    let mut from_json = Vec::new();
    for (batch, size) in batches.iter().zip([2, 2, 1]) {
        assert_eq!(batch["queueId"], "cli-codes");
        let codes: Vec<String> = batch["codes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(codes.len(), size, "{batch}");
        from_json.extend(codes_of(&codes.join("\n")));
    }
    let distinct: BTreeSet<&String> = all.iter().chain(&printed).chain(&from_json).collect();
    assert_eq!(distinct.len(), 9 + 4 + 5, "every code distinct");

    // Bad counts and batches are bad usage.
    for (count, batch) in [("0", "10"), ("1", "0"), ("1", "10001")] {
        let args = [
            "codes",
            "create",
            "cli-codes",
            "--count",
            count,
            "--batch",
            batch,
        ];
        one_line(&local.lineup(&args).await.expect(2));
    }

    // A minted code takes a place in a queue whose access is `code`, once.
    local
        .lineup(&["queue", "set", "cli-codes", "--access", "code"])
        .await
        .expect(0);
    let app = &local.app;
    assert_eq!(
        join_with_code(app, "cli-codes", "ana", &first[6])
            .await
            .status,
        201
    );
    assert_eq!(
        join_with_code(app, "cli-codes", "ben", &first[6])
            .await
            .status,
        403
    );
    assert_eq!(
        join_with_code(app, "cli-codes", "ben", &all[8])
            .await
            .status,
        201
    );
    assert_eq!(
        join_with_code(app, "cli-codes", "cy", &from_json[4])
            .await
            .status,
        201
    );
    let never = "0".repeat(32);
    assert_eq!(
        join_with_code(app, "cli-codes", "dee", &never).await.status,
        403
    );
}

#[tokio::test]
async fn pool_set_show_and_delete_act_on_the_pool() {
    let local = Local::start().await;
    let ran = local
        .lineup(&[
            "pool",
            "set",
            "cli-arena",
            "--capacity",
            "10",
            "--weight",
            "cli-p1=3",
            "--weight",
            "cli-p2=1",
        ])
        .await
        .expect(0);
    assert_eq!(pairs(&ran.stdout)["capacity"], "10", "{}", ran.stdout);
    let (status, pool) = local.get("/pools/cli-arena").await;
    assert_eq!(status, 200, "{pool}");
    assert_eq!(pool["capacity"], 10);
    assert_eq!(pool["weights"], json!({ "cli-p1": 3, "cli-p2": 1 }));

    let shown = local.lineup(&["pool", "show", "cli-arena"]).await.expect(0);
    let rows = cells(&shown.stdout);
    assert!(
        rows.contains(&row(&["pool", "cli-arena"])),
        "{}",
        shown.stdout
    );
    assert!(
        rows.contains(&row(&["cli-p1", "3", "-"])),
        "{}",
        shown.stdout
    );
    assert!(
        rows.contains(&row(&["cli-p2", "1", "-"])),
        "{}",
        shown.stdout
    );
    let shown = local
        .lineup(&["--json", "pool", "show", "cli-arena"])
        .await
        .expect(0)
        .json();
    assert_eq!(shown, pool);

    // The whole pool each time: weights left out are gone.
    local
        .lineup(&["pool", "set", "cli-arena", "--capacity", "4"])
        .await
        .expect(0);
    let (_, pool) = local.get("/pools/cli-arena").await;
    assert_eq!(
        (pool["capacity"].clone(), pool["weights"].clone()),
        (json!(4), json!({}))
    );
    for bad in ["cli-p1", "cli-p1=x", "bad queue=1"] {
        local
            .lineup(&[
                "pool",
                "set",
                "cli-arena",
                "--capacity",
                "5",
                "--weight",
                bad,
            ])
            .await
            .expect(2);
    }
    assert_eq!(local.get("/pools/cli-arena").await.1["capacity"], 4);

    let ran = local
        .lineup(&["pool", "delete", "cli-arena"])
        .await
        .expect(5);
    assert!(one_line(&ran).contains("--yes"), "{ran:#?}");
    assert_eq!(local.get("/pools/cli-arena").await.0, 200);
    let ran = local
        .lineup(&["pool", "delete", "cli-arena", "--yes"])
        .await
        .expect(0);
    assert_eq!(ran.stdout.trim(), "pool cli-arena: deleted");
    assert_eq!(local.get("/pools/cli-arena").await.0, 404);
    let ran = local.lineup(&["pool", "show", "cli-arena"]).await.expect(1);
    assert!(one_line(&ran).contains("(404)"), "{ran:#?}");
}

#[tokio::test]
async fn coupon_create_show_and_close_and_a_claim_after_close_is_refused() {
    let local = Local::start().await;
    let app = &local.app;
    local
        .lineup(&["queue", "set", "cli-cq", "--capacity", "5"])
        .await
        .expect(0);
    let opened = (chrono::Utc::now() - chrono::Duration::hours(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let created = local
        .lineup(&[
            "--json",
            "coupon",
            "create",
            "cli-drop",
            "--quantity",
            "3",
            "--queue",
            "cli-cq",
            "--opens-at",
            &opened,
        ])
        .await
        .expect(0)
        .json();
    assert_eq!(created["quantity"], 3, "{created}");
    assert_eq!(created["queueId"], "cli-cq");
    assert_eq!(created["closesAt"], Value::Null);
    let read = || async {
        app.coupon_api(api_request("GET", "/coupons/cli-drop", None))
            .await
    };
    assert_eq!(read().await.body, created);

    let ana = join(app, "cli-cq", "ana").await;
    let ben = join(app, "cli-cq", "ben").await;
    assert_eq!(ben.body["status"], "active", "{}", ben.body);
    let claimed = claim(
        app,
        "cli-drop",
        json!({ "userId": "ana", "token": ana.token() }),
    )
    .await;
    assert_eq!(claimed.status, 201, "{}", claimed.body);

    let shown = local
        .lineup(&["coupon", "show", "cli-drop"])
        .await
        .expect(0);
    let rows = pairs(&shown.stdout);
    assert_eq!(rows["quantity"], "3", "{}", shown.stdout);
    assert_eq!(rows["claimed"], "1");
    assert_eq!(rows["remaining"], "2");
    assert_eq!(rows["queue"], "cli-cq");
    assert_eq!(rows["closes at"], "-");

    // Close: closesAt becomes the moment of the command, the rest of the campaign stays.
    let before = chrono::DateTime::from_timestamp(chrono::Utc::now().timestamp(), 0).unwrap();
    let closed = local
        .lineup(&["--json", "coupon", "close", "cli-drop"])
        .await
        .expect(0)
        .json();
    let after = chrono::Utc::now();
    let closes_at = chrono::DateTime::parse_from_rfc3339(closed["closesAt"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert!(before <= closes_at && closes_at <= after, "{closed}");
    let campaign = read().await.body;
    assert_eq!(campaign, closed);
    assert_eq!(campaign["quantity"], 3);
    assert_eq!(campaign["claimed"], 1);
    assert_eq!(campaign["queueId"], "cli-cq");
    assert_eq!(campaign["opensAt"], created["opensAt"]);
    let refused = claim(
        app,
        "cli-drop",
        json!({ "userId": "ben", "token": ben.token() }),
    )
    .await;
    assert_eq!(refused.status, 409, "closed: {}", refused.body);
    assert_eq!(read().await.body["claimed"], 1);

    // Bad input never reaches the API; an unknown campaign is the API's 404.
    local
        .lineup(&[
            "coupon",
            "create",
            "cli-drop",
            "--quantity",
            "3",
            "--opens-at",
            "soon",
        ])
        .await
        .expect(2);
    let ran = local
        .lineup(&["coupon", "close", "cli-nothing"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(404)"), "{ran:#?}");
}

#[tokio::test]
async fn health_send_sets_the_booking_health_the_queue_paces_by() {
    let local = Local::start().await;
    for queue in ["cli-health", "cli-health-2"] {
        local
            .lineup(&["queue", "set", queue, "--admit-per-tick", "10"])
            .await
            .expect(0);
    }
    let ran = local
        .lineup(&["health", "send", "cli-health", "--level", "0.5"])
        .await
        .expect(0);
    assert!(
        ran.stdout.starts_with("health 0.5 sent for cli-health"),
        "{}",
        ran.stdout
    );
    let pace = summary(&local.app, "cli-health").await.body["pace"].clone();
    assert_eq!(
        pace["health"],
        json!({ "level": 0.5, "reason": "booking" }),
        "{pace}"
    );
    assert_eq!(pace["admitPerTick"], 5.0);

    // Stop, sent straight after (most often within the same second): the later signal wins.
    let ran = local
        .lineup(&[
            "--json",
            "health",
            "send",
            "cli-health",
            "cli-health-2",
            "--level",
            "0",
        ])
        .await
        .expect(0)
        .json();
    assert_eq!(ran["result"], "applied", "{ran}");
    assert_eq!(
        ran["detail"],
        json!({ "queueIds": ["cli-health", "cli-health-2"], "level": 0.0 })
    );
    for queue in ["cli-health", "cli-health-2"] {
        assert_eq!(
            summary(&local.app, queue).await.body["pace"]["health"]["level"],
            0.0
        );
    }
    // A queue nobody made takes no level: refused, on one line. A level out of range is
    // bad usage, and the level in force stays.
    let ran = local
        .lineup(&["health", "send", "cli-nowhere", "--level", "1"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("no such queue"), "{ran:#?}");
    local
        .lineup(&["health", "send", "cli-health", "--level", "1.5"])
        .await
        .expect(2);
    assert_eq!(
        summary(&local.app, "cli-health").await.body["pace"]["health"]["level"],
        0.0
    );
}

#[tokio::test]
async fn rankings_top_lists_the_board_in_order() {
    let local = Local::start().await;
    let at = chrono::Utc::now().to_rfc3339();
    let events: Vec<Value> = [("cli-a", 5), ("cli-b", 9), ("cli-c", 2)]
        .iter()
        .enumerate()
        .map(|(i, (concert, seats))| {
            let mut event = lineup_tests::rankings::paid(
                &format!("cli-pay-{i}"),
                concert,
                *seats,
                &["rock"],
                &at,
            );
            event["id"] = json!(format!("cli-evt-{i}"));
            event
        })
        .collect();
    let (status, _, body) = send(
        local.addr,
        "POST",
        "/events",
        Some(&Value::Array(events).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    // The tick's fold, as the local stack's schedule runs it.
    let fold = local
        .app
        .stack
        .ranking_updater
        .rankings
        .fold()
        .await
        .unwrap();
    assert_eq!(fold.left, 0, "{fold:?}");

    let ran = local
        .lineup(&["rankings", "top", "all-time"])
        .await
        .expect(0);
    let rows = cells(&ran.stdout);
    assert!(rows[0][0].starts_with("all-time"), "{}", ran.stdout);
    assert_eq!(rows[1], row(&["rank", "concert", "title", "seats", "rate"]));
    let board: Vec<(String, String, String)> = rows[2..]
        .iter()
        .map(|r| (r[0].clone(), r[1].clone(), r[3].clone()))
        .collect();
    let expected = [
        ("1", "cli-b", "9"),
        ("2", "cli-a", "5"),
        ("3", "cli-c", "2"),
    ]
    .map(|(rank, concert, seats)| (rank.to_owned(), concert.to_owned(), seats.to_owned()));
    assert_eq!(board, expected, "{}", ran.stdout);

    let ran = local
        .lineup(&[
            "--json", "rankings", "top", "all-time", "--genre", "rock", "--limit", "2",
        ])
        .await
        .expect(0)
        .json();
    let items: Vec<(Value, Value, Value)> = ran["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["rank"].clone(),
                i["concertId"].clone(),
                i["score"].clone(),
            )
        })
        .collect();
    assert_eq!(
        items,
        [
            (json!(1), json!("cli-b"), json!(9)),
            (json!(2), json!("cli-a"), json!(5))
        ]
    );
    assert_eq!(ran["total"], 3);
    assert_eq!(ran["genre"], "rock");
    local.lineup(&["rankings", "top", "yearly"]).await.expect(2);
    let ran = local
        .lineup(&["rankings", "top", "daily", "--by", "popularity"])
        .await
        .expect(1);
    assert!(one_line(&ran).contains("(400)"), "{ran:#?}");
}

#[tokio::test]
async fn completions_name_lineup_and_its_subcommands_for_each_shell() {
    for (shell, marker) in [
        ("bash", "complete -F _lineup"),
        ("zsh", "#compdef lineup"),
        ("fish", "complete -c lineup"),
    ] {
        let ran = run_cli(&["completions", shell], &[], None).await.expect(0);
        assert!(ran.stdout.contains(marker), "{shell}: {}", ran.stdout);
        for sub in ["sold-out", "import", "codes", "rankings", "watch"] {
            assert!(ran.stdout.contains(sub), "{shell} completes {sub}");
        }
        assert!(ran.stderr.is_empty(), "{ran:#?}");
    }
    run_cli(&["completions", "tcsh"], &[], None).await.expect(2);
}

/// Every command of the console's tree, as `lineup a b`, with the command.
fn command_tree() -> Vec<(String, clap::Command)> {
    use clap::CommandFactory;
    fn walk(path: &str, command: &clap::Command, into: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let path = format!("{path} {}", sub.get_name());
            into.push((path.clone(), sub.clone()));
            walk(&path, sub, into);
        }
    }
    let mut root = lineup_cli::args::Cli::command();
    root.build();
    let mut all = vec![("lineup".to_owned(), root.clone())];
    walk("lineup", &root, &mut all);
    all
}

/// Each command that does something (no subcommands of its own) shows examples in the
/// `--help` the binary prints, and so does `lineup --help`.
#[tokio::test]
async fn every_runnable_subcommand_s_help_has_examples() {
    let runnable: Vec<String> = command_tree()
        .into_iter()
        .filter(|(path, command)| path == "lineup" || !command.has_subcommands())
        .map(|(path, _)| path)
        .collect();
    assert!(runnable.len() >= 20, "{runnable:?}");
    let mut without = Vec::new();
    for path in &runnable {
        let mut args: Vec<&str> = path.split(' ').skip(1).collect();
        args.push("--help");
        let ran = run_cli(&args, &[], None).await.expect(0);
        if !ran.stdout.contains("Examples:\n  lineup ") {
            without.push(path.clone());
        }
    }
    assert!(without.is_empty(), "--help without examples: {without:?}");
}

/// The commands that only group others (`lineup queue`, `lineup pool`, …) show examples too.
#[test]
fn every_group_s_help_has_examples() {
    let without: Vec<String> = command_tree()
        .into_iter()
        .filter(|(path, command)| path != "lineup" && command.has_subcommands())
        .filter(|(_, command)| {
            !command
                .clone()
                .render_long_help()
                .to_string()
                .contains("Examples:")
        })
        .map(|(path, _)| path)
        .collect();
    assert!(without.is_empty(), "--help without examples: {without:?}");
}

/// Every route template.yaml puts behind `AWS_IAM` is a route of the console, used by a
/// subcommand: a new operator route cannot land without one.
#[test]
fn every_iam_route_of_the_template_has_a_subcommand() {
    let template: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(&repo_file("template.yaml")).unwrap();
    let mut iam = BTreeSet::new();
    for (_, resource) in template["Resources"].as_mapping().unwrap() {
        let Some(events) = resource["Properties"]["Events"].as_mapping() else {
            continue;
        };
        for (_, event) in events {
            let properties = &event["Properties"];
            if event["Type"].as_str() == Some("HttpApi")
                && properties["Auth"]["Authorizer"].as_str() == Some("AWS_IAM")
            {
                iam.insert((
                    properties["Method"].as_str().unwrap().to_uppercase(),
                    properties["Path"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    assert!(iam.len() >= 12, "the template's IAM routes: {iam:?}");
    let console: BTreeMap<(String, String), Route> = Route::ALL
        .iter()
        .map(|route| {
            (
                (
                    route.method().as_str().to_owned(),
                    route.template().to_owned(),
                ),
                *route,
            )
        })
        .collect();
    let missing: Vec<_> = iam.iter().filter(|r| !console.contains_key(*r)).collect();
    assert!(
        missing.is_empty(),
        "IAM routes the console has no route for: {missing:?}"
    );
    // And a subcommand sends each.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src/commands");
    let sources: String = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
        .collect();
    let unsent: Vec<_> = iam
        .iter()
        .map(|r| console[r])
        .filter(|route| {
            !regex::Regex::new(&format!(r"Route::{route:?}\b"))
                .unwrap()
                .is_match(&sources)
        })
        .collect();
    assert!(unsent.is_empty(), "routes no subcommand sends: {unsent:?}");
}

/// README's "Exit codes" table has a row `| N | meaning |` for each of the console's codes.
#[test]
fn readme_lists_every_exit_code() {
    let readme = repo_file("README.md");
    let section: Vec<&str> = readme
        .lines()
        .skip_while(|line| !(line.starts_with('#') && line.contains("Exit codes")))
        .skip(1)
        .take_while(|line| !line.starts_with('#'))
        .collect();
    assert!(
        !section.is_empty(),
        "README.md has no \"Exit codes\" section"
    );
    let rows: Vec<Vec<String>> = section
        .iter()
        .map(|line| line.trim())
        .filter(|line| line.starts_with('|'))
        .map(|line| {
            line.trim_matches('|')
                .split('|')
                .map(|cell| cell.trim().to_owned())
                .collect()
        })
        .collect();
    let missing: Vec<String> = EXIT_CODES
        .iter()
        .map(|(code, meaning)| vec![code.to_string(), meaning.to_string()])
        .filter(|wanted| !rows.contains(wanted))
        .map(|row| format!("| {} | {} |", row[0], row[1]))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's exit codes lack: {missing:#?}"
    );
}

/// `'…'` for sh.
fn quoted(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs `lineup args…` on a terminal: util-linux `script` gives it a pseudo-terminal for
/// stdin, stdout and stderr, `input` typed on it. stdout holds all it printed; the code is
/// its own. `None` where `script` is not installed.
async fn on_a_terminal(args: &[&str], env: &[(&str, &str)], input: &str) -> Option<Ran> {
    let present = std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !present {
        eprintln!("skipped the terminal half: util-linux script is not installed");
        return None;
    }
    let line: Vec<String> = std::iter::once(cli_binary().to_str().unwrap())
        .chain(args.iter().copied())
        .map(quoted)
        .collect();
    let mut command = tokio::process::Command::new("script");
    command
        .args(["-qec", &line.join(" "), "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // As `run_cli` leaves it: no AWS settings, no config file, colours as the test says.
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") || name.starts_with("LINEUP_") || name == "NO_COLOR" {
            command.env_remove(name);
        }
    }
    command.env("LINEUP_CONFIG", "/nonexistent/lineup-config.toml");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("script runs");
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
    }
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .expect("lineup finished within 120 s")
    .expect("script's output");
    Some(Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

#[tokio::test]
async fn no_colour_off_a_terminal_nor_under_no_color() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "set", "cli-colour", "--capacity", "5"])
        .await
        .expect(0);
    let esc = |text: &str| text.contains('\x1b');
    // Piped: a table, a state that would be green, and an error that would be red.
    let shown = local
        .lineup(&["queue", "show", "cli-colour"])
        .await
        .expect(0);
    assert!(!esc(&shown.stdout) && !esc(&shown.stderr), "{shown:#?}");
    let refused = local
        .lineup(&["queue", "sold-out", "cli-colour"])
        .await
        .expect(5);
    assert!(
        !esc(&refused.stdout) && !esc(&refused.stderr),
        "{refused:#?}"
    );
    let set = local
        .lineup(&["priority", "add", "cli-colour", "auth0:a"])
        .await
        .expect(0);
    assert!(!esc(&set.stdout), "{set:#?}");

    // On a terminal colours are on, unless NO_COLOR says no.
    let url = local.url.as_str();
    let Some(coloured) =
        on_a_terminal(&["--url", url, "queue", "show", "cli-colour"], &[], "").await
    else {
        return;
    };
    assert_eq!(coloured.code, 0, "{coloured:#?}");
    assert!(
        esc(&coloured.stdout),
        "a terminal gets colours: {coloured:#?}"
    );
    let plain = on_a_terminal(
        &["--url", url, "queue", "show", "cli-colour"],
        &[("NO_COLOR", "1")],
        "",
    )
    .await
    .unwrap();
    assert_eq!(plain.code, 0, "{plain:#?}");
    assert!(!esc(&plain.stdout), "{plain:#?}");
    assert!(plain.stdout.contains("cli-colour"), "{plain:#?}");
    let refused = on_a_terminal(
        &["--url", url, "pool", "show", "cli-nothing"],
        &[("NO_COLOR", "1")],
        "",
    )
    .await
    .unwrap();
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stdout.contains("lineup: ") && !esc(&refused.stdout),
        "{refused:#?}"
    );
}

/// On a terminal the console asks before a step that cannot be undone: anything but yes is
/// no, and nothing is done.
#[tokio::test]
async fn on_a_terminal_the_question_is_asked_and_only_yes_goes_ahead() {
    let local = Local::start().await;
    local
        .lineup(&["queue", "set", "cli-ask", "--capacity", "5"])
        .await
        .expect(0);
    let url = local.url.as_str();
    let Some(no) = on_a_terminal(&["--url", url, "queue", "sold-out", "cli-ask"], &[], "n\n").await
    else {
        return;
    };
    assert_eq!(no.code, 5, "{no:#?}");
    assert!(no.stdout.contains("[y/N]"), "{no:#?}");
    assert_eq!(local.settings("cli-ask").await["soldOut"], false);
    let yes = on_a_terminal(&["--url", url, "queue", "sold-out", "cli-ask"], &[], "y\n")
        .await
        .unwrap();
    assert_eq!(yes.code, 0, "{yes:#?}");
    assert_eq!(local.settings("cli-ask").await["soldOut"], true);
}

#[tokio::test]
async fn a_redis_outage_is_exit_3_with_the_problem_on_one_line() {
    let app = TestApp::spawn_durable(lineup_tests::outage::QUICK_TO_GIVE_UP).await;
    let mut local = Local::on(app).await;
    local
        .lineup(&["queue", "set", "cli-out", "--capacity", "5"])
        .await
        .expect(0);
    local
        .app
        .redis
        .as_mut()
        .expect("a private server")
        .stop()
        .await;
    assert_eq!(local.get("/queues/cli-out").await.0, 503);
    let ran = local.lineup(&["queue", "show", "cli-out"]).await.expect(3);
    assert!(one_line(&ran).contains("(503)"), "{ran:#?}");
    assert!(ran.stdout.is_empty(), "{ran:#?}");
    let ran = local.lineup(&["queue", "pause", "cli-out"]).await.expect(3);
    assert!(one_line(&ran).contains("(503)"), "{ran:#?}");
}
