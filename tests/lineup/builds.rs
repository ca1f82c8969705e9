//! What the Lambda builds select. `cargo build`, `cargo lambda build --bin <function>` and
//! `sam build` (CodeUri `.`) resolve features over the workspace's default members: the
//! functions, the shared crate and the local stack. The operator console (`cli/`), the bench
//! and the tests are left out, so their crates and features never reach a Lambda binary.
//! Stable cargo unifies features across every package a build selects, so this selection is
//! what keeps them out.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args(args)
        .current_dir(workspace())
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8")
}

/// The package names in a `cargo tree` of `selection` (normal and build dependencies).
fn packages(selection: &[&str]) -> BTreeSet<String> {
    let mut args = vec![
        "tree",
        "-e",
        "normal,build",
        "--prefix",
        "none",
        "-f",
        "{p}",
    ];
    args.extend_from_slice(selection);
    cargo(&args)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

fn metadata() -> Value {
    serde_json::from_str(&cargo(&["metadata", "--format-version", "1", "--no-deps"]))
        .expect("cargo metadata is JSON")
}

fn package<'a>(metadata: &'a Value, name: &str) -> &'a Value {
    metadata["packages"]
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("no package {name}"))
}

/// Whether `name` is a default member: what a build at the root without `-p` selects.
fn default_member(metadata: &Value, name: &str) -> bool {
    let id = &package(metadata, name)["id"];
    metadata["workspace_default_members"]
        .as_array()
        .expect("workspace_default_members")
        .contains(id)
}

/// The Lambda functions: every crate under functions/ but the local stack.
fn lambdas(metadata: &Value) -> Vec<String> {
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .filter(|p| {
            p["manifest_path"]
                .as_str()
                .is_some_and(|path| path.contains("/functions/") && !path.contains("lineup-local"))
        })
        .map(|p| p["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The crates a package names as its normal dependencies.
fn direct(metadata: &Value, name: &str) -> BTreeSet<String> {
    package(metadata, name)["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| d["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_default_build_selects_the_functions_and_the_local_stack_only() {
    let metadata = metadata();
    for left_out in ["lineup-cli", "lineup-tests", "lineup-bench"] {
        assert!(
            !default_member(&metadata, left_out),
            "{left_out} is a default member"
        );
    }
    let functions = lambdas(&metadata);
    assert!(functions.len() >= 8, "{functions:?}");
    for function in functions
        .iter()
        .map(String::as_str)
        .chain(["lineup", "lineup-local"])
    {
        assert!(
            default_member(&metadata, function),
            "{function} is not a default member"
        );
    }
}

#[test]
fn no_crate_of_the_console_reaches_a_lambda_build() {
    let metadata = metadata();
    // The console's own crates: those it names that no function names and the shared crate
    // does not bring.
    let mut others = packages(&["-p", "lineup"]);
    for function in lambdas(&metadata)
        .iter()
        .map(String::as_str)
        .chain(["lineup-local"])
    {
        others.extend(direct(&metadata, function));
    }
    let own: BTreeSet<String> = direct(&metadata, "lineup-cli")
        .difference(&others)
        .cloned()
        .collect();
    for name in ["clap", "ratatui", "aws-sdk-cloudformation"] {
        assert!(own.contains(name), "{own:?}");
    }
    // The default members' tree: what the Lambda builds resolve.
    let built = packages(&[]);
    let mut own = own;
    own.insert("lineup-cli".to_owned());
    let reached: Vec<&String> = own.iter().filter(|p| built.contains(*p)).collect();
    assert!(reached.is_empty(), "the Lambda build carries {reached:?}");
}

/// The bench's door to the handlers' raw script calls is the shared crate's `bench` feature,
/// which only the bench turns on: no function's build, nor the build that deploys, carries it.
#[test]
fn no_lambda_build_carries_the_bench_support() {
    let metadata = metadata();
    let bench = |selection: &[&str]| {
        let mut args = vec!["tree", "-e", "features", "--prefix", "none"];
        args.extend_from_slice(selection);
        cargo(&args)
            .lines()
            .any(|line| line.starts_with("lineup feature \"bench\""))
    };
    assert!(
        bench(&["-p", "lineup-bench"]),
        "the bench turns the feature on"
    );
    assert!(
        !bench(&[]),
        "the default members' build carries bench support"
    );
    for function in lambdas(&metadata) {
        assert!(
            !bench(&["-p", &function]),
            "{function} carries bench support"
        );
    }
}
