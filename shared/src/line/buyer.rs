//! A buyer's calls on the striped line, each one round trip to the buyer's own stripe: the
//! join (`join.lua`: the place depends on what is there), the poll and the leave (plain
//! commands, pipelined). Each reply is decoded here into one named shape per outcome.

use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use super::door::{Pass, Turned};
use super::handle::Line;
use super::keys::Stripe;
use super::shape::{ms, Place, Published};
use crate::error::Error;
use crate::ids::UserId;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Tagged};

/// The join; its keys and arguments, named as `join.lua` binds them.
pub(super) static JOIN: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("join.lua"))),
    &[
        "LINE", "ACTIVE", "SEGMENTS", "SEALED", "DRAWS", "MARK", "ACCESS", "REDEEMED", "HALT",
        "ALLOW", "PRIORITY",
    ],
    &[
        "user",
        "now",
        "segment_ms",
        "presence_ms",
        "draw",
        "draw_segment",
        "opens_at",
        "keep_ms",
        "takes_new",
        "access",
        "door",
        "redeem_until",
        "passthrough",
        "session_ms",
        "admitted_score",
        "lane",
    ],
);

/// What a join lets a buyer who holds nothing do, as the queue's settings say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome {
    /// Whether the line takes a new place at all.
    pub takes_new: bool,
    /// Who may take one (a presale).
    pub entry: Entry,
    /// What the buyer brought to the door.
    pub pass: Pass,
    /// Mode `passthrough`: a new arrival is admitted at once, within its stripe's allowance,
    /// or refused.
    pub passthrough: bool,
    /// The queue has a priority lane: a buyer on its stripe's priority list takes its place
    /// there, ahead of the main line.
    pub lane: bool,
}

impl Welcome {
    /// Anyone takes a new place.
    pub fn open() -> Welcome {
        Welcome {
            takes_new: true,
            entry: Entry::Anyone,
            pass: Pass::Free,
            passthrough: false,
            lane: false,
        }
    }
}

/// Where a session admitted on arrival is scored: 2^51 plus its instant (ms), above every
/// place in line and below 2^52, so its ticket fits 53 bits and its polls look for the
/// session first.
const ON_ARRIVAL: i64 = 1 << 51;

/// What a join did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joined {
    /// A new place, scored `score` on `stripe`: its arrival (ms), or below zero in the draw.
    New { stripe: Stripe, score: i64 },
    /// The buyer was already in line: its place, unchanged.
    Already { stripe: Stripe, score: i64 },
    /// The buyer holds a session until `until` (ms).
    Active { stripe: Stripe, until: i64 },
    /// A new arrival admitted at once (passthrough), its session scored `score`, until
    /// `until` (ms).
    Admitted {
        stripe: Stripe,
        score: i64,
        until: i64,
    },
    /// A new arrival refused in passthrough: no room on its stripe. It may try again in
    /// `retry_ms`. Nothing was written.
    Full { retry_ms: i64 },
    /// The buyer held nothing, and the line took no new place: nothing was written.
    Refused,
    /// The buyer held nothing and is not on the access list the join asked about: nothing
    /// was written.
    Denied,
    /// The buyer held nothing and the door turned it away: nothing was written.
    Turned(Turned),
}

/// `join.lua`'s reply: `joined` or `waiting` with the place's `score`, `active` or `admitted`
/// with the session's `until`, `full` with `retry_ms`, `door` with `why`, `refused` or
/// `denied`.
#[derive(Debug, PartialEq, Eq)]
enum JoinReply {
    Joined(i64),
    Waiting(i64),
    Active(i64),
    Admitted(i64),
    Full(i64),
    Refused,
    Denied,
    Turned(Turned),
}

impl FromRedisValue for JoinReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Tagged::decode("join", &v, |r| {
            // A place's score as ZSCORE writes it: a double's text.
            let score = || r.number::<f64>("score").map(|score| score as i64);
            match r.tag() {
                "joined" => Ok(JoinReply::Joined(score()?)),
                "waiting" => Ok(JoinReply::Waiting(score()?)),
                "active" => Ok(JoinReply::Active(r.number("until")?)),
                "admitted" => Ok(JoinReply::Admitted(r.number("until")?)),
                "full" => Ok(JoinReply::Full(r.number("retry_ms")?)),
                "refused" => Ok(JoinReply::Refused),
                "denied" => Ok(JoinReply::Denied),
                "door" => match r.text("why")?.as_str() {
                    "required" => Ok(JoinReply::Turned(Turned::Required)),
                    "failed" => Ok(JoinReply::Turned(Turned::Failed)),
                    "replayed" => Ok(JoinReply::Turned(Turned::Replayed)),
                    other => Err(r.error(format!("names no door refusal: {other:?}"))),
                },
                _ => Err(r.unknown()),
            }
        })
    }
}

