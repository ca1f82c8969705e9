//! The line's tick, the only writer of admissions: three round trips, each one pipeline per
//! stripe, all stripes at once. It reads every stripe's sessions, segments and head; counts
//! each sealed segment's places and reads the head's marks; then on each stripe admits and
//! passes over what it chose, marks them, and publishes what that stripe's polls read
//! (`apply.lua`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use redis::{FromRedisValue, ParsingError, Value};

use std::sync::atomic::Ordering;
use std::time::Duration;

use super::lease::Fence;
use super::{ms, Line, Place, Published, Stripe, StripeKeys, DRAW_SEGMENT};
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
        "marks…",
    ],
    &[
        "now",
        "session_ms",
        "keep_ms",
        "sealed",
        "published",
        "fence",
        "admit_count",
        "drop_count",
        "empty_count",
        "lists…",
    ],
);

/// The most places a tick reads from the head of each stripe: it admits at most this many
/// from one stripe, and passes over at most this many absent ones, per tick.
pub const HEAD_WINDOW: u64 = 1000;

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
    /// Live sessions after the tick.
    pub live: u64,
    /// Places in sealed segments after the tick.
    pub placed: u64,
}

/// Why a tick wrote nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TickRefused {
    /// Its reads were `age_ms` old when it came to write: more than [`DECIDED_FOR`].
    Stale { age_ms: i64 },
    /// A newer lease's tick has written a stripe: that fence is higher than this tick's.
    Fenced { by: Fence },
}

/// `apply.lua`'s reply: `{'applied', admitted users, dropped users}` or `{'fenced', fence}`.
enum Applied {
    Applied {
        admitted: Vec<String>,
        dropped: Vec<String>,
    },
    Fenced(Fence),
}

impl FromRedisValue for Applied {
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
            "applied" => Ok(Applied::Applied {
                admitted: FromRedisValue::from_redis_value(next()?)?,
                dropped: FromRedisValue::from_redis_value(next()?)?,
            }),
            "fenced" => Ok(Applied::Fenced(Fence(FromRedisValue::from_redis_value(
                next()?,
            )?))),
            other => Err(ParsingError::from(format!(
                "apply: unknown outcome {other}"
            ))),
        }
    }
}

/// What the first round trip read on one stripe.
struct Head {
    live: Staged<u64>,
    segments: Staged<Vec<i64>>,
    places: Staged<Vec<(String, f64)>>,
}

