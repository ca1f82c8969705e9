//! Queue state events to EventBridge (`EVENT_BUS_NAME`, source `lineup.queue`). Off when
//! the variable is unset. Entries go in PutEvents calls of at most ten; failed entries are
//! retried a bounded number of times and then counted and logged. Publishing happens
//! after the Redis work is done, so a failure never blocks or undoes an admission.

use std::time::Duration;

use aws_sdk_eventbridge::config::retry::RetryConfig;
use aws_sdk_eventbridge::config::timeout::TimeoutConfig;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use aws_sdk_eventbridge::Client;
use futures::stream::{self, StreamExt};
use serde::Serialize;

use crate::config::ConfigError;
use crate::metrics::{MetricsSink, Record};
use crate::queue::QueueEvent;
use crate::telemetry::Totals;

/// The `source` of every queue state event.
pub const SOURCE: &str = "lineup.queue";
/// Most entries PutEvents takes in one call.
pub const ENTRIES_PER_CALL: usize = 10;
/// Tries per entry, the first included.
pub const ATTEMPTS: u32 = 3;
/// Longest one PutEvents call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(2000);
/// PutEvents calls in flight at once.
const CONCURRENT_CALLS: usize = 8;

/// Where events go, if anywhere. Cheap to clone.
#[derive(Clone, Default)]
pub struct Publisher {
    target: Option<Target>,
}

#[derive(Clone)]
struct Target {
    client: Client,
    bus: String,
}

/// Where a function's counts and events go: CloudWatch metrics and the bus. A pass of the
/// promoter or the reaper reports through [`Outlet::report`]. Cheap to clone.
#[derive(Clone)]
pub struct Outlet {
    pub publisher: Publisher,
    pub metrics: MetricsSink,
}

impl Outlet {
    /// Logs the pass's `totals` under `what`, writes its `records`, then publishes its
    /// `events`. Returns how many events were not published.
    pub async fn report<'e>(
        &self,
        what: &str,
        totals: Totals,
        records: impl IntoIterator<Item = Record>,
        events: impl IntoIterator<Item = &'e QueueEvent>,
    ) -> u64 {
        tracing::info!(%totals, "{what}");
        for record in records {
            self.metrics.emit(&record);
        }
        self.publisher.publish(events).await.failed
    }
}

/// What one `publish` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishReport {
    pub sent: u64,
    /// Entries still failing after every attempt.
    pub failed: u64,
    /// Entries that failed at least once.
    pub retried: u64,
}

impl Publisher {
    /// A publisher that sends nothing.
    pub fn disabled() -> Self {
        Publisher::default()
    }

    /// Publishes to `bus` through `client`. The client's own retries are replaced by this
    /// module's, and each call is bounded, so a dead endpoint costs a request at most
    /// about [`ATTEMPTS`] × [`CALL_TIMEOUT`].
    pub fn new(client: Client, bus: impl Into<String>) -> Self {
        Self::with_call_timeout(client, bus, CALL_TIMEOUT)
    }

    /// [`Self::new`] with each call bounded by `timeout` instead of [`CALL_TIMEOUT`]. A call
    /// that times out is sent again, and EventBridge may then hold it twice: delivery is at
    /// least once.
    pub fn with_call_timeout(client: Client, bus: impl Into<String>, timeout: Duration) -> Self {
        let config = client
            .config()
            .to_builder()
            .retry_config(RetryConfig::disabled())
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(timeout / 2)
                    .operation_timeout(timeout)
                    .build(),
            )
            .build();
        Publisher {
            target: Some(Target {
                client: Client::from_conf(config),
                bus: bus.into(),
            }),
        }
    }

    /// Publishes to `bus` when one is configured, with lineup's AWS configuration.
    /// Creates no AWS client otherwise, so nothing is added to cold start.
    pub async fn for_bus(bus: Option<&str>) -> Result<Self, ConfigError> {
        Ok(match bus {
            None => Publisher::disabled(),
            Some(bus) => Publisher::new(Client::new(crate::aws::sdk_config().await?), bus),
        })
    }

    /// Sends `events`; never fails. Failures are in the report and the log.
    pub async fn publish<'e>(
        &self,
        events: impl IntoIterator<Item = &'e QueueEvent>,
    ) -> PublishReport {
        let Some(target) = &self.target else {
            return PublishReport::default();
        };
        let entries: Vec<PutEventsRequestEntry> = events
            .into_iter()
            .filter_map(|event| target.entry(event))
            .collect();
        if entries.is_empty() {
            return PublishReport::default();
        }
        let calls: Vec<Vec<PutEventsRequestEntry>> = entries
            .chunks(ENTRIES_PER_CALL)
            .map(<[_]>::to_vec)
            .collect();
        let reports: Vec<PublishReport> = stream::iter(calls)
            .map(|call| target.send(call))
            .buffer_unordered(CONCURRENT_CALLS)
            .collect()
            .await;
        let mut total = PublishReport::default();
        for report in reports {
            total.sent += report.sent;
            total.failed += report.failed;
            total.retried += report.retried;
        }
        if total.failed > 0 {
            tracing::warn!(
                sent = total.sent,
                failed = total.failed,
                retried = total.retried,
                "queue events not all published"
            );
        } else {
            tracing::info!(
                sent = total.sent,
                retried = total.retried,
                "queue events published"
            );
        }
        total
    }
}

