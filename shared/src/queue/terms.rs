//! What the waiting room on the striped line reads of a queue's settings: whether an operator
//! created the queue, whether it takes new arrivals (its mode, sold out, the operator's
//! message, its schedule), whether it is paused, its capacity, and its draw (the opening and
//! the seed, which decide each buyer's stripe). One `HMGET` under the queue's own tag. A
//! container holds what it read for [`PUBLISHED_FOR`], so however many buyers join, the
//! queue's tag sees at most one read a second from each container.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};

use super::access::Access;
use super::door::DoorSettings;
use super::keys::QueueKeys;
use super::pace::Health;
use super::schedule::DrawSeed;
use super::striped_pace::{capacity_in_force, paced_admissions, stepped, StoredHealth, StoredRamp};
use super::{Arrival, Mode, WaitingRoom};
use crate::door::{ChallengeMode, DEFAULT_COST_MAX, DEFAULT_COST_MIN};
use crate::error::Error;
use crate::ids::{PoolId, QueueId};
use crate::line::PUBLISHED_FOR;
use crate::store::{Batch, Staged};

/// The settings fields a line reads, in the order [`Terms`] decodes them.
const FIELDS: [&str; 32] = [
    "created",
    "capacity",
    "paused",
    "mode",
    "sold-out",
    "message",
    "opens-at",
    "closes-at",
    "prequeue-opens-at",
    "draw-seed",
    "draw-commit",
    "access",
    "capacity-ramp",
    "health-signal",
    "health-alarm",
    "health-climb",
    "health-recovery-ms",
    "pace-announced",
    "closes-announced",
    "health-alarms",
    "max-waiting",
    "session-ms",
    "idle-ms",
    "admit-per-tick",
    "challenge",
    "challenge-cost-min",
    "challenge-cost-max",
    "pool",
    "pool-allot",
    "lane",
    "lane-before-opening",
    "by-arrival",
];

/// A queue's draw: its opening (ms) and the seed of its values, named by its commitment. The
/// seed never reaches a log.
#[derive(Clone)]
pub(super) struct Draw {
    pub opens_at: i64,
    pub seed: Arc<DrawSeed>,
    pub commitment: String,
}

impl std::fmt::Debug for Draw {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Draw")
            .field("opens_at", &self.opens_at)
            .field("commitment", &self.commitment)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Draw {
    fn eq(&self, other: &Draw) -> bool {
        self.opens_at == other.opens_at && self.commitment == other.commitment
    }
}

/// A queue's settings as the line reads them.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Terms {
    /// The queue exists: an operator created it, or (`QUEUE_CREATION=open`) its first buyer.
    pub created: bool,
    /// Its first buyer created it, and no operator has changed it since: its settings end
    /// once nobody has been on its line for `QUEUE_RETIRE_AFTER_SECONDS`.
    pub by_arrival: bool,
    /// Its own capacity, where it set one.
    pub capacity: Option<u32>,
    pub paused: bool,
    pub mode: Mode,
    pub sold_out: bool,
    pub message: Option<String>,
    /// From when new arrivals are refused (ms).
    pub closes_at: Option<i64>,
    /// Until when arrivals are refused before the opening (ms).
    pub prequeue_opens_at: Option<i64>,
    /// The scheduled opening and its draw, once set.
    pub draw: Option<Draw>,
    /// Who may take a new place.
    pub access: Access,
    /// The capacity ramp, where one is set.
    pub ramp: Option<StoredRamp>,
    /// The booking system's health, as the scripts keep it.
    pub health: StoredHealth,
    /// The pace the last `QueuePaceChanged` was published for ([`pace_mark`]).
    pub pace_announced: Option<String>,
    /// Whether `QueueClosed` was published for `closes_at`.
    pub closes_announced: bool,
    /// The CloudWatch alarms the queue names, one a line as stored.
    pub alarm_names: String,
    /// The most places the line holds before a new arrival is refused.
    pub max_waiting: Option<u64>,
    /// Its own session length (ms), where it set one.
    pub session_ms: Option<u64>,
    /// Its own idle period (ms): how long a poll keeps a waiter present.
    pub idle_ms: Option<u64>,
    /// Its own most admissions a tick, where it set one.
    pub admit_per_tick: Option<u32>,
    /// Its door: whether a new arrival solves a challenge, and at what cost.
    pub door: DoorSettings,
    /// The capacity pool it is in, if any.
    pub pool: Option<PoolId>,
    /// In a pool: the places the pool's ledger granted it, and the number of the last grant
    /// it applied (`pool-allot`, 0 and 0 until the first).
    pub pool_allot: (u32, u64),
    /// Whether its priority list holds anyone: a join then asks the buyer's stripe whether
    /// the buyer is on it.
    pub lane: bool,
    /// Whether the priority lane is admitted before the opening.
    pub lane_before_opening: bool,
    /// The places on the line as its last tick left them ([`Counts::queued`]), read with
    /// the settings.
    pub queued: u64,
}

