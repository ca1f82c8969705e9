//! The rankings' settings: the event source, the zone of the calendar boards, how long boards
//! are kept, the dedupe window and the trending half-life, which ranking-api and
//! event-applier both read; the morning fallback, which only ranking-api reads; and the
//! live boards' snapshots, which only event-applier reads.

use std::time::Duration;

use super::error::{bad, ConfigError};
use super::vars::Vars;
use crate::bounds::Bounds;

/// How the rankings behave.
#[derive(Debug, Clone)]
pub struct RankingSettings {
    /// The EventBridge `source` of payment events; others are ignored.
    pub event_source: String,
    /// The zone whose calendar decides a payment's day, week and month.
    pub time_zone: chrono_tz::Tz,
    pub daily_retention_days: u32,
    pub weekly_retention_weeks: u32,
    pub monthly_retention_months: u32,
    /// How long a payment's or refund's dedupe record lives.
    pub dedupe: Duration,
    /// The trending board's half-life: a sale weighs half as much this much later.
    pub trending_half_life: Duration,
    /// The rows an hourly snapshot of a live board keeps: movement is shown within them.
    /// Read by event-applier (`Environment::snapshot_top`); the default elsewhere.
    pub snapshot_top: u32,
    /// `RANKING_EARLY_CUTOFF`: before this local time, a daily read without a date serves
    /// yesterday's board, and a weekly one on a Monday last week's. `None`: never. Read by
    /// ranking-api (`Environment::early_cutoff`); `None` elsewhere.
    pub early_cutoff: Option<chrono::NaiveTime>,
}

/// The default of `RANKING_SNAPSHOT_TOP`.
const SNAPSHOT_TOP_DEFAULT: u32 = 100;

/// A local time `HH:MM`. Read by hand rather than with chrono's format parser, which would
/// cost every function about 10 KB of code for one setting.
fn local_time(raw: &str) -> Option<chrono::NaiveTime> {
    let (hours, minutes) = raw.split_once(':')?;
    let two_digits = |s: &str| s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !two_digits(hours) || !two_digits(minutes) {
        return None;
    }
    chrono::NaiveTime::from_hms_opt(hours.parse().ok()?, minutes.parse().ok()?, 0)
}

impl RankingSettings {
    /// What ranking-api and event-applier both read; the snapshots' rows and the morning
    /// fallback at their defaults.
    pub(super) fn read(vars: &Vars) -> Result<Self, ConfigError> {
        let time_zone_name = vars
            .string("RANKING_TIME_ZONE")
            .unwrap_or_else(|| "UTC".into());
        Ok(RankingSettings {
            event_source: vars
                .string("PAYMENT_EVENT_SOURCE")
                .unwrap_or_else(|| "lineup.payments".into()),
            time_zone: time_zone_name.parse().map_err(|_| {
                bad(
                    "RANKING_TIME_ZONE",
                    format!(
                        "{time_zone_name:?} is not an IANA time zone name, or not one \
                         this build carries (.cargo/config.toml lists them)"
                    ),
                )
            })?,
            daily_retention_days: vars.count(
                "RANKING_DAILY_RETENTION_DAYS",
                8,
                Bounds::new(1, 3_660),
            )?,
            weekly_retention_weeks: vars.count(
                "RANKING_WEEKLY_RETENTION_WEEKS",
                5,
                Bounds::new(1, 520),
            )?,
            monthly_retention_months: vars.count(
                "RANKING_MONTHLY_RETENTION_MONTHS",
                13,
                Bounds::new(1, 120),
            )?,
            dedupe: Duration::from_secs(
                86_400 * vars.number("RANKING_DEDUPE_DAYS", 35, Bounds::new(1, 3_660))?,
            ),
            trending_half_life: Duration::from_secs(
                3_600 * vars.number("RANKING_TRENDING_HALF_LIFE_HOURS", 6, Bounds::new(1, 168))?,
            ),
            snapshot_top: SNAPSHOT_TOP_DEFAULT,
            early_cutoff: None,
        })
    }

    /// `RANKING_SNAPSHOT_TOP`: 1 to 100.
    pub(super) fn snapshot_top(vars: &Vars) -> Result<u32, ConfigError> {
        vars.count(
            "RANKING_SNAPSHOT_TOP",
            SNAPSHOT_TOP_DEFAULT,
            Bounds::new(1, 100),
        )
    }

    /// `RANKING_EARLY_CUTOFF`: a local time `HH:MM`, or `None` when unset.
    pub(super) fn early_cutoff(vars: &Vars) -> Result<Option<chrono::NaiveTime>, ConfigError> {
        vars.string("RANKING_EARLY_CUTOFF")
            .map(|raw| {
                let raw = raw.trim();
                local_time(raw).ok_or_else(|| {
                    bad(
                        "RANKING_EARLY_CUTOFF",
                        format!("must be a local time HH:MM (00:00 to 23:59), not {raw:?}"),
                    )
                })
            })
            .transpose()
    }
}
