//! `lineup` signing its requests with SigV4, as API Gateway's `AWS_IAM` routes require, checked
//! by a verifying proxy that recomputes each signature with botocore
//! (`tests/verifiers/sigv4_proxy.py`) in front of the local stack; and `--stack`, its API's URL
//! and event bus read from a CloudFormation stack in moto.

use std::net::SocketAddr;

use aws_sdk_cloudformation::types::Parameter;
use lineup_tests::cli::{run_cli, Ran, SigV4Proxy};
use lineup_tests::{aws_config_for, Moto, TestApp};
use serde_json::{json, Value};

use crate::local_stack::{send, send_with_headers, serve};

const REGION: &str = "us-east-1";
const KEY: &str = "AKIDLINEUPCLITEST001";
/// A secret with `/` and `+`, as AWS's secrets have.
const SECRET: &str = "lineup/cli+signing/0123456789abcdefghijklmn";
const TOKEN: &str = "FwoGZXIvYXdzEXAMPLE//lineup+session=token";

/// The environment an operator's shell gives: temporary credentials.
const CREDENTIALS: [(&str, &str); 3] = [
    ("AWS_ACCESS_KEY_ID", KEY),
    ("AWS_SECRET_ACCESS_KEY", SECRET),
    ("AWS_SESSION_TOKEN", TOKEN),
];

/// The local stack, and the verifying proxy in front of it, which knows [`KEY`].
struct Behind {
    app: TestApp,
    stack: SocketAddr,
    proxy: SigV4Proxy,
}

/// The local stack behind a proxy started with `extra` flags; `None` (skipped) without botocore.
async fn behind_proxy(extra: &[&str]) -> Option<Behind> {
    if !SigV4Proxy::ready() {
        return None;
    }
    let app = TestApp::spawn(&[]).await;
    let (stack, _server) = serve(&app).await;
    let proxy =
        SigV4Proxy::start(&format!("http://{stack}"), REGION, &[(KEY, SECRET)], extra).await;
    Some(Behind { app, stack, proxy })
}

/// `lineup --url <proxy> --sign always --region us-east-1 args…`.
async fn signed(
    proxy: &SigV4Proxy,
    args: &[&str],
    env: &[(&str, &str)],
    input: Option<&str>,
) -> Ran {
    let mut all = vec!["--url", &proxy.url, "--sign", "always", "--region", REGION];
    all.extend_from_slice(args);
    run_cli(&all, env, input).await
}

