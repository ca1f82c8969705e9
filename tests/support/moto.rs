//! A moto server for the tests: a real AWS-compatible endpoint (Secrets Manager, EventBridge,
//! SQS) on a free loopback port, and the AWS configuration that points the SDK at it.

use std::time::Duration;

/// A moto server on a free loopback port: a real AWS-compatible endpoint for the SDK calls
/// lineup makes (Secrets Manager). Stopped when dropped.
pub struct Moto {
    child: tokio::process::Child,
    pub endpoint: String,
}

impl Moto {
    /// Starts `moto_server`, or returns `None` when it is not installed (`pip install
    /// "moto[server]"`). `.ci/run` installs it and sets `LINEUP_REQUIRE_MOTO`, which turns a
    /// missing server into a failure instead of a skip.
    pub async fn start() -> Option<Moto> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let spawned = tokio::process::Command::new("moto_server")
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn();
        let child = match spawned {
            Ok(child) => child,
            Err(err) if std::env::var_os("LINEUP_REQUIRE_MOTO").is_some() => {
                panic!("LINEUP_REQUIRE_MOTO is set but moto_server cannot run: {err}")
            }
            Err(_) => return None,
        };
        let endpoint = format!("http://127.0.0.1:{port}");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Some(Moto { child, endpoint });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("moto_server did not start on port {port}");
    }

    fn aws_config(&self) -> aws_config::SdkConfig {
        aws_config_for(&self.endpoint)
    }

    pub fn secrets_manager(&self) -> aws_sdk_secretsmanager::Client {
        aws_sdk_secretsmanager::Client::new(&self.aws_config())
    }

    pub fn eventbridge(&self) -> aws_sdk_eventbridge::Client {
        aws_sdk_eventbridge::Client::new(&self.aws_config())
    }

    /// Creates the event bus `name` in moto; returns its name.
    pub async fn bus(&self, name: &'static str) -> &'static str {
        self.eventbridge()
            .create_event_bus()
            .name(name)
            .send()
            .await
            .expect("create bus");
        name
    }

    pub fn sqs(&self) -> aws_sdk_sqs::Client {
        aws_sdk_sqs::Client::new(&self.aws_config())
    }

    /// A rule `name` on `bus` that sends every event matching `pattern` to a new SQS queue,
    /// also named `name`; returns the queue's URL.
    pub async fn route_to_queue(
        &self,
        bus: &str,
        name: &str,
        pattern: serde_json::Value,
    ) -> String {
        let sqs = self.sqs();
        let queue_url = sqs
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .expect("create queue")
            .queue_url()
            .expect("queue url")
            .to_owned();
        let attributes = sqs
            .get_queue_attributes()
            .queue_url(&queue_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
            .send()
            .await
            .expect("queue attributes");
        let queue_arn = attributes
            .attributes()
            .and_then(|a| a.get(&aws_sdk_sqs::types::QueueAttributeName::QueueArn))
            .expect("queue arn")
            .clone();
        let events = self.eventbridge();
        events
            .put_rule()
            .name(name)
            .event_bus_name(bus)
            .event_pattern(pattern.to_string())
            .send()
            .await
            .expect("rule");
        events
            .put_targets()
            .rule(name)
            .event_bus_name(bus)
            .targets(
                aws_sdk_eventbridge::types::Target::builder()
                    .id("sqs")
                    .arn(queue_arn)
                    .build()
                    .expect("target"),
            )
            .send()
            .await
            .expect("targets");
        queue_url
    }
}

/// An AWS configuration for a local endpoint: a region, test keys, and lineup's own HTTP
/// client, so the tests exercise the same client stack the functions use.
pub fn aws_config_for(endpoint: &str) -> aws_config::SdkConfig {
    aws_config::SdkConfig::builder()
        .behavior_version(aws_config::BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new("us-east-1"))
        .credentials_provider(
            aws_credential_types::provider::SharedCredentialsProvider::new(
                aws_credential_types::Credentials::new("test", "test", None, None, "local"),
            ),
        )
        .http_client(lineup::aws::http_client().expect("AWS HTTP client"))
        .build()
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
