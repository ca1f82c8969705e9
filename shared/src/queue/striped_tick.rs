//! The promoter's tick on the striped line: each queue's line ticked under this container's
//! lease, with the capacity in force (its settings' capacity, ramp and health level:
//! `striped_pace`), reported as the single-tag queue's promotion is.

use std::time::Duration;

use futures::future::join_all;

use super::keys::QueueKeys;
use super::pace::{LimitedBy, TickPace};
use super::pool::PoolReport;
use super::schedule;
use super::striped::instant;
use super::striped_pace::pace_mark;
use super::terms::{Draw, Terms};
use super::{
    Mode, PromotionReport, QueueEvent, QueueEventKind, QueuePromotion, WaitingRoom, LINE_ALARM,
    LINE_POOL,
};
use crate::error::Error;
use crate::ids::QueueId;
use crate::line::{self, Halt, Lease, Line, Lines, Room};
use crate::store::{Batch, Staged};

/// How long a promoter's lease on a line lasts unless renewed: three ticks.
pub const LEASE_FOR: Duration = Duration::from_secs(3);

/// How many queues' lines a promoter ticks at once.
const TICKING_AT_ONCE: usize = 32;

/// `HSETNX key field value`: a settings mark written once, whose reply says whether this
/// call wrote it.
fn set_once(key: &str, field: &str, value: impl redis::ToRedisArgs) -> redis::Cmd {
    redis::cmd("HSETNX").arg(key).arg(field).arg(value).clone()
}

impl WaitingRoom {
    /// One tick of each queue's line, under this container's lease: a queue whose lease
    /// another promoter holds is left to it. [`TICKING_AT_ONCE`] queues tick at once. A queue
    /// whose tick fails (its own tag's shard failing over) is logged and left to the next
    /// tick; the others are reported. Only when every queue's tick fails does this.
    pub(super) async fn tick_lines(
        &self,
        lines: &Lines,
        queues: &[QueueId],
    ) -> Result<PromotionReport, Error> {
        let mut report = PromotionReport::default();
        // The states of the alarms the queues name, read once a tick (one MGET under
        // `{health}`), and each pool's ledger, with its queues' reports from the last tick
        // (pool.rs PoolWatch), in one send; a failed send leaves the last ones.
        let mut batch = Batch::new();
        let alarms = self.alarms.stage_read(&self.prefix, &mut batch);
        let ledgers = self.pools.stage_ledgers(&self.prefix, &mut batch);
        if !batch.is_empty() {
            match self.conn.send(&batch).await {
                Ok(replies) => {
                    if let Some(staged) = &alarms {
                        self.alarms.record(staged, &replies)?;
                    }
                    self.pools.record(&ledgers, &replies)?;
                }
                Err(err) => tracing::warn!(%err, "the alarms and the pools' ledgers were not read"),
            }
        }
        let mut failed = None;
        for some in queues.chunks(TICKING_AT_ONCE) {
            let ticked = join_all(some.iter().map(|queue| self.tick_line(lines, queue))).await;
            for (queue, ticked) in some.iter().zip(ticked) {
                match ticked {
                    Ok(ticked) => report.queues.extend(ticked),
                    Err(err) => {
                        tracing::warn!(%queue, %err, "a line's tick failed");
                        failed.get_or_insert(err);
                    }
                }
            }
        }
        match failed {
            Some(err) if report.queues.is_empty() => Err(err),
            _ => Ok(report),
        }
    }