/// The run ended with exit code 1 and the proxy's 403 problem `title`, on one line.
#[track_caller]
fn refused(ran: Ran, title: &str) {
    let ran = ran.expect(1);
    let lines: Vec<&str> = ran.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {ran:#?}");
    assert!(
        lines[0].starts_with(&format!("lineup: {title} (403): ")),
        "{title}: {ran:#?}"
    );
}

/// The queue's summary, read from the local stack itself, not through the proxy.
async fn summary(stack: SocketAddr, queue: &str) -> Value {
    let (status, _, body) = send(stack, "GET", &format!("/queues/{queue}"), None).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[tokio::test]
async fn signed_calls_pass_the_verifying_proxy_and_take_effect() {
    let Some(behind) = behind_proxy(&[]).await else {
        return;
    };
    let proxy = &behind.proxy;

    // A PUT with a JSON body (GET first, for the diff).
    signed(
        proxy,
        &[
            "--json",
            "queue",
            "set",
            "signed",
            "--capacity",
            "7",
            "--message",
            "Back soon: 10:30 (GMT+1)",
        ],
        &CREDENTIALS,
        None,
    )
    .await
    .expect(0);
    let settings = summary(behind.stack, "signed").await["settings"].clone();
    assert_eq!(settings["capacity"], 7, "{settings}");
    assert_eq!(
        settings["message"], "Back soon: 10:30 (GMT+1)",
        "{settings}"
    );

    // Ids with `:` in the path, which the canonical request encodes once more.
    let added = signed(
        proxy,
        &[
            "--json",
            "priority",
            "add",
            "signed",
            "auth0:u-1",
            "auth0:u-2",
        ],
        &CREDENTIALS,
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(added["size"], 2, "{added}");
    assert!(
        added["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["result"] == "added"),
        "{added}"
    );

    // A PUT of the ids read from stdin.
    let imported = signed(
        proxy,
        &["--json", "access", "import", "signed", "-"],
        &CREDENTIALS,
        Some("auth0:a-1\nauth0:a-2\nauth0:a-3\n"),
    )
    .await
    .expect(0)
    .json();
    assert_eq!(
        (imported["sent"].clone(), imported["size"].clone()),
        (json!(3), json!(3)),
        "{imported}"
    );

    // A query string: a genre with `-`, which must be sent as SigV4 encodes it.
    let now = chrono::Utc::now().to_rfc3339();
    lineup_tests::rankings::pay(
        &behind.app,
        &[
            lineup_tests::rankings::paid("p1", "c-kpop", 3, &["k-pop"], &now),
            lineup_tests::rankings::paid("p2", "c-jazz", 5, &["jazz"], &now),
        ],
    )
    .await;
    let board = signed(
        proxy,
        &[
            "--json", "rankings", "top", "daily", "--genre", "k-pop", "--limit", "5",
        ],
        &CREDENTIALS,
        None,
    )
    .await
    .expect(0)
    .json();
    let concerts: Vec<&Value> = board["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["concertId"])
        .collect();
    assert_eq!(concerts, [&json!("c-kpop")], "{board}");

    let shown = signed(
        proxy,
        &["--json", "queue", "show", "signed"],
        &CREDENTIALS,
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(shown["queueId"], "signed");
    assert_eq!(shown["settings"]["capacity"], 7, "{shown}");
}

#[tokio::test]
async fn a_clock_more_than_five_minutes_off_is_refused_with_the_problem_on_one_line() {
    for offset in ["400", "-400"] {
        let Some(behind) = behind_proxy(&["--clock-offset", offset]).await else {
            return;
        };
        refused(
            signed(
                &behind.proxy,
                &["queue", "show", "skewed"],
                &CREDENTIALS,
                None,
            )
            .await,
            "Signature expired",
        );
        let ran = signed(
            &behind.proxy,
            &["queue", "set", "skewed", "--capacity", "9"],
            &CREDENTIALS,
            None,
        )
        .await;
        refused(ran, "Signature expired");
        assert_ne!(
            summary(behind.stack, "skewed").await["settings"]["capacity"],
            9
        );
    }
}

#[tokio::test]
async fn a_proxy_that_requires_a_session_token_refuses_credentials_without_one() {
    let Some(behind) = behind_proxy(&["--require-session-token"]).await else {
        return;
    };
    let args = ["queue", "show", "tokened"];
    refused(
        signed(&behind.proxy, &args, &CREDENTIALS[..2], None).await,
        "Missing session token",
    );
    let shown = signed(
        &behind.proxy,
        &["--json", "queue", "show", "tokened"],
        &CREDENTIALS,
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(shown["queueId"], "tokened");
}

#[tokio::test]
async fn a_wrong_secret_an_unknown_key_and_an_unsigned_request_are_refused() {
    let Some(behind) = behind_proxy(&[]).await else {
        return;
    };
    let args = ["queue", "show", "wrong"];
    let wrong_secret = [
        ("AWS_ACCESS_KEY_ID", KEY),
        (
            "AWS_SECRET_ACCESS_KEY",
            "lineup/cli+signing/0123456789abcdefghijklmX",
        ),
        ("AWS_SESSION_TOKEN", TOKEN),
    ];
    refused(
        signed(&behind.proxy, &args, &wrong_secret, None).await,
        "Signature mismatch",
    );
    let unknown_key = [
        ("AWS_ACCESS_KEY_ID", "AKIDSOMEONEELSE00001"),
        ("AWS_SECRET_ACCESS_KEY", SECRET),
    ];
    refused(
        signed(&behind.proxy, &args, &unknown_key, None).await,
        "Unknown access key",
    );
    let unsigned = [
        "--url",
        &behind.proxy.url,
        "--sign",
        "never",
        "queue",
        "show",
        "wrong",
    ];
    refused(
        run_cli(&unsigned, &CREDENTIALS, None).await,
        "Missing Authorization",
    );
    // With the right credentials, the same call passes.
    signed(&behind.proxy, &args, &CREDENTIALS, None)
        .await
        .expect(0);
}

/// The proxy itself, with no CLI: a request signed in-process by the console's own signer
/// passes untouched and is refused once any signed part changes; a bogus Authorization is
/// refused too. Nothing refused reaches the stack.
#[tokio::test]
async fn the_proxy_refuses_a_tampered_or_bogus_request_and_passes_it_untouched() {
    let Some(behind) = behind_proxy(&[]).await else {
        return;
    };
    let config = aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new(
                    KEY,
                    SECRET,
                    Some(TOKEN.into()),
                    None,
                    "test",
                ),
            ),
        )
        .build();
    let signer = lineup_cli::sign::Aws { config }
        .signer(Some(REGION.into()))
        .expect("a signer");
    let path = "/queues/tamper/settings";
    let body = r#"{"capacity":7}"#;
    // Signed as `send_with_headers` sends it: its Host and Content-Type.
    let mut request = axum::http::Request::builder()
        .method("PUT")
        .uri(format!("http://localhost{path}"))
        .header("host", "localhost")
        .header("content-type", "application/json")
        .body(axum::body::Bytes::from(body))
        .unwrap();
    signer.sign(&mut request).await.expect("signed");
    let header = |name: &str| request.headers()[name].to_str().unwrap().to_owned();
    let (authorization, date) = (header("authorization"), header("x-amz-date"));
    let signed_with = |authorization: &str, date: &str| {
        vec![
            ("authorization".to_owned(), authorization.to_owned()),
            ("x-amz-date".to_owned(), date.to_owned()),
            ("x-amz-security-token".to_owned(), TOKEN.to_owned()),
        ]
    };
    let put = |path: String, body: String, headers: Vec<(String, String)>| async move {
        let headers: Vec<(&str, &str)> = headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        let (status, head, answer) =
            send_with_headers(behind.proxy.addr, "PUT", &path, Some(&body), &headers).await;
        (status, head, answer)
    };
    let title = |answer: &str| serde_json::from_str::<Value>(answer).unwrap()["title"].clone();

    let a_second_later = (chrono::NaiveDateTime::parse_from_str(&date, "%Y%m%dT%H%M%SZ").unwrap()
        + chrono::Duration::seconds(1))
    .format("%Y%m%dT%H%M%SZ")
    .to_string();
    let tampered = [
        (
            "the body",
            path.to_owned(),
            r#"{"capacity":8}"#.to_owned(),
            signed_with(&authorization, &date),
        ),
        (
            "the path",
            "/queues/tamper2/settings".to_owned(),
            body.to_owned(),
            signed_with(&authorization, &date),
        ),
        (
            "a query",
            format!("{path}?capacity=8"),
            body.to_owned(),
            signed_with(&authorization, &date),
        ),
        (
            "the date",
            path.to_owned(),
            body.to_owned(),
            signed_with(&authorization, &a_second_later),
        ),
        (
            "the signature",
            path.to_owned(),
            body.to_owned(),
            signed_with(
                &format!(
                    "{}{}",
                    &authorization[..authorization.len() - 8],
                    "00000000"
                ),
                &date,
            ),
        ),
    ];
    for (what, path, body, headers) in tampered {
        let (status, head, answer) = put(path, body, headers).await;
        assert_eq!(status, 403, "tampered {what}: {answer}");
        assert!(
            head.contains("content-type: application/problem+json"),
            "{head}"
        );
        assert_eq!(
            title(&answer),
            "Signature mismatch",
            "tampered {what}: {answer}"
        );
    }
    let forged = format!(
        "AWS4-HMAC-SHA256 Credential={KEY}/{}/{REGION}/execute-api/aws4_request, \
         SignedHeaders=host;x-amz-date, Signature={}",
        &date[..8],
        "0".repeat(64)
    );
    let bogus = [
        ("Bearer abc", "Malformed Authorization"),
        ("AWS4-HMAC-SHA256 Signature=abc", "Malformed Authorization"),
        (forged.as_str(), "Signature mismatch"),
    ];
    for (authorization, expected) in bogus {
        let (status, _, answer) = put(
            path.to_owned(),
            body.to_owned(),
            signed_with(authorization, &date),
        )
        .await;
        assert_eq!(
            (status, title(&answer)),
            (403, json!(expected)),
            "{authorization}: {answer}"
        );
    }
    let (status, _, answer) = send(behind.proxy.addr, "PUT", path, Some(body)).await;
    assert_eq!(
        (status, title(&answer)),
        (403, json!("Missing Authorization"))
    );
    for queue in ["tamper", "tamper2"] {
        let settings = summary(behind.stack, queue).await["settings"].clone();
        assert_ne!(settings["capacity"], 7, "{queue}: {settings}");
        assert_ne!(settings["capacity"], 8, "{queue}: {settings}");
    }

    let (status, _, answer) = put(
        path.to_owned(),
        body.to_owned(),
        signed_with(&authorization, &date),
    )
    .await;
    assert_eq!(status, 200, "untouched: {answer}");
    assert_eq!(
        summary(behind.stack, "tamper").await["settings"]["capacity"],
        7
    );
}

/// A stack in moto whose outputs give `api_url` and its event bus, with `source` as its
/// `PaymentEventSource` parameter; returns the bus's name.
async fn create_stack(moto: &Moto, name: &str, api_url: &str, source: &str) -> String {
    let bus = format!("{name}-bus");
    let template = json!({
        "Parameters": {
            "ApiUrl": {"Type": "String"},
            "PaymentEventSource": {"Type": "String", "Default": "lineup.payments"}
        },
        "Resources": {"Bus": {"Type": "AWS::Events::EventBus", "Properties": {"Name": bus}}},
        "Outputs": {
            "ApiUrl": {"Value": {"Ref": "ApiUrl"}},
            "EventBusName": {"Value": {"Fn::GetAtt": ["Bus", "Name"]}}
        }
    });
    let parameter = |key: &str, value: &str| {
        Parameter::builder()
            .parameter_key(key)
            .parameter_value(value)
            .build()
    };
    aws_sdk_cloudformation::Client::new(&aws_config_for(&moto.endpoint))
        .create_stack()
        .stack_name(name)
        .template_body(template.to_string())
        .parameters(parameter("ApiUrl", api_url))
        .parameters(parameter("PaymentEventSource", source))
        .send()
        .await
        .expect("create stack");
    bus
}

/// The CLI's environment for moto: its endpoint, a region, and [`CREDENTIALS`].
fn moto_env(moto: &Moto) -> Vec<(&str, &str)> {
    let mut env = vec![
        ("AWS_ENDPOINT_URL", moto.endpoint.as_str()),
        ("AWS_REGION", REGION),
    ];
    env.extend(CREDENTIALS);
    env
}

#[tokio::test]
async fn a_stack_gives_the_api_url_and_its_requests_are_signed_by_default() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let Some(behind) = behind_proxy(&[]).await else {
        return;
    };
    create_stack(
        &moto,
        "lineup-direct",
        &format!("http://{}", behind.stack),
        "lineup.payments",
    )
    .await;
    create_stack(&moto, "lineup-signed", &behind.proxy.url, "lineup.payments").await;
    let env = moto_env(&moto);

    // The URL from the outputs, unsigned as asked.
    let shown = run_cli(
        &[
            "--stack",
            "lineup-direct",
            "--sign",
            "never",
            "--json",
            "queue",
            "show",
            "stacked",
        ],
        &env,
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(shown["queueId"], "stacked");
    // A stack is signed by default, for the region of the environment.
    run_cli(
        &[
            "--stack",
            "lineup-signed",
            "queue",
            "set",
            "stacked",
            "--capacity",
            "11",
        ],
        &env,
        None,
    )
    .await
    .expect(0);
    assert_eq!(
        summary(behind.stack, "stacked").await["settings"]["capacity"],
        11
    );
    refused(
        run_cli(
            &[
                "--stack",
                "lineup-signed",
                "--sign",
                "never",
                "queue",
                "show",
                "stacked",
            ],
            &env,
            None,
        )
        .await,
        "Missing Authorization",
    );
    let missing = run_cli(
        &["--stack", "no-such-stack", "queue", "show", "stacked"],
        &env,
        None,
    )
    .await
    .expect(4);
    assert!(missing.stderr.contains("no-such-stack"), "{missing:#?}");
}

#[tokio::test]
async fn health_send_puts_booking_health_on_the_stacks_bus_with_its_payment_source() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed");
        return;
    };
    let bus = create_stack(
        &moto,
        "lineup-health",
        "http://127.0.0.1:9",
        "tickets.payments",
    )
    .await;
    // Every BookingHealth event on the stack's bus goes to an SQS queue.
    let queue_url = moto
        .route_to_queue(&bus, "health", json!({"detail-type": ["BookingHealth"]}))
        .await;

    let sent = run_cli(
        &[
            "--stack",
            "lineup-health",
            "--json",
            "health",
            "send",
            "onsale-1",
            "onsale-2",
            "--level",
            "0.5",
        ],
        &moto_env(&moto),
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(sent["sentTo"], json!(bus), "{sent}");
    let received = crate::queue_events::received(&moto, &queue_url, 1).await;
    assert_eq!(received.len(), 1, "{received:?}");
    let event = &received[0];
    assert_eq!(event["source"], "tickets.payments", "{event}");
    assert_eq!(event["detail-type"], "BookingHealth", "{event}");
    assert_eq!(
        event["detail"],
        json!({"queueIds": ["onsale-1", "onsale-2"], "level": 0.5}),
        "{event}"
    );
}

/// A profile whose `credential_process` counts its runs: the console asks for credentials once
/// per run, not once per request, so a profile that assumes a role (or prompts) is not asked
/// again for each request of a batch or each refresh of `watch`.
#[tokio::test]
async fn a_profiles_credentials_are_fetched_once_for_every_request_of_a_run() {
    let Some(behind) = behind_proxy(&["--require-session-token"]).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let process = dir.path().join("credentials.sh");
    std::fs::write(
        &process,
        format!(
            "#!/bin/sh\necho run >> '{}'\necho '{}'\n",
            runs.display(),
            json!({"Version": 1, "AccessKeyId": KEY, "SecretAccessKey": SECRET,
                "SessionToken": TOKEN, "Expiration": "2999-01-01T00:00:00Z"})
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&process, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = dir.path().join("config");
    std::fs::write(
        &config,
        format!(
            "[profile ops]\ncredential_process = {}\n",
            process.display()
        ),
    )
    .unwrap();
    let config = config.to_str().unwrap();

    let added = signed(
        &behind.proxy,
        &[
            "--profile",
            "ops",
            "--json",
            "priority",
            "add",
            "cached",
            "u-1",
            "u-2",
            "u-3",
        ],
        &[("AWS_CONFIG_FILE", config)],
        None,
    )
    .await
    .expect(0)
    .json();
    assert_eq!(added["size"], 3, "{added}");
    let runs = std::fs::read_to_string(&runs).unwrap_or_default();
    assert_eq!(runs.lines().count(), 1, "credential_process ran {runs:?}");
}

/// `--stack` when AWS cannot be reached is exit 3, as for the API; a stack that is not there,
/// or no credentials to ask with, is exit 4.
#[tokio::test]
async fn a_stack_out_of_reach_is_exit_3_and_no_credentials_exit_4() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let mut env = vec![
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_REGION", REGION),
    ];
    env.extend(CREDENTIALS);
    let args = ["--stack", "lineup-prod", "queue", "show", "q"];
    let ran = run_cli(&args, &env, None).await.expect(3);
    assert!(ran.stderr.starts_with("lineup: cannot reach "), "{ran:#?}");
    let ran = run_cli(&args, &env[..2], None).await.expect(4);
    assert!(ran.stderr.contains("credentials"), "{ran:#?}");
}
