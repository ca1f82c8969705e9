//! The one AWS SDK set-up every AWS client in lineup shares (Secrets Manager at cold start,
//! EventBridge for queue events).
//!
//! Lambda hands a function its region and credentials in environment variables, so that is
//! the only place lineup looks (`AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//! `AWS_SESSION_TOKEN`, plus `AWS_ENDPOINT_URL` for a local endpoint such as moto). Skipping
//! the SDK's full provider chain (profiles, SSO, STS, IMDS) keeps it out of the binaries and
//! out of cold start.
//!
//! HTTPS goes through rustls with the *ring* provider, the TLS stack the Redis client uses,
//! so each binary carries one TLS implementation. It trusts the roots AWS endpoints chain to
//! (Amazon Trust Services, [`crate::tls`]) rather than the system store, whose
//! ~150 certificates took 5–6 ms to load at every cold start. `AWS_CA_BUNDLE` (a PEM file,
//! as for the AWS CLI and SDKs) replaces them, for a proxy that re-signs TLS, say.

use aws_config::environment::{
    EnvironmentVariableCredentialsProvider, EnvironmentVariableRegionProvider,
};
use aws_config::meta::region::ProvideRegion;
use aws_config::{BehaviorVersion, SdkConfig};
use aws_credential_types::provider::SharedCredentialsProvider;
use aws_smithy_http_client::tls::{rustls_provider::CryptoMode, Provider, TlsContext, TrustStore};
use aws_smithy_http_client::Builder;
use aws_smithy_runtime_api::client::connector_metadata::ConnectorMetadata;
use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnectorSettings, SharedHttpClient, SharedHttpConnector,
};
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use tokio::sync::OnceCell;

use crate::config::ConfigError;
use crate::tls::{read_root_bundle, AMAZON_TRUST_SERVICES};

/// The process's SDK configuration, read on first use and then shared.
pub async fn sdk_config() -> Result<&'static SdkConfig, ConfigError> {
    static CONFIG: OnceCell<SdkConfig> = OnceCell::const_new();
    CONFIG
        .get_or_try_init(|| async {
            let mut config = SdkConfig::builder()
                .behavior_version(BehaviorVersion::latest())
                .region(EnvironmentVariableRegionProvider::new().region().await)
                .credentials_provider(SharedCredentialsProvider::new(
                    EnvironmentVariableCredentialsProvider::new(),
                ))
                .http_client(http_client()?);
            if let Some(endpoint) = non_empty_var("AWS_ENDPOINT_URL") {
                config = config.endpoint_url(endpoint);
            }
            Ok(config.build())
        })
        .await
}

/// The HTTP(S) client for SDK clients, trusting the Amazon roots ([`crate::tls`]) or the
/// `AWS_CA_BUNDLE` file. The tests' clients for moto (plain HTTP) use it too.
pub fn http_client() -> Result<SharedHttpClient, ConfigError> {
    let roots = match non_empty_var("AWS_CA_BUNDLE") {
        // Known good (a unit test parses them), so not parsed a third time at cold start.
        None => AMAZON_TRUST_SERVICES.to_vec(),
        Some(path) => read_root_bundle(&path).map_err(|reason| ConfigError {
            variable: "AWS_CA_BUNDLE",
            reason,
        })?,
    };
    let trust = TrustStore::empty().with_pem_certificate(roots);
    let tls = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .map_err(|err| ConfigError {
            variable: "AWS_CA_BUNDLE",
            reason: err.to_string(),
        })?;
    let https = Builder::new()
        .tls_provider(Provider::Rustls(CryptoMode::Ring))
        .tls_context(tls)
        .build_https();
    Ok(SharedHttpClient::new(ConnectOnFirstUse(https)))
}

/// The SDK's HTTPS client without its client-construction check, which builds and drops a
/// TLS connector (parsing every root certificate) twice per SDK client so that a system
/// root store would load early. lineup loads no system store, and that work was a third of
/// a publishing function's start-up. The connector is built once, on the client's first
/// request.
#[derive(Debug)]
struct ConnectOnFirstUse(SharedHttpClient);

impl HttpClient for ConnectOnFirstUse {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        self.0.http_connector(settings, components)
    }

    fn connector_metadata(&self) -> Option<ConnectorMetadata> {
        self.0.connector_metadata()
    }
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}
