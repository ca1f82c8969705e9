//! The campaign registry: the register script's call (`register.lua`), which adds a campaign
//! while the registry has room, and the campaigns script's (`campaigns.lua`), which lists the
//! campaigns whose keys have not expired, for the publisher.

use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use redis::{FromRedisValue, ParsingError, Value};

use super::coupons::{Coupons, Registered};
use super::keys::{coupon_registry_key, registry_member, Home};
use super::limits::MAX_CAMPAIGNS;
use crate::error::Error;
use crate::ids::{CouponId, QueueId};
use crate::store::{lua_script, primary_read_script, NamedScript, ScriptCall, Tagged};

pub(super) static REGISTER: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("register.lua"))),
    &["REGISTRY"],
    &["member", "expires_at", "most"],
);
pub(super) static CAMPAIGNS: NamedScript = NamedScript::new(
    LazyLock::new(|| primary_read_script(include_str!("campaigns.lua"))),
    &["REGISTRY"],
    &[],
);

/// What `register.lua` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RegisterReply {
    /// The campaign is in the registry, until `expires_at` at least.
    Registered,
    /// The registry holds its most live campaigns, and this one is not among them.
    Full,
}

impl FromRedisValue for RegisterReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("register", &v, |r| match r.tag() {
            "registered" => Ok(RegisterReply::Registered),
            "full" => Ok(RegisterReply::Full),
            _ => Err(r.unknown()),
        })
    }
}

/// What `campaigns.lua` answers: the registry's members, `<couponId>` or `<couponId>
/// <queueId>` ([`registry_member`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum CampaignsReply {
    Campaigns { members: Vec<String> },
}

impl FromRedisValue for CampaignsReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("campaigns", &v, |r| match r.tag() {
            "campaigns" => Ok(CampaignsReply::Campaigns {
                members: r.texts("members")?,
            }),
            _ => Err(r.unknown()),
        })
    }
}

impl Coupons {
    /// Registers `coupon`, kept under `home`'s tag, until `expires`; a conflict when the
    /// registry is full.
    pub(super) async fn register(
        &self,
        coupon: &CouponId,
        home: &Home,
        expires: DateTime<Utc>,
    ) -> Result<(), Error> {
        let mut register = ScriptCall::of(&REGISTER);
        register
            .named_key("REGISTRY", coupon_registry_key(&self.prefix))
            .named("member", registry_member(coupon, home))
            .named("expires_at", expires.timestamp_millis())
            .named("most", MAX_CAMPAIGNS);
        match self.conn.invoke(register).await? {
            RegisterReply::Registered => Ok(()),
            RegisterReply::Full => Err(Error::Conflict(format!(
                "this deployment holds its most live coupon campaigns ({MAX_CAMPAIGNS}); a \
                 campaign leaves when its keys expire"
            ))),
        }
    }

    /// The campaigns whose keys have not expired, from the registry.
    pub async fn registered(&self) -> Result<Vec<Registered>, Error> {
        let mut call = ScriptCall::of(&CAMPAIGNS);
        call.named_key("REGISTRY", coupon_registry_key(&self.prefix));
        let CampaignsReply::Campaigns { members } = self.conn.invoke(call).await?;
        Ok(members
            .iter()
            .filter_map(|member| {
                let mut parts = member.splitn(2, ' ');
                let coupon = CouponId::parse(parts.next()?).ok()?;
                let home = match parts.next() {
                    Some(queue) => Home::Queue(QueueId::parse(queue).ok()?),
                    None => Home::Own,
                };
                Some(Registered { coupon, home })
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn each_registry_answer_decodes_into_its_variant() {
        let register = |tag: &str| RegisterReply::from_redis_value(Value::Array(vec![text(tag)]));
        assert_eq!(register("registered").unwrap(), RegisterReply::Registered);
        assert_eq!(register("full").unwrap(), RegisterReply::Full);
        assert!(register("1").is_err());
        assert!(RegisterReply::from_redis_value(Value::Int(1)).is_err());

        let campaigns = |items: Vec<Value>| CampaignsReply::from_redis_value(Value::Array(items));
        assert_eq!(
            campaigns(vec![
                text("campaigns"),
                text("members"),
                Value::Array(vec![text("c1"), text("c2 onsale-1")]),
            ])
            .unwrap(),
            CampaignsReply::Campaigns {
                members: vec!["c1".into(), "c2 onsale-1".into()]
            }
        );
        assert!(campaigns(vec![text("campaigns")]).is_err());
        assert!(campaigns(vec![text("campaigns"), text("members"), text("c1")]).is_err());
    }
}
