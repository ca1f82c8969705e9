//! The `lineup` binary as an operator runs it: built once per test run with cargo (the
//! test binary cannot depend on another crate's binary), then run as a process with its
//! arguments, environment and stdin, its output and exit code returned.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

/// The built `lineup` binary, beside the test binary in the target directory.
pub fn cli_binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/Cargo.toml");
        // The test binary lives in <target>/<profile>/deps.
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in <target>/<profile>/deps");
        let target_dir = profile_dir.parent().expect("the target directory");
        let release = profile_dir.file_name().is_some_and(|name| name == "release");
        let mut build = std::process::Command::new(cargo);
        build
            .args(["build", "--quiet", "--bin", "lineup", "--manifest-path"])
            .arg(&manifest)
            .env("CARGO_TARGET_DIR", target_dir);
        if release {
            build.arg("--release");
        }
        let status = build.status().expect("cargo runs");
        assert!(status.success(), "cargo build of lineup-cli failed");
        profile_dir.join("lineup")
    })
}

/// What a run of the binary gave.
#[derive(Debug)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// The stdout as JSON (the run had `--json`).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|err| panic!("not JSON ({err}): {self:?}"))
    }

    /// Asserts the run ended with `code`, showing its output when not.
    #[track_caller]
    pub fn expect(self, code: i32) -> Ran {
        assert_eq!(self.code, code, "{self:#?}");
        self
    }
}

/// Runs `lineup` with `args`, the environment cleared of AWS settings but for `env`, stdin
/// from `input` (none: no terminal, empty), and no colour unless asked.
pub async fn run_cli(args: &[&str], env: &[(&str, &str)], input: Option<&str>) -> Ran {
    let binary = cli_binary().to_path_buf();
    let mut command = tokio::process::Command::new(binary);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") || name.starts_with("LINEUP_") || name == "NO_COLOR" {
            command.env_remove(name);
        }
    }
    // No config file of the machine's: a test names its own.
    command.env("LINEUP_CONFIG", "/nonexistent/lineup-config.toml");
    command.env("AWS_CONFIG_FILE", "/nonexistent/aws-config");
    command.env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials");
    command.env("AWS_EC2_METADATA_DISABLED", "true");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command.spawn().expect("lineup runs");
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        if let Some(input) = input {
            stdin.write_all(input.as_bytes()).await.expect("stdin");
        }
        drop(stdin);
    }
    let output = tokio::time::timeout(
        std::time::Duration::from_secs(120),
        child.wait_with_output(),
    )
    .await
    .expect("lineup finished within 120 s")
    .expect("lineup's output");
    Ran {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}
