//! What the promoter knows of the CloudWatch alarms its queues name (`healthAlarms`): each
//! queue's names and each name's last state, read once a tick with one `MGET` under
//! `{health}`, and handed to each queue's tick (`promote.lua`, `line_alarm.lua`).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use redis::Value;

use super::health::{alarm_key, AlarmName};
use crate::error::Error;
use crate::ids::QueueId;
use crate::store::{Batch, Staged};

/// What the promoter knows of the alarms its queues name: each queue's names (from its
/// last tick's reply) and each name's state (from the `MGET` the last tick sent beside its
/// promotions). Kept while the container lives; each tick hands each queue its alarms' state
/// and learns the next, in the tick's one round trip.
#[derive(Clone, Default)]
pub struct AlarmWatch(Arc<Mutex<Watch>>);

#[derive(Default)]
struct Watch {
    named: HashMap<QueueId, Vec<AlarmName>>,
    /// Whether each name read was in ALARM.
    alarmed: HashMap<AlarmName, bool>,
}

/// The alarm states a tick read, staged with [`AlarmWatch::stage_read`].
pub(super) struct StagedAlarms {
    names: Vec<AlarmName>,
    reply: Staged<Vec<Option<String>>>,
}

impl AlarmWatch {
    fn watch(&self) -> std::sync::MutexGuard<'_, Watch> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `promote.lua` is told of `queue`'s alarms: `0` when one is in ALARM, `1` when
    /// none is, `''` when it names none or their state is not known yet; and the names that
    /// holds for, as the queue stores them (one a line), so a word about a list the operator
    /// has since changed is not taken.
    pub(super) fn argument(&self, queue: &QueueId) -> (&'static str, String) {
        let watch = self.watch();
        let Some(names) = watch.named.get(queue) else {
            return ("", String::new());
        };
        let states: Vec<Option<&bool>> = names.iter().map(|n| watch.alarmed.get(n)).collect();
        let verdict = if states.contains(&Some(&true)) {
            "0"
        } else if names.is_empty() || states.contains(&None) {
            ""
        } else {
            "1"
        };
        let stored: Vec<&str> = names.iter().map(AlarmName::as_str).collect();
        (verdict, stored.join("\n"))
    }

    /// Notes the alarms `queue` names, as its tick's reply gave them (one a line).
    pub(super) fn learn(&self, queue: &QueueId, stored: &str) {
        let names: Vec<AlarmName> = stored
            .lines()
            .filter_map(|name| AlarmName::parse(name).ok())
            .collect();
        let mut watch = self.watch();
        if names.is_empty() {
            watch.named.remove(queue);
        } else {
            watch.named.insert(queue.clone(), names);
        }
    }

    /// Whether a queue names an alarm whose state no read has given yet: a queue this
    /// promoter has just learned of, or a list the operator changed.
    pub(super) fn has_unread(&self) -> bool {
        let watch = self.watch();
        watch
            .named
            .values()
            .flatten()
            .any(|name| !watch.alarmed.contains_key(name))
    }

    /// Stages reading the state of every alarm a known queue names, with one `MGET` (all
    /// under `{health}`); `None` when none names any.
    pub(super) fn stage_read(&self, prefix: &str, batch: &mut Batch) -> Option<StagedAlarms> {
        let names: Vec<AlarmName> = {
            let watch = self.watch();
            let unique: BTreeSet<&AlarmName> = watch.named.values().flatten().collect();
            unique.into_iter().cloned().collect()
        };
        let first = names.first()?;
        let keys: Vec<String> = names.iter().map(|name| alarm_key(prefix, name)).collect();
        let reply = batch.stage_command(
            &alarm_key(prefix, first),
            redis::cmd("MGET").arg(&keys).clone(),
        );
        Some(StagedAlarms { names, reply })
    }

    /// Keeps the states a tick read.
    pub(super) fn record(&self, staged: &StagedAlarms, replies: &[Value]) -> Result<(), Error> {
        let states = staged.reply.read(replies)?;
        let mut watch = self.watch();
        watch.alarmed = staged
            .names
            .iter()
            .cloned()
            .zip(states)
            .map(|(name, state)| (name, state.is_some_and(|s| s.starts_with("0:"))))
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_tells_a_queue_its_alarms_only_once_it_knows_them_all() {
        let watch = AlarmWatch::default();
        let queue = QueueId::parse("q1").unwrap();
        assert_eq!(watch.argument(&queue).0, "");
        watch.learn(&queue, "a\nb");
        assert_eq!(watch.argument(&queue), ("", "a\nb".into()), "not read yet");
        let name = |n: &str| AlarmName::parse(n).unwrap();
        watch.watch().alarmed = [(name("a"), false)].into_iter().collect();
        assert_eq!(watch.argument(&queue).0, "", "b not read yet");
        watch.watch().alarmed = [(name("a"), false), (name("b"), true)]
            .into_iter()
            .collect();
        assert_eq!(watch.argument(&queue).0, "0");
        watch.watch().alarmed = [(name("a"), false), (name("b"), false)]
            .into_iter()
            .collect();
        assert_eq!(watch.argument(&queue).0, "1");
        watch.learn(&queue, "");
        assert_eq!(watch.argument(&queue).0, "");
    }
}
