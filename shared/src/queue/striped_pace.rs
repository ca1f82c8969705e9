//! The pace on the striped line: the capacity in force, from the settings fields the queue's
//! scripts keep (the ramp `configure.lua` stores, the health signal `health.lua` stores), read
//! by the line's clock. The rules are `common.lua`'s: the ramp's step, and the health level
//! that falls at once and climbs by 1 per `healthRecoverySeconds`. On the line the level
//! scales the capacity: at level `h` the line holds `⌊h × capacity⌋` sessions, and at 0 it
//! admits nobody (each stripe is halted too, in the call that brings the level to 0).

use super::pace::{Health, HealthReason};
use crate::line::TICK_EVERY;

/// `capacity-ramp` as stored: `from:step:every ms:to:set ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct StoredRamp {
    from: u64,
    step: u64,
    every_ms: i64,
    to: u64,
    set_at: i64,
}

impl StoredRamp {
    /// The stored text's ramp; `None` for another form, as `common.lua` takes it.
    pub fn parse(raw: &str) -> Option<StoredRamp> {
        let parts: Vec<i64> = raw
            .split(':')
            .map(|p| p.parse().ok())
            .collect::<Option<_>>()?;
        match parts.as_slice() {
            [from, step, every_ms, to, set_at] if *every_ms > 0 => Some(StoredRamp {
                from: u64::try_from(*from).ok()?,
                step: u64::try_from(*step).ok()?,
                every_ms: *every_ms,
                to: u64::try_from(*to).ok()?,
                set_at: *set_at,
            }),
            _ => None,
        }
    }

    /// The ramp's step at `now`: `from` until its start (the opening, else when it was set),
    /// then `step` more each `every`, up to `to`.
    pub fn at(&self, now: i64, opens_at: Option<i64>) -> u64 {
        let start = opens_at.unwrap_or(self.set_at);
        if now < start {
            return self.from;
        }
        let steps = ((now - start) / self.every_ms) as u64;
        self.to
            .min(self.from.saturating_add(self.step.saturating_mul(steps)))
    }
}

/// The health fields as stored: the last `BookingHealth` signal (`level:sent ms:until ms`),
/// the alarm state (`0` in ALARM), the climb's start (`level:ms`) and the recovery period.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct StoredHealth {
    pub signal: Option<String>,
    pub alarm: Option<String>,
    pub climb: Option<String>,
    pub recovery_ms: Option<i64>,
}

/// `common.lua`'s `HEALTH_RECOVERY_DEFAULT_MS`.
const RECOVERY_DEFAULT_MS: i64 = super::health::HEALTH_RECOVERY_DEFAULT_SECONDS as i64 * 1000;

/// A signal's level, when it was sent and until when it counts.
fn signal_of(raw: Option<&str>) -> Option<(f64, i64, i64)> {
    let mut parts = raw?.split(':');
    let level = parts.next()?.parse().ok()?;
    let sent = parts.next()?.parse().ok()?;
    let until = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((level, sent, until))
}

impl StoredHealth {
    /// What the signals say at `now`.
    fn target(&self, now: i64) -> Health {
        let mut health = Health {
            level: 1.0,
            reason: None,
        };
        if let Some((level, _, until)) = signal_of(self.signal.as_deref()) {
            if now < until && level < 0.9999 {
                health = Health {
                    level,
                    reason: Some(HealthReason::Booking),
                };
            }
        }
        if self.alarm.as_deref() == Some("0") {
            health = Health {
                level: 0.0,
                reason: Some(HealthReason::Alarm),
            };
        }
        health
    }

    /// The level in force at `now`: the target, or the climb where it is lower. A signal that
    /// lapsed since the climb's start is a rise at its `until`: the climb starts again there.
    pub fn in_force(&self, now: i64) -> Health {
        let target = self.target(now);
        let recovery = self.recovery_ms.unwrap_or(RECOVERY_DEFAULT_MS);
        let climb = self.climb.as_deref().and_then(|raw| {
            let (from, since) = raw.split_once(':')?;
            Some((from.parse::<f64>().ok()?, since.parse::<i64>().ok()?))
        });
        let Some((mut from, mut since)) = climb.filter(|_| recovery > 0) else {
            return target;
        };
        let recovery = recovery as f64;
        if let Some((level, _, until)) = signal_of(self.signal.as_deref()) {
            if until <= now && until > since {
                from = level.min(from + (until - since) as f64 / recovery);
                since = until;
            }
        }
        let climbed = from + (now - since) as f64 / recovery;
        if climbed < target.level - 0.0001 {
            return Health {
                level: climbed.max(0.0),
                reason: Some(HealthReason::Recovery),
            };
        }
        target
    }
}

