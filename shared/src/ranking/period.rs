//! Periods and buckets: which board a moment falls on, in the ranking time zone, and when
//! that board expires. All calendar arithmetic is chrono's.

use std::fmt;

use chrono::{
    DateTime, Datelike, Days, Months, NaiveDate, NaiveTime, Offset, TimeDelta, TimeZone, Utc,
};
use chrono_tz::Tz;

use crate::config::RankingSettings;
use crate::error::Error;

/// A board's period: a calendar bucket, or a live board read at a moment (`last-24h`,
/// `last-7d`, `trending`; see `windows.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Daily,
    Weekly,
    Monthly,
    AllTime,
    Last24h,
    Last7d,
    Trending,
}

impl Period {
    /// The calendar periods: a payment counts on the bucket its day falls in.
    pub const ALL: [Period; 4] = [
        Period::Daily,
        Period::Weekly,
        Period::Monthly,
        Period::AllTime,
    ];

    /// Whether the board is read at a moment (now), never at a `date`.
    pub fn is_live(self) -> bool {
        matches!(self, Period::Last24h | Period::Last7d | Period::Trending)
    }

    pub fn parse(raw: &str) -> Result<Self, Error> {
        match raw {
            "daily" => Ok(Period::Daily),
            "weekly" => Ok(Period::Weekly),
            "monthly" => Ok(Period::Monthly),
            "all-time" => Ok(Period::AllTime),
            "last-24h" => Ok(Period::Last24h),
            "last-7d" => Ok(Period::Last7d),
            "trending" => Ok(Period::Trending),
            _ => Err(Error::invalid(
                "period",
                "must be one of daily, weekly, monthly, all-time, last-24h, last-7d, trending",
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Daily => "daily",
            Period::Weekly => "weekly",
            Period::Monthly => "monthly",
            Period::AllTime => "all-time",
            Period::Last24h => "last-24h",
            Period::Last7d => "last-7d",
            Period::Trending => "trending",
        }
    }

    /// The bucket holding `day`: `YYYY-MM-DD`, ISO `YYYY-Www` (week-based year), `YYYY-MM`,
    /// or `all`. A live period has no day buckets: its board is `Rankings::board_at` a
    /// moment (`rolling` for the windows).
    pub fn bucket(self, day: NaiveDate) -> String {
        match self {
            Period::Daily => format!("{:04}-{:02}-{:02}", day.year(), day.month(), day.day()),
            Period::Weekly => {
                let week = day.iso_week();
                format!("{}-W{:02}", week.year(), week.week())
            }
            Period::Monthly => format!("{:04}-{:02}", day.year(), day.month()),
            Period::AllTime => "all".into(),
            Period::Last24h | Period::Last7d | Period::Trending => "rolling".into(),
        }
    }

    /// The first day of the bucket holding `day`.
    fn bucket_start(self, day: NaiveDate) -> NaiveDate {
        match self {
            Period::Daily | Period::AllTime => day,
            Period::Last24h | Period::Last7d | Period::Trending => day,
            Period::Weekly => day - Days::new(u64::from(day.weekday().num_days_from_monday())),
            Period::Monthly => day.with_day(1).unwrap_or(day),
        }
    }

    /// A day of the bucket before the one holding `day`: the board a read of `day`'s board
    /// compares with (movement). `None` for the all-time board and the live boards.
    pub fn previous_day(self, day: NaiveDate) -> Option<NaiveDate> {
        match self {
            Period::Daily => day.pred_opt(),
            Period::Weekly => day.checked_sub_days(Days::new(7)),
            Period::Monthly => self.bucket_start(day).checked_sub_months(Months::new(1)),
            Period::AllTime | Period::Last24h | Period::Last7d | Period::Trending => None,
        }
    }

    /// When the board holding `day` expires: its first day's midnight in the ranking zone
    /// plus the retention. `None` for the all-time board, which never expires.
    pub fn expires_at(self, day: NaiveDate, settings: &RankingSettings) -> Option<DateTime<Utc>> {
        let start = self.bucket_start(day);
        let end = match self {
            Period::AllTime | Period::Last24h | Period::Last7d | Period::Trending => return None,
            Period::Daily => {
                start.checked_add_days(Days::new(settings.daily_retention_days.into()))
            }
            Period::Weekly => {
                start.checked_add_days(Days::new(7 * u64::from(settings.weekly_retention_weeks)))
            }
            Period::Monthly => {
                start.checked_add_months(Months::new(settings.monthly_retention_months))
            }
        }?;
        Some(start_of_day(end, settings.time_zone))
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The calendar day `instant` falls on in `zone`.
pub fn local_day(instant: DateTime<Utc>, zone: Tz) -> NaiveDate {
    instant.with_timezone(&zone).date_naive()
}

/// The first instant of `day` in `zone`. Where clocks jump forward at midnight (Chile,
/// Lebanon, Cuba and others), midnight never happens: the day starts at the jump, the instant
/// the clock would have read midnight under the offset in force just before it.
fn start_of_day(day: NaiveDate, zone: Tz) -> DateTime<Utc> {
    let midnight = day.and_time(NaiveTime::MIN);
    if let Some(start) = zone.from_local_datetime(&midnight).earliest() {
        return start.with_timezone(&Utc);
    }
    let offset_before = zone
        .offset_from_utc_datetime(&(midnight - TimeDelta::days(1)))
        .fix();
    Utc.from_utc_datetime(&(midnight - offset_before))
}

/// Parses a `YYYY-MM-DD` query parameter.
pub fn parse_date(raw: &str) -> Result<NaiveDate, Error> {
    NaiveDate::parse_from_str(raw, "%Y-%m-%d")
        .ok()
        .filter(|_| raw.len() == 10)
        .ok_or_else(|| Error::invalid("date", "must be a calendar date YYYY-MM-DD"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        parse_date(s).unwrap()
    }

    #[test]
    fn iso_weeks_use_the_week_based_year() {
        let weeks: Vec<String> = [
            "2026-12-28",
            "2026-12-31",
            "2027-01-01",
            "2027-01-03",
            "2027-01-04",
        ]
        .iter()
        .map(|d| Period::Weekly.bucket(day(d)))
        .collect();
        assert_eq!(
            weeks,
            ["2026-W53", "2026-W53", "2026-W53", "2026-W53", "2027-W01"]
        );
        assert_eq!(Period::Monthly.bucket(day("2027-01-01")), "2027-01");
        assert_eq!(Period::Daily.bucket(day("2027-01-01")), "2027-01-01");
    }

    #[test]
    fn the_previous_bucket_is_the_day_week_or_month_before() {
        let previous =
            |period: Period, d: &str| period.previous_day(day(d)).map(|p| period.bucket(p));
        assert_eq!(
            previous(Period::Daily, "2027-01-01").as_deref(),
            Some("2026-12-31")
        );
        assert_eq!(
            previous(Period::Weekly, "2027-01-04").as_deref(),
            Some("2026-W53")
        );
        assert_eq!(
            previous(Period::Monthly, "2027-03-31").as_deref(),
            Some("2027-02")
        );
        assert_eq!(
            previous(Period::Monthly, "2027-01-15").as_deref(),
            Some("2026-12")
        );
        for period in [
            Period::AllTime,
            Period::Last24h,
            Period::Last7d,
            Period::Trending,
        ] {
            assert_eq!(period.previous_day(day("2027-01-01")), None);
        }
    }

    #[test]
    fn days_are_taken_in_the_ranking_zone() {
        let instant: DateTime<Utc> = "2025-11-29T16:30:00Z".parse().unwrap();
        assert_eq!(
            local_day(instant, chrono_tz::Asia::Seoul),
            day("2025-11-30")
        );
        assert_eq!(local_day(instant, chrono_tz::UTC), day("2025-11-29"));
    }

    pub(super) fn settings(zone: Tz) -> RankingSettings {
        RankingSettings {
            event_source: "test".into(),
            time_zone: zone,
            daily_retention_days: 2,
            weekly_retention_weeks: 1,
            monthly_retention_months: 1,
            dedupe: std::time::Duration::from_secs(60),
            trending_half_life: std::time::Duration::from_secs(6 * 3600),
            snapshot_top: 100,
            early_cutoff: None,
        }
    }

    fn instant(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    #[test]
    fn boards_expire_at_local_midnight_after_their_retention() {
        let seoul = settings(chrono_tz::Asia::Seoul);
        assert_eq!(
            Period::Daily.expires_at(day("2026-11-20"), &seoul),
            Some(instant("2026-11-21T15:00:00Z")),
        );
        // The week of Thursday 2026-11-26 starts on Monday 2026-11-23.
        assert_eq!(
            Period::Weekly.expires_at(day("2026-11-26"), &seoul),
            Some(instant("2026-11-29T15:00:00Z")),
        );
        assert_eq!(
            Period::Monthly.expires_at(day("2026-11-26"), &seoul),
            Some(instant("2026-11-30T15:00:00Z")),
        );
        assert_eq!(Period::AllTime.expires_at(day("2026-11-26"), &seoul), None);
    }

    #[test]
    fn a_day_whose_midnight_is_skipped_starts_when_the_clocks_jump() {
        // Brazil moved its clocks from 00:00 (-03) to 01:00 (-02) on 2018-11-04, its last
        // daylight-saving start. (A zone .cargo/config.toml lists, unlike Chile's, which
        // still does this.)
        let sao_paulo = settings(chrono_tz::America::Sao_Paulo);
        assert_eq!(
            Period::Daily.expires_at(day("2018-11-02"), &sao_paulo),
            Some(instant("2018-11-04T03:00:00Z")),
        );
        assert_eq!(
            Period::Daily.expires_at(day("2018-11-03"), &sao_paulo),
            Some(instant("2018-11-05T02:00:00Z")),
        );
        // Falling back, the clocks went from 00:00 (-02) to 23:00 (-03) of the day before,
        // so 2019-02-17 started at the midnight an hour later.
        assert_eq!(
            Period::Daily.expires_at(day("2019-02-15"), &sao_paulo),
            Some(instant("2019-02-17T03:00:00Z")),
        );
    }

    #[test]
    fn rejects_malformed_dates() {
        for bad in [
            "2026-02-30",
            "2026-1-01",
            "20260101",
            "",
            "2026-01-01T00:00:00Z",
        ] {
            assert!(parse_date(bad).is_err(), "{bad}");
        }
    }
}

/// The day a board read without an explicit date serves at `now`, and whether that is an
/// earlier bucket than today's (the morning fallback). Before `settings.early_cutoff` (local
/// time in the ranking zone), a daily read serves yesterday, and a weekly read on a Monday
/// (the first day of an ISO week) serves last week. Monthly and all-time reads never fall
/// back, nor does a weekly read on a later day of the week.
pub fn default_day(
    now: DateTime<Utc>,
    settings: &RankingSettings,
    period: Period,
) -> (NaiveDate, bool) {
    let local = now.with_timezone(&settings.time_zone);
    let today = local.date_naive();
    let early = settings
        .early_cutoff
        .is_some_and(|cutoff| local.time() < cutoff);
    let falls_back = early
        && match period {
            Period::Daily => true,
            Period::Weekly => today.weekday() == chrono::Weekday::Mon,
            _ => false,
        };
    match today.pred_opt() {
        Some(yesterday) if falls_back => (yesterday, true),
        _ => (today, false),
    }
}

#[cfg(test)]
mod fallback_tests {
    use super::*;

    fn seoul(cutoff: Option<&str>) -> RankingSettings {
        RankingSettings {
            early_cutoff: cutoff.map(|c| NaiveTime::parse_from_str(c, "%H:%M").unwrap()),
            ..super::tests::settings(chrono_tz::Asia::Seoul)
        }
    }

    /// The bucket served at `utc` and whether it fell back.
    fn served(utc: &str, settings: &RankingSettings, period: Period) -> (String, bool) {
        let (day, fell_back) = default_day(utc.parse().unwrap(), settings, period);
        (period.bucket(day), fell_back)
    }

    fn bucket(b: &str, fell_back: bool) -> (String, bool) {
        (b.to_owned(), fell_back)
    }

    #[test]
    fn daily_reads_serve_yesterday_until_the_cutoff_instant() {
        let s = seoul(Some("10:30"));
        // Wednesday 2026-11-25 in Seoul (UTC+9): 10:29:59 local is 01:29:59 UTC.
        assert_eq!(
            served("2026-11-25T01:29:59Z", &s, Period::Daily),
            bucket("2026-11-24", true)
        );
        assert_eq!(
            served("2026-11-25T01:29:59.999Z", &s, Period::Daily),
            bucket("2026-11-24", true)
        );
        assert_eq!(
            served("2026-11-25T01:30:00Z", &s, Period::Daily),
            bucket("2026-11-25", false)
        );
        // Midnight local starts the new day's morning: still yesterday's board. The
        // instant before midnight is the evening, past the cut-off: that day's own board.
        assert_eq!(
            served("2026-11-24T15:00:00Z", &s, Period::Daily),
            bucket("2026-11-24", true)
        );
        assert_eq!(
            served("2026-11-24T14:59:59Z", &s, Period::Daily),
            bucket("2026-11-24", false)
        );
        // A Wednesday morning: the week is two days old, so weekly and monthly stay.
        assert_eq!(
            served("2026-11-25T01:00:00Z", &s, Period::Weekly),
            bucket("2026-W48", false)
        );
        assert_eq!(
            served("2026-11-25T01:00:00Z", &s, Period::Monthly),
            bucket("2026-11", false)
        );
    }

    #[test]
    fn weekly_reads_fall_back_only_on_a_monday_morning_across_the_iso_year() {
        let s = seoul(Some("10:30"));
        // Monday 2027-01-04 00:00 in Seoul is 2027-01-03T15:00Z: the first day of 2027-W01.
        // Its morning serves 2026-W53 (ISO years have 53 weeks when they start on a Thursday),
        // and daily serves Sunday 2027-01-03.
        assert_eq!(
            served("2027-01-03T15:00:00Z", &s, Period::Weekly),
            bucket("2026-W53", true)
        );
        assert_eq!(
            served("2027-01-04T01:29:59Z", &s, Period::Weekly),
            bucket("2026-W53", true)
        );
        assert_eq!(
            served("2027-01-04T01:30:00Z", &s, Period::Weekly),
            bucket("2027-W01", false)
        );
        assert_eq!(
            served("2027-01-03T15:00:00Z", &s, Period::Daily),
            bucket("2027-01-03", true)
        );
        // Sunday evening before: 2026-W53, not a fallback.
        assert_eq!(
            served("2027-01-03T14:59:59Z", &s, Period::Weekly),
            bucket("2026-W53", false)
        );
        // Friday 2027-01-01, the calendar year's first morning: daily serves 2026-12-31;
        // the ISO week (2026-W53) is days old, monthly and all-time never fall back.
        assert_eq!(
            served("2026-12-31T16:00:00Z", &s, Period::Daily),
            bucket("2026-12-31", true)
        );
        assert_eq!(
            served("2026-12-31T16:00:00Z", &s, Period::Weekly),
            bucket("2026-W53", false)
        );
        assert_eq!(
            served("2026-12-31T16:00:00Z", &s, Period::Monthly),
            bucket("2027-01", false)
        );
        assert_eq!(
            served("2026-12-31T16:00:00Z", &s, Period::AllTime),
            bucket("all", false)
        );
    }

    #[test]
    fn without_a_cutoff_every_read_serves_today() {
        let off = seoul(None);
        for period in Period::ALL {
            let (day, fell_back) =
                default_day("2027-01-03T15:00:00Z".parse().unwrap(), &off, period);
            assert_eq!((day, fell_back), (parse_date("2027-01-04").unwrap(), false));
        }
        // A cut-off of 00:00 never falls back: no time is before it.
        let midnight = seoul(Some("00:00"));
        assert_eq!(
            served("2027-01-03T15:00:00Z", &midnight, Period::Daily),
            bucket("2027-01-04", false)
        );
    }
}
