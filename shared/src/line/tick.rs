//! The line's tick, the only writer of admissions: four round trips, each one pipeline over
//! every stripe, and one command to the line's own tag with the counts it leaves. It reads every stripe's sessions and segments; counts each sealed segment's
//! places, and from the counts works out how many places of each stripe's head the free room
//! reaches; reads exactly those; then on each stripe admits the present ones of them and passes
//! over the absent ones, in calls of at most [`APPLY_CHUNK`], and publishes what that stripe's
//! polls read (`apply.lua`). What it reads and writes grows with what it admits, not with the
//! line.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::halt::Halt;
use super::lease::Fence;
use super::{ms, Line, Place, Published, Stripe, StripeKeys};
use crate::clock::Clock;
use crate::error::Error;
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged};

/// The tick's work on one stripe; its keys and arguments, named as `apply.lua` binds them.
pub(super) static APPLY: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(include_str!("apply.lua"))),
    &[
        "LINE",
        "ACTIVE",
        "SEGMENTS",
        "SEALED",
        "PUBLISHED",
        "FENCE",
        "HALT",
        "marks…",
    ],
    &[
        "now",
        "session_ms",
        "keep_ms",
        "sealed",
        "published",
        "fence",
        "walk_count",
        "empty_count",
        "lists…",
    ],
);

/// The most places a tick reads from the head of each stripe: it walks at most this many of one
/// stripe per tick.
pub const HEAD_WINDOW: u64 = 1000;

/// The most places one call of `apply.lua` takes off the line, so that a call stays well under
/// a millisecond of Redis's time.
pub const APPLY_CHUNK: usize = 50;

/// How long a tick's choice holds: a tick that reaches its writes later than this after its
/// reads writes nothing, and says how late it was.
pub const DECIDED_FOR: Duration = Duration::from_secs(2);

/// What one tick did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ticked {
    /// Why it wrote nothing, if it did not.
    pub refused: Option<TickRefused>,
    /// The buyers admitted, in order.
    pub admitted: Vec<String>,
    /// The buyers passed over as absent.
    pub dropped: Vec<String>,
    /// The score of each place admitted or passed over, by buyer: what names its token.
    pub scores: BTreeMap<String, i64>,
    /// When the sessions this tick began end (ms).
    pub until: i64,
    /// Why it admitted nobody, when the line is halted.
    pub halted: Option<Halt>,
    /// Live sessions after the tick.
    pub live: u64,
    /// Places in sealed segments after the tick.
    pub placed: u64,
    /// The draw's places, when this tick found every stripe sealed past the opening (the
    /// first of this container's ticks to admit from the draw): its members, counted before
    /// its walk.
    pub opened: Option<u64>,
}

/// Why a tick wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickRefused {
    /// Its reads were `age_ms` old when it came to write: more than [`DECIDED_FOR`].
    Stale { age_ms: i64 },
    /// A newer lease's tick has written a stripe: that fence is higher than this tick's.
    Fenced { by: Fence },
}

/// `apply.lua`'s reply: `{'applied', admitted users, dropped users}`, `{'fenced', fence}` or
/// `{'halted', why}`.
enum ApplyReply {
    Applied {
        admitted: Vec<String>,
        dropped: Vec<String>,
    },
    Fenced(Fence),
    Halted(Option<Halt>),
}

impl FromRedisValue for ApplyReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let fields: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        let mut fields = fields.into_iter();
        let outcome: String = match fields.next() {
            Some(v) => FromRedisValue::from_redis_value(v)?,
            None => return Err(ParsingError::from("apply: an empty reply")),
        };
        let mut next = || {
            fields
                .next()
                .ok_or_else(|| ParsingError::from(format!("apply: {outcome} is short")))
        };
        match outcome.as_str() {
            "applied" => Ok(ApplyReply::Applied {
                admitted: FromRedisValue::from_redis_value(next()?)?,
                dropped: FromRedisValue::from_redis_value(next()?)?,
            }),
            "fenced" => Ok(ApplyReply::Fenced(Fence(FromRedisValue::from_redis_value(
                next()?,
            )?))),
            "halted" => {
                let why: String = FromRedisValue::from_redis_value(next()?)?;
                Ok(ApplyReply::Halted(Halt::parse(&why)))
            }
            other => Err(ParsingError::from(format!(
                "apply: unknown outcome {other}"
            ))),
        }
    }
}

/// A stripe's head as `ZRANGE … WITHSCORES` reads it: (user, score).
type HeadPlaces = Vec<(String, f64)>;

