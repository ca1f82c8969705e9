//! `event-applier`: applies two kinds of events, in one round trip per batch.
//!
//! - **The rankings'**: payment, refund and concert events, onto the boards (`lineup::ranking`).
//! - **The waiting room's** (`queue_events`): a `PaymentCompleted` that names `queueId` and
//!   `userId` ends that buyer's session, so the next waiter is admitted on the next tick;
//!   `InventorySoldOut` (`queueId`, optional `message`) marks a queue sold out, publishing
//!   `QueueSoldOut`; `BookingHealth` (`queueIds`, `level`) sets each queue's health level;
//!   a CloudWatch alarm's state change is kept for the promoter to hand the queues that name
//!   the alarm (`healthAlarms`).
//!
//! Invoked by an EventBridge rule with one event, or by SQS with a batch whose bodies are
//! EventBridge events. A batch is applied in one round trip and answers with
//! `batchItemFailures`, so only bad, conflicting, implausible or failed messages are retried
//! (and then land in the dead-letter queue). A direct event that is one of those fails the
//! invocation, so Lambda retries it twice and then parks it in the dead-letter queue
//! (`template.yaml`): nothing is lost.
//!
//! An EventBridge `Scheduled Event` (source `aws.events`, once a minute) runs the rankings'
//! tick instead: what the apply calls left in the fold queue goes onto the boards, and the
//! buckets that left the last-24h and last-7d windows come off those boards.

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use lambda_runtime::LambdaEvent;
use lineup::clock::SystemClock;
use lineup::metrics::Record;
use lineup::queue::Paid;
use lineup::ranking::{local_day, parse_event, Command, Outcome, Parsed};
use lineup::store::Batch;
use serde_json::Value;

mod deps;
mod queue_events;

pub use deps::{Deps, PUBLISHING, SECRETS};

use queue_events::{Kind, QueueApplied, QueueAsk, QueueAsks};

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
                return Ok(serde_json::to_value(Outcome::Ignored(
                    "not an SQS batch".into(),
                ))?);
            }
        };
        return Ok(serde_json::to_value(handle_batch(batch, deps).await)?);
    }
    if is_scheduled(&payload) {
        let tick = deps.rankings.tick(&SystemClock).await?;
        if tick.fold_rejected > 0 {
            tracing::error!(
                fold_rejected = tick.fold_rejected,
                "fold entries this version cannot read are set aside in the fold:rejected list"
            );
        }
        if tick.more {
            tracing::warn!(
                fold_left = tick.fold_left,
                "the tick left work for the next one"
            );
        }
        deps.outlet.metrics.emit(
            &Record::new()
                .dimension("service", "rankings")
                .count("tickFolded", tick.folded)
                .count("tickFoldLeft", tick.fold_left)
                .count("tickFoldRejected", tick.fold_rejected)
                .count("tickBucketFields", tick.processed)
                .count("tickSnapshots", tick.snapshots),
        );
        return Ok(tick.to_json());
    }
    if payload.get("detail-type").is_none() {
        tracing::warn!("ignored: not an EventBridge event");
        return Ok(serde_json::to_value(Outcome::Ignored(
            "not an EventBridge event".into(),
        ))?);
    }
    match apply_events(std::slice::from_ref(&payload), deps)
        .await
        .remove(0)
    {
        Outcome::Rejected(reason) => Err(format!("rejected event: {reason}").into()),
        Outcome::Conflict(reason) => Err(format!("conflicting event: {reason}").into()),
        Outcome::Implausible(reason) => Err(format!("implausible event: {reason}").into()),
        Outcome::Failed(reason) => {
            Err(format!("event not applied, will be retried: {reason}").into())
        }
        verdict => Ok(serde_json::to_value(verdict)?),
    }
}

/// Whether `payload` is the schedule's `Scheduled Event` from `aws.events`.
fn is_scheduled(payload: &Value) -> bool {
    payload.get("source").and_then(Value::as_str) == Some("aws.events")
        && payload.get("detail-type").and_then(Value::as_str) == Some("Scheduled Event")
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
        if verdict.is_failure() {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = record.message_id.clone().unwrap_or_default();
            response.batch_item_failures.push(failure);
        }
    }
    response
}

/// Applies events (EventBridge envelopes as JSON) in one round trip; one verdict each.
/// Both invocation shapes come through here.
pub async fn apply_events(events: &[Value], deps: &Deps) -> Vec<Outcome> {
    apply_events_reporting(events, deps).await.0
}

