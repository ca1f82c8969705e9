//! Payment and concert events: from an EventBridge envelope to a command the boards
//! understand. A malformed detail is an error naming the field; another source or type is
//! ignored.

use aws_lambda_events::event::eventbridge::EventBridgeEvent;
use chrono::{DateTime, FixedOffset, Utc};
use serde::de::DeserializeOwned;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::ids::{ConcertId, Genre, PaymentId, RefundId};

/// What an event asks the boards to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// Count `seats` for `concert` on every board `completed_at` falls on.
    Payment {
        payment: PaymentId,
        concert: ConcertId,
        seats: u32,
        genres: Vec<Genre>,
        completed_at: DateTime<Utc>,
    },
    /// Take back up to `seats` of a payment from the boards it counted on.
    Refund {
        payment: PaymentId,
        refund: Option<RefundId>,
        concert: ConcertId,
        seats: u32,
    },
    /// Remove the concert from every board.
    Cancel { concert: ConcertId },
    /// Store the concert's details, unless an update with a later `updated_at` is stored.
    Details {
        concert: ConcertId,
        details: Box<ConcertDetails>,
        updated_at: DateTime<Utc>,
    },
}

/// What the boards show of a concert, stored as this compact JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConcertDetails {
    pub title: String,
    pub venue: Option<String>,
    pub starts_at: DateTime<FixedOffset>,
    pub capacity: u32,
    pub genres: Vec<Genre>,
}

/// Longest title or venue, in characters.
pub const MAX_TEXT_CHARS: usize = 200;

/// Most seats a concert may have.
pub const MAX_CAPACITY: u32 = 1_000_000;