/// A buyer's mark as read (`keys::StripeKeys::mark`): `w`, `a:<until>:<score>`, `d`, `l` or
/// `p`.
pub(super) enum Mark {
    Waiting,
    Admitted(i64),
    Dropped,
    Left,
    Paid,
}

impl Mark {
    /// The standing of a buyer with no place and no live session, by its mark at `now`.
    pub(super) fn gone(mark: Option<Mark>, now: i64) -> Standing {
        match mark {
            Some(Mark::Dropped) => Standing::Dropped,
            Some(Mark::Left) => Standing::Left,
            Some(Mark::Paid) => Standing::Paid,
            Some(Mark::Admitted(until)) if until <= now => Standing::Ended,
            Some(Mark::Admitted(until)) => Standing::Active { until },
            Some(Mark::Waiting) | None => Standing::Gone,
        }
    }
}

impl FromRedisValue for Mark {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let text: String = FromRedisValue::from_redis_value(v)?;
        match text.as_str() {
            "w" => Ok(Mark::Waiting),
            "d" => Ok(Mark::Dropped),
            "l" => Ok(Mark::Left),
            "p" => Ok(Mark::Paid),
            _ => text
                .strip_prefix("a:")
                .and_then(|rest| rest.split(':').next())
                .and_then(|until| until.parse().ok())
                .map(Mark::Admitted)
                .ok_or_else(|| ParsingError::from(format!("mark: {text}"))),
        }
    }
}

/// Who may take a new place: the presale access as a join checks it on the buyer's stripe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Anyone: no presale, or a buyer whose access code is bound to it.
    Anyone,
    /// Only a buyer on the access list (its stripe's set).
    Listed,
    /// Nobody new: a presale by code, and the buyer brought no code of its own.
    Nobody,
}

impl Entry {
    fn as_str(self) -> &'static str {
        match self {
            Entry::Anyone => "open",
            Entry::Listed => "list",
            Entry::Nobody => "none",
        }
    }
}

/// Where a poll found its buyer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// In line at `position` (1 is next), exact as of the last tick.
    Waiting { position: u64 },
    /// In line, in a segment the tick has not published yet: `on_stripe` is its place on its
    /// own stripe; its position comes with a tick, for certain by `placed_by` (ms,
    /// [`Line::placed_by`]), when to poll next.
    Unplaced { on_stripe: u64, placed_by: i64 },
    /// Admitted: a session until `until` (ms).
    Active { until: i64 },
    /// Passed over as absent: the line reached it after its mark had lapsed.
    Dropped,
    /// It left the line or gave up its session.
    Left,
    /// Its session ended.
    Ended,
    /// Its session ended with its payment.
    Paid,
    /// Neither in line nor in a session, and no mark says why: it is not known here.
    Gone,
    /// In line, but the last tick's state is `age_ms` old, more than [`STALE_AFTER`]: the line
    /// is not moving. `position` is as of that tick, when it had one.
    Stalled { position: Option<u64>, age_ms: i64 },
}

/// How old the published state may be before a poll says the line has stalled: three ticks
/// missed.
pub const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3);

/// How far a token's ticket is above its place's score: 2^52. A draw place's score is −2^52
/// plus its value's 28 bits and a 24-bit tie counted from 1, so its ticket begins with its
/// draw value and is at least 1; one of a place scored by an instant (ms) before the year 2255
/// is below 2^53, which a JSON number holds exactly.
const TICKET_OFFSET: i64 = 1 << (super::draw::DRAW_VALUE_BITS + super::draw::DRAW_TIE_BITS);

/// The tickets of the priority lane's places: 2^52 + 2^50 plus the place's instant (ms), above
/// every arrival's ticket (an instant below 2^50 ms, before the year 37 000) and below every
/// session admitted on arrival's.
const LANE_TICKETS: i64 = TICKET_OFFSET + (1 << 50);

/// The ticket a token carries for a place scored `score`: a draw place's begins with its
/// draw value (1 to 2^52), an arrival's is 2^52 plus its instant, a lane place's 2^52 + 2^50
/// plus its instant, a session admitted on arrival's 2^52 + 2^51 plus its instant. Each fits
/// 53 bits, which a JSON number holds exactly.
pub fn ticket_of(score: i64) -> u64 {
    if super::shape::is_lane(score) {
        return (score - super::shape::LANE_BASE + LANE_TICKETS).max(0) as u64;
    }
    score.saturating_add(TICKET_OFFSET).max(0) as u64
}