/// [`apply_events`], with the error that kept the valid events from being applied (they
/// are then [`Outcome::Failed`]), for the local stack's `POST /events` to answer with.
pub async fn apply_events_reporting(
    events: &[Value],
    deps: &Deps,
) -> (Vec<Outcome>, Option<lineup::Error>) {
    let source = &deps.rankings.settings().event_source;
    let mut verdicts: Vec<Slot> = Vec::with_capacity(events.len());
    let mut commands: Vec<Command> = Vec::new();
    let mut queue = QueueAsks::default();
    for event in events {
        match read_event(event, source) {
            Ok(Read::Command(command, release)) => {
                commands.push(command);
                queue.releases.extend(release);
                verdicts.push(Slot::Command);
            }
            Ok(Read::Queue(ask)) => verdicts.push(Slot::Queue(queue.push(ask))),
            Ok(Read::Ignored(reason)) => {
                tracing::info!(%reason, "event ignored");
                verdicts.push(Slot::Done(Outcome::Ignored(reason)));
            }
            Err(err) => {
                tracing::warn!(error = %err, "event rejected");
                verdicts.push(Slot::Done(Outcome::Rejected(err.to_string())));
            }
        }
    }

    let (applied, error) = match apply_commands(&commands, &queue, deps).await {
        Ok(applied) => (applied, None),
        Err(err) => {
            tracing::warn!(error = %err, "events not applied");
            let failed = Outcome::Failed(err.to_string());
            (
                Applied {
                    outcomes: vec![failed.clone(); commands.len()],
                    queue: queue.all(failed),
                },
                Some(err),
            )
        }
    };
    let late = late_payments(&commands, &applied.outcomes, deps);
    deps.outlet.publisher.publish(&applied.queue.events).await;
    let released = applied.queue.released();

    let mut outcomes = applied.outcomes.into_iter();
    let mut queue_outcomes = applied.queue.outcomes();
    let verdicts: Vec<Outcome> = verdicts
        .into_iter()
        .map(|slot| {
            match slot {
                Slot::Done(verdict) => Some(verdict),
                Slot::Command => outcomes.next(),
                Slot::Queue(kind) => queue_outcomes.next(kind),
            }
            .unwrap_or_else(|| Outcome::Failed("no outcome".into()))
        })
        .collect();
    for verdict in &verdicts {
        match verdict {
            Outcome::Conflict(reason) => {
                tracing::warn!(%reason, "event conflicts with an earlier delivery of its id")
            }
            Outcome::Implausible(reason) => tracing::warn!(%reason, "event time implausible"),
            _ => {}
        }
    }
    deps.outlet
        .metrics
        .emit(&metrics(&verdicts, late, released));
    (verdicts, error)
}

/// Where one event's verdict comes from: known already, or the outcome of its ranking
/// command, or of its waiting-room event of `kind`, in the order they were staged.
enum Slot {
    Done(Outcome),
    Command,
    Queue(Kind),
}

/// What one event asks for: a ranking command and, for a payment that names its buyer, the
/// release of the buyer's waiting-room session; one of the waiting room's own events; or
/// why it asks for nothing.
enum Read {
    Command(Command, Option<Paid>),
    Queue(QueueAsk),
    Ignored(String),
}

/// Reads one EventBridge event (as JSON) from `source`: the waiting room's own events
/// (`queue_events`) first; of the others, the rankings read their part, the waiting room its
/// own (`queueId`, `userId`, `ticket`).
fn read_event(event: &Value, source: &str) -> Result<Read, lineup::Error> {
    if let Some(ask) = QueueAsk::read(event, source)? {
        return Ok(Read::Queue(ask));
    }
    let command = match parse_event(event, source)? {
        Parsed::Command(command) => command,
        Parsed::Ignored(reason) => return Ok(Read::Ignored(reason)),
    };
    let release = match &command {
        Command::Payment {
            payment,
            completed_at,
            ..
        } => Paid::from_detail(&event["detail"], payment, *completed_at)?,
        _ => None,
    };
    Ok(Read::Command(command, release))
}

/// What one round trip did: the ranking commands' verdicts, and the waiting room's.
struct Applied {
    outcomes: Vec<Outcome>,
    queue: QueueApplied,
}

/// Applies the ranking commands and the waiting room's events (`queue_events`) in one round
/// trip (on the striped line, after a read of a paid queue's settings where this container
/// holds none fresh).
async fn apply_commands(
    commands: &[Command],
    queue: &QueueAsks,
    deps: &Deps,
) -> Result<Applied, lineup::Error> {
    let mut batch = Batch::new();
    let staged = queue.stage(&mut batch, deps).await?;
    let outcomes = deps.rankings.stage_apply(&mut batch, commands);
    let replies = deps.rankings.send(&batch).await?;
    Ok(Applied {
        outcomes: outcomes.read(&replies)?,
        queue: staged.read(&replies)?,
    })
}

/// Applied payments whose day had already ended in the ranking zone when they arrived.
fn late_payments(commands: &[Command], outcomes: &[Outcome], deps: &Deps) -> u64 {
    let today = deps.rankings.today();
    let zone = deps.rankings.settings().time_zone;
    commands
        .iter()
        .zip(outcomes)
        .filter(|(command, verdict)| {
            matches!(verdict, Outcome::Applied)
                && matches!(command, Command::Payment { completed_at, .. }
                    if local_day(*completed_at, zone) < today)
        })
        .count() as u64
}

/// The invocation's EMF record.
fn metrics(verdicts: &[Outcome], late: u64, released: usize) -> Record {
    let count = |wanted: fn(&Outcome) -> bool| verdicts.iter().filter(|v| wanted(v)).count() as u64;
    Record::new()
        .dimension("service", "rankings")
        .count("eventsApplied", count(|v| matches!(v, Outcome::Applied)))
        .count(
            "eventsDuplicate",
            count(|v| matches!(v, Outcome::Duplicate)),
        )
        .count("eventsPending", count(|v| matches!(v, Outcome::Pending)))
        .count(
            "eventsConflict",
            count(|v| matches!(v, Outcome::Conflict(_))),
        )
        .count(
            "eventsImplausible",
            count(|v| matches!(v, Outcome::Implausible(_))),
        )
        .count("eventsLate", late)
        .count("eventsIgnored", count(|v| matches!(v, Outcome::Ignored(_))))
        .count(
            "eventsRejected",
            count(|v| matches!(v, Outcome::Rejected(_))),
        )
        .count("eventsFailed", count(|v| matches!(v, Outcome::Failed(_))))
        .count("sessionsReleased", released as u64)
}
