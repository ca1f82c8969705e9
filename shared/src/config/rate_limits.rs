//! The per-buyer and per-source limits on arrivals: token requests and coupon claims.

use super::error::ConfigError;
use super::vars::Vars;
use crate::bounds::Bounds;

/// The most requests per minute per user and per source IP in one queue or one campaign
/// (0: no limit): `RATE_LIMIT_USER_PER_MINUTE` and `RATE_LIMIT_IP_PER_MINUTE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimits {
    pub user_per_minute: u32,
    pub ip_per_minute: u32,
}

impl RateLimits {
    /// No limit.
    pub const OFF: RateLimits = RateLimits {
        user_per_minute: 0,
        ip_per_minute: 0,
    };

    /// The defaults: 60 a user and 600 a source IP.
    pub const DEFAULT: RateLimits = RateLimits {
        user_per_minute: 60,
        ip_per_minute: 600,
    };

    /// Read by queue-api (token requests) and coupon-api (claims).
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        Ok(RateLimits {
            user_per_minute: vars.count(
                "RATE_LIMIT_USER_PER_MINUTE",
                Self::DEFAULT.user_per_minute,
                Bounds::new(0, 1_000_000),
            )?,
            ip_per_minute: vars.count(
                "RATE_LIMIT_IP_PER_MINUTE",
                Self::DEFAULT.ip_per_minute,
                Bounds::new(0, 1_000_000),
            )?,
        })
    }
}
