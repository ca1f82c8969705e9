//! SigV4 for API Gateway's `AWS_IAM` routes: credentials from the AWS SDK's credential chain
//! (`--profile`, the environment, the shared config and credentials files, IAM Identity Center
//! (SSO), `credential_process`, assumed roles, web identity, the container and instance roles),
//! signed by `aws-sigv4`.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::BehaviorVersion;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use aws_credential_types::Credentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;

use crate::error::CliError;

/// API Gateway's signing name.
pub const SERVICE: &str = "execute-api";
/// Credentials this close to their expiry are fetched again before signing.
const REFRESH_BEFORE_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// The AWS side of a target: its SDK configuration, for signing and for the SDK clients
/// (CloudFormation for `--stack`, EventBridge for `health send`).
#[derive(Clone, Debug)]
pub struct Aws {
    pub config: aws_config::SdkConfig,
}

impl Aws {
    /// Loads the SDK configuration: `profile` and `region` win over the environment and the
    /// shared files. `AWS_ENDPOINT_URL` points the SDK clients elsewhere (moto in tests).
    pub async fn load(profile: Option<&str>, region: Option<&str>) -> Result<Aws, CliError> {
        let http = lineup::aws::http_client().map_err(|err| CliError::Setup(err.to_string()))?;
        let mut loader = aws_config::defaults(BehaviorVersion::latest()).http_client(http);
        if let Some(profile) = profile {
            loader = loader.profile_name(profile);
        }
        if let Some(region) = region {
            loader = loader.region(aws_config::Region::new(region.to_owned()));
        }
        Ok(Aws {
            config: loader.load().await,
        })
    }

    pub fn region(&self) -> Option<String> {
        self.config.region().map(|region| region.to_string())
    }

    /// A signer for requests to `region`, with the chain's credentials.
    pub fn signer(&self, region: Option<String>) -> Result<Signer, CliError> {
        let region = region.or_else(|| self.region()).ok_or_else(|| {
            CliError::Setup(
                "no AWS region to sign for: give --region, set AWS_REGION, or name one in the profile"
                    .into(),
            )
        })?;
        let credentials = self
            .config
            .credentials_provider()
            .ok_or_else(|| CliError::Setup("no AWS credential provider is configured".into()))?;
        Ok(Signer {
            credentials,
            cached: Arc::default(),
            region,
        })
    }
}

/// Signs requests for one region with the credential chain's current credentials.
#[derive(Clone, Debug)]
pub struct Signer {
    credentials: SharedCredentialsProvider,
    /// The chain's last answer, shared by clones: the chain itself does not cache, so each
    /// request would otherwise run a profile's `credential_process` or assume its role again.
    cached: Arc<tokio::sync::Mutex<Option<Credentials>>>,
    region: String,
}

impl Signer {
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The cached credentials while they are more than [`REFRESH_BEFORE_EXPIRY`] from expiring;
    /// the chain's otherwise.
    async fn credentials(&self) -> Result<Credentials, CliError> {
        let mut cached = self.cached.lock().await;
        if let Some(credentials) = cached.as_ref() {
            let fresh = credentials
                .expiry()
                .is_none_or(|expiry| expiry > SystemTime::now() + REFRESH_BEFORE_EXPIRY);
            if fresh {
                return Ok(credentials.clone());
            }
        }
        let credentials = self
            .credentials
            .provide_credentials()
            .await
            .map_err(|err| CliError::Setup(format!("no AWS credentials: {}", error_chain(&err))))?;
        *cached = Some(credentials.clone());
        Ok(credentials)
    }

    /// Adds `Authorization`, `X-Amz-Date`, and `X-Amz-Security-Token` where the credentials
    /// carry one. The request's headers (`host` among them) and body are what is signed.
    pub async fn sign(&self, request: &mut http::Request<bytes::Bytes>) -> Result<(), CliError> {
        let identity = self.credentials().await?.into();
        let params = v4::SigningParams::builder()
            .identity(&identity)
            .region(&self.region)
            .name(SERVICE)
            .time(SystemTime::now())
            .settings(SigningSettings::default())
            .build()
            .map_err(|err| CliError::Setup(format!("cannot sign: {err}")))?
            .into();
        let uri = request.uri().to_string();
        let headers: Vec<(&str, &str)> = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
            .collect();
        let signable = SignableRequest::new(
            request.method().as_str(),
            &uri,
            headers.into_iter(),
            SignableBody::Bytes(request.body()),
        )
        .map_err(|err| CliError::Setup(format!("cannot sign: {err}")))?;
        let (instructions, _signature) = sign(signable, &params)
            .map_err(|err| CliError::Setup(format!("cannot sign: {err}")))?
            .into_parts();
        instructions.apply_to_request_http1x(request);
        Ok(())
    }
}

/// An error and its sources on one line: the SDK's errors keep the useful part in a source.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut out = err.to_string();
    let mut source = err.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = inner.source();
    }
    out
}
