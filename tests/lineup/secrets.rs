//! Secrets Manager at cold start, against a real Secrets Manager API (moto on loopback).

use std::collections::HashMap;

use lineup::cold_start::Publishing;
use lineup::config::{Config, SecretPolicy};
use lineup_tests::Moto;

/// A token secret and a Redis secret (`lineup` / `s3cret-pass`); returns their ARNs.
async fn create_token_and_redis_secrets(
    client: &aws_sdk_secretsmanager::Client,
) -> (String, String) {
    let mut arns = Vec::new();
    for (name, value) in [
        ("lineup/token", "a-token-secret-of-at-least-32-bytes-long"),
        (
            "lineup/redis",
            r#"{"username": "lineup", "password": "s3cret-pass"}"#,
        ),
    ] {
        let created = client
            .create_secret()
            .name(name)
            .secret_string(value)
            .send()
            .await
            .unwrap();
        arns.push(created.arn().unwrap().to_string());
    }
    (arns[0].clone(), arns[1].clone())
}

#[tokio::test]
async fn secrets_named_by_arn_fill_the_token_secret_and_redis_credentials() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed (pip install \"moto[server]\")");
        return;
    };
    let client = moto.secrets_manager();
    let (token_arn, redis_arn) = create_token_and_redis_secrets(&client).await;
    let mut vars = HashMap::from([
        (
            "REDIS_URL".to_string(),
            "rediss://cache.example:6379".to_string(),
        ),
        ("TOKEN_SECRET_ARN".to_string(), token_arn),
        ("REDIS_SECRET_ARN".to_string(), redis_arn),
    ]);
    lineup::secrets::fill(&mut vars, &client).await.unwrap();
    assert_eq!(vars["REDIS_USERNAME"], "lineup");
    assert_eq!(vars["REDIS_PASSWORD"], "s3cret-pass");
    let config =
        Config::from_lookup(move |n| vars.get(n).cloned(), SecretPolicy::Required).unwrap();
    assert_eq!(config.redis.password.as_deref(), Some("s3cret-pass"));
    // The configuration never prints a secret.
    let shown = format!("{config:?}");
    assert!(
        !shown.contains("s3cret-pass") && !shown.contains("a-token-secret"),
        "{shown}"
    );
}

#[tokio::test]
async fn a_missing_secret_stops_start_up_naming_the_variable() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed (pip install \"moto[server]\")");
        return;
    };
    let client = moto.secrets_manager();
    let mut vars = HashMap::from([(
        "TOKEN_SECRET_ARN".to_string(),
        "arn:aws:secretsmanager:us-east-1:123456789012:secret:nope".to_string(),
    )]);
    let err = lineup::secrets::fill(&mut vars, &client).await.unwrap_err();
    assert_eq!(err.variable, "TOKEN_SECRET_ARN");
    let mut malformed = HashMap::new();
    let secret = client
        .create_secret()
        .name("lineup/bad-redis")
        .secret_string("just-a-password")
        .send()
        .await
        .unwrap();
    malformed.insert(
        "REDIS_SECRET_ARN".to_string(),
        secret.arn().unwrap().to_string(),
    );
    let err = lineup::secrets::fill(&mut malformed, &client)
        .await
        .unwrap_err();
    assert_eq!(err.variable, "REDIS_SECRET_ARN");
    assert!(!err.to_string().contains("just-a-password"));
}

/// Lambda gives a function its region, keys and secret ARNs as environment variables, and
/// nothing else: no profile files, no instance metadata. Cold start must reach Secrets
/// Manager, and build its EventBridge client, with only those. It runs in a child process whose environment is exactly that
/// (plus `AWS_ENDPOINT_URL` for moto), because the SDK configuration is per process.
#[tokio::test]
async fn cold_start_reaches_secrets_manager_with_only_the_lambda_environment() {
    const CHILD: &str = "LINEUP_TEST_COLD_START_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let started =
            lineup::cold_start::cold_start(SecretPolicy::Required, Publishing::QueueEvents)
                .await
                .expect("cold start");
        assert_eq!(started.config.redis.username.as_deref(), Some("lineup"));
        assert_eq!(
            started.config.redis.password.as_deref(),
            Some("s3cret-pass")
        );
        return;
    }
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed (pip install \"moto[server]\")");
        return;
    };
    let client = moto.secrets_manager();
    let (token_arn, redis_arn) = create_token_and_redis_secrets(&client).await;
    let output = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "secrets::cold_start_reaches_secrets_manager_with_only_the_lambda_environment",
            "--nocapture",
        ])
        .env_clear()
        .env(CHILD, "1")
        .env("AWS_LAMBDA_FUNCTION_NAME", "queue-api")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env("AWS_SESSION_TOKEN", "test")
        .env("AWS_ENDPOINT_URL", &moto.endpoint)
        .env("EVENT_BUS_NAME", "lineup-test")
        .env("TOKEN_SECRET_ARN", &token_arn)
        .env("REDIS_SECRET_ARN", &redis_arn)
        // Nothing listens there: cold start gives up on Redis quickly and starts anyway.
        .env("REDIS_URL", "redis://127.0.0.1:9")
        .env("REDIS_CONNECT_TIMEOUT_MS", "200")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child: {stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The admission JWT's private key set comes from the secret `ADMISSION_KEYS_ARN` names, and
/// signs what the published JWKS verifies; the configuration never prints it.
#[tokio::test]
async fn the_admission_keys_come_from_the_secret_named_by_arn() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed (pip install \"moto[server]\")");
        return;
    };
    let client = moto.secrets_manager();
    // The admission settings of a function whose key set is the secret `name` holding `value`,
    // read as cold start reads them.
    let environment = |name: &'static str, value: &'static str| {
        let client = client.clone();
        async move {
            let created = client
                .create_secret()
                .name(name)
                .secret_string(value)
                .send()
                .await
                .unwrap();
            let mut vars = HashMap::from([
                (
                    "ADMISSION_ISSUER".to_string(),
                    "https://queue.example".to_string(),
                ),
                ("ADMISSION_AUDIENCE".to_string(), "booking".to_string()),
                (
                    "ADMISSION_KEYS_ARN".to_string(),
                    created.arn().unwrap().to_string(),
                ),
            ]);
            lineup::secrets::fill(&mut vars, &client).await.unwrap();
            assert_eq!(vars["ADMISSION_KEYS"], value);
            lineup::config::Environment::new(move |n| vars.get(n).cloned())
        }
    };
    let env = environment("lineup/admission-keys", lineup_tests::ADMISSION_KEYS).await;
    let issuer = env.admission().unwrap().expect("an issuer");
    let kids: Vec<Option<String>> = issuer
        .jwks(chrono::Utc::now())
        .keys
        .into_iter()
        .map(|key| key.common.key_id)
        .collect();
    assert_eq!(kids, [Some("test-1".to_string())]);

    // A secret that is not a key set stops start-up, naming the variable, not the value.
    let env = environment(
        "lineup/admission-bad",
        r#"{"keys": [{"kty": "RSA", "kid": "x"}]}"#,
    )
    .await;
    assert_eq!(env.admission().err().unwrap().variable, "ADMISSION_KEYS");
}