impl FromRedisValue for Terms {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let fields: Vec<Option<String>> = FromRedisValue::from_redis_value(v)?;
        if fields.len() != FIELDS.len() {
            return Err(ParsingError::from(format!(
                "terms: {} fields, not {}",
                fields.len(),
                FIELDS.len()
            )));
        }
        let text = |i: usize| fields[i].as_deref().filter(|v| !v.is_empty());
        let number = |i: usize| -> Result<Option<i64>, ParsingError> {
            text(i)
                .map(|raw| {
                    raw.parse::<i64>()
                        .map_err(|_| ParsingError::from(format!("terms: {} {raw:?}", FIELDS[i])))
                })
                .transpose()
        };
        let cost = |i: usize| -> Result<Option<u32>, ParsingError> {
            number(i)?
                .map(|c| {
                    u32::try_from(c)
                        .map_err(|_| ParsingError::from(format!("terms: {} {c}", FIELDS[i])))
                })
                .transpose()
        };
        let draw = match (number(6)?, text(9), text(10)) {
            (Some(opens_at), Some(seed), Some(commitment)) => Some(Draw {
                opens_at,
                seed: Arc::new(
                    DrawSeed::from_hex(seed)
                        .ok_or_else(|| ParsingError::from("terms: a draw seed of another form"))?,
                ),
                commitment: commitment.to_owned(),
            }),
            _ => None,
        };
        Ok(Terms {
            created: text(0).is_some(),
            capacity: number(1)?.and_then(|c| u32::try_from(c).ok()),
            paused: text(2) == Some("1"),
            mode: Mode::from_script(text(3).unwrap_or(""))?,
            sold_out: text(4) == Some("1"),
            message: text(5).map(str::to_owned),
            closes_at: number(7)?,
            prequeue_opens_at: number(8)?,
            draw,
            access: match text(11) {
                Some("list") => Access::List,
                Some("code") => Access::Code,
                _ => Access::Open,
            },
            ramp: text(12).and_then(StoredRamp::parse),
            health: StoredHealth {
                signal: text(13).map(str::to_owned),
                alarm: text(14).map(str::to_owned),
                climb: text(15).map(str::to_owned),
                recovery_ms: number(16)?,
            },
            pace_announced: text(17).map(str::to_owned),
            closes_announced: text(18).is_some(),
            alarm_names: text(19).unwrap_or("").to_owned(),
            max_waiting: number(20)?.and_then(|m| u64::try_from(m).ok()),
            session_ms: number(21)?.and_then(|m| u64::try_from(m).ok()),
            idle_ms: number(22)?.and_then(|m| u64::try_from(m).ok()),
            admit_per_tick: number(23)?.and_then(|m| u32::try_from(m).ok()),
            door: DoorSettings {
                challenge: ChallengeMode::from_stored(text(24).unwrap_or(""))
                    .ok_or_else(|| ParsingError::from("terms: a challenge of another form"))?,
                challenge_cost_min: cost(25)?.unwrap_or(DEFAULT_COST_MIN),
                challenge_cost_max: cost(26)?.unwrap_or(DEFAULT_COST_MAX),
            },
            pool: text(27)
                .map(|pool| {
                    PoolId::parse(pool)
                        .map_err(|_| ParsingError::from(format!("terms: pool {pool:?}")))
                })
                .transpose()?,
            pool_allot: text(28)
                .and_then(|raw| {
                    let (places, grant) = raw.split_once(':')?;
                    Some((places.parse().ok()?, grant.parse().ok()?))
                })
                .unwrap_or((0, 0)),
            lane: text(29) == Some("1"),
            lane_before_opening: text(30) == Some("1"),
            by_arrival: text(31) == Some("1"),
            queued: 0,
        })
    }
}

impl Terms {
    /// The health level in force at `now` (ms).
    pub(super) fn health(&self, now: i64) -> Health {
        self.health.in_force(now)
    }

