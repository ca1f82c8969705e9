//! Secrets from AWS Secrets Manager, read once at cold start. When `TOKEN_SECRET_ARN` (in a
//! function that reads the token key), `REDIS_SECRET_ARN` or `ADMISSION_KEYS_ARN` is set,
//! the secret's value stands in for `TOKEN_SECRET`, for `REDIS_USERNAME` and
//! `REDIS_PASSWORD`, or for `ADMISSION_KEYS` (the admission JWT's private JWK set), before
//! the configuration is checked. Without any of them no AWS client is created, so nothing is
//! added to cold start.

use std::collections::HashMap;

use aws_sdk_secretsmanager::Client;
use serde::Deserialize;

use crate::config::{Config, ConfigError, SecretPolicy};

/// The JSON of the Redis secret (the shape ElastiCache RBAC secrets use).
#[derive(Deserialize)]
struct RedisSecret {
    #[serde(default)]
    username: Option<String>,
    password: String,
}

/// The variables that name a secret.
const ARNS: [&str; 3] = ["TOKEN_SECRET_ARN", "REDIS_SECRET_ARN", "ADMISSION_KEYS_ARN"];

/// Reads the process environment, fills in secrets from Secrets Manager, and checks it all.
pub async fn load_config(policy: SecretPolicy) -> Result<Config, ConfigError> {
    // Empty values count as unset, so `sam local` can blank the ARNs in env.json.
    let mut vars: HashMap<String, String> = std::env::vars()
        .filter(|(_, value)| !value.is_empty())
        .collect();
    if policy == SecretPolicy::Unused {
        // The function signs and checks no token: its secret is neither fetched nor read.
        vars.remove("TOKEN_SECRET_ARN");
    }
    if ARNS.iter().any(|arn| vars.contains_key(*arn)) {
        fill(&mut vars, &Client::new(crate::aws::sdk_config().await?)).await?;
    }
    Config::from_lookup(move |name| vars.get(name).cloned(), policy)
}

/// Replaces `*_SECRET_ARN` entries of `vars` by the values they point at.
pub async fn fill(vars: &mut HashMap<String, String>, client: &Client) -> Result<(), ConfigError> {
    if let Some(arn) = vars.get("TOKEN_SECRET_ARN").cloned() {
        let value = fetch(client, "TOKEN_SECRET_ARN", &arn).await?;
        vars.insert("TOKEN_SECRET".into(), value);
    }
    if let Some(arn) = vars.get("ADMISSION_KEYS_ARN").cloned() {
        let value = fetch(client, "ADMISSION_KEYS_ARN", &arn).await?;
        vars.insert("ADMISSION_KEYS".into(), value);
    }
    if let Some(arn) = vars.get("REDIS_SECRET_ARN").cloned() {
        let value = fetch(client, "REDIS_SECRET_ARN", &arn).await?;
        let secret: RedisSecret = serde_json::from_str(&value).map_err(|_| ConfigError {
            variable: "REDIS_SECRET_ARN",
            reason: "the secret is not JSON with a \"password\" (and optional \"username\")".into(),
        })?;
        if let Some(username) = secret.username {
            vars.insert("REDIS_USERNAME".into(), username);
        }
        vars.insert("REDIS_PASSWORD".into(), secret.password);
    }
    Ok(())
}

async fn fetch(client: &Client, variable: &'static str, arn: &str) -> Result<String, ConfigError> {
    let output = client
        .get_secret_value()
        .secret_id(arn)
        .send()
        .await
        .map_err(|err| ConfigError {
            variable,
            // The SDK's error names the cause (not found, access denied, no route); never the value.
            reason: format!(
                "could not read the secret: {}",
                aws_sdk_secretsmanager::error::DisplayErrorContext(err)
            ),
        })?;
    output
        .secret_string()
        .map(str::to_owned)
        .ok_or(ConfigError {
            variable,
            reason: "the secret has no string value".into(),
        })
}
