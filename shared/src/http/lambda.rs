//! The Lambda entry of an HTTP function: any JSON event in, an API Gateway HTTP API
//! response out.

use std::future::Future;

use aws_lambda_events::event::apigw::ApiGatewayV2httpResponse;
use lambda_http::request::LambdaRequest;
use lambda_http::{Body, Request, RequestExt, Response};
use lambda_runtime::LambdaEvent;

use super::problem::problem;
use crate::error::Error;

/// The Lambda entry of an HTTP function. Unlike `lambda_http::run`, it accepts any JSON: an
/// API Gateway request goes to `handler`; anything else (an SQS batch or a scheduled event
/// sent to the wrong function) is answered with a 400 problem, never an invocation error.
pub async fn answer_lambda_event<F, Fut>(
    event: LambdaEvent<serde_json::Value>,
    handler: F,
) -> Result<ApiGatewayV2httpResponse, std::convert::Infallible>
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Result<Response<Body>, std::convert::Infallible>>,
{
    let LambdaEvent { payload, context } = event;
    let response = match serde_json::from_value::<LambdaRequest>(payload) {
        Ok(request) => {
            let request: Request = request.into();
            match handler(request.with_lambda_context(context)).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
        Err(_) => problem(&Error::invalid(
            "event",
            "not an API Gateway HTTP API request",
        )),
    };
    Ok(to_api_gateway(response))
}

/// The API Gateway HTTP API (payload 2.0) form of `response`.
fn to_api_gateway(response: Response<Body>) -> ApiGatewayV2httpResponse {
    let (parts, body) = response.into_parts();
    let mut out = ApiGatewayV2httpResponse::default();
    out.status_code = i64::from(parts.status.as_u16());
    out.headers = parts.headers;
    out.is_base64_encoded = matches!(body, Body::Binary(_));
    out.body = match body {
        Body::Empty => None,
        other => Some(other),
    };
    out
}
