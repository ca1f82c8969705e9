//! Request bodies: JSON objects parsed into their types, naming the field that does not
//! fit, within a size limit; and the solved door challenge a request brings.

use lambda_http::Request;
use serde::de::DeserializeOwned;

use crate::error::Error;

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 8 * 1024;

/// Largest body of a bulk upload (`PUT /queues/{queueId}/access`: 10,000 user ids of up to
/// 64 characters fit).
pub const MAX_BULK_BODY_BYTES: usize = 1024 * 1024;

/// Parses the JSON body, which must be an object, into `T`, naming the field that does
/// not fit. (Serde would otherwise read an array positionally into a struct.)
pub fn json_body<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, true, MAX_BODY_BYTES)
}

/// [`json_body`] for the one route that takes a bulk upload: up to [`MAX_BULK_BODY_BYTES`].
pub fn bulk_json_body<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, true, MAX_BULK_BODY_BYTES)
}

/// Parses any JSON document in the body into `T`.
pub fn json_document<T: DeserializeOwned>(request: &Request) -> Result<T, Error> {
    parse_body(request, false, MAX_BODY_BYTES)
}

fn parse_body<T: DeserializeOwned>(
    request: &Request,
    object_only: bool,
    limit: usize,
) -> Result<T, Error> {
    let bytes: &[u8] = request.body().as_ref();
    if bytes.len() > limit {
        return Err(Error::PayloadTooLarge { limit });
    }
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => return Err(Error::invalid("body", "a JSON object is required")),
        Some(b'{') => {}
        Some(_) if object_only => {
            return Err(Error::invalid("body", "must be a JSON object"));
        }
        Some(_) => {}
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer)
        .map_err(|err| Error::invalid_at("body", err))?;
    deserializer
        .end()
        .map_err(|err| Error::invalid("body", err.to_string()))?;
    Ok(value)
}

/// The header that brings a solved door challenge: base64 of ALTCHA's `{challenge, solution}`
/// (docs/door.md).
pub const ALTCHA_HEADER: &str = "x-altcha";

/// The solved door challenge a request brings: its `x-altcha` header, else `from_body` (the
/// body's `altcha`). A header that is not text, or either one over
/// [`crate::door::PAYLOAD_MAX_BYTES`], is 400, whether or not the door is on.
pub fn door_payload(request: &Request, from_body: Option<String>) -> Result<Option<String>, Error> {
    let within = |field: &'static str, payload: String| {
        if payload.len() > crate::door::PAYLOAD_MAX_BYTES {
            return Err(Error::invalid(
                field,
                format!("at most {} bytes", crate::door::PAYLOAD_MAX_BYTES),
            ));
        }
        Ok(payload)
    };
    let from_body = from_body
        .map(|payload| within("altcha", payload))
        .transpose()?;
    match request.headers().get(ALTCHA_HEADER) {
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| Error::invalid("x-altcha", "must be base64 text"))?;
            within("x-altcha", text.to_owned()).map(Some)
        }
        None => Ok(from_body),
    }
}
