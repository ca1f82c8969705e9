//! Where the console talks: a URL (`--url`), a CloudFormation stack's outputs (`--stack`), or
//! a named target in the config file (`--target`, `LINEUP_TARGET`, or its `default`). With
//! none, lineup-local on http://127.0.0.1:3000. Whether requests are signed: `--sign`;
//! `auto` signs for a stack and for any https URL, never for plain http.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;

use crate::api::Api;
use crate::error::CliError;
use crate::sign::{error_chain, Aws};

/// lineup-local's address, as README's run command serves it.
pub const LOCAL_URL: &str = "http://127.0.0.1:3000";
/// The `PaymentEventSource` template parameter's default: the source `BookingHealth` events
/// carry unless the stack says otherwise.
pub const DEFAULT_EVENT_SOURCE: &str = "lineup.payments";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SignMode {
    Auto,
    Always,
    Never,
}

/// A target as the command line or the config file names it. Each field the command line
/// gives wins over the named target's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Where {
    pub url: Option<String>,
    pub stack: Option<String>,
    pub profile: Option<String>,
    pub region: Option<String>,
    pub sign: Option<SignMode>,
    /// `health send` puts events on this bus (the stack's `EventBusName` output otherwise).
    pub event_bus: Option<String>,
    /// The source of `health send`'s events (the stack's `PaymentEventSource` otherwise).
    pub event_source: Option<String>,
}

impl Where {
    fn or(self, other: Where) -> Where {
        Where {
            url: self.url.or(other.url),
            stack: self.stack.or(other.stack),
            profile: self.profile.or(other.profile),
            region: self.region.or(other.region),
            sign: self.sign.or(other.sign),
            event_bus: self.event_bus.or(other.event_bus),
            event_source: self.event_source.or(other.event_source),
        }
    }
}

/// The config file: named targets, and which one is used when none is named.
///
/// ```toml
/// default = "prod"
///
/// [targets.prod]
/// stack = "lineup-prod"
/// region = "eu-west-1"
/// profile = "ops"
///
/// [targets.local]
/// url = "http://127.0.0.1:3000"
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    pub default: Option<String>,
    #[serde(default)]
    pub targets: BTreeMap<String, Where>,
}

impl ConfigFile {
    /// `LINEUP_CONFIG`, else `$XDG_CONFIG_HOME/lineup/config.toml`, else
    /// `~/.config/lineup/config.toml`.
    pub fn path() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os("LINEUP_CONFIG") {
            return Some(PathBuf::from(path));
        }
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
        Some(base.join("lineup").join("config.toml"))
    }

    /// The file, or an empty one when there is none. A file that is there but does not
    /// parse is an error, not silently ignored.
    pub fn load() -> Result<ConfigFile, CliError> {
        let Some(path) = ConfigFile::path() else {
            return Ok(ConfigFile::default());
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => toml::from_str(&text)
                .map_err(|err| CliError::Usage(format!("{}: {err}", path.display()))),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(ConfigFile::default()),
            Err(err) => Err(CliError::Usage(format!("{}: {err}", path.display()))),
        }
    }
}

/// Where events for the queue go (`health send`).
#[derive(Debug, Clone)]
pub enum EventSink {
    /// lineup-local's `POST /events`, with events from `source`.
    Local { source: String },
    /// EventBridge's `PutEvents` on `bus`.
    Bus {
        client: aws_sdk_eventbridge::Client,
        bus: String,
        source: String,
    },
}

/// A resolved target.
#[derive(Debug, Clone)]
pub struct Target {
    pub api: Api,
    pub events: EventSink,
    /// What the console talks to, for messages: the stack's name or the URL.
    pub label: String,
}

/// The stack outputs and parameter the console reads.
#[derive(Debug, Clone, PartialEq)]
pub struct StackFacts {
    pub api_url: String,
    pub event_bus: Option<String>,
    pub event_source: Option<String>,
}

impl Target {
    /// Resolves `given` (the command line) over the named target and the defaults.
    pub async fn resolve(given: Where, named: Option<&str>) -> Result<Target, CliError> {
        let file = ConfigFile::load()?;
        let name = named.map(str::to_owned).or_else(|| {
            std::env::var("LINEUP_TARGET")
                .ok()
                .filter(|n| !n.is_empty())
        });
        let from_file = match name.as_deref() {
            Some(name) => file.targets.get(name).cloned().ok_or_else(|| {
                CliError::Setup(format!(
                    "no target {name:?} in {}",
                    ConfigFile::path()
                        .map_or("the config file".into(), |p| p.display().to_string())
                ))
            })?,
            None if given.url.is_none() && given.stack.is_none() => file
                .default
                .as_deref()
                .and_then(|name| file.targets.get(name).cloned())
                .unwrap_or_default(),
            None => Where::default(),
        };
        let chosen = if given.url.is_some() || given.stack.is_some() {
            // A URL or stack on the command line replaces the named target's place.
            Where {
                url: given.url.clone(),
                stack: given.stack.clone(),
                ..given.clone().or(from_file)
            }
        } else {
            given.or(from_file)
        };
        Target::from_where(chosen).await
    }

