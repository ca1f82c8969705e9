//! The waiting room on the striped line ([`crate::line`]), in a deployment with
//! `LINE_STRIPES`: a buyer's join, status and leave and the gatekeeper's check go to the
//! queue's line, each on the buyer's own stripe, in place of the queue's single-tag scripts. A
//! token's ticket names its place ([`line::ticket_of`]). A buyer's stripe follows the queue's
//! draw, so each call reads the queue's settings first, where this container holds none
//! fresh (`terms`). The promoter's tick is in `striped_tick`, a settings change's part in
//! `striped_settings`, the door in `striped_door`.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::access::{Access, AccessCode};
use super::schedule::DRAW_INDEX_BITS;
use super::striped_door::pass_of;
use super::terms::{Draw, Terms};
use super::{
    Arrival, Departure, Gate, Issued, Left, Mode, QueueEvent, Refusal, Standing, TokenState,
    WaitRange, WaitingRoom,
};
use crate::config::QueueCreation;
use crate::door::{Proof, Refused, Scope};
use crate::error::Error;
use crate::ids::{QueueId, UserId};
use crate::line::{
    self, Bound, Checked, Entry, Halt, Joined, Line, Lines, NamedOpening, Opening, Turned, Welcome,
    TICK_EVERY,
};
use crate::token::TokenClaims;

/// A queue's draw as its line takes it: the opening, and each buyer's 28-bit value.
fn named_opening(draw: &Draw) -> NamedOpening {
    let seed = draw.seed.clone();
    NamedOpening {
        name: draw.commitment.clone(),
        opening: Opening {
            at: draw.opens_at,
            value: Arc::new(move |user: &UserId| (seed.value(user) >> DRAW_INDEX_BITS) as u32),
        },
    }
}

