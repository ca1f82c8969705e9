//! The one AWS SDK set-up every AWS client in lineup shares (Secrets Manager at cold start,
//! EventBridge for queue events).
//!
//! Lambda hands a function its region and credentials in environment variables, so that is
//! the only place lineup looks (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, plus `AWS_ENDPOINT_URL` for a local endpoint such as moto). Skipping
//! the SDK's full provider chain (profiles, SSO, STS, IMDS) keeps it out of the binaries and
//! out of cold start. HTTPS goes through rustls with the *ring* provider, the TLS stack the
//! Redis client uses, so each binary carries one TLS implementation, not the SDK's second.

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::ProvideRegion;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider};
use aws_smithy_http_client::Builder;
use aws_smithy_runtime_api::client::http::SharedHttpClient;
use tokio::sync::OnceCell;

/// The process's SDK configuration, read on first use and then shared.
pub async fn sdk_config() -> &'static SdkConfig {
    static CONFIG: OnceCell<SdkConfig> = OnceCell::const_new();
    CONFIG
        .get_or_init(|| async {
            let mut config = SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(EnvironmentVariableRegionProvider::new().region().await)
                .credentials_provider(SharedCredentialsProvider::new(
                    EnvironmentVariableCredentialsProvider::new(),
                ))
                .http_client(http_client());
            if let Some(endpoint) = std::env::var("AWS_ENDPOINT_URL")
                .ok()
                .filter(|url| !url.is_empty())
            {
                config = config.endpoint_url(endpoint);
            }
            config.build()
        })
        .await
}

/// The HTTP(S) client for SDK clients. Trusted roots are the system's, loaded when the
/// first request needs them. The tests' clients for moto (plain HTTP) use it too.
pub fn http_client() -> SharedHttpClient {
    Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .build_https()
}