/// The capacity at `now` before the health level: `capacity`, at most the ramp's step.
pub(super) fn stepped(
    capacity: u64,
    ramp: Option<StoredRamp>,
    opens_at: Option<i64>,
    now: i64,
) -> u64 {
    ramp.map_or(capacity, |ramp| capacity.min(ramp.at(now, opens_at)))
}

/// The sessions the line may hold at `now`: `capacity`, at most the ramp's step, times the
/// health level in force, rounded down.
pub(super) fn capacity_in_force(
    capacity: u64,
    ramp: Option<StoredRamp>,
    opens_at: Option<i64>,
    health: Health,
    now: i64,
) -> u64 {
    let stepped = stepped(capacity, ramp, opens_at, now);
    (stepped as f64 * health.level.clamp(0.0, 1.0)).floor() as u64
}

/// How many a tick at `now` admits at most: `per_tick` at level 1; below it, `h × per_tick`
/// per tick on average, counted on the clock, so a fraction carries to the next ticks without
/// being stored (0.3 × 5 admits 1, 2, 1, 2 …). `common.lua`'s `paced_admissions`, with the
/// line's tick of [`TICK_EVERY`].
pub(super) fn paced_admissions(per_tick: u32, health: Health, now: i64) -> u64 {
    let per_tick = f64::from(per_tick);
    if health.level >= 1.0 {
        return per_tick as u64;
    }
    let tick_ms = TICK_EVERY.as_millis() as f64;
    let per_ms = health.level.max(0.0) * per_tick / tick_ms;
    let at = |ms: i64| (per_ms * ms as f64).floor();
    (at(now) - at(now - tick_ms as i64)).max(0.0) as u64
}

/// What a `QueuePaceChanged` was last published for (`pace-announced`, as `promote.lua`
/// writes it): the stepped capacity and the health level in tenths, while a ramp is set or the
/// level is below 1; `None` at the normal pace.
pub(super) fn pace_mark(stepped: u64, ramp: bool, health: Health) -> Option<String> {
    (ramp || health.level < 1.0)
        .then(|| format!("{stepped}:{}", (health.level * 10.0).floor() as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_steps_from_its_start_up_to_its_end() {
        let ramp = StoredRamp::parse("200:100:60000:1000:5000").unwrap();
        assert_eq!(ramp.at(4_999, None), 200);
        assert_eq!(ramp.at(5_000, None), 200);
        assert_eq!(ramp.at(65_000, None), 300);
        assert_eq!(ramp.at(10_000_000, None), 1000);
        // With an opening, from the opening.
        assert_eq!(ramp.at(65_000, Some(100_000)), 200);
        assert_eq!(StoredRamp::parse("200:100:0:1000:5000"), None);
        assert_eq!(StoredRamp::parse("200:100:60000:1000"), None);
    }

    #[test]
    fn the_level_falls_at_once_and_climbs_back() {
        // A signal of 0.2 sent at 0, counting until 120 s; the climb started at 0.2 at 0.
        let health = StoredHealth {
            signal: Some("0.2:0:120000".into()),
            alarm: None,
            climb: Some("0.2000:0".into()),
            recovery_ms: Some(60_000),
        };
        let at = |now| health.in_force(now);
        assert_eq!(at(1_000).level, 0.2);
        assert_eq!(at(1_000).reason, Some(HealthReason::Booking));
        // It lapses at 120 s: from there the level climbs 1 a minute, from 0.2.
        let later = at(150_000);
        assert!((later.level - 0.7).abs() < 1e-9, "{later:?}");
        assert_eq!(later.reason, Some(HealthReason::Recovery));
        assert_eq!(at(200_000).level, 1.0);
        // An alarm holds it at 0.
        let alarmed = StoredHealth {
            alarm: Some("0".into()),
            ..health.clone()
        };
        assert_eq!(alarmed.in_force(1_000).level, 0.0);
        assert_eq!(capacity_in_force(100, None, None, at(150_000), 150_000), 70);
        assert_eq!(capacity_in_force(100, None, None, at(1_000), 1_000), 20);
        let ramp = StoredRamp::parse("10:10:1000:100:0");
        assert_eq!(capacity_in_force(100, ramp, None, at(3_000), 3_000), 8);
    }

    #[test]
    fn a_tick_below_level_one_admits_its_share_on_average() {
        let at = |level| Health {
            level,
            reason: Some(HealthReason::Booking),
        };
        assert_eq!(paced_admissions(5, at(1.0), 7_000), 5);
        let ticks: Vec<u64> = (1..=10)
            .map(|k| paced_admissions(5, at(0.3), k * 1_000))
            .collect();
        assert_eq!(ticks.iter().sum::<u64>(), 15);
        assert!(ticks.iter().all(|n| (1..=2).contains(n)), "{ticks:?}");
        assert_eq!(paced_admissions(5, at(0.0), 7_000), 0);
    }
}
