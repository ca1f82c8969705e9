//! What a person expects of the binary itself: completions, help with examples, a subcommand per
//! IAM route, README's exit codes, colours only on a terminal, a question before acting, one line
//! for an outage.

use super::*;

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
