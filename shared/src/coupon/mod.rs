//! First-come coupons: a campaign gives out at most `quantity` numbered coupons, one per
//! buyer, in the order the claims reach Redis.
//!
//! A claim is one Lua script call (`claim.lua`): it reads the campaign, answers a buyer who
//! already holds a claim with it, checks the window, the stock, the rate limit and the
//! buyer's queue session (for a campaign with a queue), then takes the next number and writes
//! the claim and its outbox entry together. Every answer, sold out included, is one round
//! trip (two for a campaign with a queue asked without a token of it), and work in Redis
//! that does not grow with the campaign (a sorted-set insert's O(log n) at most); a sold-out
//! answer writes nothing.
//!
//! The outbox holds the claims EventBridge has not accepted yet. The publisher
//! (`coupon-publisher`) reads it ([`Coupons::stage_pending`]), publishes `CouponClaimed`
//! events, and removes an entry only once EventBridge accepted it ([`Coupons::stage_ack`]).
//! So every claim is published at least once; a consumer dedupes by (`couponId`, `userId`).
//!
//! Every key of a campaign expires at its `expires-at`: [`RETENTION`] after `closesAt`, or
//! after the last change of a campaign without `closesAt`. The key layout is in [`keys`].
//!
//! Each script's call sits beside the enum its answer decodes into, one variant per tag
//! (`store/reply.rs` reads a tag and named fields): the claim in `claim.rs`, the configure
//! and read scripts in `campaign.rs`, the outbox read in `outbox.rs`, the registry's two in
//! `registry.rs`. `coupons.rs` holds the handle, [`Coupons`], and what those calls share.

mod campaign;
mod claim;
mod coupons;
mod decode;
pub mod keys;
mod limits;
mod outbox;
mod registry;

use chrono::{DateTime, Utc};

use crate::door::{Challenge, DoorKey, Proof, Scope, CHALLENGE_TTL, DEFAULT_COST_MIN};
use crate::error::Error;
use crate::ids::{CouponId, QueueId, UserId};
use crate::store::{Batch, Staged};
use campaign::{ConfigureReply, ReadReply, Step, Write};
use keys::Home;

pub use campaign::{Campaign, CampaignChange, CampaignSettings};
pub use claim::{Claim, ClaimReply, ClaimView};
pub use coupons::{Coupons, Registered};
use decode::unknown_campaign;
pub use limits::{MAX_CAMPAIGNS, MAX_QUANTITY, RETENTION};
pub use outbox::{CouponClaimed, Pending, DETAIL_TYPE, SOURCE};

impl Coupons {
    /// Creates or updates `coupon`. Returns the campaign now and whether it was created. A
    /// campaign's queue is fixed once set: changing it, or giving one to a campaign created
    /// without, is a conflict. So is a quantity below what was already claimed.
    ///
    /// A refusal writes nothing. So the change is checked first, under every tag it touches,
    /// in one round trip that writes nothing; only then is the campaign registered (one
    /// more) and written (one more, and one before it for a campaign with a queue's locator).
    /// Those writes check again: a claim or a change that comes between the check and the
    /// write can still refuse the change, after the registry counted it.
    pub async fn configure(
        &self,
        coupon: &CouponId,
        settings: &CampaignSettings,
        now: DateTime<Utc>,
    ) -> Result<(Campaign, bool), Error> {
        let expires = settings.expires_at(now)?;
        let home = match &settings.queue {
            Some(queue) => Home::Queue(queue.clone()),
            None => Home::Own,
        };
        // The writes, in order: a campaign with a queue gets its locator first, whose check
        // finds a campaign already kept under its own tag.
        let steps = match &home {
            Home::Queue(_) => vec![(Home::Own, Step::Locator), (home.clone(), Step::Campaign)],
            Home::Own => vec![(Home::Own, Step::Campaign)],
        };
        let mut checks = Batch::new();
        let checked: Vec<Staged<ConfigureReply>> = steps
            .iter()
            .map(|(at, step)| {
                checks.stage(self.configure_call(
                    coupon,
                    at,
                    *step,
                    Write::Check,
                    settings,
                    expires,
                ))
            })
            .collect();
        let replies = self.conn.send(&checks).await?;
        for check in checked {
            check.read(&replies)?.into_result(coupon)?;
        }

        self.register(coupon, &home, expires).await?;
        let mut written = (None, false);
        for (at, step) in &steps {
            let call = self.configure_call(coupon, at, *step, Write::Write, settings, expires);
            let reply: ConfigureReply = self.conn.invoke(call).await?;
            written = reply.into_result(coupon)?;
        }
        match written {
            (Some(campaign), created) => Ok((campaign, created)),
            (None, _) => Err(Error::Internal("configure answered no campaign".into())),
        }
    }

