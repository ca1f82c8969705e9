//! What the view knows of each queue: its last summary, the history its charts draw, and
//! its last failed refresh. No terminal here: the charts' numbers are computed on a clock the
//! caller gives, so they are tested alone.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::CliError;

/// How many refreshes a queue keeps for its charts: an hour at one a second, more than the
/// widest chart shows.
pub const HISTORY: usize = 3600;

/// The least history a chart covers, however narrow: the last two minutes. A chart wider
/// than that at one column a refresh covers more.
pub const LEAST_SPAN: Duration = Duration::from_secs(120);

/// One refresh's numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub waiting: u64,
    pub active: u64,
    pub admissions_per_minute: u64,
}

impl Sample {
    pub fn of(summary: &Value) -> Sample {
        Sample {
            waiting: summary["waiting"].as_u64().unwrap_or(0),
            active: summary["active"].as_u64().unwrap_or(0),
            admissions_per_minute: summary["admissionRatePerMinute"]
                .as_f64()
                .map_or(0, |rate| rate.round() as u64),
        }
    }
}

/// One refresh: when it came back, and its numbers, or none when it failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Refresh {
    pub at: DateTime<Utc>,
    pub sample: Option<Sample>,
}

/// The refreshes failing in a row.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The first failure of the run.
    pub since: DateTime<Utc>,
    /// The last one.
    pub at: DateTime<Utc>,
    pub reason: String,
    /// Failed refreshes in a row.
    pub streak: u32,
}

/// One queue on the board.
#[derive(Debug, Clone)]
pub struct Watched {
    pub queue: String,
    /// The last summary that came back; kept through failed refreshes.
    pub summary: Option<Value>,
    /// When it came back.
    pub updated: Option<DateTime<Utc>>,
    /// Every refresh, oldest first, failed ones included, at most [`HISTORY`].
    pub history: VecDeque<Refresh>,
    pub failure: Option<Failure>,
}

/// Every watched queue, in the order given, each once.
#[derive(Debug, Clone)]
pub struct Board {
    pub queues: Vec<Watched>,
    pub target: String,
    pub every: Duration,
}

impl Board {
    pub fn new(queues: &[String], target: &str, every: Duration) -> Board {
        let mut watched: Vec<Watched> = Vec::new();
        for queue in queues {
            if watched.iter().any(|w| &w.queue == queue) {
                continue;
            }
            watched.push(Watched {
                queue: queue.clone(),
                summary: None,
                updated: None,
                history: VecDeque::new(),
                failure: None,
            });
        }
        Board {
            queues: watched,
            target: target.to_owned(),
            every,
        }
    }

    /// A refresh's answer for `queue`: a summary joins the history and clears the failure;
    /// an error keeps the last numbers, counts the failure, and leaves a gap in the history.
    pub fn record(&mut self, queue: &str, answer: Result<Value, CliError>, at: DateTime<Utc>) {
        let Some(watched) = self.queues.iter_mut().find(|w| w.queue == queue) else {
            return;
        };
        let sample = match answer {
            Ok(summary) => {
                let sample = Sample::of(&summary);
                watched.summary = Some(summary);
                watched.updated = Some(at);
                watched.failure = None;
                Some(sample)
            }
            Err(err) => {
                let (since, streak) = watched
                    .failure
                    .as_ref()
                    .map_or((at, 1), |f| (f.since, f.streak + 1));
                watched.failure = Some(Failure {
                    since,
                    at,
                    reason: reason(&err),
                    streak,
                });
                None
            }
        };
        watched.history.push_back(Refresh { at, sample });
        while watched.history.len() > HISTORY {
            watched.history.pop_front();
        }
    }
}

/// Why a refresh failed, in few words and the weightiest first, as a narrow column cuts it:
/// `503 Service Unavailable: …`, `unreachable: …`.
pub fn reason(err: &CliError) -> String {
    match err {
        CliError::Failed(problem) | CliError::Refused(problem) => {
            let mut text = format!("{} {}", problem.status, problem.title);
            if !problem.detail.is_empty() {
                text.push_str(&format!(": {}", problem.detail));
            }
            text
        }
        CliError::Unreachable { reason, .. } => format!("unreachable: {reason}"),
        other => other.to_string(),
    }
}

/// How long one column of a chart `columns` wide stands for, refreshing `every`: a refresh,
/// or longer when the chart is too narrow to cover [`LEAST_SPAN`] that way. So a chart covers
/// `columns × every` or [`LEAST_SPAN`], whichever is longer: a wider one covers more.
pub fn step(columns: usize, every: Duration) -> Duration {
    let columns = columns.max(1) as u64;
    let least = (LEAST_SPAN.as_millis() as u64).div_ceil(columns);
    Duration::from_millis(least)
        .max(every)
        .max(Duration::from_millis(100))
}

/// A length of time as a chart's footnote: `90 s`, `4 min`, `2 h`.
pub fn span_label(seconds: u64) -> String {
    match seconds {
        0..120 => format!("{seconds} s"),
        120..7200 => format!("{} min", seconds / 60),
        _ => format!("{} h", seconds / 3600),
    }
}

