//! Capacity pools: several queues, each on its own shard, share one booking backend's
//! capacity. A queue joins with the setting `pool`; `PUT /pools/{poolId}` sets the pool's
//! capacity and, optionally, the queues' weights.
//!
//! The active buyers of a pool's queues never exceed the pool's capacity, through issue,
//! leave and the tick, with any number of promoters at once:
//! - each queue admits only within its **allotment**, kept on its own shard beside its
//!   settings (`common.lua`);
//! - the pool's **ledger** counts what it granted each queue, under the pool's own hash tag
//!   (`pool.lua`), and never more than the capacity in all;
//! - a grant raises the ledger's count first and the queue's allotment after, when the queue
//!   applies it; a shrink lowers the allotment first (never below the sessions live) and the
//!   ledger's count after, when the queue reports it. Numbered grants keep a late or repeated
//!   word from raising an allotment the ledger no longer counts.
//!
//! The promoter's tick carries both halves in its one round trip: each queue's promote call
//! applies the ledger's last word and reports back ([`PoolWatch`]), and each pool's ledger call
//! takes the queues' last reports and answers with the next word. So a place moves from one
//! queue to another in about three ticks.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Serialize};

use super::WaitingRoom;
use crate::bounds::{self, Bounds};
use crate::error::Error;
use crate::ids::{PoolId, QueueId};
use crate::store::{lua_script, Batch, NamedScript, ScriptCall, Staged};

/// Most queues one pool serves: its ledger call stays within about half a millisecond of
/// Redis time (`lineup-bench pace`). A queue beyond them is granted nothing.
pub const POOL_QUEUES_MAX: usize = 16;
/// Most queues one pool's weights name.
pub const POOL_WEIGHTS_MAX: usize = POOL_QUEUES_MAX;
/// A queue's weight in its pool.
pub const POOL_WEIGHT: Bounds = Bounds::new(1, 1_000);
/// How long a pool lives without a tick or a change: renewed by every ledger call.
pub const POOL_KEEP: Duration = Duration::from_secs(7 * 86_400);
/// A queue that has not reported to its pool's ledger for this long has left it.
pub const POOL_STALE: Duration = Duration::from_secs(60);

/// The ledger's call: the queues' reports in, the next word for each out.
static LEDGER: NamedScript = NamedScript::new(
    std::sync::LazyLock::new(|| lua_script(include_str!("pool.lua"))),
    &["POOL"],
    &["keep_ms", "stale_ms", "most", "reports…"],
);

/// Stores a BookingHealth level for a whole pool in its ledger hash.
static SIGNAL: NamedScript = NamedScript::new(
    std::sync::LazyLock::new(|| lua_script(include_str!("pool_signal.lua"))),
    &["POOL"],
    &["level", "sent"],
);

/// The pool's ledger hash, under the pool's own hash tag `{p:<poolId>}`.
pub fn pool_key(prefix: &str, pool: &PoolId) -> String {
    format!("{prefix}:{{p:{pool}}}")
}

/// `PUT /pools/{poolId}`: the pool's capacity and, optionally, each queue's weight (free
/// places go in proportion to the weights instead of the waiting lines).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolChange {
    pub capacity: serde_json::Number,
    #[serde(default)]
    pub weights: Option<BTreeMap<String, serde_json::Number>>,
}

impl PoolChange {
    /// The capacity and the weights as stored (`queue weight` a line), once checked.
    fn checked(&self) -> Result<(u64, String), Error> {
        let capacity = bounds::CAPACITY
            .json(&self.capacity)
            .map_err(|err| Error::invalid("capacity", err.to_string()))?;
        let weights = self.weights.clone().unwrap_or_default();
        if weights.len() > POOL_WEIGHTS_MAX {
            return Err(Error::invalid(
                "weights",
                format!("at most {POOL_WEIGHTS_MAX} queues, not {}", weights.len()),
            ));
        }
        let mut lines = Vec::with_capacity(weights.len());
        for (queue, weight) in &weights {
            let queue = QueueId::parse(queue)
                .map_err(|_| Error::invalid("weights", format!("{queue:?} is not a queue id")))?;
            let weight = POOL_WEIGHT
                .json(weight)
                .map_err(|err| Error::invalid("weights", format!("{queue}: {err}")))?;
            lines.push(format!("{queue} {weight}"));
        }
        Ok((capacity, lines.join("\n")))
    }
}