pub(super) fn instant(ms: i64) -> Result<DateTime<Utc>, Error> {
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
            None => self.config.room.promote_tick,
        }
    }

    /// `queue`'s terms at `now` (held for a second) and its line, with its draw where it has
    /// one, timed by the queue's own session and idle period where it set them.
    pub(super) async fn line_of(
        &self,
        lines: &Lines,
        queue: &QueueId,
        now: i64,
    ) -> Result<(Terms, Arc<Line>), Error> {
        let terms = self.terms(queue, now).await?;
        Ok(self.line_for(lines, queue, terms))
    }

    /// `queue`'s line under `terms`, with its draw where it has one, timed by the queue's own
    /// session and idle period where it set them.
    pub(super) fn line_for(
        &self,
        lines: &Lines,
        queue: &QueueId,
        terms: Terms,
    ) -> (Terms, Arc<Line>) {
        let line = lines.line(queue, terms.draw.as_ref().map(named_opening));
        line.time(
            terms.session(lines.shape().session),
            terms.presence(lines.shape().presence),
        );
        (terms, line)
    }

    /// `user` joins `queue`'s line, or finds the place or session it holds. A new place is
    /// refused as the queue's settings say, with nothing written. Before the opening a new
    /// place is in the draw. In a presale by code, a new arrival's `code` is bound to it
    /// first, on the code's stripe ([`Self::line_entry`]). Where the queue asks for a
    /// challenge, a new arrival brings a solved one (`proof`), redeemed as the place is made.
    /// Under `QUEUE_CREATION=open`, the first buyer of a queue nobody created creates it
    /// (`striped_open`).
    pub(super) async fn join_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
        user: &UserId,
        code: Option<&AccessCode>,
        proof: &Proof,
    ) -> Result<Issued, Error> {
        let now = self.clock.now_ms();
        let (mut terms, mut line) = self.line_of(lines, queue, now).await?;
        if !terms.created && self.config.creation == QueueCreation::Open {
            self.open_line(queue).await?;
            (terms, line) = self.line_of(lines, queue, now).await?;
        }
        // A queue nobody created holds nobody; one that takes no new arrival still answers
        // those who hold a place or a session.
        let refusal = match terms.admits_arrivals(now) {
            Ok(()) => None,
            Err(err @ Error::NotFound(_)) => return Err(err),
            Err(err) => Some(err),
        };
        let (entry, bound) = self
            .line_entry(&line, &terms, user, code.filter(|_| refusal.is_none()))
            .await?;
        let welcome = Welcome {
            takes_new: refusal.is_none(),
            entry,
            pass: pass_of(terms.door.challenge, proof),
            passthrough: terms.mode == Mode::Passthrough,
            lane: terms.lane && terms.mode == Mode::Queue,
        };
        let joined = line.join_if(user, now, welcome).await?;
        // A code bound for a join that took no new place is let go again: its buyer holds a
        // place already. Where that fails, the code stays its buyer's.
        let took = matches!(joined, Joined::New { .. } | Joined::Admitted { .. });
        if let Some(hash) = bound.filter(|_| !took) {
            if let Err(err) = line.unbind_code(&hash, user).await {
                tracing::warn!(%queue, %err, "an access code bound for no new place stays bound");
            }
        }
        let (created, score, standing) = match joined {
            // No tick has counted a new place's segment yet: its standing needs no read.
            Joined::New { score, .. } => (
                true,
                score,
                Standing::Placing {
                    placed_by: instant(line.placed_by(score))?,
                },
            ),
            Joined::Already { score, .. } => {
                let polled = line.poll(user, score, now).await?;
                (false, score, self.standing_of(&line, polled)?)
            }
            // A place before every place: its polls look for the session first.
            Joined::Active { until, .. } => (
                false,
                0,
                self.standing_of(&line, line::Standing::Active { until })?,
            ),
            // Passthrough: admitted on arrival, or no room on the buyer's stripe.
            Joined::Admitted { score, until, .. } => (
                true,
                score,
                self.standing_of(&line, line::Standing::Active { until })?,
            ),
            Joined::Full { retry_ms } => {
                return Err(Arrival::Full {
                    retry_after: Duration::from_millis(retry_ms.max(1000) as u64),
                    message: terms.message.clone(),
                }
                .into())
            }
            Joined::Denied => return Err(Arrival::AccessDenied.into()),
            Joined::Turned(why) => {
                let replayed = why == Turned::Replayed;
                return Err(Refused::of(Scope::Queue(queue), proof, replayed).into());
            }
            Joined::Refused => {
                return Err(refusal.unwrap_or_else(|| {
                    Error::Internal("the line refused a join it was told to take".into())
                }))
            }
        };
        // What this container holds of the stripe's published state, else the settings.
        let published = line.published_for(user, now);
        let halted = line
            .halted_for(user, now)
            .or(terms.paused.then_some(Halt::Paused));
        let speed = published.and_then(|p| p.speed);
        let state = self.line_state(
            &line,
            &terms,
            line::ticket_of(score),
            standing,
            (halted, speed),
        );
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

    /// Who the join lets take a new place, by the queue's `access`, and the hash of a code
    /// this call bound to `user`. In a presale by code, `code` (a new arrival's) is bound to
    /// `user` on the code's stripe, or found bound to it already; a code that is unknown or
    /// another buyer's lets nobody new in, as no code does. A buyer who holds a place keeps
    /// it either way.
    async fn line_entry(
        &self,
        line: &Line,
        terms: &Terms,
        user: &UserId,
        code: Option<&AccessCode>,
    ) -> Result<(Entry, Option<String>), Error> {
        Ok(match (terms.access, code) {
            (Access::Open, _) => (Entry::Anyone, None),
            (Access::List, _) => (Entry::Listed, None),
            (Access::Code, None) => (Entry::Nobody, None),
            (Access::Code, Some(code)) => {
                let hash = code.hash();
                match line.bind_code(&hash, user).await? {
                    Bound::New => (Entry::Anyone, Some(hash)),
                    Bound::Again => (Entry::Anyone, None),
                    Bound::Unknown | Bound::Taken => (Entry::Nobody, None),
                }
            }
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
        let (terms, line) = self.line_of(lines, &claims.queue, now).await?;
        let standing = line
            .poll(&claims.user, line::score_of(claims.ticket), now)
            .await?;
        let halted = line.halted_for(&claims.user, now);
        let speed = line.published_for(&claims.user, now).and_then(|p| p.speed);
        let standing = self.standing_of(&line, standing)?;
        Ok(self.line_state(&line, &terms, claims.ticket, standing, (halted, speed)))
    }

    /// A standing on the line as the waiting room answers it; a place that is over is
    /// refused with why.
    fn standing_of(&self, line: &Line, standing: line::Standing) -> Result<Standing, Error> {
        let session = chrono::Duration::from_std(line.session())
            .map_err(|err| Error::Internal(err.to_string()))?;
        Ok(match standing {
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
        })
    }

    /// A buyer's state from its standing, the queue's terms, and what its stripe's published
    /// state says: why it admits nobody, if it does not, and how fast the line moves. A draw
    /// place is in the pre-queue until the opening, and shows its draw value from then on. A
    /// waiter in a sold-out queue is told so, and one in a paused queue. A waiter with a
    /// position is given its wait ([`line::Estimate`]).
    fn line_state(
        &self,
        line: &Line,
        terms: &Terms,
        ticket: u64,
        standing: Standing,
        (halted, speed): (Option<Halt>, Option<line::Speed>),
    ) -> TokenState {
        let in_draw = line::in_draw(line::score_of(ticket));
        let pending = terms
            .draw
            .as_ref()
            .map(|draw| draw.opens_at)
            .filter(|at| self.clock.now_ms() < *at && in_draw);
        let standing = match (standing, pending.and_then(DateTime::from_timestamp_millis)) {
            (Standing::Waiting { .. } | Standing::Placing { .. }, Some(opens_at)) => {
                Standing::Prequeue { opens_at }
            }
            (standing, _) => standing,
        };
        let waits = matches!(
            standing,
            Standing::Waiting { .. } | Standing::Placing { .. }
        );
        let standing = match halted {
            Some(Halt::SoldOut) if waits => Standing::SoldOut,
            _ => standing,
        };
        // A health level of 0 admits nobody, whether or not the stripes still say so.
        let now = self.clock.now_ms();
        let halted = halted.or((terms.health(now).level <= 0.0).then_some(Halt::Unhealthy));
        // A lane place waits for the opening, unless the lane goes before it: its wait counts
        // from there.
        let lane_waits = terms
            .draw
            .as_ref()
            .map(|draw| draw.opens_at)
            .filter(|at| {
                now < *at && !terms.lane_before_opening && line::is_lane(line::score_of(ticket))
            })
            .map(|at| Duration::from_millis((at - now) as u64));
        let estimate = match standing {
            Standing::Waiting { position } if halted.is_none() => {
                let estimate = line::Estimate::of(
                    position,
                    terms.capacity(self.config.room.capacity, now),
                    line.session(),
                    speed,
                );
                Some(lane_waits.map_or(estimate, |wait| estimate.after(wait)))
            }
            _ => None,
        };
        TokenState {
            ticket,
            standing,
            expected_wait: estimate.map(|e| e.expected),
            wait_range: estimate.map(|e| WaitRange {
                low: e.low,
                high: e.high,
            }),
            present_for: line.presence(),
            paused: waits && halted.is_some_and(|h| h != Halt::SoldOut),
            message: None,
            drawn: in_draw && pending.is_none(),
        }
    }

    /// Gives up the token's place or session on its line: one round trip to its stripe.
    pub(super) async fn leave_line(
        &self,
        lines: &Lines,
        claims: &TokenClaims,
    ) -> Result<Left, Error> {
        let now = self.clock.now_ms();
        let (_, line) = self.line_of(lines, &claims.queue, now).await?;
        let reason = match line.leave(&claims.user).await? {
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
        let (_, line) = self.line_of(lines, &claims.queue, now).await?;
        Ok(match line.check(&claims.user, now).await? {
            Checked::Active { until } => Ok(Gate {
                active_until: instant(until)?,
            }),
            Checked::Waiting => Err(Refusal::Waiting),
            Checked::Dropped => Err(Refusal::Gone(Departure::Dropped)),
            Checked::Left => Err(Refusal::Gone(Departure::Left)),
            Checked::Ended => Err(Refusal::Gone(Departure::Expired)),
            Checked::Paid => Err(Refusal::Gone(Departure::Paid)),
            Checked::Unknown => Err(Refusal::Unknown),
        })
    }
}
