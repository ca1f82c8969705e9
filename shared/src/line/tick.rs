//! The line's tick, the only writer of admissions from the line (in passthrough a join admits
//! on arrival, within the allowance the tick gives each stripe: [`allotments`](super::allowance::allotments)): four round
//! trips, each one pipeline over
//! every stripe, and one command to the line's own tag with the counts it leaves. It reads
//! every stripe's sessions and segments; counts each sealed segment's places, and from the
//! counts works out how many places of each stripe's head the free room reaches; reads exactly
//! those; then on each stripe admits the present ones of them and passes over the absent ones,
//! in calls of at most [`APPLY_CHUNK`](super::apply::APPLY_CHUNK), and publishes what that stripe's polls read
//! (`apply.lua`). What it reads and writes grows with what it admits, not with the line.
//!
//! A stripe whose shard does not answer (a primary failing over) is dark for the tick: its
//! places are neither walked nor passed, its head stays where it was, and the other stripes
//! are walked without it. Its live sessions count as this container's last tick left them,
//! so capacity holds; a tick that has no such count admits nobody. Its places, the earliest
//! in the line once it answers again, are walked first then. The draw waits for every stripe.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::apply::{Apply, ApplyReply};
use super::fence::Fence;
use super::halt::Halt;
use super::handle::Line;
use super::keys::{Stripe, StripeKeys};
use super::seen::{Heads, Seen};
use super::shape::{ms, Place, Published};
use super::ticked::{Room, TickRefused, Ticked};
use crate::clock::Clock;
use crate::error::Error;
use crate::store::{Batch, Staged};

/// The most places a tick reads from the head of each stripe: it walks at most this many of one
/// stripe per tick.
pub const HEAD_WINDOW: u64 = 1000;