/// The score of the place a token's `ticket` names ([`ticket_of`]).
pub fn score_of(ticket: u64) -> i64 {
    let ticket = ticket.min(i64::MAX as u64) as i64;
    if (LANE_TICKETS..TICKET_OFFSET + ON_ARRIVAL).contains(&ticket) {
        return ticket - LANE_TICKETS + super::shape::LANE_BASE;
    }
    ticket.saturating_sub(TICKET_OFFSET)
}

/// Whether a place scored `score` is in the draw.
pub fn in_draw(score: i64) -> bool {
    (-TICKET_OFFSET..0).contains(&score)
}

/// What a leave removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// A place in line.
    Place,
    /// A session.
    Session,
    /// Nothing: the buyer held neither.
    Nothing,
}

impl Line {
    /// `user` joins at `now` (ms), or finds the place or session it already holds.
    pub async fn join(&self, user: &UserId, now: i64) -> Result<Joined, Error> {
        self.join_if(user, now, Welcome::open()).await
    }

    /// [`Line::join`], as `welcome` says: a new place only where it `takes_new`, only for a
    /// buyer its `entry` lets in, and only with a `pass` the door takes; a buyer who holds
    /// nothing is otherwise [`Joined::Refused`], [`Joined::Denied`] or [`Joined::Turned`],
    /// with nothing written. A solved challenge is redeemed as the place is made. In
    /// passthrough a new arrival is [`Joined::Admitted`] at once, or [`Joined::Full`].
    pub async fn join_if(
        &self,
        user: &UserId,
        now: i64,
        welcome: Welcome,
    ) -> Result<Joined, Error> {
        let Welcome {
            takes_new,
            entry,
            pass,
            passthrough,
            lane,
        } = welcome;
        let stripe = self.stripe_of(user);
        let keys = self.keys(stripe);
        let draw = self.draw_place(user, now);
        let mut call = ScriptCall::of(&JOIN);
        call.named_key("LINE", &keys.line)
            .named_key("ACTIVE", &keys.active)
            .named_key("SEGMENTS", &keys.segments)
            .named_key("SEALED", &keys.sealed)
            .named_key("DRAWS", &keys.draws)
            .named_key("MARK", keys.mark(user.as_str()))
            .named_key("ACCESS", &keys.access)
            .named_key("REDEEMED", keys.redeemed(pass.bitmap()))
            .named_key("HALT", &keys.halt)
            .named_key("ALLOW", &keys.allow)
            .named_key("PRIORITY", &keys.priority)
            .named("user", user.as_str())
            .named("now", now)
            .named("segment_ms", self.segment_ms())
            .named("presence_ms", self.presence_ms())
            .named(
                "draw",
                draw.map(|(score, _)| score.to_string()).unwrap_or_default(),
            )
            .named("draw_segment", draw.map_or(0, |(_, segment)| segment))
            .named("opens_at", self.opening.as_ref().map_or(0, |o| o.at))
            .named("keep_ms", ms(self.shape.keep))
            .named("takes_new", u8::from(takes_new))
            .named("access", entry.as_str())
            .named("door", pass.as_arg())
            .named("redeem_until", pass.redeem_until())
            .named("passthrough", u8::from(passthrough))
            .named("session_ms", self.session_ms())
            .named("admitted_score", ON_ARRIVAL + now)
            .named("lane", u8::from(lane));
        Ok(match self.conn.invoke(call).await? {
            JoinReply::Joined(score) => Joined::New { stripe, score },
            JoinReply::Waiting(score) => Joined::Already { stripe, score },
            JoinReply::Active(until) => Joined::Active { stripe, until },
            JoinReply::Admitted(until) => Joined::Admitted {
                stripe,
                score: ON_ARRIVAL + now,
                until,
            },
            JoinReply::Full(retry_ms) => Joined::Full { retry_ms },
            JoinReply::Refused => Joined::Refused,
            JoinReply::Denied => Joined::Denied,
            JoinReply::Turned(why) => Joined::Turned(why),
        })
    }