/// A pool as `GET /pools/{poolId}` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolView {
    pub pool_id: PoolId,
    pub capacity: u32,
    /// The operator's weights; empty: free places follow the waiting lines.
    pub weights: BTreeMap<String, u32>,
    /// The places the ledger counts for each queue (a queue admits within what it has
    /// applied of them).
    pub allotments: BTreeMap<String, u32>,
    /// Their sum: within `capacity`, unless the capacity was lowered below what the queues'
    /// live sessions hold (or a queue joined with sessions live); the ledger grants nothing
    /// until they fit.
    pub allotted: u32,
}

/// The ledger hash as `HGETALL` gives it, read into a [`PoolView`]; `None` without a
/// capacity (no such pool).
fn view(pool: &PoolId, fields: HashMap<String, String>) -> Option<PoolView> {
    let capacity = fields.get("capacity")?.parse().ok()?;
    let weights = fields
        .get("weights")
        .map(|raw| {
            raw.lines()
                .filter_map(|line| {
                    let (queue, weight) = line.split_once(' ')?;
                    Some((queue.to_owned(), weight.parse().ok()?))
                })
                .collect()
        })
        .unwrap_or_default();
    let allotments: BTreeMap<String, u32> = fields
        .iter()
        .filter_map(|(field, value)| {
            let queue = field.strip_prefix("a:")?;
            let places = value.split(':').next()?.parse().ok()?;
            Some((queue.to_owned(), places))
        })
        .collect();
    Some(PoolView {
        pool_id: pool.clone(),
        capacity,
        weights,
        allotted: allotments.values().sum(),
        allotments,
    })
}

impl WaitingRoom {
    /// Stages storing a BookingHealth `level` (as the event gave it) sent at `sent` (ms) for
    /// every queue of `pool` (`pool_signal.lua`); the promoter's ticks hand it on.
    pub(super) fn stage_pool_signal<T: FromRedisValue>(
        &self,
        batch: &mut Batch,
        pool: &PoolId,
        level: &str,
        sent: i64,
    ) -> Staged<T> {
        let mut call = ScriptCall::of(&SIGNAL);
        call.named_key("POOL", pool_key(&self.prefix, pool))
            .named("level", level)
            .named("sent", sent);
        batch.stage(call)
    }

    /// Sets `pool`'s capacity and weights (replacing the weights whole), creating it; one
    /// pipeline on the pool's key. Returns the pool as it stands.
    pub async fn configure_pool(
        &self,
        pool: &PoolId,
        change: &PoolChange,
    ) -> Result<PoolView, Error> {
        let (capacity, weights) = change.checked()?;
        let key = pool_key(&self.prefix, pool);
        let now = chrono::Utc::now().timestamp_millis();
        let mut batch = Batch::new();
        let mut set = redis::cmd("HSET");
        set.arg(&key).arg("capacity").arg(capacity);
        if !weights.is_empty() {
            set.arg("weights").arg(&weights);
        }
        let mut writes: Vec<redis::Cmd> = vec![set];
        if weights.is_empty() {
            writes.push(redis::cmd("HDEL").arg(&key).arg("weights").clone());
        }
        // Grant numbers count on from the ms the pool was made: higher than any a queue
        // applied from a pool of the same name before.
        writes.push(redis::cmd("HSETNX").arg(&key).arg("grant").arg(now).clone());
        writes.push(
            redis::cmd("PEXPIRE")
                .arg(&key)
                .arg(POOL_KEEP.as_millis() as u64)
                .clone(),
        );
        for write in writes {
            let _: Staged<Value> = batch.stage_command(&key, write);
        }
        let all: Staged<HashMap<String, String>> =
            batch.stage_command(&key, redis::cmd("HGETALL").arg(&key).clone());
        let replies = self.conn.send(&batch).await?;
        view(pool, all.read(&replies)?)
            .ok_or_else(|| Error::Internal("a pool without its capacity".into()))
    }

    /// `pool` as it stands: one `HGETALL`. [`Error::NotFound`] for a pool never made.
    pub async fn pool(&self, pool: &PoolId) -> Result<PoolView, Error> {
        let key = pool_key(&self.prefix, pool);
        let fields: HashMap<String, String> = self
            .conn
            .query(&key, redis::cmd("HGETALL").arg(&key).clone())
            .await?;
        view(pool, fields).ok_or_else(|| Error::NotFound(format!("no pool {pool}")))
    }

