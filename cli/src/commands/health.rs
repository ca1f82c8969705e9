//! `lineup health send`: the booking system's health level for queues, as the
//! `BookingHealth` event the event applier applies. Deployed, it goes to EventBridge on the
//! stack's bus with its payment source; locally, to lineup-local's `POST /events`.

use serde_json::{json, Value};

use super::queue_id;
use crate::error::CliError;
use crate::output::Out;
use crate::routes::Route;

use crate::target::{aws_failure, EventSink, Target};

/// The event's `detail-type` (shared/src/queue/health.rs).
pub const DETAIL_TYPE: &str = lineup::queue::health::BOOKING_HEALTH;

/// The event's `detail`, as events/event-applier.booking-health.json has it.
pub fn detail(queues: &[String], level: f64) -> Value {
    json!({ "queueIds": queues, "level": level })
}

pub async fn send(
    target: &Target,
    out: Out,
    queues: &[String],
    level: f64,
) -> Result<(), CliError> {
    if !(0.0..=1.0).contains(&level) {
        return Err(CliError::Usage("--level: from 0 to 1".into()));
    }
    let queues = queues
        .iter()
        .map(|queue| queue_id(queue))
        .collect::<Result<Vec<_>, _>>()?;
    let detail = detail(&queues, level);
    let result = match &target.events {
        EventSink::Bus {
            client,
            bus,
            source,
        } => {
            let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
                .event_bus_name(bus)
                .source(source)
                .detail_type(DETAIL_TYPE)
                .detail(detail.to_string())
                .build();
            let answer = client
                .put_events()
                .entries(entry)
                .send()
                .await
                .map_err(|err| aws_failure(&format!("EventBridge bus {bus}"), &err))?;
            if let Some(failed) = answer.entries().iter().find(|e| e.error_code().is_some()) {
                return Err(CliError::Failed(crate::error::Problem {
                    status: 500,
                    title: failed.error_code().unwrap_or("failed").to_owned(),
                    detail: failed.error_message().unwrap_or("").to_owned(),
                    retry_after: None,
                }));
            }
            let id = answer
                .entries()
                .first()
                .and_then(|e| e.event_id())
                .unwrap_or("");
            json!({ "sentTo": bus, "eventId": id, "detail": detail })
        }
        EventSink::Local { source } => {
            let event = json!({
                "version": "0",
                "id": format!("lineup-cli-{:032x}", rand::random::<u128>()),
                "detail-type": DETAIL_TYPE,
                "source": source,
                "account": "000000000000",
                // A later signal wins and one sent at the same instant is held off, so the
                // milliseconds: a level sent right after another (0 after 0.5) still counts.
                "time": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                "region": "local",
                "resources": [],
                "detail": detail,
            });
            let reply = target
                .api
                .call(Route::PostEvents, &[], &[], Some(&event))
                .await?;
            // `{"results": [{"result": "applied", …}]}`, one verdict per event sent. The id is
            // new each run, so `duplicate` is no retry's echo: every queue holds a level sent
            // at the same time or later, and this one was not applied.
            let verdict = reply.body["results"][0].clone();
            if verdict["result"] == json!("duplicate") {
                return Err(CliError::Refused(crate::error::Problem {
                    status: 409,
                    title: "not applied".into(),
                    detail: "each queue holds a level sent at the same time or later".into(),
                    retry_after: None,
                }));
            }
            if verdict["result"] != json!("applied") {
                return Err(CliError::Refused(crate::error::Problem {
                    status: 400,
                    title: format!("event {}", crate::output::cell(&verdict["result"])),
                    detail: crate::output::cell(&verdict["reason"]),
                    retry_after: None,
                }));
            }
            json!({ "sentTo": target.api.base(), "result": verdict["result"], "detail": detail })
        }
    };
    if out.json {
        out.json(&result);
    } else {
        println!(
            "health {level} sent for {} to {}",
            queues.join(", "),
            crate::output::cell(&result["sentTo"])
        );
    }
    Ok(())
}
