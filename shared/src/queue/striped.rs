//! The waiting room on the striped line ([`crate::line`]), in a deployment with
//! `LINE_STRIPES`: a buyer's join, status and leave, the gatekeeper's check and the
//! promoter's tick go to the queue's line, each on the buyer's own stripe, in place of the
//! queue's single-tag scripts. A token's ticket names its place ([`line::ticket_of`]).
//!
//! What the line does not do yet is refused where it is asked for, never silently ignored
//! ([`WaitingRoom::refuse_on_line`], and [`SettingsChange::line_refusal`] for settings): the
//! pre-queue and draw, access lists and codes, the door's challenge, the priority lane, pools,
//! ramps, health alarms, passthrough, `maxWaiting`, and a queue's own session, idle period or
//! admissions a tick. A buyer is told no wait estimate yet.

use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::future::try_join_all;

use super::settings::QueueSettings;
use super::{
    Departure, Gate, Issued, Left, PromotionReport, QueueEvent, QueueEventKind, QueuePromotion,
    Refusal, SettingsChange, Standing, TokenState, WaitingRoom,
};
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::line::{self, Checked, Halt, Joined, Lease, Lines, TICK_EVERY};
use crate::token::TokenClaims;

/// How long a promoter's lease on a line lasts unless renewed: three ticks.
pub const LEASE_FOR: Duration = Duration::from_secs(3);

/// How many queues' lines a promoter ticks at once.
const TICKING_AT_ONCE: usize = 32;

/// What the line has of a buyer's state, as the waiting room answers it.
fn token_state(lines: &Lines, ticket: u64, standing: Standing) -> TokenState {
    TokenState {
        ticket,
        standing,
        expected_wait: None,
        wait_range: None,
        present_for: lines.shape().presence,
        paused: false,
        message: None,
        drawn: false,
    }
}

fn instant(ms: i64) -> Result<DateTime<Utc>, Error> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| Error::Internal(format!("the line holds an instant out of range: {ms}")))
}

impl WaitingRoom {
    /// The lines, in a deployment with `LINE_STRIPES`.
    pub fn lines(&self) -> Option<&Lines> {
        self.lines.as_deref()
    }

    /// How often the promoter ticks: once a second on the striped line, whose published
    /// state is at most that old; else `PROMOTE_TICK_SECONDS`.
    pub fn tick_every(&self) -> Duration {
        match self.lines {
            Some(_) => TICK_EVERY,
            None => self.config.promote_tick,
        }
    }

    /// Refuses `what` in a deployment on the striped line, which does not do it yet.
    pub fn refuse_on_line(&self, what: &str) -> Result<(), Error> {
        match self.lines {
            Some(_) => Err(Error::Conflict(format!(
                "{what} is not on the striped line yet (LINE_STRIPES is set)"
            ))),
            None => Ok(()),
        }
    }

