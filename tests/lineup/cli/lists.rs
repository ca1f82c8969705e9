//! `lineup priority`, `access` and `codes` against the local stack.

use super::*;

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
