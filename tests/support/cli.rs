//! The `lineup` binary as an operator runs it: its main.rs built by `cargo test` as this
//! package's `lineup-console` binary (tests/Cargo.toml), then run as a process with its
//! arguments, environment and stdin, its output and exit code returned.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

/// The console binary, beside the test binary in the target directory: `cargo test` builds
/// a package's binaries before its integration tests run.
pub fn cli_binary() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        // The test binary lives in <target>/<profile>/deps.
        let exe = std::env::current_exe().expect("the test binary's path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("the test binary sits in <target>/<profile>/deps");
        let binary = profile_dir.join(format!("lineup-console{}", std::env::consts::EXE_SUFFIX));
        assert!(
            binary.exists(),
            "{} is missing: run the tests through `cargo test`, which builds it",
            binary.display()
        );
        binary
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
    command.env(
        "AWS_SHARED_CREDENTIALS_FILE",
        "/nonexistent/aws-credentials",
    );
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

/// `tests/verifiers/sigv4_proxy.py` in front of `upstream`: a proxy that checks each request's
/// SigV4 signature with botocore, as API Gateway checks an `AWS_IAM` route, and answers 403
/// with a problem when it does not verify. Stopped when dropped.
pub struct SigV4Proxy {
    _child: tokio::process::Child,
    pub addr: std::net::SocketAddr,
    pub url: String,
}

impl SigV4Proxy {
    /// Whether python3 and botocore (installed with moto) are there. Without them a test says
    /// it skipped, unless `LINEUP_REQUIRE_MOTO` or `LINEUP_REQUIRE_VERIFIERS` is set (CI).
    pub fn ready() -> bool {
        let ready = std::process::Command::new("python3")
            .args(["-c", "import botocore"])
            .output()
            .is_ok_and(|out| out.status.success());
        if !ready {
            assert!(
                std::env::var_os("LINEUP_REQUIRE_MOTO").is_none()
                    && std::env::var("LINEUP_REQUIRE_VERIFIERS").as_deref() != Ok("1"),
                "LINEUP_REQUIRE_MOTO or LINEUP_REQUIRE_VERIFIERS is set but botocore is not installed"
            );
            eprintln!("skipped: python3 with botocore is not installed");
        }
        ready
    }

    /// Starts the proxy for `region`, knowing the credentials `keys` (access key, secret), with
    /// the proxy's `extra` flags (`--clock-offset 400`, `--require-session-token`).
    pub async fn start(
        upstream: &str,
        region: &str,
        keys: &[(&str, &str)],
        extra: &[&str],
    ) -> SigV4Proxy {
        use tokio::io::AsyncBufReadExt;
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("verifiers/sigv4_proxy.py");
        let mut command = tokio::process::Command::new("python3");
        command
            .arg(script)
            .args(["--upstream", upstream, "--region", region])
            .args(extra)
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        for (key, secret) in keys {
            command.arg("--key").arg(format!("{key}:{secret}"));
        }
        let mut child = command.spawn().expect("python3 runs the SigV4 proxy");
        let stdout = child.stdout.take().expect("the proxy's stdout");
        let mut first = String::new();
        tokio::io::BufReader::new(stdout)
            .read_line(&mut first)
            .await
            .expect("the proxy's port");
        let port: u16 = first
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the proxy printed {first:?}, not its port"));
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        SigV4Proxy {
            _child: child,
            addr,
            url: format!("http://{addr}"),
        }
    }
}