    /// The campaign and how many coupons remain. A campaign with a queue is read under its
    /// queue's tag, found through its locator: two round trips for those.
    pub async fn campaign(&self, coupon: &CouponId) -> Result<Campaign, Error> {
        let mut home = Home::Own;
        loop {
            match self.conn.invoke(self.read_call(coupon, &home)).await? {
                ReadReply::Campaign { campaign } => return Ok(campaign.named(coupon)),
                ReadReply::Elsewhere { queue } if home == Home::Own => home = Home::Queue(queue),
                _ => return Err(unknown_campaign(coupon)),
            }
        }
    }

    /// Claims a coupon of `coupon` for `user`, from `ip`. `session` is the buyer's queue
    /// token (verified by the caller), needed for a new claim on a campaign with a queue: the
    /// claim then runs under that queue's tag and checks that its ticket is active right now.
    ///
    /// One round trip, but for a campaign with a queue asked without a token of that queue:
    /// its own tag holds only a locator, so a second trip asks under the queue's tag without
    /// a ticket. There the buyer's claim, the window, the stock and the rate limit answer
    /// before the missing session does.
    pub async fn claim(
        &self,
        coupon: &CouponId,
        user: &UserId,
        ip: Option<std::net::IpAddr>,
        session: Option<(&QueueId, u64)>,
        proof: &Proof,
    ) -> Result<ClaimReply, Error> {
        let ip = ip.map(|ip| ip.to_string()).unwrap_or_default();
        let door = match proof {
            Proof::Absent => "",
            Proof::Failed(_) => "bad",
            Proof::Solved { .. } => "ok",
        };
        let claim_call = |home: &Home, ticket: Option<u64>| {
            let mut call = self.claim_call(coupon, user, &ip, home, ticket);
            call.named("door", door);
            call
        };
        let mut batch = Batch::new();
        let own = batch.stage(claim_call(&Home::Own, None));
        // With a token, the campaign is looked for under the token's queue too, in the same
        // round trip. A campaign lives under one tag only, so at most one of the two calls
        // finds it; the other answers Unknown, or Elsewhere for a locator, and writes nothing.
        let queued = session.map(|(queue, ticket)| {
            let home = Home::Queue(queue.clone());
            batch.stage(claim_call(&home, Some(ticket)))
        });
        let replies = self.conn.send(&batch).await?;
        let reply = match queued {
            Some(queued) => match queued.read(&replies)? {
                ClaimReply::Unknown => own.read(&replies)?,
                found => found,
            },
            None => own.read(&replies)?,
        };
        match reply {
            ClaimReply::Elsewhere { queue } if session.is_none_or(|(shown, _)| *shown != queue) => {
                let call = claim_call(&Home::Queue(queue), None);
                Ok(self.conn.invoke(call).await?)
            }
            reply => Ok(reply),
        }
    }

    /// A door challenge for `user` to claim from `coupon`, signed with `key`, at the
    /// campaign's challenge cost (the default floor where it asks for none). The campaign is
    /// read as [`Self::campaign`] reads it; an unknown one is [`Error::NotFound`].
    pub async fn challenge(
        &self,
        key: &DoorKey,
        coupon: &CouponId,
        user: &UserId,
        now: DateTime<Utc>,
    ) -> Result<Challenge, Error> {
        let campaign = self.campaign(coupon).await?;
        let cost = campaign.challenge_cost.unwrap_or(DEFAULT_COST_MIN);
        let expires_at = (now + CHALLENGE_TTL).timestamp();
        key.challenge(Scope::Coupon(coupon), user, None, cost, expires_at)
    }

    /// Stages the removal from `campaign`'s outbox of the claims of `users`, which
    /// EventBridge accepted.
    pub fn stage_ack(&self, batch: &mut Batch, campaign: &Registered, users: &[&UserId]) {
        let outbox = self.keys(&campaign.coupon, &campaign.home).outbox;
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(&outbox);
        for user in users {
            cmd.arg(user.as_str());
        }
        let _: Staged<u64> = batch.stage_command(&outbox, cmd);
    }
}

#[cfg(test)]
mod tests {
    /// Each coupon script binds its keys and arguments by the names Rust sends them under.
    #[test]
    fn each_script_binds_its_keys_and_arguments_by_the_names_rust_sends_them_under() {
        use super::campaign::{CONFIGURE, READ};
        use super::claim::CLAIM;
        use super::outbox::PENDING;
        use super::registry::{CAMPAIGNS, REGISTER};
        use crate::store::bindings::assert_binds;
        let common = include_str!("common.lua");
        for (source, script) in [
            (include_str!("claim.lua"), &CLAIM),
            (include_str!("configure.lua"), &CONFIGURE),
            (include_str!("read.lua"), &READ),
            (include_str!("pending.lua"), &PENDING),
        ] {
            assert_binds(&[common, source].concat(), script);
        }
        assert_binds(include_str!("register.lua"), &REGISTER);
        assert_binds(include_str!("campaigns.lua"), &CAMPAIGNS);
    }
}
