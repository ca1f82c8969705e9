//! The gatekeeper's check on the striped line: whether a buyer holds a live session, in one
//! plain command on the buyer's stripe.

use super::Line;
use crate::error::Error;
use crate::ids::UserId;

impl Line {
    /// When `user`'s session ends (ms), if it is live at `now`: one `ZSCORE` on its stripe.
    pub async fn check(&self, user: &UserId, now: i64) -> Result<Option<i64>, Error> {
        let keys = self.keys(self.stripe_of(user));
        let until: Option<f64> = self
            .conn
            .query(
                &keys.active,
                redis::cmd("ZSCORE")
                    .arg(&keys.active)
                    .arg(user.as_str())
                    .clone(),
            )
            .await?;
        Ok(until.map(|u| u as i64).filter(|u| *u > now))
    }
}
