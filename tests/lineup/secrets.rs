//! Secrets Manager at cold start, against a real Secrets Manager API (moto on loopback).

use std::collections::HashMap;

use lineup::config::{Config, SecretPolicy};
use lineup_tests::Moto;

#[tokio::test]
async fn secrets_named_by_arn_fill_the_token_secret_and_redis_credentials() {
    let Some(moto) = Moto::start().await else {
        eprintln!("skipped: moto_server is not installed (pip install \"moto[server]\")");
        return;
    };
    let client = moto.secrets_manager();
    let token = client
        .create_secret()
        .name("lineup/token")
        .secret_string("a-token-secret-of-at-least-32-bytes-long")
        .send()
        .await
        .unwrap();
    let redis = client
        .create_secret()
        .name("lineup/redis")
        .secret_string(r#"{"username": "lineup", "password": "s3cret-pass"}"#)
        .send()
        .await
        .unwrap();
    let mut vars = HashMap::from([
        (
            "REDIS_URL".to_string(),
            "rediss://cache.example:6379".to_string(),
        ),
        (
            "TOKEN_SECRET_ARN".to_string(),
            token.arn().unwrap().to_string(),
        ),
        (
            "REDIS_SECRET_ARN".to_string(),
            redis.arn().unwrap().to_string(),
        ),
    ]);
    lineup::secrets::fill(&mut vars, &client).await.unwrap();
    assert_eq!(vars["REDIS_USERNAME"], "lineup");
    assert_eq!(vars["REDIS_PASSWORD"], "s3cret-pass");
    let config = Config::from_lookup(|n| vars.get(n).cloned(), SecretPolicy::Required).unwrap();
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
