//! The HTTP edge shared by the API functions, one concern a file: [`problem`] (RFC 9457
//! problem responses, the one place an [`Error`](crate::error::Error) becomes a status
//! code), `response` (JSON, pages, empty bodies), `answer` (a handler's result as a
//! response), `body` (request bodies), `identity` (the caller), `route` (path matching) and
//! `lambda` (the Lambda entry).

mod answer;
mod body;
mod identity;
mod lambda;
mod problem;
mod response;
mod route;

pub use answer::{answer, respond, Answered};
pub use body::{
    bulk_json_body, door_payload, json_body, json_document, ALTCHA_HEADER, MAX_BODY_BYTES,
    MAX_BULK_BODY_BYTES,
};
pub use identity::{
    buyer, jwt_claims, jwt_subject, lambda_authorizer_context, source_ip, verified_subject,
};
pub use lambda::answer_lambda_event;
pub use problem::problem;
pub use response::{empty, json, json_cached, page};
pub use route::{allow, find, no_route, path_segments, routes_table, segments, PathValues, Route};
