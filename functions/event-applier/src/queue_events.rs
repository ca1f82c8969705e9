//! The waiting room's incoming events, applied in the same round trip as the rankings': a
//! payment's release of its buyer's session, a sell-out (`InventorySoldOut`), the booking
//! system's health (`BookingHealth`) and a CloudWatch alarm's state change. Each is staged
//! into the batch the ranking commands go in, and read back into the event's verdict.

use lineup::queue::{
    AlarmNotice, HealthApplied, HealthNotice, Paid, QueueEvent, QueueEventKind, SellOut,
    SoldOutNotice, StagedAlarm, StagedHealth, StagedRelease, StagedSellOut,
};
use lineup::ranking::{Outcome, FUTURE_SKEW};
use lineup::store::Batch;
use redis::Value as Reply;
use serde_json::Value;

use crate::deps::Deps;

/// One of the waiting room's own events.
pub(crate) enum QueueAsk {
    SoldOut(SoldOutNotice),
    Health(HealthNotice),
    Alarm(AlarmNotice),
}

/// Which kind of the waiting room's events a verdict belongs to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    SoldOut,
    Health,
    Alarm,
}

impl QueueAsk {
    /// The event (as JSON, from `source`) if it is one of the waiting room's own:
    /// `InventorySoldOut`, `BookingHealth` or an alarm's state change.
    pub(crate) fn read(event: &Value, source: &str) -> Result<Option<Self>, lineup::Error> {
        if let Some(notice) = SoldOutNotice::from_event(event, source)? {
            return Ok(Some(QueueAsk::SoldOut(notice)));
        }
        if let Some(notice) = HealthNotice::from_event(event, source)? {
            return Ok(Some(QueueAsk::Health(notice)));
        }
        Ok(AlarmNotice::from_event(event)?.map(QueueAsk::Alarm))
    }
}

/// What a batch of events asks of the waiting room.
#[derive(Default)]
pub(crate) struct QueueAsks {
    /// The sessions paid for, from the payments that name their buyer.
    pub(crate) releases: Vec<Paid>,
    sold_out: Vec<SoldOutNotice>,
    health: Vec<HealthNotice>,
    alarms: Vec<AlarmNotice>,
}

/// The waiting room's part of a batch, staged; read back once the batch is sent.
pub(crate) struct Staged {
    sell_outs: Vec<StagedSellOut>,
    levels: Vec<StagedHealth>,
    alarms: Vec<StagedAlarm>,
    releases: Vec<StagedRelease>,
}

/// What the waiting room's part did: each event's verdict by kind, in order, and the queue
/// events to publish.
pub(crate) struct QueueApplied {
    sold_out: Vec<Outcome>,
    health: Vec<Outcome>,
    alarms: Vec<Outcome>,
    pub(crate) events: Vec<QueueEvent>,
}

impl QueueAsks {
    /// Adds one of the waiting room's events; its kind says where its verdict comes from.
    pub(crate) fn push(&mut self, ask: QueueAsk) -> Kind {
        match ask {
            QueueAsk::SoldOut(notice) => {
                self.sold_out.push(notice);
                Kind::SoldOut
            }
            QueueAsk::Health(notice) => {
                self.health.push(notice);
                Kind::Health
            }
            QueueAsk::Alarm(notice) => {
                self.alarms.push(notice);
                Kind::Alarm
            }
        }
    }

    /// Every event's verdict `outcome`, when the batch could not be applied.
    pub(crate) fn all(&self, outcome: Outcome) -> QueueApplied {
        QueueApplied {
            sold_out: vec![outcome.clone(); self.sold_out.len()],
            health: vec![outcome.clone(); self.health.len()],
            alarms: vec![outcome; self.alarms.len()],
            events: Vec::new(),
        }
    }