    /// `user`'s standing at `now` (ms), for the place scored `score` that its join gave it.
    /// One pipeline on its stripe. While it waits, by the published state this function holds:
    /// its rank, and its mark kept alive for the shape's presence (`ZRANK`, `PEXPIRE … GT`,
    /// which never shortens a mark that says more than that it waits), and the published
    /// state itself (`GET`) when none is held fresh. Once the held state's head has passed its
    /// place: its session and its mark (`ZSCORE`, `GET`). A place taken off the line since
    /// the held state was read (the tick admitted or passed it, or the buyer left) is
    /// answered by its mark, in a second round trip: once a place at most.
    pub async fn poll(&self, user: &UserId, score: i64, now: i64) -> Result<Standing, Error> {
        let stripe = self.stripe_of(user);
        let keys = self.keys(stripe);
        let mark = keys.mark(user.as_str());
        let held = self.held(stripe, now);
        let place = Place {
            segment: self.segment_of(score),
            stripe,
            score,
            user: user.to_string(),
        };
        let walked = score >= ON_ARRIVAL
            || held
                .as_ref()
                .and_then(|p| {
                    if super::shape::is_lane(score) {
                        p.lane_head.as_ref()
                    } else {
                        p.head.as_ref()
                    }
                })
                .is_some_and(|head| place <= *head);
        let mut batch = Batch::new();
        if walked {
            let until = batch.stage_command::<Option<f64>>(
                &keys.active,
                redis::cmd("ZSCORE")
                    .arg(&keys.active)
                    .arg(user.as_str())
                    .clone(),
            );
            let marked =
                batch.stage_command::<Option<Mark>>(&mark, redis::cmd("GET").arg(&mark).clone());
            let replies = self.conn.send(&batch).await?;
            return Ok(match (until.read(&replies)?, marked.read(&replies)?) {
                (Some(until), _) if until as i64 > now => Standing::Active {
                    until: until as i64,
                },
                (_, mark) => Mark::gone(mark, now),
            });
        }
        let fetch = held.is_none().then(|| {
            batch.stage_command::<Option<Published>>(
                &keys.published,
                redis::cmd("GET").arg(&keys.published).clone(),
            )
        });
        let rank = batch.stage_command::<Option<u64>>(
            &keys.line,
            redis::cmd("ZRANK")
                .arg(&keys.line)
                .arg(user.as_str())
                .clone(),
        );
        batch.stage_command::<u8>(
            &mark,
            redis::cmd("PEXPIRE")
                .arg(&mark)
                .arg(self.present_for(score, now))
                .arg("GT")
                .clone(),
        );
        let replies = self.conn.send(&batch).await?;
        let published = match fetch {
            Some(fetch) => {
                let published = fetch.read(&replies)?.unwrap_or_default();
                self.hold(stripe, now, published.clone());
                std::sync::Arc::new(published)
            }
            None => held.unwrap_or_default(),
        };
        let age_ms = now - published.tick;
        let stalled = published.tick > 0 && age_ms > STALE_AFTER.as_millis() as i64;
        Ok(match rank.read(&replies)? {
            Some(rank) => match published.ahead.get(&place.segment) {
                Some(ahead) if stalled => Standing::Stalled {
                    position: Some(ahead + rank + 1),
                    age_ms,
                },
                None if stalled => Standing::Stalled {
                    position: None,
                    age_ms,
                },
                Some(ahead) => Standing::Waiting {
                    position: ahead + rank + 1,
                },
                None => Standing::Unplaced {
                    on_stripe: rank + 1,
                    placed_by: self.placed_by(score),
                },
            },
            None => {
                let marked: Option<Mark> = self
                    .conn
                    .query(&mark, redis::cmd("GET").arg(&mark).clone())
                    .await?;
                match marked {
                    Some(Mark::Admitted(until)) if until > now => Standing::Active { until },
                    mark => Mark::gone(mark, now),
                }
            }
        })
    }

    /// How long a poll at `now` keeps the place scored `score` present (ms): the presence
    /// period, and for a draw place before the opening, until then as well, as its join did.
    fn present_for(&self, score: i64, now: i64) -> u64 {
        let until_opening = match &self.opening {
            Some(opening) if score < 0 && opening.at > now => (opening.at - now) as u64,
            _ => 0,
        };
        self.presence_ms() + until_opening
    }