    async fn from_where(chosen: Where) -> Result<Target, CliError> {
        let sign = chosen.sign.unwrap_or(SignMode::Auto);
        let needs_aws = chosen.stack.is_some()
            || chosen.event_bus.is_some()
            || match sign {
                SignMode::Always => true,
                SignMode::Never => false,
                SignMode::Auto => chosen
                    .url
                    .as_deref()
                    .is_some_and(|u| u.starts_with("https://")),
            };
        let aws = if needs_aws {
            Some(Aws::load(chosen.profile.as_deref(), chosen.region.as_deref()).await?)
        } else {
            None
        };
        let facts = match (&chosen.stack, &aws) {
            (Some(stack), Some(aws)) => Some(describe_stack(aws, stack).await?),
            _ => None,
        };
        let url = match (&chosen.url, &facts) {
            (Some(url), _) => url.clone(),
            (None, Some(facts)) => facts.api_url.clone(),
            (None, None) => LOCAL_URL.to_owned(),
        };
        let signed = match sign {
            SignMode::Always => true,
            SignMode::Never => false,
            SignMode::Auto => chosen.stack.is_some() || url.starts_with("https://"),
        };
        let signer = match (&aws, signed) {
            (Some(aws), true) => {
                let region = chosen.region.clone().or_else(|| region_of(&url));
                Some(aws.signer(region)?)
            }
            _ => None,
        };
        let bus = chosen
            .event_bus
            .clone()
            .or_else(|| facts.as_ref().and_then(|f| f.event_bus.clone()));
        let events = match (bus, &aws) {
            (Some(bus), Some(aws)) => EventSink::Bus {
                client: aws_sdk_eventbridge::Client::new(&aws.config),
                bus,
                source: chosen
                    .event_source
                    .clone()
                    .or_else(|| facts.as_ref().and_then(|f| f.event_source.clone()))
                    .unwrap_or_else(|| DEFAULT_EVENT_SOURCE.to_owned()),
            },
            _ => EventSink::Local {
                source: chosen
                    .event_source
                    .clone()
                    .unwrap_or_else(|| DEFAULT_EVENT_SOURCE.to_owned()),
            },
        };
        let label = chosen.stack.clone().unwrap_or_else(|| url.clone());
        Ok(Target {
            api: Api::new(&url, signer)?,
            events,
            label,
        })
    }
}

/// The region in an execute-api host (`{id}.execute-api.{region}.amazonaws.com`).
pub fn region_of(url: &str) -> Option<String> {
    let host = url.split("://").nth(1)?.split(['/', ':']).next()?;
    let mut labels = host.split('.');
    labels.find(|label| *label == "execute-api")?;
    labels.next().map(str::to_owned)
}

/// An AWS SDK call's failure, by the exit codes' table: AWS out of reach (no connection, a
/// timeout, a garbled or 5xx answer) is [`CliError::Unreachable`] (3), as for the API; a
/// refusal (no such stack, access denied) or no credentials to ask with is
/// [`CliError::Setup`] (4).
pub fn aws_failure<E>(what: &str, err: &aws_sdk_cloudformation::error::SdkError<E>) -> CliError
where
    E: std::error::Error + 'static,
{
    use aws_sdk_cloudformation::error::SdkError;
    let out_of_reach = match err {
        SdkError::DispatchFailure(failure) => failure.is_io() || failure.is_timeout(),
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => true,
        SdkError::ServiceError(service) => service.raw().status().is_server_error(),
        _ => false,
    };
    if out_of_reach {
        CliError::Unreachable {
            what: what.to_owned(),
            reason: error_chain(err),
        }
    } else {
        CliError::Setup(format!("{what}: {}", error_chain(err)))
    }
}

/// `DescribeStacks`: the `ApiUrl` and `EventBusName` outputs and the `PaymentEventSource`
/// parameter.
pub async fn describe_stack(aws: &Aws, stack: &str) -> Result<StackFacts, CliError> {
    let client = aws_sdk_cloudformation::Client::new(&aws.config);
    let answer = client
        .describe_stacks()
        .stack_name(stack)
        .send()
        .await
        .map_err(|err| aws_failure(&format!("CloudFormation for stack {stack:?}"), &err))?;
    let found = answer
        .stacks()
        .first()
        .ok_or_else(|| CliError::Setup(format!("no stack {stack:?}")))?;
    let output = |key: &str| {
        found
            .outputs()
            .iter()
            .find(|o| o.output_key() == Some(key))
            .and_then(|o| o.output_value().map(str::to_owned))
    };
    let parameter = found
        .parameters()
        .iter()
        .find(|p| p.parameter_key() == Some("PaymentEventSource"))
        .and_then(|p| p.parameter_value().map(str::to_owned));
    Ok(StackFacts {
        api_url: output("ApiUrl")
            .ok_or_else(|| CliError::Setup(format!("stack {stack:?} has no ApiUrl output")))?,
        event_bus: output("EventBusName"),
        event_source: parameter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_region_comes_from_an_execute_api_host() {
        assert_eq!(
            region_of("https://a1b2c3.execute-api.eu-west-1.amazonaws.com").as_deref(),
            Some("eu-west-1")
        );
        assert_eq!(region_of("https://tickets.example.com/api"), None);
    }

    #[test]
    fn the_config_file_names_targets() {
        let file: ConfigFile = toml::from_str(
            "default = \"prod\"\n[targets.prod]\nstack = \"lineup-prod\"\nregion = \"eu-west-1\"\nsign = \"always\"\n",
        )
        .unwrap();
        let prod = &file.targets["prod"];
        assert_eq!(prod.stack.as_deref(), Some("lineup-prod"));
        assert_eq!(prod.sign, Some(SignMode::Always));
        assert!(toml::from_str::<ConfigFile>("[targets.x]\nurll = \"typo\"\n").is_err());
    }
}
