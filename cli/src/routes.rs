//! Every HTTP call the console makes, as a method and a path template. A test checks that
//! every route behind `AWS_IAM` in template.yaml is here, so a new operator route cannot land
//! without a subcommand.

use http::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    GetQueue,
    PutSettings,
    DeleteSettings,
    PutPool,
    GetPool,
    DeletePool,
    PutPriority,
    DeletePriority,
    PutAccessList,
    PutAccessUser,
    DeleteAccessUser,
    PostAccessCodes,
    GetCoupon,
    PutCoupon,
    GetBoard,
    /// lineup-local only: EventBridge events handed to the event applier's code.
    PostEvents,
}

impl Route {
    pub const ALL: [Route; 16] = [
        Route::GetQueue,
        Route::PutSettings,
        Route::DeleteSettings,
        Route::PutPool,
        Route::GetPool,
        Route::DeletePool,
        Route::PutPriority,
        Route::DeletePriority,
        Route::PutAccessList,
        Route::PutAccessUser,
        Route::DeleteAccessUser,
        Route::PostAccessCodes,
        Route::GetCoupon,
        Route::PutCoupon,
        Route::GetBoard,
        Route::PostEvents,
    ];

    pub fn method(self) -> Method {
        match self {
            Route::GetQueue | Route::GetPool | Route::GetCoupon | Route::GetBoard => Method::GET,
            Route::PutSettings
            | Route::PutPool
            | Route::PutPriority
            | Route::PutAccessList
            | Route::PutAccessUser
            | Route::PutCoupon => Method::PUT,
            Route::DeleteSettings
            | Route::DeletePool
            | Route::DeletePriority
            | Route::DeleteAccessUser => Method::DELETE,
            Route::PostAccessCodes | Route::PostEvents => Method::POST,
        }
    }

    /// The path as template.yaml and openapi.yaml write it.
    pub fn template(self) -> &'static str {
        match self {
            Route::GetQueue => "/queues/{queueId}",
            Route::PutSettings | Route::DeleteSettings => "/queues/{queueId}/settings",
            Route::PutPool | Route::GetPool | Route::DeletePool => "/pools/{poolId}",
            Route::PutPriority | Route::DeletePriority => "/queues/{queueId}/priority/{userId}",
            Route::PutAccessList => "/queues/{queueId}/access",
            Route::PutAccessUser | Route::DeleteAccessUser => "/queues/{queueId}/access/{userId}",
            Route::PostAccessCodes => "/queues/{queueId}/access-codes",
            Route::GetCoupon | Route::PutCoupon => "/coupons/{couponId}",
            Route::GetBoard => "/rankings/{period}",
            Route::PostEvents => "/events",
        }
    }

    /// The path with each `{…}` replaced, in order, by `params`, each percent-encoded but for
    /// the characters an id may hold (letters, digits, `.`, `_`, `:`, `-`).
    pub fn path(self, params: &[&str]) -> String {
        let mut out = String::new();
        let mut params = params.iter();
        let mut rest = self.template();
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let close = rest[open..]
                .find('}')
                .map_or(rest.len(), |at| open + at + 1);
            let value = params.next().copied().unwrap_or_default();
            out.extend(utf8_percent_encode(value, SEGMENT));
            rest = &rest[close..];
        }
        out.push_str(rest);
        out
    }
}

/// What a path segment keeps as it is: RFC 3986's unreserved characters, and `:`.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':');

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_fill_each_parameter_in_order_and_encode_what_a_segment_cannot_hold() {
        assert_eq!(
            Route::PutPriority.path(&["onsale-1", "auth0:u-1"]),
            "/queues/onsale-1/priority/auth0:u-1"
        );
        assert_eq!(Route::GetQueue.path(&["a b/c"]), "/queues/a%20b%2Fc");
        assert_eq!(Route::PostEvents.path(&[]), "/events");
    }
}
