//! `ranking-updater`: applies payment events to the boards.
//!
//! Invoked by an EventBridge rule with one event, or by SQS with a batch whose bodies are
//! EventBridge events. A batch is applied in one round trip and answers with
//! `batchItemFailures`, so only bad or failed messages are retried. A direct event that is
//! malformed or meets a Redis outage fails the invocation, so EventBridge retries it and
//! finally parks it in the dead-letter queue: nothing is lost.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use lineup::ranking::{parse_event, Command, Outcome, Parsed, Rankings};
use serde::Serialize;
use serde_json::{json, Value};

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub rankings: Rankings,
}

/// What became of one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "result", content = "reason")]
pub enum Verdict {
    Applied,
    Duplicate,
    /// Not for the rankings, or nothing to do.
    Ignored(String),
    /// Malformed: retrying will not help.
    Rejected(String),
    /// Redis could not be reached: retrying will.
    Failed(String),
}

impl From<Outcome> for Verdict {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Applied => Verdict::Applied,
            Outcome::Duplicate => Verdict::Duplicate,
            Outcome::Ignored(reason) => Verdict::Ignored(reason),
        }
    }
}

/// Handles an EventBridge event or an SQS batch of them.
pub async fn handle(
    event: LambdaEvent<Value>,
    deps: &Deps,
) -> Result<Value, lambda_runtime::Error> {
    let payload = event.payload;
    if payload.get("Records").is_some() {
        let batch: SqsEvent = match serde_json::from_value(payload) {
            Ok(batch) => batch,
            Err(err) => {
                tracing::warn!(%err, "ignored: Records is not an SQS batch");
                return Ok(json!({"ignored": "not an SQS batch"}));
            }
        };
        return Ok(serde_json::to_value(handle_batch(batch, deps).await)?);
    }
    if payload.get("detail-type").is_none() {
        tracing::warn!("ignored: not an EventBridge event");
        return Ok(json!({"result": "ignored", "reason": "not an EventBridge event"}));
    }
    match apply_events(std::slice::from_ref(&payload), deps)
        .await
        .remove(0)
    {
        Verdict::Rejected(reason) => Err(format!("rejected event: {reason}").into()),
        Verdict::Failed(reason) => {
            Err(format!("event not applied, will be retried: {reason}").into())
        }
        verdict => Ok(serde_json::to_value(verdict)?),
    }
}

/// Applies an SQS batch; reports the messages to retry.
pub async fn handle_batch(batch: SqsEvent, deps: &Deps) -> SqsBatchResponse {
    let bodies: Vec<Value> = batch
        .records
        .iter()
        .map(|record| {
            record
                .body
                .as_deref()
                .and_then(|body| serde_json::from_str(body).ok())
                .unwrap_or(Value::Null)
        })
        .collect();
    let verdicts = apply_events(&bodies, deps).await;
    let mut response = SqsBatchResponse::default();
    for (record, verdict) in batch.records.iter().zip(verdicts) {
        if matches!(verdict, Verdict::Rejected(_) | Verdict::Failed(_)) {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = record.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// Applies events (EventBridge envelopes as JSON) in one round trip; one verdict each.
/// The local stack's `POST /events` and both invocation shapes come through here.
pub async fn apply_events(events: &[Value], deps: &Deps) -> Vec<Verdict> {
    let source = &deps.rankings.settings().event_source;
    let mut verdicts: Vec<Option<Verdict>> = Vec::with_capacity(events.len());
    let mut commands: Vec<Command> = Vec::new();
    for event in events {
        match parse_event(event, source) {
            Ok(Parsed::Command(command)) => {
                commands.push(command);
                verdicts.push(None);
            }
            Ok(Parsed::Ignored(reason)) => {
                tracing::info!(%reason, "event ignored");
                verdicts.push(Some(Verdict::Ignored(reason)));
            }
            Err(err) => {
                tracing::warn!(error = %err, "event rejected");
                verdicts.push(Some(Verdict::Rejected(err.to_string())));
            }
        }
    }
    let mut applied = match deps.rankings.apply(&commands).await {
        Ok(outcomes) => outcomes.into_iter().map(Verdict::from).collect::<Vec<_>>(),
        Err(err) => {
            tracing::warn!(error = %err, "events not applied");
            vec![Verdict::Failed(err.to_string()); commands.len()]
        }
    }
    .into_iter();
    verdicts
        .into_iter()
        .map(|v| {
            v.or_else(|| applied.next())
                .unwrap_or_else(|| Verdict::Failed("no outcome".into()))
        })
        .collect()
}