    /// Stages every sell-out, health level, alarm state and release into `batch` (a health
    /// level or a release on the striped line may first read the queue's settings).
    pub(crate) async fn stage(
        &self,
        batch: &mut Batch,
        deps: &Deps,
    ) -> Result<Staged, lineup::Error> {
        let sell_outs = self
            .sold_out
            .iter()
            .map(|notice| deps.room.stage_sell_out(batch, notice))
            .collect();
        let mut levels = Vec::with_capacity(self.health.len());
        for notice in &self.health {
            levels.push(deps.room.stage_health(batch, notice).await?);
        }
        let alarms = self
            .alarms
            .iter()
            .map(|notice| deps.room.stage_alarm(batch, notice))
            .collect();
        let remember = deps.rankings.settings().dedupe;
        let mut releases = Vec::with_capacity(self.releases.len());
        for paid in &self.releases {
            releases.push(
                deps.room
                    .stage_release(batch, paid, remember, FUTURE_SKEW)
                    .await?,
            );
        }
        Ok(Staged {
            sell_outs,
            levels,
            alarms,
            releases,
        })
    }
}

impl Staged {
    /// Each event's verdict and the queue events to publish, from the batch's `replies`.
    pub(crate) fn read(&self, replies: &[Reply]) -> Result<QueueApplied, lineup::Error> {
        let mut events = Vec::new();
        for release in &self.releases {
            events.extend(release.read(replies)?);
        }
        let mut sold_out = Vec::with_capacity(self.sell_outs.len());
        for staged in &self.sell_outs {
            sold_out.push(match staged.read(replies)? {
                SellOut::SoldOut(event) => {
                    events.push(*event);
                    Outcome::Applied
                }
                SellOut::Already => Outcome::Duplicate,
                SellOut::NoQueue => Outcome::Ignored("no such queue".into()),
            });
        }
        let mut health = Vec::with_capacity(self.levels.len());
        for staged in &self.levels {
            health.push(health_outcome(&staged.read(replies)?));
        }
        let mut alarms = Vec::with_capacity(self.alarms.len());
        for staged in &self.alarms {
            alarms.push(if staged.read(replies)? {
                Outcome::Applied
            } else {
                Outcome::Duplicate
            });
        }
        Ok(QueueApplied {
            sold_out,
            health,
            alarms,
            events,
        })
    }
}

impl QueueApplied {
    /// Sessions the batch's payments released.
    pub(crate) fn released(&self) -> usize {
        self.events
            .iter()
            .filter(|e| e.kind == QueueEventKind::Released)
            .count()
    }

    /// The verdicts, handed out by kind in the order the events came.
    pub(crate) fn outcomes(self) -> Verdicts {
        Verdicts {
            sold_out: self.sold_out.into_iter(),
            health: self.health.into_iter(),
            alarms: self.alarms.into_iter(),
        }
    }
}

/// The waiting room's verdicts, by kind, in order.
pub(crate) struct Verdicts {
    sold_out: std::vec::IntoIter<Outcome>,
    health: std::vec::IntoIter<Outcome>,
    alarms: std::vec::IntoIter<Outcome>,
}

impl Verdicts {
    /// The next verdict of `kind`.
    pub(crate) fn next(&mut self, kind: Kind) -> Option<Outcome> {
        match kind {
            Kind::SoldOut => self.sold_out.next(),
            Kind::Health => self.health.next(),
            Kind::Alarm => self.alarms.next(),
        }
    }
}

/// One `BookingHealth` event's verdict from its queues' outcomes: applied where any queue
/// took it; else a duplicate where one held a later signal; else ignored.
fn health_outcome(queues: &[HealthApplied]) -> Outcome {
    if queues
        .iter()
        .any(|q| matches!(q, HealthApplied::Applied { .. } | HealthApplied::Pooled))
    {
        Outcome::Applied
    } else if queues.contains(&HealthApplied::Stale) {
        Outcome::Duplicate
    } else if queues.contains(&HealthApplied::Lapsed) {
        Outcome::Ignored("the level lapsed before it arrived".into())
    } else {
        Outcome::Ignored("no such queue or pool".into())
    }
}