impl Line {
    /// One tick, under the lease `fence`, by `clock`, with room for `capacity` live sessions.
    pub async fn tick(
        &self,
        fence: Fence,
        clock: &dyn Clock,
        capacity: u64,
    ) -> Result<Ticked, Error> {
        let now = clock.now_ms();
        let stripes: Vec<(Stripe, &StripeKeys)> = (0..self.shape.stripes.max(1))
            .map(|k| (Stripe(k), self.keys(Stripe(k))))
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

        // 1. Sessions (the lapsed ones taken off first), segments and head, per stripe.
        let mut batch = Batch::new();
        let heads: Vec<Head> = stripes
            .iter()
            .map(|(_, keys)| {
                batch.stage_command::<u64>(
                    &keys.active,
                    redis::cmd("ZREMRANGEBYSCORE")
                        .arg(&keys.active)
                        .arg("-inf")
                        .arg(now)
                        .clone(),
                );
                Head {
                    live: batch.stage_command(
                        &keys.active,
                        redis::cmd("ZCOUNT")
                            .arg(&keys.active)
                            .arg(format!("({now}"))
                            .arg("+inf")
                            .clone(),
                    ),
                    segments: batch.stage_command(
                        &keys.segments,
                        redis::cmd("SMEMBERS").arg(&keys.segments).clone(),
                    ),
                    places: batch.stage_command(
                        &keys.line,
                        redis::cmd("ZRANGE")
                            .arg(&keys.line)
                            .arg(0)
                            .arg(HEAD_WINDOW - 1)
                            .arg("WITHSCORES")
                            .clone(),
                    ),
                }
            })
            .collect();
        let seals: Vec<Staged<Option<i64>>> = if draw_waits {
            stripes
                .iter()
                .map(|(_, keys)| {
                    batch.stage_command(&keys.sealed, redis::cmd("GET").arg(&keys.sealed).clone())
                })
                .collect()
        } else {
            Vec::new()
        };
        let before = stripes.first().map(|(_, keys)| {
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
        // The segments this tick may admit from: those before `sealed`.
        let sealed = if self.draw_open.load(Ordering::Relaxed) || self.opening.is_none() {
            self.segment_of(now - self.shape.seal.as_millis() as i64)
        } else {
            DRAW_SEGMENT
        };
        let mut live = 0;
        let mut segments: Vec<BTreeSet<i64>> = Vec::new();
        let mut places: Vec<Vec<Place>> = Vec::new();
        let mut complete: Vec<bool> = Vec::new();
        for ((stripe, _), head) in stripes.iter().zip(&heads) {
            live += head.live.read(&replies)?;
            segments.push(head.segments.read(&replies)?.into_iter().collect());
            let read = head.places.read(&replies)?;
            // Every sealed place of the stripe was read: the window was not full, or it
            // reached past the seal.
            complete.push(
                (read.len() as u64) < HEAD_WINDOW
                    || read
                        .last()
                        .is_some_and(|(_, score)| self.segment_of(*score as i64) >= sealed),
            );
            places.push(
                read.into_iter()
                    .map(|(user, score)| Place {
                        segment: self.segment_of(score as i64),
                        stripe: *stripe,
                        score: score as i64,
                        user,
                    })
                    .filter(|p| p.segment < sealed)
                    .collect(),
            );
        }

        // 2. Each sealed segment's places, and the presence of each head place.
        let mut batch = Batch::new();
        let mut counted: Vec<Vec<(i64, Staged<u64>)>> = Vec::new();
        let mut marks: Vec<Option<Staged<Vec<Option<String>>>>> = Vec::new();
        for (k, (_, keys)) in stripes.iter().enumerate() {
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
            marks.push((!places[k].is_empty()).then(|| {
                let mut mget = redis::cmd("MGET");
                for place in &places[k] {
                    mget.arg(keys.seen(&place.user));
                }
                batch.stage_command(&keys.line, mget)
            }));
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
        let mut present: Vec<Vec<bool>> = Vec::new();
        for mark in &marks {
            present.push(match mark {
                Some(staged) => staged.read(&replies)?.iter().map(Option::is_some).collect(),
                None => Vec::new(),
            });
        }

        // The walk: the head places in order, as far as every stripe's head is known.
        let known_to = places
            .iter()
            .zip(&complete)
            .filter(|(_, complete)| !**complete)
            .filter_map(|(places, _)| places.last().cloned())
            .min();
        let mut order: Vec<(Place, bool)> = places
            .into_iter()
            .zip(present)
            .flat_map(|(places, present)| places.into_iter().zip(present))
            .collect();
        order.sort();
        let free = capacity.saturating_sub(live);
        let mut admit: Vec<Vec<String>> = vec![Vec::new(); stripes.len()];
        let mut drop: Vec<Vec<String>> = vec![Vec::new(); stripes.len()];
        let mut admitting = 0;
        // The walk's choices in the line's order: (stripe, user, admitted).
        let mut walked: Vec<(usize, String, bool)> = Vec::new();
        for (place, present) in order {
            if admitting >= free || known_to.as_ref().is_some_and(|last| place > *last) {
                break;
            }
            let k = place.stripe.0 as usize;
            if let Some(count) = counts[k].get_mut(&place.segment) {
                *count = count.saturating_sub(1);
            }
            walked.push((k, place.user.clone(), present));
            if present {
                admit[k].push(place.user.clone());
                admitting += 1;
            } else {
                drop[k].push(place.user.clone());
            }
            head = Some(place);
        }

        // 3. On each stripe: the admissions, the passed over, and what its polls read.
        let every: BTreeSet<i64> = counts.iter().flat_map(|c| c.keys().copied()).collect();
        let mut before = 0u64;
        let mut own_before = vec![0u64; stripes.len()];
        let mut published: Vec<Published> = vec![
            Published {
                tick: now,
                head: head.clone(),
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
                ..Ticked::default()
            });
        }
        let mut batch = Batch::new();
        let applied: Vec<Staged<Applied>> = stripes
            .iter()
            .enumerate()
            .map(|(k, (_, keys))| {
                let empty: Vec<i64> = counts[k]
                    .iter()
                    .filter(|(_, count)| **count == 0)
                    .map(|(segment, _)| *segment)
                    .collect();
                let mut call = ScriptCall::of(&APPLY);
                call.named_key("LINE", &keys.line)
                    .named_key("ACTIVE", &keys.active)
                    .named_key("SEGMENTS", &keys.segments)
                    .named_key("SEALED", &keys.sealed)
                    .named_key("PUBLISHED", &keys.published)
                    .named_key("FENCE", &keys.fence);
                for user in admit[k].iter().chain(&drop[k]) {
                    call.named_key("marks", keys.seen(user));
                }
                call.named("now", now)
                    .named("session_ms", ms(self.shape.session))
                    .named("keep_ms", ms(self.shape.keep))
                    .named("sealed", seal_at)
                    .named(
                        "published",
                        serde_json::to_string(&published[k]).unwrap_or_default(),
                    )
                    .named("fence", fence.0)
                    .named("admit_count", admit[k].len())
                    .named("drop_count", drop[k].len())
                    .named("empty_count", empty.len());
                for user in admit[k].iter().chain(&drop[k]) {
                    call.named("lists", user.as_str());
                }
                for segment in &empty {
                    call.named("lists", *segment);
                }
                batch.stage(call)
            })
            .collect();
        let replies = self.conn.send(&batch).await?;
        let mut ticked = Ticked {
            live,
            placed: before,
            ..Ticked::default()
        };
        // What each stripe really moved (a buyer who left meanwhile is not), in the walk's order.
        let mut moved: Vec<(BTreeSet<String>, BTreeSet<String>)> = Vec::new();
        for staged in &applied {
            match staged.read(&replies)? {
                Applied::Applied { admitted, dropped } => moved.push((
                    admitted.into_iter().collect(),
                    dropped.into_iter().collect(),
                )),
                Applied::Fenced(by) => {
                    ticked.refused = Some(TickRefused::Fenced { by });
                    moved.push(Default::default());
                }
            }
        }
        for (k, user, admitted) in walked {
            let (admits, drops) = &moved[k];
            if admitted && admits.contains(&user) {
                ticked.admitted.push(user);
            } else if !admitted && drops.contains(&user) {
                ticked.dropped.push(user);
            }
        }
        ticked.live += ticked.admitted.len() as u64;
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
