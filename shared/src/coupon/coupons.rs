//! The coupon campaigns' handle ([`Coupons`]): its connection, key prefix and rate limits,
//! and what every coupon script call shares: the scripts' prelude and the keys they store
//! under. Each call is beside its reply (`campaign.rs`, `claim.rs`, `outbox.rs`,
//! `registry.rs`, and the module's own `mod.rs`).

use crate::config::RateLimits;
use crate::error::Error;
use crate::ids::CouponId;
use crate::store::{assemble, Batch, Conn, FIELDS_LUA, RATE_LIMIT_LUA};

use super::keys::{CouponKeys, Home};

/// The prelude every coupon script that reads a campaign begins with (`common.lua`).
const COMMON_LUA: &str = include_str!("common.lua");

/// A coupon script's text: the prelude and the store's helpers, then `body`.
pub(super) fn coupon_lua(body: &str) -> String {
    assemble(&[COMMON_LUA, RATE_LIMIT_LUA, FIELDS_LUA], body)
}

/// The keys the configure and pending scripts take ([`CouponKeys::stored`]).
pub(super) const STORED_KEYS: &[&str] = &["CAMPAIGN", "CLAIMS", "OUTBOX"];

/// The coupon campaigns over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct Coupons {
    pub(super) conn: Conn,
    pub(super) prefix: String,
    pub(super) limits: RateLimits,
}

/// A campaign as the publisher knows it from the registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registered {
    pub coupon: CouponId,
    pub home: Home,
}

impl Coupons {
    pub fn new(conn: Conn, prefix: impl Into<String>, limits: RateLimits) -> Self {
        Coupons {
            conn,
            prefix: prefix.into(),
            limits,
        }
    }

    pub(super) fn keys(&self, coupon: &CouponId, home: &Home) -> CouponKeys {
        CouponKeys::new(&self.prefix, coupon, home)
    }

    /// Sends a batch staged by [`Coupons::stage_pending`] or [`Coupons::stage_ack`].
    pub async fn send(&self, batch: &Batch) -> Result<Vec<redis::Value>, Error> {
        Ok(self.conn.send(batch).await?)
    }
}