impl Line {
    /// One tick, under the lease `fence`, by `clock`, with room for `capacity` live sessions.
    pub async fn tick(
        &self,
        fence: Fence,
        clock: &dyn Clock,
        capacity: u64,
    ) -> Result<Ticked, Error> {
        let now = clock.now_ms();
        let stripes: Vec<&StripeKeys> = (0..self.shape.stripes.max(1))
            .map(|k| self.keys(Stripe(k)))
            .collect();
        // The instant before which no new place is scored once this tick has run: the end of
        // the last segment that ended `seal` ago, and at least the opening once it has come.
        let mut seal_at = (now - self.shape.seal.as_millis() as i64).div_euclid(self.segment_ms())
            * self.segment_ms();
        if let Some(opening) = self.opening.as_ref().filter(|o| now >= o.at) {
            seal_at = seal_at.max(opening.at);
        }
        // Whether the draw must still wait: a line with an opening admits nothing until a
        // tick has found every stripe sealed past it, so no place joins the draw after this.
        let draw_waits = self.opening.is_some() && !self.draw_open.load(Ordering::Relaxed);

        // 1. Sessions (the lapsed ones taken off first) and segments, per stripe.
        let mut batch = Batch::new();
        let mut heads = Vec::new();
        for keys in &stripes {
            batch.stage_command::<u64>(
                &keys.active,
                redis::cmd("ZREMRANGEBYSCORE")
                    .arg(&keys.active)
                    .arg("-inf")
                    .arg(now)
                    .clone(),
            );
            let live: Staged<u64> =
                batch.stage_command(&keys.active, super::counts::count_live(keys, now));
            let segments: Staged<Vec<i64>> = batch.stage_command(
                &keys.segments,
                redis::cmd("SMEMBERS").arg(&keys.segments).clone(),
            );
            let halt: Staged<Option<String>> =
                batch.stage_command(&keys.halt, redis::cmd("GET").arg(&keys.halt).clone());
            heads.push((live, segments, halt));
        }
        let seals: Vec<Staged<Option<i64>>> = if draw_waits {
            stripes
                .iter()
                .map(|keys| {
                    batch.stage_command(&keys.sealed, redis::cmd("GET").arg(&keys.sealed).clone())
                })
                .collect()
        } else {
            Vec::new()
        };
        let before = stripes.first().map(|keys| {
            batch.stage_command::<Option<Published>>(
                &keys.published,
                redis::cmd("GET").arg(&keys.published).clone(),
            )
        });
        let replies = self.conn.send(&batch).await?;
        let mut head: Option<Place> = match before {
            Some(staged) => staged.read(&replies)?.and_then(|published| published.head),
            None => None,
        };
        if let Some(opening) = self.opening.as_ref().filter(|_| draw_waits) {
            let mut sealed_past = true;
            for seal in &seals {
                sealed_past &= seal.read(&replies)?.is_some_and(|at| at >= opening.at);
            }
            if sealed_past {
                self.draw_open.store(true, Ordering::Relaxed);
            }
        }
        let opens_now = draw_waits && self.draw_open.load(Ordering::Relaxed);
        // The segments this tick may admit from: those before `sealed`.
        let sealed = if self.draw_open.load(Ordering::Relaxed) || self.opening.is_none() {
            self.segment_of(now - self.shape.seal.as_millis() as i64)
        } else {
            // None: the draw's segments lie below every other.
            i64::MIN
        };
        let mut live = 0;
        let mut segments: Vec<BTreeSet<i64>> = Vec::new();
        let mut halted: Option<Halt> = None;
        for (staged_live, staged_segments, staged_halt) in &heads {
            live += staged_live.read(&replies)?;
            segments.push(staged_segments.read(&replies)?.into_iter().collect());
            if let Some(why) = staged_halt.read(&replies)? {
                halted = halted.or(Halt::parse(&why)).or(Some(Halt::Paused));
            }
        }

        // 2. Each sealed segment's places, per stripe.
        let mut batch = Batch::new();
        let mut counted: Vec<Vec<(i64, Staged<u64>)>> = Vec::new();
        for (k, keys) in stripes.iter().enumerate() {
            counted.push(
                segments[k]
                    .iter()
                    .filter(|s| **s < sealed)
                    .map(|s| {
                        let (min, max) = self.segment_bounds(*s);
                        let staged = batch.stage_command(
                            &keys.line,
                            redis::cmd("ZCOUNT")
                                .arg(&keys.line)
                                .arg(min)
                                .arg(max)
                                .clone(),
                        );
                        (*s, staged)
                    })
                    .collect(),
            );
        }
        let replies = if batch.is_empty() {
            Vec::new()
        } else {
            self.conn.send(&batch).await?
        };
        // counts[k][segment]: the places of stripe k in each sealed segment.
        let mut counts: Vec<BTreeMap<i64, u64>> = Vec::new();
        for staged in &counted {
            let mut of_stripe = BTreeMap::new();
            for (segment, count) in staged {
                of_stripe.insert(*segment, count.read(&replies)?);
            }
            counts.push(of_stripe);
        }
        // The draw's places (its segments are below zero), before the walk takes any.
        let members: u64 = counts
            .iter()
            .flat_map(|of_stripe| of_stripe.range(..0).map(|(_, count)| count))
            .sum();
        // How far into each stripe's head the free room reaches: the line's first `free`
        // places, segment by segment, stripe by stripe.
        // A halted line admits nobody, whatever the room.
        let free = if halted.is_some() {
            0
        } else {
            capacity.saturating_sub(live)
        };
        let every: BTreeSet<i64> = counts.iter().flat_map(|c| c.keys().copied()).collect();
        let mut reach = vec![0u64; stripes.len()];
        let mut left = free;
        for segment in &every {
            for (k, of_stripe) in counts.iter().enumerate() {
                let take = of_stripe.get(segment).copied().unwrap_or(0).min(left);
                reach[k] += take;
                left -= take;
            }
        }

        // 3. Those places, and one more of each stripe: a stripe's reads bound the walk only
        // where they end before the free room does (a window cut short, or joins that raced
        // the counts), and the one more shows where they end.
        let mut batch = Batch::new();
        let windows: Vec<Option<(u64, Staged<HeadPlaces>)>> = stripes
            .iter()
            .zip(&reach)
            .map(|(keys, reach)| {
                let window = (reach + 1).min(HEAD_WINDOW);
                (free > 0).then(|| {
                    let staged = batch.stage_command(
                        &keys.line,
                        redis::cmd("ZRANGE")
                            .arg(&keys.line)
                            .arg(0)
                            .arg(window - 1)
                            .arg("WITHSCORES")
                            .clone(),
                    );
                    (window, staged)
                })
            })
            .collect();
        let replies = if batch.is_empty() {
            Vec::new()
        } else {
            self.conn.send(&batch).await?
        };
        let mut places: Vec<Place> = Vec::new();
        // The walk goes no further than the last place read of a stripe that filled its window:
        // the stripe may have more after it.
        let mut known_to: Option<Place> = None;
        for (k, window) in windows.iter().enumerate() {
            let Some((window, staged)) = window else {
                continue;
            };
            let read: Vec<Place> = staged
                .read(&replies)?
                .into_iter()
                .map(|(user, score)| Place {
                    segment: self.segment_of(score as i64),
                    stripe: Stripe(k as u16),
                    score: score as i64,
                    user,
                })
                .collect();
            if read.len() as u64 == *window {
                if let Some(last) = read.last() {
                    if known_to.as_ref().is_none_or(|known| last < known) {
                        known_to = Some(last.clone());
                    }
                }
            }
            places.extend(read.into_iter().filter(|p| p.segment < sealed));
        }
        places.sort();
        let mut walk: Vec<Vec<String>> = vec![Vec::new(); stripes.len()];
        let mut walked: Vec<(usize, String, i64)> = Vec::new();
        for place in places.into_iter().take(free as usize) {
            if known_to.as_ref().is_some_and(|last| place > *last) {
                break;
            }
            let k = place.stripe.0 as usize;
            if let Some(count) = counts[k].get_mut(&place.segment) {
                *count = count.saturating_sub(1);
            }
            walk[k].push(place.user.clone());
            walked.push((k, place.user.clone(), place.score));
            head = Some(place);
        }

        // 4. On each stripe: the walked places, present ones admitted, absent ones passed
        // over; then what its polls read.
        let mut before = 0u64;
        let mut own_before = vec![0u64; stripes.len()];
        let mut published: Vec<Published> = vec![
            Published {
                tick: now,
                head: head.clone(),
                halted: halted.map(|h| h.as_str().to_owned()),
                speed: self.pace.lock().ok().and_then(|pace| pace.speed(now)),
                ..Published::default()
            };
            stripes.len()
        ];
        for segment in &every {
            let mut within = 0;
            for (k, of_stripe) in counts.iter().enumerate() {
                let count = of_stripe.get(segment).copied().unwrap_or(0);
                if count > 0 {
                    published[k]
                        .ahead
                        .insert(*segment, before + within - own_before[k]);
                }
                within += count;
                own_before[k] += count;
            }
            before += within;
        }
        let age_ms = clock.now_ms() - now;
        if age_ms > DECIDED_FOR.as_millis() as i64 {
            return Ok(Ticked {
                refused: Some(TickRefused::Stale { age_ms }),
                opened: opens_now.then_some(members),
                ..Ticked::default()
            });
        }
        let mut batch = Batch::new();
        let mut applied: Vec<(usize, Staged<ApplyReply>)> = Vec::new();
        for (k, keys) in stripes.iter().enumerate() {
            let empty: Vec<i64> = counts[k]
                .iter()
                .filter(|(_, count)| **count == 0)
                .map(|(segment, _)| *segment)
                .collect();
            let chunks: Vec<&[String]> = if walk[k].is_empty() {
                vec![&[]]
            } else {
                walk[k].chunks(APPLY_CHUNK).collect()
            };
            let last = chunks.len() - 1;
            for (c, chunk) in chunks.into_iter().enumerate() {
                let mut call = ScriptCall::of(&APPLY);
                call.named_key("LINE", &keys.line)
                    .named_key("ACTIVE", &keys.active)
                    .named_key("SEGMENTS", &keys.segments)
                    .named_key("SEALED", &keys.sealed)
                    .named_key("PUBLISHED", &keys.published)
                    .named_key("FENCE", &keys.fence)
                    .named_key("HALT", &keys.halt);
                for user in chunk {
                    call.named_key("marks", keys.mark(user));
                }
                let closing = c == last;
                call.named("now", now)
                    .named("session_ms", ms(self.shape.session))
                    .named("keep_ms", ms(self.shape.keep))
                    .named(
                        "sealed",
                        if closing {
                            seal_at.to_string()
                        } else {
                            String::new()
                        },
                    )
                    .named(
                        "published",
                        if closing {
                            serde_json::to_string(&published[k]).unwrap_or_default()
                        } else {
                            String::new()
                        },
                    )
                    .named("fence", fence.0)
                    .named("walk_count", chunk.len())
                    .named("empty_count", if closing { empty.len() } else { 0 });
                for user in chunk {
                    call.named("lists", user.as_str());
                }
                if closing {
                    for segment in &empty {
                        call.named("lists", *segment);
                    }
                }
                applied.push((k, batch.stage(call)));
            }
        }
        let replies = self.conn.send(&batch).await?;
        let mut ticked = Ticked {
            halted,
            live,
            placed: before,
            opened: opens_now.then_some(members),
            ..Ticked::default()
        };
        // What each stripe really moved (a buyer who left meanwhile is not), in the walk's order.
        let mut moved: Vec<(BTreeSet<String>, BTreeSet<String>)> =
            vec![Default::default(); stripes.len()];
        for (k, staged) in &applied {
            match staged.read(&replies)? {
                ApplyReply::Applied { admitted, dropped } => {
                    moved[*k].0.extend(admitted);
                    moved[*k].1.extend(dropped);
                }
                ApplyReply::Fenced(by) => ticked.refused = Some(TickRefused::Fenced { by }),
                ApplyReply::Halted(why) => ticked.halted = why.or(Some(Halt::Paused)),
            }
        }
        ticked.until = now + ms(self.shape.session) as i64;
        for (k, user, score) in walked {
            let (admits, drops) = &moved[k];
            if admits.contains(&user) {
                ticked.scores.insert(user.clone(), score);
                ticked.admitted.push(user);
            } else if drops.contains(&user) {
                ticked.scores.insert(user.clone(), score);
                ticked.dropped.push(user);
            }
        }
        ticked.live += ticked.admitted.len() as u64;
        if ticked.refused.is_none() {
            if let Ok(mut pace) = self.pace.lock() {
                pace.record(now, live, ticked.dropped.len() as u64, ticked.live);
            }
        }
        // The counts after the tick, for the queue's summary: one command more, to the line's
        // own tag.
        if ticked.refused.is_none() {
            self.write_counts(&super::Counts {
                tick: now,
                waiting: ticked.placed,
                active: ticked.live,
            })
            .await?;
        }
        Ok(ticked)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_apply_binds_its_keys_and_arguments_as_named() {
        crate::store::bindings::assert_binds(include_str!("apply.lua"), &super::APPLY);
    }
}