/// An event's meaning, or why it means nothing to the rankings.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Command(Command),
    Ignored(String),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaymentCompleted {
    payment_id: String,
    concert_id: String,
    #[serde(default = "one")]
    seats: i64,
    #[serde(default)]
    genres: Vec<String>,
    #[serde(default)]
    completed_at: Option<DateTime<Utc>>,
    /// The waiting-room fields (`queueId`, `userId`, `ticket`): allowed here, read by the
    /// waiting room.
    #[serde(default, rename = "queueId")]
    _queue_id: Option<IgnoredAny>,
    #[serde(default, rename = "userId")]
    _user_id: Option<IgnoredAny>,
    #[serde(default, rename = "ticket")]
    _ticket: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct PaymentRefunded {
    payment_id: String,
    #[serde(default)]
    refund_id: Option<String>,
    concert_id: String,
    #[serde(default = "one")]
    seats: i64,
    #[serde(default)]
    genres: Vec<String>,
    #[serde(default, rename = "completedAt")]
    _completed_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConcertCancelled {
    concert_id: String,
}

/// `ConcertScheduled` and `ConcertUpdated` carry the same detail.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConcertChanged {
    concert_id: String,
    title: String,
    capacity: i64,
    #[serde(default)]
    genres: Vec<String>,
    starts_at: DateTime<FixedOffset>,
    #[serde(default)]
    venue: Option<String>,
    updated_at: DateTime<Utc>,
}

fn one() -> i64 {
    1
}

/// Reads one EventBridge event (as JSON) for the rankings from `source`.
pub fn parse_event(raw: &Value, source: &str) -> Result<Parsed, Error> {
    let envelope: EventBridgeEvent<Value> = match serde_json::from_value(raw.clone()) {
        Ok(envelope) => envelope,
        Err(err) => {
            return Err(Error::invalid(
                "event",
                format!("not an EventBridge event: {err}"),
            ))
        }
    };
    if envelope.source != source {
        return Ok(Parsed::Ignored(format!(
            "source {:?} is not {source:?}",
            envelope.source
        )));
    }
    let command = match envelope.detail_type.as_str() {
        "PaymentCompleted" => {
            let d: PaymentCompleted = detail(envelope.detail)?;
            Command::Payment {
                payment: PaymentId::parse(&d.payment_id)?,
                concert: ConcertId::parse(&d.concert_id)?,
                seats: seats(d.seats)?,
                genres: genres(&d.genres)?,
                completed_at: d.completed_at.or(envelope.time).ok_or_else(|| {
                    Error::invalid("completedAt", "missing, and the event has no time")
                })?,
            }
        }
        "PaymentRefunded" => {
            // `genres` and `completedAt` are checked but not used: a refund subtracts from
            // the boards the payment record says the payment counted on.
            let d: PaymentRefunded = detail(envelope.detail)?;
            genres(&d.genres)?;
            Command::Refund {
                payment: PaymentId::parse(&d.payment_id)?,
                refund: d.refund_id.as_deref().map(RefundId::parse).transpose()?,
                concert: ConcertId::parse(&d.concert_id)?,
                seats: seats(d.seats)?,
            }
        }
        "ConcertCancelled" => {
            let d: ConcertCancelled = detail(envelope.detail)?;
            Command::Cancel {
                concert: ConcertId::parse(&d.concert_id)?,
            }
        }
        "ConcertScheduled" | "ConcertUpdated" => {
            let d: ConcertChanged = detail(envelope.detail)?;
            let capacity = u32::try_from(d.capacity)
                .ok()
                .filter(|c| (1..=MAX_CAPACITY).contains(c))
                .ok_or_else(|| {
                    Error::invalid("capacity", "must be a whole number from 1 to 1000000")
                })?;
            if d.updated_at.timestamp_millis() < 0 {
                return Err(Error::invalid("updatedAt", "must not be before 1970"));
            }
            Command::Details {
                concert: ConcertId::parse(&d.concert_id)?,
                details: Box::new(ConcertDetails {
                    title: text("title", &d.title)?,
                    venue: d.venue.as_deref().map(|v| text("venue", v)).transpose()?,
                    starts_at: d.starts_at,
                    capacity,
                    genres: genres(&d.genres)?,
                }),
                updated_at: d.updated_at,
            }
        }
        other => {
            return Ok(Parsed::Ignored(format!(
                "detail-type {other:?} is not handled"
            )))
        }
    };
    Ok(Parsed::Command(command))
}

/// Deserialises the detail; the error names the offending field's path.
fn detail<T: DeserializeOwned>(detail: Value) -> Result<T, Error> {
    serde_path_to_error::deserialize(detail).map_err(|err| Error::invalid_at("detail", err))
}

fn seats(raw: i64) -> Result<u32, Error> {
    u32::try_from(raw)
        .ok()
        .filter(|s| (1..=100_000).contains(s))
        .ok_or_else(|| Error::invalid("seats", "must be a whole number from 1 to 100000"))
}

/// A title or venue: trimmed, from 1 to [`MAX_TEXT_CHARS`] characters.
fn text(field: &'static str, raw: &str) -> Result<String, Error> {
    let text = raw.trim();
    if text.is_empty() || text.chars().count() > MAX_TEXT_CHARS {
        return Err(Error::invalid(
            field,
            format!("must be 1 to {MAX_TEXT_CHARS} characters, not blank"),
        ));
    }
    Ok(text.to_owned())
}

fn genres(raw: &[String]) -> Result<Vec<Genre>, Error> {
    if raw.len() > 16 {
        return Err(Error::invalid("genres", "at most 16 genres"));
    }
    let mut genres: Vec<Genre> = raw
        .iter()
        .map(|g| Genre::parse(g))
        .collect::<Result<_, _>>()?;
    genres.sort();
    genres.dedup();
    Ok(genres)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(detail_type: &str, detail: Value) -> Value {
        json!({"version": "0", "id": "e1", "detail-type": detail_type, "source": "lineup.payments",
               "account": "1", "time": "2026-11-22T01:00:00Z", "region": "us-east-1", "resources": [],
               "detail": detail})
    }

    #[test]
    fn payment_defaults_seats_and_time() {
        let parsed = parse_event(
            &event(
                "PaymentCompleted",
                json!({"paymentId": "p1", "concertId": "c1", "genres": ["rock", "rock"]}),
            ),
            "lineup.payments",
        )
        .unwrap();
        let Parsed::Command(Command::Payment {
            seats,
            genres,
            completed_at,
            ..
        }) = parsed
        else {
            panic!("{parsed:?}")
        };
        assert_eq!(seats, 1);
        assert_eq!(genres.len(), 1);
        assert_eq!(completed_at.to_rfc3339(), "2026-11-22T01:00:00+00:00");
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (json!({"concertId": "c1"}), "paymentId"),
            (
                json!({"paymentId": "p1", "concertId": "c1", "seats": 0}),
                "seats",
            ),
            (
                json!({"paymentId": "p1", "concertId": "c1", "seats": "2"}),
                "detail",
            ),
            (json!({"paymentId": "p 1", "concertId": "c1"}), "paymentId"),
            (
                json!({"paymentId": "p1", "concertId": "c1", "genres": ["a{b}"]}),
                "genre",
            ),
            (
                json!({"paymentId": "p1", "concertId": "c1", "completedAt": "yesterday"}),
                "completedAt",
            ),
        ];
        for (detail, field) in cases {
            let err = parse_event(
                &event("PaymentCompleted", detail.clone()),
                "lineup.payments",
            )
            .unwrap_err();
            assert!(err.to_string().contains(field), "{detail}: {err}");
        }
    }

    fn concert(detail: Value) -> Result<Parsed, Error> {
        parse_event(&event("ConcertUpdated", detail), "lineup.payments")
    }

    #[test]
    fn concert_details_are_trimmed_and_stored_in_order() {
        let parsed = concert(json!({"concertId": "c1", "title": "  Live  ", "capacity": 500,
                                    "genres": ["rock", "jazz", "rock"], "startsAt": "2027-01-02T19:00:00+09:00",
                                    "updatedAt": "2026-11-01T00:00:00Z"}))
        .unwrap();
        let Parsed::Command(Command::Details {
            details,
            updated_at,
            ..
        }) = parsed
        else {
            panic!("{parsed:?}")
        };
        assert_eq!(updated_at.timestamp_millis(), 1_793_491_200_000);
        assert_eq!(
            serde_json::to_string(&details).unwrap(),
            r#"{"title":"Live","venue":null,"startsAt":"2027-01-02T19:00:00+09:00","capacity":500,"genres":["jazz","rock"]}"#
        );
    }

    #[test]
    fn concert_errors_name_the_field() {
        let valid = json!({"concertId": "c1", "title": "Live", "capacity": 500, "venue": "Hall",
                           "startsAt": "2027-01-02T19:00:00+09:00", "updatedAt": "2026-11-01T00:00:00Z"});
        let with = |field: &str, value: Value| {
            let mut detail = valid.clone();
            detail[field] = value;
            detail
        };
        let mut no_updated_at = valid.clone();
        no_updated_at.as_object_mut().unwrap().remove("updatedAt");
        let cases = [
            (with("capacity", json!(0)), "capacity"),
            (with("capacity", json!(-1)), "capacity"),
            (with("capacity", json!(1_000_001)), "capacity"),
            (with("title", json!(" ")), "title"),
            (with("title", json!("x".repeat(201))), "title"),
            (with("venue", json!("x".repeat(201))), "venue"),
            (with("startsAt", json!("soon")), "startsAt"),
            (
                with("updatedAt", json!("1969-12-31T23:59:59Z")),
                "updatedAt",
            ),
            (with("concertId", json!("a b")), "concertId"),
            (no_updated_at, "updatedAt"),
        ];
        for (detail, field) in cases {
            let err = concert(detail.clone()).unwrap_err();
            assert!(err.to_string().contains(field), "{detail}: {err}");
        }
        assert!(concert(with("title", json!("é".repeat(200)))).is_ok());
    }

    #[test]
    fn the_waiting_room_fields_are_allowed_and_left_out() {
        let parsed = parse_event(
            &event(
                "PaymentCompleted",
                json!({"paymentId": "p1", "concertId": "c1", "queueId": "q1", "userId": "u1", "ticket": 7}),
            ),
            "lineup.payments",
        )
        .unwrap();
        assert!(
            matches!(parsed, Parsed::Command(Command::Payment { .. })),
            "{parsed:?}"
        );
    }

    #[test]
    fn other_sources_and_types_are_ignored() {
        let mut other = event("PaymentCompleted", json!({}));
        other["source"] = json!("aws.ec2");
        assert!(matches!(
            parse_event(&other, "lineup.payments"),
            Ok(Parsed::Ignored(_))
        ));
        let unknown = event("SeatReserved", json!({}));
        assert!(matches!(
            parse_event(&unknown, "lineup.payments"),
            Ok(Parsed::Ignored(_))
        ));
    }
}
