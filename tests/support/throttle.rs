//! An EventBridge endpoint under its PutEvents quota: it takes PutEvents calls and, for the
//! first few, refuses every other entry with `ThrottlingException`, as EventBridge answers a
//! partial failure. The entries it takes go on to moto through the SDK, and are recorded, so
//! a test can count what reached the bus (moto's own delivery to SQS takes about 0.2 s per
//! matched entry, too slow to sit inside a publisher's 2 s call). Stopped when dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

pub struct ThrottlingEndpoint {
    pub endpoint: String,
    state: Arc<Throttle>,
    server: JoinHandle<()>,
}

struct Throttle {
    moto: aws_sdk_eventbridge::Client,
    /// PutEvents calls still to be partly refused.
    rounds: AtomicU64,
    /// Entries refused so far.
    refused: AtomicU64,
    /// The `Detail` of every entry moto took, in the order taken.
    taken: Mutex<Vec<Value>>,
}

impl ThrottlingEndpoint {
    /// In front of `moto`; each of the first `rounds` PutEvents calls has its second,
    /// fourth, … entries refused.
    pub async fn start(moto: aws_sdk_eventbridge::Client, rounds: u64) -> ThrottlingEndpoint {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a free port");
        let endpoint = format!("http://{}", listener.local_addr().expect("its address"));
        let state = Arc::new(Throttle {
            moto,
            rounds: AtomicU64::new(rounds),
            refused: AtomicU64::new(0),
            taken: Mutex::default(),
        });
        let app = Router::new().fallback(put_events).with_state(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ThrottlingEndpoint {
            endpoint,
            state,
            server,
        }
    }

    /// The `Detail` of every entry taken, in order, parsed.
    pub fn taken(&self) -> Vec<Value> {
        self.state
            .taken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// How many entries were refused.
    pub fn refused(&self) -> u64 {
        self.state.refused.load(Ordering::SeqCst)
    }
}

impl Drop for ThrottlingEndpoint {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn put_events(
    State(throttle): State<Arc<Throttle>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if headers
        .get("x-amz-target")
        .is_none_or(|target| target != "AWSEvents.PutEvents")
    {
        return (StatusCode::BAD_REQUEST, "only PutEvents").into_response();
    }
    let call: Value = serde_json::from_slice(&body).expect("PutEvents JSON");
    let entries = call["Entries"].as_array().cloned().unwrap_or_default();
    let throttled = throttle
        .rounds
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    let refuses = |index: usize| throttled && index % 2 == 1;
    let taken: Vec<PutEventsRequestEntry> = entries
        .iter()
        .enumerate()
        .filter(|(index, _)| !refuses(*index))
        .map(|(_, entry)| {
            let field = |name: &str| entry[name].as_str().map(str::to_owned);
            PutEventsRequestEntry::builder()
                .set_event_bus_name(field("EventBusName"))
                .set_source(field("Source"))
                .set_detail_type(field("DetailType"))
                .set_detail(field("Detail"))
                .build()
        })
        .collect();
    let output = throttle
        .moto
        .put_events()
        .set_entries(Some(taken))
        .send()
        .await
        .expect("moto takes the entries");
    assert_eq!(output.failed_entry_count(), 0, "moto refused entries");
    throttle
        .taken
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(
            entries
                .iter()
                .enumerate()
                .filter(|(index, _)| !refuses(*index))
                .map(|(_, entry)| {
                    serde_json::from_str(entry["Detail"].as_str().unwrap_or("null"))
                        .expect("Detail is JSON")
                }),
        );
    let mut accepted = output.entries().iter();
    let mut failed = 0;
    let results: Vec<Value> = (0..entries.len())
        .map(|index| {
            if refuses(index) {
                failed += 1;
                json!({"ErrorCode": "ThrottlingException", "ErrorMessage": "Rate exceeded"})
            } else {
                json!({"EventId": accepted.next().and_then(|entry| entry.event_id())})
            }
        })
        .collect();
    throttle.refused.fetch_add(failed, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "application/x-amz-json-1.1")],
        json!({"FailedEntryCount": failed, "Entries": results}).to_string(),
    )
        .into_response()
}
