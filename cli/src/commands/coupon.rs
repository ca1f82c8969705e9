//! `lineup coupon create|show|close`: coupon campaigns.

use serde_json::{json, Value};

use super::{check_id, instant, queue_id};
use crate::args::CouponCommand;
use crate::error::CliError;
use crate::output::{cell, Out};
use crate::routes::Route;
use crate::target::Target;

pub async fn run(command: CouponCommand, target: &Target, out: Out) -> Result<(), CliError> {
    match command {
        CouponCommand::Create {
            coupon,
            quantity,
            queue,
            opens_at,
            closes_at,
            challenge,
            challenge_cost,
        } => {
            let coupon = check_id(lineup::ids::CouponId::parse, &coupon)?;
            let body = json!({
                "quantity": quantity,
                "queueId": queue.as_deref().map(queue_id).transpose()?,
                "opensAt": opens_at.as_deref().map(|t| instant("--opens-at", t)).transpose()?,
                "closesAt": closes_at.as_deref().map(|t| instant("--closes-at", t)).transpose()?,
                "challenge": challenge,
                "challengeCost": challenge_cost,
            });
            let reply = target
                .api
                .call(Route::PutCoupon, &[&coupon], &[], Some(&body))
                .await?;
            print(out, &reply.body);
            Ok(())
        }
        CouponCommand::Show { coupon } => {
            let coupon = check_id(lineup::ids::CouponId::parse, &coupon)?;
            let reply = target
                .api
                .call(Route::GetCoupon, &[&coupon], &[], None)
                .await?;
            print(out, &reply.body);
            Ok(())
        }
        CouponCommand::Close { coupon } => {
            let coupon = check_id(lineup::ids::CouponId::parse, &coupon)?;
            let campaign = target
                .api
                .call(Route::GetCoupon, &[&coupon], &[], None)
                .await?
                .body;
            let now = chrono::Utc::now();
            // The PUT carries the whole campaign; only closesAt changes, and opensAt where
            // the campaign has not opened yet: closesAt must come after it, and a campaign
            // that opens and closes in the past takes no claim.
            let opens_at = match campaign["opensAt"]
                .as_str()
                .map(chrono::DateTime::parse_from_rfc3339)
            {
                Some(Ok(opens)) if opens >= now => {
                    json!(rfc3339(now - chrono::Duration::seconds(1)))
                }
                _ => campaign["opensAt"].clone(),
            };
            let body = json!({
                "quantity": campaign["quantity"],
                "queueId": campaign["queueId"],
                "opensAt": opens_at,
                "closesAt": rfc3339(now),
                "challenge": campaign["challenge"],
                "challengeCost": campaign["challengeCost"],
            });
            let reply = target
                .api
                .call(Route::PutCoupon, &[&coupon], &[], Some(&body))
                .await?;
            print(out, &reply.body);
            Ok(())
        }
    }
}

fn print(out: Out, campaign: &Value) {
    if out.json {
        out.json(campaign);
        return;
    }
    out.pairs(&[
        ("coupon", cell(&campaign["couponId"])),
        ("quantity", cell(&campaign["quantity"])),
        ("claimed", cell(&campaign["claimed"])),
        ("remaining", cell(&campaign["remaining"])),
        ("opens at", cell(&campaign["opensAt"])),
        ("closes at", cell(&campaign["closesAt"])),
        ("queue", cell(&campaign["queueId"])),
        ("challenge", cell(&campaign["challenge"])),
        ("expires at", cell(&campaign["expiresAt"])),
    ]);
}

fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}
