//! `lineup queue …` against the local stack: show, set, pause, resume, sold out, delete.

use super::*;

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