    /// `user` joins `queue`'s line, or finds the place or session it holds. A new place is
    /// refused as the queue's settings say (held for a second by this container), with
    /// nothing written.
    pub(super) async fn join_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
        user: &UserId,
    ) -> Result<Issued, Error> {
        let now = self.clock.now_ms();
        let terms = self.terms(queue, now).await?;
        // A queue nobody created holds nobody; one that takes no new arrival still answers
        // those who hold a place or a session.
        let refusal = match terms.admits_arrivals() {
            Ok(()) => None,
            Err(err @ Error::NotFound(_)) => return Err(err),
            Err(err) => Some(err),
        };
        let line = lines.line(queue);
        let (created, score, standing) = match line.join_if(user, now, refusal.is_none()).await? {
            Joined::New { score, .. } => (true, score, line.poll(user, score, now).await?),
            Joined::Already { score, .. } => (false, score, line.poll(user, score, now).await?),
            // A place before every place: its polls look for the session first.
            Joined::Active { until, .. } => (false, 0, line::Standing::Active { until }),
            Joined::Refused => {
                return Err(refusal.unwrap_or_else(|| {
                    Error::Internal("the line refused a join it was told to take".into())
                }))
            }
        };
        let halted = line.halted_for(user, now);
        let state = self.line_state(lines, line::ticket_of(score), standing, halted)?;
        Ok(Issued {
            created,
            claims: TokenClaims {
                queue: queue.clone(),
                user: user.clone(),
                ticket: state.ticket,
            },
            state,
        })
    }

    /// Where the token stands on its line: one round trip to the buyer's stripe, which keeps
    /// the buyer present. A token that holds nothing is refused with why.
    pub(super) async fn line_status(
        &self,
        lines: &Lines,
        claims: &TokenClaims,
    ) -> Result<TokenState, Error> {
        let now = self.clock.now_ms();
        let line = lines.line(&claims.queue);
        let standing = line
            .poll(&claims.user, line::score_of(claims.ticket), now)
            .await?;
        let halted = line.halted_for(&claims.user, now);
        self.line_state(lines, claims.ticket, standing, halted)
    }

    /// A buyer's state from its standing on the line, and why its stripe admits nobody, if
    /// it does not: a waiter in a sold-out queue is told so, and one in a paused queue.
    fn line_state(
        &self,
        lines: &Lines,
        ticket: u64,
        standing: line::Standing,
        halted: Option<Halt>,
    ) -> Result<TokenState, Error> {
        let session = chrono::Duration::from_std(lines.shape().session)
            .map_err(|err| Error::Internal(err.to_string()))?;
        let standing = match standing {
            line::Standing::Waiting { position }
            | line::Standing::Stalled {
                position: Some(position),
                ..
            } => Standing::Waiting { position },
            line::Standing::Unplaced { placed_by, .. } => Standing::Placing {
                placed_by: instant(placed_by)?,
            },
            line::Standing::Stalled { position: None, .. } => Standing::Placing {
                placed_by: instant(self.clock.now_ms())? + TICK_EVERY,
            },
            line::Standing::Active { until } => {
                let until = instant(until)?;
                Standing::Active {
                    since: until - session,
                    until,
                }
            }
            line::Standing::Dropped => return Err(Departure::Dropped.into()),
            line::Standing::Left => return Err(Departure::Left.into()),
            line::Standing::Ended => return Err(Departure::Expired.into()),
            line::Standing::Paid => return Err(Departure::Paid.into()),
            line::Standing::Gone => return Err(Error::unknown_token()),
        };
        let waits = matches!(
            standing,
            Standing::Waiting { .. } | Standing::Placing { .. }
        );
        let standing = match halted {
            Some(Halt::SoldOut) if waits => Standing::SoldOut,
            _ => standing,
        };
        let mut state = token_state(lines, ticket, standing);
        state.paused = waits && halted.is_some_and(|h| h != Halt::SoldOut);
        Ok(state)
    }

    /// Gives up the token's place or session on its line: one round trip to its stripe.
    pub(super) async fn leave_line(
        &self,
        lines: &Lines,
        claims: &TokenClaims,
    ) -> Result<Left, Error> {
        let reason = match lines.line(&claims.queue).leave(&claims.user).await? {
            line::Left::Place => "left-line",
            line::Left::Session => "left-session",
            line::Left::Nothing => return Err(Error::unknown_token()),
        };
        Ok(Left {
            events: vec![QueueEvent::released(
                &claims.queue,
                claims.user.as_str(),
                claims.ticket,
                reason,
            )],
        })
    }

    /// The gatekeeper's check on the line: one `GET` on the buyer's stripe.
    pub(super) async fn check_line(
        &self,
        lines: &Lines,
        claims: &TokenClaims,
    ) -> Result<Result<Gate, Refusal>, Error> {
        let now = self.clock.now_ms();
        Ok(
            match lines.line(&claims.queue).check(&claims.user, now).await? {
                Checked::Active { until } => Ok(Gate {
                    active_until: instant(until)?,
                }),
                Checked::Waiting => Err(Refusal::Waiting),
                Checked::Dropped => Err(Refusal::Gone(Departure::Dropped)),
                Checked::Left => Err(Refusal::Gone(Departure::Left)),
                Checked::Ended => Err(Refusal::Gone(Departure::Expired)),
                Checked::Paid => Err(Refusal::Gone(Departure::Paid)),
                Checked::Unknown => Err(Refusal::Unknown),
            },
        )
    }

    /// One tick of each queue's line, under this container's lease: a queue whose lease
    /// another promoter holds is left to it. [`TICKING_AT_ONCE`] queues tick at once.
    pub(super) async fn tick_lines(
        &self,
        lines: &Lines,
        queues: &[QueueId],
    ) -> Result<PromotionReport, Error> {
        let mut report = PromotionReport::default();
        for some in queues.chunks(TICKING_AT_ONCE) {
            let ticked =
                try_join_all(some.iter().map(|queue| self.tick_line(lines, queue))).await?;
            report.queues.extend(ticked.into_iter().flatten());
        }
        Ok(report)
    }

    /// One tick of `queue`'s line, if this container holds or takes its lease: the queue's
    /// capacity (one `HMGET`), the lease (one small script) and the tick.
    async fn tick_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
    ) -> Result<Option<QueuePromotion>, Error> {
        let terms = self.read_terms(queue).await?;
        let line = lines.line(queue);
        let Lease::Granted(fence) = line.lease(lines.holder(), LEASE_FOR).await? else {
            return Ok(None);
        };
        let capacity = terms.capacity.unwrap_or(self.config.capacity);
        let ticked = line.tick(fence, &*self.clock, u64::from(capacity)).await?;
        if let Some(refused) = ticked.refused {
            tracing::warn!(%queue, ?refused, "a line's tick wrote nothing");
        }
        let until = instant(ticked.until)?;
        let ticket = |user: &String| line::ticket_of(ticked.scores.get(user).copied().unwrap_or(0));
        let mut events: Vec<QueueEvent> = ticked
            .admitted
            .iter()
            .map(|user| QueueEvent::activated(queue, user.as_str(), ticket(user), until))
            .collect();
        events.extend(ticked.dropped.iter().map(|user| {
            QueueEvent::new(
                QueueEventKind::Abandoned,
                queue,
                user.as_str(),
                ticket(user),
            )
        }));
        Ok(Some(QueuePromotion {
            queue_id: queue.clone(),
            admitted: ticked.admitted.len() as u64,
            abandoned: ticked.dropped.len() as u64,
            expired: 0,
            waiting: ticked.placed,
            active: ticked.live,
            admission_rate_per_minute: None,
            pace: None,
            waits_ms: Vec::new(),
            events,
        }))
    }

    /// After a settings change on the line: a sold-out or paused queue's stripes all halt
    /// before the change's call returns; otherwise they admit again.
    pub(super) async fn settle_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
        settings: &QueueSettings,
    ) -> Result<(), Error> {
        self.forget_terms(queue);
        let line = lines.line(queue);
        if settings.availability.sold_out {
            line.halt(Halt::SoldOut).await
        } else if settings.paused {
            line.halt(Halt::Paused).await
        } else {
            line.resume().await
        }
    }
}