impl Watched {
    /// One number's chart: `columns` columns of `step` each, oldest first, the last
    /// one holding `now`. A column shows the highest value refreshed in it; one with no
    /// refresh shows the column before it (the numbers held); one where every refresh failed
    /// is absent (`None`); one before the first refresh is 0.
    pub fn series(
        &self,
        pick: fn(&Sample) -> u64,
        columns: usize,
        step: Duration,
        now: DateTime<Utc>,
    ) -> Vec<Option<u64>> {
        let step_ms = (step.as_millis() as i64).max(1);
        let column_of = |at: DateTime<Utc>| at.timestamp_millis().div_euclid(step_ms);
        let last = column_of(now);
        let first = last - columns as i64 + 1;
        let mut out = Vec::with_capacity(columns);
        let mut refreshes = self.history.iter().peekable();
        // The value held into the chart from before its first column.
        let mut held: Option<Option<u64>> = None;
        while let Some(refresh) = refreshes.next_if(|r| column_of(r.at) < first) {
            held = Some(refresh.sample.as_ref().map(pick));
        }
        for column in first..=last {
            let mut best: Option<u64> = None;
            let mut failed = false;
            while let Some(refresh) = refreshes.next_if(|r| column_of(r.at) <= column) {
                match &refresh.sample {
                    Some(sample) => best = Some(best.map_or(pick(sample), |b| b.max(pick(sample)))),
                    None => failed = true,
                }
            }
            let shown = match (best, failed, held) {
                (Some(value), _, _) => Some(value),
                (None, true, _) => None,
                (None, false, Some(before)) => before,
                (None, false, None) => Some(0),
            };
            if best.is_some() || failed || held.is_some() {
                held = Some(shown);
            }
            out.push(shown);
        }
        out
    }

    /// The last numbers that came back.
    pub fn last_sample(&self) -> Option<Sample> {
        self.history.iter().rev().find_map(|r| r.sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use serde_json::json;

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn a_failed_refresh_keeps_the_last_numbers_and_the_next_summary_clears_it() {
        let mut board = Board::new(&["q".into()], "local", Duration::from_secs(2));
        board.record(
            "q",
            Ok(json!({ "waiting": 5, "active": 2, "admissionRatePerMinute": 30.4 })),
            at(0),
        );
        board.record("q", Err(CliError::Usage("down".into())), at(2));
        board.record("q", Err(CliError::Usage("down".into())), at(4));
        let q = &board.queues[0];
        assert_eq!(q.summary.as_ref().unwrap()["waiting"], 5);
        assert_eq!(q.updated, Some(at(0)));
        assert_eq!(
            q.last_sample(),
            Some(Sample {
                waiting: 5,
                active: 2,
                admissions_per_minute: 30
            })
        );
        let failure = q.failure.as_ref().unwrap();
        assert_eq!(
            (failure.streak, failure.since, failure.at),
            (2, at(2), at(4))
        );
        assert_eq!(failure.reason, "down");
        board.record("q", Ok(json!({ "waiting": 4, "active": 3 })), at(6));
        assert!(board.queues[0].failure.is_none());
        assert_eq!(board.queues[0].history.len(), 4);
    }

    #[test]
    fn a_queue_named_twice_is_watched_once() {
        let board = Board::new(
            &["a".into(), "b".into(), "a".into()],
            "local",
            Duration::from_secs(1),
        );
        let names: Vec<&str> = board.queues.iter().map(|w| w.queue.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn a_chart_holds_numbers_between_refreshes_leaves_a_gap_for_an_outage_and_keeps_the_peak() {
        let mut board = Board::new(&["q".into()], "local", Duration::from_secs(1));
        let waiting = |n: u64| Ok(json!({ "waiting": n, "active": 0 }));
        board.record("q", waiting(3), at(10));
        board.record("q", waiting(9), at(11));
        board.record("q", waiting(4), at(12));
        // Nothing refreshed in 13..15, then Redis went away for two columns.
        board.record("q", Err(CliError::Usage("503".into())), at(16));
        board.record("q", Err(CliError::Usage("503".into())), at(17));
        board.record("q", waiting(6), at(18));
        let chart = board.queues[0].series(|s| s.waiting, 12, Duration::from_secs(2), at(19));
        // Columns of 2 s, the last 18..20: seven before the first refresh; 10..12 peaks at
        // 9; 14..16 holds 12..14's 4; 16..18 failed.
        let mut expected = vec![Some(0); 7];
        expected.extend([Some(9), Some(4), Some(4), None, Some(6)]);
        assert_eq!(chart, expected);
        // Further on, the oldest columns are dropped and the last number is held.
        let later = board.queues[0].series(|s| s.waiting, 3, Duration::from_secs(2), at(30));
        assert_eq!(later, [Some(6); 3][..]);
    }

    #[test]
    fn a_narrow_chart_still_covers_minutes_and_a_wide_one_covers_more() {
        let every = Duration::from_secs(2);
        let span = |columns: usize| step(columns, every) * columns as u32;
        assert!(span(22) >= LEAST_SPAN, "{:?}", span(22));
        assert!(span(78) >= LEAST_SPAN, "{:?}", span(78));
        assert_eq!(span(238), Duration::from_secs(476));
        assert!(span(238) > span(78) && span(78) >= span(22));
        assert_eq!(step(500, every), every, "never finer than a refresh");
        assert_eq!(span_label(90), "90 s");
        assert_eq!(span_label(476), "7 min");
    }
}
