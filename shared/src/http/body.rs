//! Request bodies: JSON objects parsed into their types, naming the field that does not
//! fit, within a size limit.

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