    /// The sessions the line may hold at `now` (ms): the queue's capacity, else `default`,
    /// within its pool's allotment and its ramp's step, times the health level
    /// ([`capacity_in_force`]).
    pub(super) fn capacity(&self, default: u32, now: i64) -> u64 {
        let own = self.capacity.unwrap_or(default);
        let allotted = match self.pool {
            Some(_) => own.min(self.pool_allot.0),
            None => own,
        };
        capacity_in_force(
            u64::from(allotted),
            self.ramp,
            self.draw.as_ref().map(|draw| draw.opens_at),
            self.health(now),
            now,
        )
    }

    /// The capacity at `now` before the health level: the queue's, else `default`, within its
    /// ramp's step.
    pub(super) fn stepped_capacity(&self, default: u32, now: i64) -> u64 {
        stepped(
            u64::from(self.capacity.unwrap_or(default)),
            self.ramp,
            self.draw.as_ref().map(|draw| draw.opens_at),
            now,
        )
    }

    /// How long a session lasts: the queue's own length, else `default`.
    pub(super) fn session(&self, default: Duration) -> Duration {
        self.session_ms.map_or(default, Duration::from_millis)
    }

    /// How long a poll keeps a waiter present: the queue's own idle period, else `default`.
    pub(super) fn presence(&self, default: Duration) -> Duration {
        self.idle_ms.map_or(default, Duration::from_millis)
    }

    /// The most a tick at `now` (ms) admits: the queue's `admitPerTick`, else `default`, at
    /// the health level in force ([`paced_admissions`]).
    pub(super) fn admissions(&self, default: u32, now: i64) -> u64 {
        paced_admissions(
            self.admit_per_tick.unwrap_or(default),
            self.health(now),
            now,
        )
    }

    /// Whether a new arrival may take a place at `now` (ms), or why not.
    pub(super) fn admits_arrivals(&self, now: i64) -> Result<(), Error> {
        if !self.created {
            return Err(Error::NotFound(
                "no such queue: an operator creates it with PUT /queues/{queueId}/settings".into(),
            ));
        }
        let message = self.message.clone();
        if self.sold_out {
            return Err(Arrival::SoldOut { message }.into());
        }
        if self.mode == Mode::Closed || self.closes_at.is_some_and(|at| now >= at) {
            return Err(Arrival::Closed { message }.into());
        }
        let lined = self.mode != Mode::Passthrough;
        if lined && self.max_waiting.is_some_and(|most| self.queued >= most) {
            return Err(Arrival::Full {
                retry_after: FULL_RETRY,
                message,
            }
            .into());
        }
        if let Some(at) = self.prequeue_opens_at.filter(|at| now < *at) {
            let retry_after = Duration::from_millis((at - now) as u64);
            return Err(Arrival::NotOpen {
                retry_after: retry_after.max(Duration::from_secs(1)),
            }
            .into());
        }
        Ok(())
    }
}

/// The terms a container read, by queue.
#[derive(Default)]
pub(super) struct HeldTerms(Mutex<HashMap<QueueId, Held>>);

/// A queue's terms as a container holds them.
#[derive(Clone)]
struct Held {
    /// When they were read (ms).
    read: i64,
    /// Before this (ms), they are served without a read: a read failed just now.
    retry_at: i64,
    terms: Terms,
}

/// How long a container serves the terms it holds while their shard does not answer (a
/// failover, `{q:<queue>}`'s primary down): no settings change can be written there
/// meanwhile, so they are the last the queue had.
const HELD_THROUGH_OUTAGE: Duration = Duration::from_secs(120);

/// How long after a failed read a container serves the terms it holds without trying again,
/// so each buyer's call does not wait for the shard that is down.
const RETRY_READ: Duration = Duration::from_secs(1);

/// How long a refused arrival waits before trying again when the line is full.
const FULL_RETRY: Duration = Duration::from_secs(10);

/// The most queues whose terms a container holds; past it, it starts again from none.
const HELD: usize = 1_000;

impl WaitingRoom {
    /// `queue`'s terms at `now` (ms): those this container read less than [`PUBLISHED_FOR`]
    /// ago, else one `HMGET`. A queue not created yet is not held: its operator may create
    /// it any moment. While the queue's shard does not answer, the terms held are served for
    /// up to [`HELD_THROUGH_OUTAGE`] ([`Self::fresh_terms`]).
    pub(super) async fn terms(&self, queue: &QueueId, now: i64) -> Result<Terms, Error> {
        self.terms_within(queue, now, PUBLISHED_FOR).await
    }