    /// The queues `pool` serves: those its ledger counts and those its weights name; none
    /// for a pool that does not exist. One `HGETALL`.
    pub(super) async fn pool_queues(&self, pool: &PoolId) -> Result<Vec<QueueId>, Error> {
        let view = match self.pool(pool).await {
            Ok(view) => view,
            Err(Error::NotFound(_)) => return Ok(Vec::new()),
            Err(err) => return Err(err),
        };
        let named: BTreeSet<&String> = view.allotments.keys().chain(view.weights.keys()).collect();
        Ok(named
            .into_iter()
            .filter_map(|queue| QueueId::parse(queue).ok())
            .collect())
    }

    /// Deletes `pool`: its queues are asked to shrink to their live sessions and admit no
    /// one new until it is made again (or they leave it).
    pub async fn delete_pool(&self, pool: &PoolId) -> Result<(), Error> {
        let key = pool_key(&self.prefix, pool);
        let _: i64 = self
            .conn
            .query(&key, redis::cmd("DEL").arg(&key).clone())
            .await?;
        Ok(())
    }
}

/// A queue's report to its pool's ledger (`promote.lua`): `{pool, allotment, last grant
/// applied, live sessions, waiters, own capacity}`, or `{}` outside a pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PoolReport {
    pool: PoolId,
    allotment: u32,
    applied: u64,
    active: u64,
    waiting: u64,
    capacity: u32,
}

impl PoolReport {
    /// A queue's report: in `pool`, holding `allotment` places by the grant numbered `applied`,
    /// with `active` live sessions and `waiting` waiters, and its own `capacity`.
    pub(super) fn new(
        pool: PoolId,
        (allotment, applied): (u32, u64),
        active: u64,
        waiting: u64,
        capacity: u32,
    ) -> PoolReport {
        PoolReport {
            pool,
            allotment,
            applied,
            active,
            waiting,
            capacity,
        }
    }
}

pub(super) struct PoolReportReply(pub Option<PoolReport>);

impl FromRedisValue for PoolReportReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let parts: Vec<Value> = FromRedisValue::from_redis_value(v)?;
        if parts.is_empty() {
            return Ok(PoolReportReply(None));
        }
        let (pool, allotment, applied, active, waiting, capacity): (
            String,
            u32,
            String,
            u64,
            u64,
            u32,
        ) = FromRedisValue::from_redis_value(Value::Array(parts))?;
        Ok(PoolReportReply(Some(PoolReport {
            pool: PoolId::parse(&pool).map_err(|_| format!("settings hold pool {pool:?}"))?,
            allotment,
            applied: applied
                .parse()
                .map_err(|_| format!("a grant number of {applied:?}"))?,
            active,
            waiting,
            capacity,
        })))
    }
}

/// A ledger's answer: `{the pool's BookingHealth signal or '', then one word per queue,
/// "queue places grant shrink"}`, `-` for none (places and grant `-` from a pool without a
/// capacity, or for a queue beyond [`POOL_QUEUES_MAX`]).
struct LedgerReply {
    signal: String,
    words: Vec<Word>,
}

/// The ledger's word for one queue: its grant (`places:number`, `''` when none) and the
/// places to shrink to (`''` when none).
struct Word {
    queue: String,
    grant: String,
    shrink: String,
}