impl SettingsChange {
    /// The first setting of this change the striped line does not honour yet, refused.
    /// Returning a setting to its default is always taken.
    pub fn line_refusal(&self) -> Result<(), Error> {
        let set = |given: bool, field: &'static str| -> Result<(), Error> {
            if given {
                Err(Error::invalid(
                    field,
                    "not on the striped line yet (LINE_STRIPES is set)",
                ))
            } else {
                Ok(())
            }
        };
        set(
            matches!(self.session_seconds, Some(Some(_))),
            "sessionSeconds",
        )?;
        set(matches!(self.admit_per_tick, Some(Some(_))), "admitPerTick")?;
        set(
            matches!(self.waiting_idle_seconds, Some(Some(_))),
            "waitingIdleSeconds",
        )?;
        set(
            matches!(self.mode, Some(Some(super::Mode::Passthrough))),
            "mode",
        )?;
        set(matches!(self.max_waiting, Some(Some(_))), "maxWaiting")?;
        set(matches!(self.opens_at, Some(Some(_))), "opensAt")?;
        set(matches!(self.closes_at, Some(Some(_))), "closesAt")?;
        set(
            matches!(self.prequeue_opens_at, Some(Some(_))),
            "prequeueOpensAt",
        )?;
        set(
            matches!(self.lane_before_opening, Some(Some(true))),
            "laneBeforeOpening",
        )?;
        set(
            matches!(self.access, Some(Some(access)) if access != super::access::Access::Open),
            "access",
        )?;
        set(
            matches!(self.challenge, Some(Some(mode)) if mode != crate::door::ChallengeMode::Off),
            "challenge",
        )?;
        set(matches!(self.capacity_ramp, Some(Some(_))), "capacityRamp")?;
        set(matches!(self.health_alarms, Some(Some(_))), "healthAlarms")?;
        set(matches!(self.pool, Some(Some(_))), "pool")?;
        Ok(())
    }
}
