//! Admission JWTs verified by libraries no one here wrote: PyJWT (`PyJWKClient`, from PyPI,
//! through `tests/verifiers/admission_pyjwt.py`) and Node's `jose` (`createRemoteJWKSet`,
//! from npm, through `tests/browser/admission-verify.mjs`). Each fetches the JWKS over HTTP
//! from the route lineup serves, as a booking API would.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A verifying library.
#[derive(Debug, Clone, Copy)]
pub enum Verifier {
    PyJwt,
    Jose,
}

impl Verifier {
    pub const ALL: [Verifier; 2] = [Verifier::PyJwt, Verifier::Jose];

    fn command(self) -> Command {
        let mut command = match self {
            Verifier::PyJwt => {
                let mut c = Command::new("python3");
                c.arg(tests_dir().join("verifiers/admission_pyjwt.py"));
                c
            }
            Verifier::Jose => {
                let mut c = Command::new("node");
                c.arg("admission-verify.mjs")
                    .current_dir(tests_dir().join("browser"));
                c
            }
        };
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Whether the library is installed. Without it a test says it skipped, unless
    /// `LINEUP_REQUIRE_VERIFIERS=1` (CI), where that fails it.
    pub fn ready(self) -> bool {
        let ready = match self {
            Verifier::PyJwt => std::process::Command::new("python3")
                .args(["-c", "import jwt, cryptography"])
                .output()
                .is_ok_and(|out| out.status.success()),
            Verifier::Jose => {
                std::process::Command::new("node")
                    .arg("--version")
                    .output()
                    .is_ok_and(|out| out.status.success())
                    && tests_dir().join("browser/node_modules/jose").exists()
            }
        };
        if !ready {
            assert!(
                std::env::var("LINEUP_REQUIRE_VERIFIERS").as_deref() != Ok("1"),
                "LINEUP_REQUIRE_VERIFIERS=1 but {self:?} is not installed"
            );
            eprintln!("skipped: {self:?} is not installed");
        }
        ready
    }

    /// The library's verdict on each of `tokens` (`{name: jwt}`), checked against the JWKS at
    /// `jwks_uri` for `issuer` and `audience`: `{name: {ok, claims, kid} | {ok: false, error}}`.
    pub async fn verify(
        self,
        jwks_uri: &str,
        issuer: &str,
        audience: &str,
        tokens: &Value,
    ) -> Value {
        let request = serde_json::json!({
            "jwksUri": jwks_uri, "issuer": issuer, "audience": audience, "tokens": tokens,
        });
        let mut child = self.command().spawn().expect("the verifier starts");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(request.to_string().as_bytes())
            .await
            .expect("request written");
        drop(stdin);
        let out = child.wait_with_output().await.expect("the verifier ends");
        assert!(out.status.success(), "{self:?} failed");
        serde_json::from_slice(&out.stdout).expect("the verifier's JSON")
    }
}