impl FromRedisValue for LedgerReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let mut parts: Vec<String> = FromRedisValue::from_redis_value(v)?;
        if parts.is_empty() {
            return Err("a ledger answer without its signal".into());
        }
        let signal = parts.remove(0);
        let words = parts
            .iter()
            .map(|line| {
                let fields: Vec<&str> = line.split(' ').collect();
                let [queue, places, number, shrink] = fields.as_slice() else {
                    return Err(ParsingError::from(format!("a ledger word {line:?}")));
                };
                let none = |field: &str| {
                    if field == "-" {
                        String::new()
                    } else {
                        field.to_owned()
                    }
                };
                Ok(Word {
                    queue: (*queue).to_owned(),
                    grant: if *places == "-" {
                        String::new()
                    } else {
                        format!("{places}:{number}")
                    },
                    shrink: none(shrink),
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(LedgerReply { signal, words })
    }
}

/// What the promoter knows of its queues' pools: each queue's last report and the ledger's
/// last word for it. Kept while the container lives; each tick hands each queue its word and
/// each ledger its queues' reports, in the tick's one round trip.
#[derive(Clone, Default)]
pub struct PoolWatch(Arc<Mutex<Watch>>);

#[derive(Default)]
struct Watch {
    reports: HashMap<QueueId, PoolReport>,
    /// The ledger's last word for each queue.
    words: HashMap<QueueId, KeptWord>,
}

/// A ledger's word for one queue, kept for its next tick: the pool whose ledger said it (a
/// queue takes only the word of the pool it is in now), its grant (`places:number`), the places
/// to shrink to and the pool's BookingHealth signal (`level:sent ms`), each `''` when none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct KeptWord {
    pub pool: String,
    pub grant: String,
    pub shrink: String,
    pub signal: String,
}

/// The ledger calls a tick staged, one per pool, with the pool's id.
pub(super) struct StagedLedgers(Vec<(PoolId, Staged<LedgerReply>)>);

impl PoolWatch {
    fn watch(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The ledger's last word for `queue`.
    pub(super) fn word(&self, queue: &QueueId) -> KeptWord {
        self.watch().words.get(queue).cloned().unwrap_or_default()
    }

    /// Notes `queue`'s report from its tick.
    pub(super) fn learn(&self, queue: &QueueId, report: Option<PoolReport>) {
        let mut watch = self.watch();
        match report {
            Some(report) => {
                watch.reports.insert(queue.clone(), report);
            }
            None => {
                watch.reports.remove(queue);
                watch.words.remove(queue);
            }
        }
    }

    /// Stages one ledger call per pool the known queues report to, with their reports: those
    /// the ledger already counts (it answered them with a grant) first, then the others in
    /// id order, at most [`POOL_QUEUES_MAX`]. So the queues a ledger counts always report.
    pub(super) fn stage_ledgers(&self, prefix: &str, batch: &mut Batch) -> StagedLedgers {
        let watch = self.watch();
        let mut pools: BTreeMap<&PoolId, Vec<(bool, &QueueId, &PoolReport)>> = BTreeMap::new();
        for (queue, report) in &watch.reports {
            let counted = watch
                .words
                .get(queue)
                .is_some_and(|word| !word.grant.is_empty());
            pools
                .entry(&report.pool)
                .or_default()
                .push((!counted, queue, report));
        }
        StagedLedgers(
            pools
                .into_iter()
                .map(|(pool, mut reports)| {
                    reports.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
                    let mut call = ScriptCall::of(&LEDGER);
                    call.named_key("POOL", pool_key(prefix, pool))
                        .named("keep_ms", POOL_KEEP.as_millis() as u64)
                        .named("stale_ms", POOL_STALE.as_millis() as u64)
                        .named("most", POOL_QUEUES_MAX);
                    for (_, queue, report) in reports.into_iter().take(POOL_QUEUES_MAX) {
                        call.named(
                            "reports",
                            format!(
                                "{queue} {} {} {} {} {}",
                                report.allotment,
                                report.applied,
                                report.active,
                                report.waiting,
                                report.capacity
                            ),
                        );
                    }
                    (pool.clone(), batch.stage(call))
                })
                .collect(),
        )
    }

    /// Keeps the ledgers' words for the next tick.
    pub(super) fn record(&self, staged: &StagedLedgers, replies: &[Value]) -> Result<(), Error> {
        let mut words = HashMap::new();
        for (pool, ledger) in &staged.0 {
            let reply = ledger.read(replies)?;
            for word in reply.words {
                if let Ok(queue) = QueueId::parse(&word.queue) {
                    let word = KeptWord {
                        pool: pool.as_str().to_owned(),
                        grant: word.grant,
                        shrink: word.shrink,
                        signal: reply.signal.clone(),
                    };
                    words.insert(queue, word);
                }
            }
        }
        self.watch().words = words;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_ledger_scripts_bind_their_keys_and_arguments_by_the_names_rust_sends() {
        crate::store::bindings::assert_binds(include_str!("pool.lua"), &LEDGER);
        crate::store::bindings::assert_binds(include_str!("pool_signal.lua"), &SIGNAL);
    }

    #[test]
    fn a_pool_change_is_checked() {
        let change = |body| {
            serde_json::from_value::<PoolChange>(body)
                .unwrap()
                .checked()
        };
        assert_eq!(
            change(json!({"capacity": 500, "weights": {"b": 1, "a": 3}})).unwrap(),
            (500, "a 3\nb 1".into())
        );
        for bad in [
            json!({"capacity": 0}),
            json!({"capacity": 5, "weights": {"a b": 1}}),
            json!({"capacity": 5, "weights": {"a": 0}}),
            json!({"capacity": 5, "weights": {"a": 1001}}),
        ] {
            assert!(change(bad.clone()).is_err(), "{bad}");
        }
    }
}