    /// Records that `queue`'s draw opened with `members` places, once: the summary shows the
    /// count from then on, and the first tick to record it publishes `QueueOpened` with the
    /// draw (one round trip to the queue's settings, two `HSETNX`). A promoter that takes
    /// the lease over after the opening records nothing new.
    async fn line_opened(
        &self,
        queue: &QueueId,
        draw: &Draw,
        members: u64,
    ) -> Result<Option<QueueEvent>, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut batch = Batch::new();
        batch.stage_command::<bool>(&key, set_once(&key, "draw-members", members));
        let announced: Staged<bool> =
            batch.stage_command(&key, set_once(&key, "draw-announced", 1));
        let replies = self.conn.send(&batch).await?;
        if !announced.read(&replies)? {
            return Ok(None);
        }
        Ok(Some(QueueEvent::opened_by_draw(
            queue,
            schedule::Draw {
                seed_sha256: draw.commitment.clone(),
                seed: Some(draw.seed.hex()),
                members: Some(members),
            },
        )))
    }

    /// Takes the alarms `queue` names into its health level, as `promote.lua` does for the
    /// single-tag queue: when what this promoter last read of them (an alarm in ALARM, or
    /// none) differs from the level the settings hold, `line_alarm.lua` writes the change.
    /// An alarm halts every stripe at once (the health's halt, never over another). The
    /// names are learned from the settings, so a queue's alarms are read from its second
    /// tick. Whether it wrote a change.
    async fn line_alarm(&self, queue: &QueueId, terms: &Terms, line: &Line) -> Result<bool, Error> {
        self.alarms.learn(queue, &terms.alarm_names);
        let (verdict, names) = self.alarms.argument(queue);
        let alarmed = terms.health.alarm.as_deref() == Some("0");
        if verdict.is_empty() || names != terms.alarm_names || (verdict == "0") == alarmed {
            return Ok(false);
        }
        let mut call = self.invocation(&LINE_ALARM, queue);
        call.named("alarm", verdict).named("alarm_names", names);
        let mut batch = Batch::new();
        let wrote: Staged<bool> = batch.stage(call);
        if verdict == "0" {
            line.stage_halt(&mut batch, Halt::Unhealthy);
        }
        let replies = self.conn.send(&batch).await?;
        Ok(wrote.read(&replies)?)
    }

    /// Takes the pool ledger's last word for `queue`, in a pool, as `promote.lua` does for
    /// the single-tag queue (`line_pool.lua`, one small script under the queue's tag): a
    /// newer grant raises its allotment, a shrink lowers it, and the pool's health signal is
    /// taken. Only when there is a word. Whether it took one.
    async fn line_pool_word(&self, queue: &QueueId, terms: &Terms) -> Result<bool, Error> {
        let Some(pool) = &terms.pool else {
            return Ok(false);
        };
        let word = self.pools.word(queue);
        if word.pool != pool.as_str()
            || (word.grant.is_empty() && word.shrink.is_empty() && word.signal.is_empty())
        {
            return Ok(false);
        }
        let mut call = self.invocation(&LINE_POOL, queue);
        call.named("grant", word.grant)
            .named("shrink", word.shrink)
            .named("pool_signal", word.signal)
            .named("word_pool", word.pool);
        let _: redis::Value = self.conn.invoke(call).await?;
        Ok(true)
    }

    /// What the queue's tick publishes beside its admissions, each once, as `promote.lua` does
    /// for the single-tag queue: `QueuePaceChanged` when the ramp's step or the health level
    /// in tenths moved since the last one (`pace-announced`), and `QueueClosed` once
    /// `closesAt` has passed (`closes-announced`). With them, where the queue's first buyer
    /// made its settings and anyone is on its line (`held`), the settings' end is put back
    /// (`striped_open`). Nothing to send most ticks; else one round trip to the queue's
    /// settings. Only the lease holder writes either mark.
    async fn line_announcements(
        &self,
        queue: &QueueId,
        terms: &Terms,
        now: i64,
        held: bool,
    ) -> Result<Vec<QueueEvent>, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut batch = Batch::new();
        let mut events = Vec::new();
        if terms.by_arrival && held {
            self.stage_keep_open(&mut batch, queue);
        }
        let health = terms.health(now);
        let stepped = terms.stepped_capacity(self.config.room.capacity, now);
        let mark = pace_mark(stepped, terms.ramp.is_some(), health);
        if mark != terms.pace_announced {
            let write = match &mark {
                Some(mark) => redis::cmd("HSET")
                    .arg(&key)
                    .arg("pace-announced")
                    .arg(mark)
                    .clone(),
                None => redis::cmd("HDEL").arg(&key).arg("pace-announced").clone(),
            };
            batch.stage_command::<u64>(&key, write);
            let configured = terms.capacity.unwrap_or(self.config.room.capacity);
            let admit = terms
                .admit_per_tick
                .unwrap_or(self.config.room.admit_per_tick);
            events.push(QueueEvent::pace_changed(
                queue,
                TickPace {
                    capacity: u32::try_from(stepped).unwrap_or(u32::MAX),
                    configured_capacity: configured,
                    limited_by: if stepped < u64::from(configured) {
                        LimitedBy::Ramp
                    } else {
                        LimitedBy::Capacity
                    },
                    admit_per_tick: health.level * f64::from(admit),
                    configured_admit_per_tick: admit,
                    health,
                },
            ));
        }
        let closing = terms.closes_at.is_some_and(|at| now >= at) && !terms.closes_announced;
        let closed = closing
            .then(|| batch.stage_command::<bool>(&key, set_once(&key, "closes-announced", 1)));
        if batch.is_empty() {
            return Ok(events);
        }
        let replies = self.conn.send(&batch).await?;
        if let Some(closed) = closed {
            if closed.read(&replies)? {
                events.push(QueueEvent::of_queue(QueueEventKind::Closed, queue));
            }
        }
        Ok(events)
    }

    /// One tick of `queue`'s line, if this container holds or takes its lease: the queue's
    /// settings (one `HMGET`, fresh; while their shard does not answer, those held), the
    /// lease (one small script) and the tick.
    async fn tick_line(
        &self,
        lines: &Lines,
        queue: &QueueId,
    ) -> Result<Option<QueuePromotion>, Error> {
        let now = self.clock.now_ms();
        let terms = self.fresh_terms(queue, now).await?;
        let (mut terms, line) = self.line_for(lines, queue, terms);
        let Lease::Granted(fence) = line.lease(lines.holder(), LEASE_FOR).await? else {
            // Another promoter ticks it, and reports it to its pool.
            self.pools.learn(queue, None);
            return Ok(None);
        };
        let alarmed = self.line_alarm(queue, &terms, &line).await?;
        let pooled = self.line_pool_word(queue, &terms).await?;
        if alarmed || pooled {
            terms = self.fresh_terms(queue, now).await?;
        }
        // A queue whose settings are gone admits nobody: an operator closed it (its line is
        // empty), or a failover lost them, and the environment's defaults are nobody's.
        let room = match terms.created {
            true => Room {
                capacity: terms.capacity(self.config.room.capacity, now),
                most: terms.admissions(self.config.room.admit_per_tick, now),
                passthrough: terms.mode == Mode::Passthrough,
                lane_before_opening: terms.lane_before_opening,
            },
            false => Room {
                capacity: 0,
                most: 0,
                passthrough: false,
                lane_before_opening: false,
            },
        };
        let ticked = line.tick_paced(fence, &*self.clock, room).await?;
        // A queue in a pool reports to its ledger, for the next tick's word.
        let report = terms.pool.clone().map(|pool| {
            PoolReport::new(
                pool,
                terms.pool_allot,
                ticked.live,
                ticked.placed,
                u32::try_from(terms.stepped_capacity(self.config.room.capacity, now))
                    .unwrap_or(u32::MAX),
            )
        });
        self.pools.learn(queue, report);
        if let Some(refused) = ticked.refused {
            tracing::warn!(%queue, ?refused, "a line's tick wrote nothing");
        }
        if !ticked.dark.is_empty() {
            tracing::warn!(
                %queue,
                stripes = ticked.dark.len(),
                "a line's tick went on without the stripes that did not answer"
            );
        }
        // What follows the admissions does not undo them: where it fails, the admissions are
        // still reported, and it is logged.
        // The health's halt stays while the level is 0; once it rises, the stripes are
        // cleared of it, and the next tick admits within the level (or a later one, if this
        // fails).
        if ticked.halted == Some(Halt::Unhealthy) && terms.health(now).level > 0.0 {
            if let Err(err) = line.clear(Halt::Unhealthy).await {
                tracing::warn!(%queue, %err, "the health's halt was not cleared");
            }
        }
        let mut events: Vec<QueueEvent> = Vec::new();
        if let (Some(members), Some(draw)) = (ticked.opened, terms.draw.as_ref()) {
            match self.line_opened(queue, draw, members).await {
                Ok(opened) => events.extend(opened),
                Err(err) => tracing::error!(%queue, %err, "the opening was not recorded"),
            }
        }
        let held = ticked.placed + ticked.live + terms.queued > 0;
        match self.line_announcements(queue, &terms, now, held).await {
            Ok(announced) => events.extend(announced),
            Err(err) => tracing::warn!(%queue, %err, "the queue's events were not recorded"),
        }
        let until = instant(ticked.until)?;
        let ticket = |user: &String| line::ticket_of(ticked.scores.get(user).copied().unwrap_or(0));
        events.extend(
            ticked
                .admitted
                .iter()
                .map(|user| QueueEvent::activated(queue, user.as_str(), ticket(user), until)),
        );
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
}