    /// `user` gives up its place or its session: three plain commands in one pipeline. Its
    /// mark then says it left, for as long as a dropped buyer's says so.
    pub async fn leave(&self, user: &UserId) -> Result<Left, Error> {
        let keys = self.keys(self.stripe_of(user));
        let mark = keys.mark(user.as_str());
        let mut batch = Batch::new();
        let place = batch.stage_command::<u64>(
            &keys.line,
            redis::cmd("ZREM")
                .arg(&keys.line)
                .arg(user.as_str())
                .clone(),
        );
        let session = batch.stage_command::<u64>(
            &keys.active,
            redis::cmd("ZREM")
                .arg(&keys.active)
                .arg(user.as_str())
                .clone(),
        );
        // Written only over a mark the buyer holds, so a leave of nothing leaves nothing.
        batch.stage_command::<Option<String>>(
            &mark,
            redis::cmd("SET")
                .arg(&mark)
                .arg("l")
                .arg("XX")
                .arg("PX")
                .arg(ms(self.shape.keep))
                .clone(),
        );
        let replies = self.conn.send(&batch).await?;
        Ok(
            match (place.read(&replies)? > 0, session.read(&replies)? > 0) {
                (true, _) => Left::Place,
                (false, true) => Left::Session,
                (false, false) => Left::Nothing,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_join_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("join.lua"), &super::JOIN);
    }

    #[test]
    fn each_join_answer_decodes_into_its_variant_and_a_stray_one_is_refused() {
        use super::super::door::Turned;
        use super::JoinReply;
        use crate::store::test_reply as reply;
        use redis::FromRedisValue;
        let decode = |items: &[&str]| JoinReply::from_redis_value(reply(items));
        let lane = "-9005403177593664";
        assert_eq!(
            decode(&["joined", "score", lane]).unwrap(),
            JoinReply::Joined(-9_005_403_177_593_664)
        );
        assert_eq!(
            decode(&["waiting", "score", "1796077147328"]).unwrap(),
            JoinReply::Waiting(1_796_077_147_328)
        );
        assert_eq!(
            decode(&["active", "until", "1796077147328"]).unwrap(),
            JoinReply::Active(1_796_077_147_328)
        );
        assert_eq!(
            decode(&["admitted", "until", "5"]).unwrap(),
            JoinReply::Admitted(5)
        );
        assert_eq!(
            decode(&["full", "retry_ms", "1000"]).unwrap(),
            JoinReply::Full(1000)
        );
        assert_eq!(decode(&["refused"]).unwrap(), JoinReply::Refused);
        assert_eq!(decode(&["denied"]).unwrap(), JoinReply::Denied);
        for (why, turned) in [
            ("required", Turned::Required),
            ("failed", Turned::Failed),
            ("replayed", Turned::Replayed),
        ] {
            assert_eq!(
                decode(&["door", "why", why]).unwrap(),
                JoinReply::Turned(turned)
            );
        }
        for stray in [
            &["door", "why", "late"][..],
            &["joined", "until", "5"],
            &["refused", "score", "0"],
            &["left"],
        ] {
            assert!(decode(stray).is_err(), "{stray:?}");
        }
    }

    #[test]
    fn a_ticket_names_its_place_in_the_places_order_within_53_bits() {
        use super::super::draw::DrawLayout;
        let lowest = DrawLayout::score_of(0);
        let highest_draw = DrawLayout::score_of(u32::MAX) + (1 << 24) - 1;
        // 2255-01-01 in ms.
        let late = 9_000_000_000_000;
        let scores = [lowest, highest_draw, 0, 1_800_000_000_000, late];
        for pair in scores.windows(2) {
            assert!(super::ticket_of(pair[0]) < super::ticket_of(pair[1]));
        }
        for score in scores {
            assert_eq!(super::score_of(super::ticket_of(score)), score);
            assert!(super::ticket_of(score) < 1 << 53, "{score}");
        }
        assert_eq!(super::ticket_of(lowest + 1), 1);
        // A draw place's ticket begins with its value.
        let value = 0x00ab_cdef;
        assert_eq!(
            super::ticket_of(DrawLayout::score_of(value) + 1) >> 24,
            u64::from(value)
        );
        // The lane's places and the sessions admitted on arrival have tickets of their own,
        // each range apart from the others, and fit 53 bits.
        let lane = [
            super::super::shape::LANE_BASE,
            super::super::shape::LANE_BASE + late,
        ];
        let on_arrival = [super::ON_ARRIVAL, super::ON_ARRIVAL + late];
        for score in lane.into_iter().chain(on_arrival) {
            assert_eq!(super::score_of(super::ticket_of(score)), score);
            assert!(super::ticket_of(score) < 1 << 53, "{score}");
            assert!(super::ticket_of(score) > super::ticket_of(late), "{score}");
            assert!(!super::in_draw(score));
        }
        assert!(super::ticket_of(lane[1]) < super::ticket_of(on_arrival[0]));
        assert!(super::super::shape::is_lane(lane[1]) && !super::super::shape::is_lane(lowest));
        assert!(super::in_draw(lowest) && super::in_draw(highest_draw) && !super::in_draw(0));
    }

    #[test]
    fn the_join_orders_equal_draw_values_within_the_tie_bits() {
        let span = 1u64 << super::super::draw::DRAW_TIE_BITS;
        assert!(include_str!("join.lua").contains(&format!(" % {span}\n")));
    }
}