    /// `queue`'s terms read now (the promoter's tick), or, while its shard does not answer,
    /// those this container holds, for up to [`HELD_THROUGH_OUTAGE`]: the queue's other
    /// stripes keep serving and admitting through its own tag's failover. After a failed
    /// read the held terms are served for [`RETRY_READ`] before the next try.
    pub(super) async fn fresh_terms(&self, queue: &QueueId, now: i64) -> Result<Terms, Error> {
        self.terms_within(queue, now, Duration::ZERO).await
    }

    async fn terms_within(
        &self,
        queue: &QueueId,
        now: i64,
        fresh: Duration,
    ) -> Result<Terms, Error> {
        let fresh = fresh.as_millis() as i64;
        let held = self
            .held_terms
            .0
            .lock()
            .ok()
            .and_then(|held| held.get(queue).cloned())
            .filter(|held| now >= held.read);
        if let Some(held) = &held {
            if now - held.read < fresh || now < held.retry_at {
                return Ok(held.terms.clone());
            }
        }
        let terms = match self.read_terms(queue).await {
            Ok(terms) => terms,
            Err(err @ Error::Unavailable { .. }) => {
                let outage = HELD_THROUGH_OUTAGE.as_millis() as i64;
                let Some(held) = held.filter(|held| now - held.read < outage) else {
                    return Err(err);
                };
                tracing::warn!(
                    %queue,
                    %err,
                    held_ms = now - held.read,
                    "the queue's settings did not answer: serving those this container holds"
                );
                let terms = held.terms.clone();
                self.hold(
                    queue,
                    Held {
                        retry_at: now + RETRY_READ.as_millis() as i64,
                        ..held
                    },
                );
                return Ok(terms);
            }
            Err(err) => return Err(err),
        };
        if !terms.created {
            return Ok(terms);
        }
        self.hold(
            queue,
            Held {
                read: now,
                retry_at: now,
                terms: terms.clone(),
            },
        );
        Ok(terms)
    }

    fn hold(&self, queue: &QueueId, held: Held) {
        let mut all = self
            .held_terms
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if all.len() >= HELD && !all.contains_key(queue) {
            all.clear();
        }
        all.insert(queue.clone(), held);
    }

    /// Forgets what this container held of `queue`'s terms: its settings changed here.
    pub(super) fn forget_terms(&self, queue: &QueueId) {
        if let Ok(mut held) = self.held_terms.0.lock() {
            held.remove(queue);
        }
    }

    /// `queue`'s terms as they are now: one `HMGET` of its settings, and on the line the
    /// counts its last tick left (one `GET` beside the settings, under their tag: one request).
    pub(super) async fn read_terms(&self, queue: &QueueId) -> Result<Terms, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(&key).arg(&FIELDS[..]);
        let mut batch = Batch::new();
        let terms: Staged<Terms> = batch.stage_command(&key, cmd);
        let counts = self
            .lines
            .as_ref()
            .map(|lines| lines.any(queue).stage_counts(&mut batch));
        let replies = self.conn.send(&batch).await?;
        let mut terms = terms.read(&replies)?;
        if let Some(counts) = counts {
            terms.queued = counts.read(&replies)?.map_or(0, |c| c.queued);
        }
        Ok(terms)
    }
}

#[cfg(test)]
mod tests {
    /// Each field the line reads is one the scripts read and write under the same name.
    #[test]
    fn the_fields_are_the_settings_fields_the_scripts_name() {
        let scripts = [
            include_str!("common.lua"),
            include_str!("configure.lua"),
            include_str!("replies.lua"),
        ];
        for field in super::FIELDS {
            let quoted = format!("'{field}'");
            assert!(scripts.iter().any(|s| s.contains(&quoted)), "{field}");
        }
        assert!(scripts[0].contains("HSETNX', SETTINGS, 'created'"));
        assert!(scripts[1].contains("own_settings()"));
        assert!(include_str!("open_line.lua").contains("'by-arrival'"));
    }

    /// The counts a container reads with the settings sit under the settings' hash tag, so a
    /// refresh of a queue's terms is one request to one shard.
    #[test]
    fn the_counts_are_read_from_the_settings_shard() {
        let queue = crate::ids::QueueId::parse("show").unwrap();
        let tag = |key: &str| key[key.find('{').unwrap()..=key.find('}').unwrap()].to_owned();
        let settings = super::QueueKeys::new("lineup", &queue).settings;
        assert_eq!(
            tag(&crate::line::counts_key("lineup", &queue)),
            tag(&settings)
        );
    }
}