/// One event for [`Publisher::put`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub source: &'static str,
    pub detail_type: &'static str,
    pub detail: String,
}

impl Publisher {
    /// Whether events go anywhere.
    pub fn is_enabled(&self) -> bool {
        self.target.is_some()
    }

    /// Sends up to [`ENTRIES_PER_CALL`] events in one PutEvents call, once, without retries:
    /// for a caller that keeps its own outbox and retries later. Says, per event, whether
    /// EventBridge accepted it (a failed call accepts none). Sends nothing, and accepts
    /// nothing, when publishing is off.
    pub async fn put(&self, events: &[Outgoing]) -> Vec<bool> {
        let Some(target) = &self.target else {
            return vec![false; events.len()];
        };
        let entries: Vec<PutEventsRequestEntry> = events
            .iter()
            .take(ENTRIES_PER_CALL)
            .map(|event| {
                PutEventsRequestEntry::builder()
                    .event_bus_name(&target.bus)
                    .source(event.source)
                    .detail_type(event.detail_type)
                    .detail(&event.detail)
                    .build()
            })
            .collect();
        let mut accepted = vec![false; events.len()];
        match target
            .client
            .put_events()
            .set_entries(Some(entries))
            .send()
            .await
        {
            Ok(output) => {
                for (slot, result) in accepted.iter_mut().zip(output.entries()) {
                    *slot = result.error_code().is_none() && result.event_id().is_some();
                }
            }
            Err(err) => {
                tracing::warn!(error = %aws_sdk_eventbridge::error::DisplayErrorContext(&err), "PutEvents failed");
            }
        }
        accepted
    }
}

impl Target {
    fn entry(&self, event: &QueueEvent) -> Option<PutEventsRequestEntry> {
        let detail = match serde_json::to_string(event) {
            Ok(detail) => detail,
            Err(err) => {
                tracing::error!(%err, "queue event not serialisable");
                return None;
            }
        };
        Some(
            PutEventsRequestEntry::builder()
                .event_bus_name(&self.bus)
                .source(SOURCE)
                .detail_type(event.kind.detail_type())
                .detail(detail)
                .build(),
        )
    }

    /// Sends up to ten entries, retrying the failed ones with a short backoff.
    async fn send(&self, mut pending: Vec<PutEventsRequestEntry>) -> PublishReport {
        let mut report = PublishReport::default();
        let mut retried = 0usize;
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                retried = retried.max(pending.len());
                tokio::time::sleep(Duration::from_millis(50 << attempt)).await;
            }
            let result = self
                .client
                .put_events()
                .set_entries(Some(pending.clone()))
                .send()
                .await;
            match result {
                Ok(output) => {
                    let failed: Vec<PutEventsRequestEntry> = pending
                        .iter()
                        .zip(output.entries())
                        .filter(|(_, result)| result.error_code().is_some())
                        .map(|(entry, _)| entry.clone())
                        .collect();
                    report.sent += (pending.len() - failed.len()) as u64;
                    pending = failed;
                }
                Err(err) => {
                    tracing::warn!(error = %aws_sdk_eventbridge::error::DisplayErrorContext(&err), attempt, "PutEvents failed");
                }
            }
            if pending.is_empty() {
                break;
            }
        }
        report.failed = pending.len() as u64;
        report.retried = retried as u64;
        report
    }
}