/// How long a tick's choice holds: a tick that reaches its writes later than this after its
/// reads writes nothing, and says how late it was.
pub const DECIDED_FOR: Duration = Duration::from_secs(2);

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
        let room = Room {
            capacity,
            most: u64::MAX,
            passthrough: false,
            lane_before_opening: false,
        };
        self.tick_paced(fence, clock, room).await
    }

    /// One tick, under the lease `fence`, by `clock`, within `room`.
    pub async fn tick_paced(
        &self,
        fence: Fence,
        clock: &dyn Clock,
        room: Room,
    ) -> Result<Ticked, Error> {
        let Room {
            capacity,
            most,
            passthrough,
            lane_before_opening,
        } = room;
        let now = clock.now_ms();
        let session_ms = self.session_ms();
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

        // What this container's last tick found, if it ran under this same lease: no other
        // holder has written since.
        let seen = match self.seen.lock() {
            Ok(seen) if seen.fence == Some(fence) => seen.clone(),
            _ => Seen::default(),
        };

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
            // The last place walked on this stripe, as the stripe's polls read it, where this
            // container does not know it.
            let published: Option<Staged<Option<Published>>> = seen
                .heads
                .get(heads.len())
                .is_none_or(Option::is_none)
                .then(|| {
                    batch.stage_command(
                        &keys.published,
                        redis::cmd("GET").arg(&keys.published).clone(),
                    )
                });
            let queued: Staged<u64> =
                batch.stage_command(&keys.line, redis::cmd("ZCARD").arg(&keys.line).clone());
            let allowed: Staged<Option<u64>> =
                batch.stage_command(&keys.allow, redis::cmd("GET").arg(&keys.allow).clone());
            heads.push((live, segments, halt, published, queued, allowed));
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
        let replies = self.conn.send_each(&batch).await?;
        // A stripe whose shard did not answer is dark for this tick: its places wait, and
        // the others are walked without them.
        let mut dark = vec![false; stripes.len()];
        let mut first_err = None;
        for (k, (live, segments, halt, published, _, allowed)) in heads.iter().enumerate() {
            if let Err(err) = live
                .read_each(&replies)
                .and(allowed.read_each(&replies).map(drop))
                .and(segments.read_each(&replies).map(drop))
                .and(halt.read_each(&replies).map(drop))
                .and(match published {
                    Some(published) => published.read_each(&replies).map(drop),
                    None => Ok(()),
                })
            {
                dark[k] = true;
                first_err.get_or_insert(err);
            }
        }
        if let Some(err) = first_err.filter(|_| dark.iter().all(|d| *d)) {
            return Err(err.into());
        }
        if let Some(opening) = self.opening.as_ref().filter(|_| draw_waits) {
            // A dark stripe may hold draw places not sealed yet: the draw waits for it.
            let mut sealed_past = !dark.contains(&true);
            if sealed_past {
                for seal in &seals {
                    sealed_past &= seal.read_each(&replies)?.is_some_and(|at| at >= opening.at);
                }
            }
            if sealed_past {
                self.draw_open.store(true, Ordering::Relaxed);
            }
        }
        let opens_now = draw_waits && self.draw_open.load(Ordering::Relaxed);
        // The segments this tick may admit from: the main line's before `sealed`, once the
        // draw is open (none before: the draw's segments lie below every arrival's); the
        // priority lane's before `lane_sealed`, from then too, or at once where the lane goes
        // before the opening. Each ended `seal` ago.
        let sealed_at = now - self.shape.seal.as_millis() as i64;
        let opened = self.draw_open.load(Ordering::Relaxed) || self.opening.is_none();
        let sealed = if opened {
            self.segment_of(sealed_at)
        } else {
            i64::MIN
        };
        let lane_sealed = if opened || lane_before_opening {
            self.segment_of(super::shape::LANE_BASE + sealed_at)
        } else {
            i64::MIN
        };
        let admissible = |segment: i64| {
            if super::shape::is_lane_segment(segment) {
                segment < lane_sealed
            } else {
                segment < sealed
            }
        };
        // The segments this tick counts: those it may admit from, and the lane's sealed ones
        // before the opening too, so a lane place sees its position while it waits for the
        // opening (it is admitted from then on).
        let lane_counted = self.segment_of(super::shape::LANE_BASE + sealed_at);
        let counted_segment = |segment: i64| {
            admissible(segment)
                || (super::shape::is_lane_segment(segment) && segment < lane_counted)
        };
        // Each stripe's live sessions: a dark one's as this container's last tick left them
        // (sessions only end while nobody admits there). Without that, the room is unknown.
        let mut live = 0;
        let mut live_of = vec![0u64; stripes.len()];
        let mut room_known = true;
        let mut segments: Vec<BTreeSet<i64>> = Vec::new();
        let mut halted: Option<Halt> = None;
        // Each stripe's head: the last place walked on it. A stripe's polls take a place at or
        // before it to be walked; so a stripe left dark while the others were walked keeps
        // its own, and its places wait, not passed.
        let mut head: Vec<Option<Heads>> = (0..stripes.len())
            .map(|k| seen.heads.get(k).cloned().flatten())
            .collect();
        // Every place on the stripes that answer, counted or not: what `maxWaiting` holds to.
        let mut queued = 0;
        // Each stripe's admissions on arrival left (passthrough): room held as sessions are.
        let mut allowed_of = vec![0u64; stripes.len()];
        for (
            k,
            (
                staged_live,
                staged_segments,
                staged_halt,
                staged_published,
                staged_queued,
                staged_allowed,
            ),
        ) in heads.iter().enumerate()
        {
            if dark[k] {
                match (
                    seen.live.get(k).copied().flatten(),
                    seen.allowed.get(k).copied().flatten(),
                ) {
                    (Some(live), Some(allowed)) => (live_of[k], allowed_of[k]) = (live, allowed),
                    _ => room_known = false,
                }
                live += live_of[k];
                segments.push(BTreeSet::new());
                continue;
            }
            if let Some(published) = staged_published {
                let published = published.read_each(&replies)?.unwrap_or_default();
                head[k] = Some(Heads {
                    main: published.head,
                    lane: published.lane_head,
                });
            }
            queued += staged_queued.read_each(&replies)?;
            live_of[k] = staged_live.read_each(&replies)?;
            allowed_of[k] = staged_allowed.read_each(&replies)?.unwrap_or(0);
            live += live_of[k];
            segments.push(staged_segments.read_each(&replies)?.into_iter().collect());
            if let Some(why) = staged_halt.read_each(&replies)? {
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
                    .filter(|s| counted_segment(**s))
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
        let replies = self.conn.send_each(&batch).await?;
        // counts[k][segment]: the places of stripe k in each sealed segment; none of a stripe
        // gone dark since.
        let mut counts: Vec<BTreeMap<i64, u64>> = Vec::new();
        for (k, staged) in counted.iter().enumerate() {
            let mut of_stripe = BTreeMap::new();
            for (segment, count) in staged {
                match count.read_each(&replies) {
                    Ok(count) => {
                        of_stripe.insert(*segment, count);
                    }
                    Err(_) => {
                        dark[k] = true;
                        of_stripe.clear();
                        break;
                    }
                }
            }
            counts.push(of_stripe);
        }
        // The draw's places (its segments are below zero), before the walk takes any.
        let members: u64 = counts
            .iter()
            .flat_map(|of_stripe| {
                of_stripe
                    .range(..0)
                    .filter(|(segment, _)| !super::shape::is_lane_segment(**segment))
                    .map(|(_, count)| count)
            })
            .sum();
        // How far into each stripe's head the free room reaches: the line's first `free`
        // places, segment by segment, stripe by stripe.
        // A halted line admits nobody, whatever the room.
        let held = live + allowed_of.iter().sum::<u64>();
        let free = if halted.is_some() || !room_known {
            0
        } else {
            capacity.saturating_sub(held).min(most)
        };
        let every: BTreeSet<i64> = counts.iter().flat_map(|c| c.keys().copied()).collect();
        let mut reach = vec![0u64; stripes.len()];
        let mut left = free;
        for segment in every.iter().filter(|s| admissible(**s)) {
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
            .zip(&dark)
            .map(|((keys, reach), dark)| {
                let window = (reach + 1).min(HEAD_WINDOW);
                (free > 0 && !dark).then(|| {
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
        let replies = self.conn.send_each(&batch).await?;
        let mut places: Vec<Place> = Vec::new();
        // The walk goes no further than the last place read of a stripe that filled its window:
        // the stripe may have more after it.
        let mut known_to: Option<Place> = None;
        for (k, window) in windows.iter().enumerate() {
            let Some((window, staged)) = window else {
                continue;
            };
            let Ok(read) = staged.read_each(&replies) else {
                dark[k] = true;
                counts[k].clear();
                continue;
            };
            let read: Vec<Place> = read
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
            places.extend(read.into_iter().filter(|p| admissible(p.segment)));
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
            let heads = head[k].get_or_insert_with(Heads::default);
            if super::shape::is_lane(place.score) {
                heads.lane = Some(place);
            } else {
                heads.main = Some(place);
            }
        }

        // The room the walk leaves, for admissions on arrival (passthrough): each stripe's
        // allowance moves toward an equal share ([`allotments`](super::allowance::allotments)). Otherwise, or while halted,
        // every allowance is taken back.
        let grants: Vec<i64> = if passthrough && halted.is_none() && room_known {
            let budget = capacity.saturating_sub(live + walked.len() as u64);
            super::allowance::allotments(&allowed_of, &dark, budget, now.div_euclid(1000) as usize)
        } else {
            allowed_of.iter().map(|a| -(*a as i64)).collect()
        };

        // 4. On each stripe: the walked places, present ones admitted, absent ones passed
        // over; then what its polls read, and its allowance.
        let mut before = 0u64;
        let mut own_before = vec![0u64; stripes.len()];
        let speed = self.pace.lock().ok().and_then(|pace| pace.speed(now));
        let mut published: Vec<Published> = head
            .iter()
            .map(|head| Published {
                tick: now,
                head: head.as_ref().and_then(|h| h.main.clone()),
                lane_head: head.as_ref().and_then(|h| h.lane.clone()),
                halted: halted.map(|h| h.as_str().to_owned()),
                speed,
                ..Published::default()
            })
            .collect();
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
        for (k, keys) in stripes.iter().enumerate().filter(|(k, _)| !dark[*k]) {
            let empty: Vec<i64> = counts[k]
                .iter()
                .filter(|(_, count)| **count == 0)
                .map(|(segment, _)| *segment)
                .collect();
            let apply = Apply {
                now,
                session_ms,
                keep_ms: ms(self.shape.keep),
                seal_at,
                published: serde_json::to_string(&published[k]).unwrap_or_default(),
                fence,
                walk: &walk[k],
                empty: &empty,
                grant: grants[k],
            };
            applied.extend(
                apply
                    .stage(keys, &mut batch)
                    .into_iter()
                    .map(|staged| (k, staged)),
            );
        }
        let replies = self.conn.send_each(&batch).await?;
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
        // The stripes where a call of the walk was refused (halted, fenced): their published
        // state was not written as this tick chose it.
        let mut refused = vec![false; stripes.len()];
        for (k, staged) in &applied {
            // A stripe gone dark at its writes: what its script did, if it ran, is not known
            // here; it is reported when its stripe answers again (a poll, the gate).
            let Ok(reply) = staged.read_each(&replies) else {
                dark[*k] = true;
                continue;
            };
            match reply {
                ApplyReply::Applied { admitted, dropped } => {
                    moved[*k].0.extend(admitted);
                    moved[*k].1.extend(dropped);
                }
                ApplyReply::Fenced(by) => {
                    refused[*k] = true;
                    ticked.refused = Some(TickRefused::Fenced { by });
                }
                ApplyReply::Halted(why) => {
                    refused[*k] = true;
                    ticked.halted = why.or(Some(Halt::Paused));
                }
            }
        }
        ticked.until = now + session_ms as i64;
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
        let walked_count = (ticked.admitted.len() + ticked.dropped.len()) as u64;
        ticked.dark = (0..stripes.len())
            .filter(|k| dark[*k])
            .map(|k| Stripe(k as u16))
            .collect();
        if ticked.refused.is_none() {
            if let Ok(mut pace) = self.pace.lock() {
                pace.record(now, live, ticked.dropped.len() as u64, ticked.live);
            }
            if let Ok(mut kept) = self.seen.lock() {
                let mut live = seen.live;
                live.resize(stripes.len(), None);
                let mut allowed = seen.allowed;
                allowed.resize(stripes.len(), None);
                for k in (0..stripes.len()).filter(|k| !dark[*k]) {
                    live[k] = Some(live_of[k] + moved[k].0.len() as u64);
                    allowed[k] = Some(allowed_of[k] + grants[k].max(0) as u64);
                }
                // A dark stripe's head is read again once it answers (a replica that took over
                // may hold less than its primary had), and a refused one's: it kept its own.
                for k in (0..stripes.len()).filter(|k| dark[*k] || refused[*k]) {
                    head[k] = None;
                }
                *kept = Seen {
                    fence: Some(fence),
                    live,
                    allowed,
                    heads: head,
                };
            }
        }
        // The counts after the tick, for the queue's summary: one command more, to the line's
        // own tag. Its shard may be the one down: the admissions stand, and are reported.
        if ticked.refused.is_none() {
            let counts = super::counts::Counts {
                tick: now,
                waiting: ticked.placed,
                active: ticked.live,
                queued: queued.saturating_sub(walked_count),
            };
            if let Err(err) = self.write_counts(&counts).await {
                tracing::warn!(queue = %self.queue, %err, "a line's counts were not written");
            }
        }
        Ok(ticked)
    }
}
