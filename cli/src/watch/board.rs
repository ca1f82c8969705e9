//! What the view knows of each queue: its last summary, the history its charts draw, and
//! its last failed refresh.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::error::CliError;

/// How much history a chart can show: 10 minutes at one sample a second.
pub const HISTORY: usize = 600;

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

/// A failed refresh.
#[derive(Debug, Clone)]
pub struct Failure {
    pub at: DateTime<Utc>,
    pub reason: String,
    /// Failed refreshes in a row.
    pub streak: u32,
}

/// One queue on the board.
#[derive(Debug, Clone)]
pub struct Watched {
    pub queue: String,
    pub summary: Option<Value>,
    pub updated: Option<DateTime<Utc>>,
    pub history: VecDeque<Sample>,
    pub failure: Option<Failure>,
}

/// Every watched queue, in the order given.
#[derive(Debug, Clone)]
pub struct Board {
    pub queues: Vec<Watched>,
    pub target: String,
    pub every: Duration,
}

impl Board {
    pub fn new(queues: &[String], target: &str, every: Duration) -> Board {
        Board {
            queues: queues
                .iter()
                .map(|queue| Watched {
                    queue: queue.clone(),
                    summary: None,
                    updated: None,
                    history: VecDeque::new(),
                    failure: None,
                })
                .collect(),
            target: target.to_owned(),
            every,
        }
    }

    /// A refresh's answer for `queue`: a summary joins the history and clears the failure;
    /// an error keeps the last numbers and counts the failure.
    pub fn record(&mut self, queue: &str, answer: Result<Value, CliError>, at: DateTime<Utc>) {
        let Some(watched) = self.queues.iter_mut().find(|w| w.queue == queue) else {
            return;
        };
        match answer {
            Ok(summary) => {
                watched.history.push_back(Sample::of(&summary));
                while watched.history.len() > HISTORY {
                    watched.history.pop_front();
                }
                watched.summary = Some(summary);
                watched.updated = Some(at);
                watched.failure = None;
            }
            Err(err) => {
                let streak = watched.failure.as_ref().map_or(1, |f| f.streak + 1);
                watched.failure = Some(Failure {
                    at,
                    reason: err.to_string(),
                    streak,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_refresh_keeps_the_last_numbers_and_the_next_summary_clears_it() {
        let mut board = Board::new(&["q".into()], "local", Duration::from_secs(2));
        let now = Utc::now();
        board.record("q", Ok(json!({ "waiting": 5, "active": 2, "admissionRatePerMinute": 30.4 })), now);
        board.record("q", Err(CliError::Usage("down".into())), now);
        board.record("q", Err(CliError::Usage("down".into())), now);
        let q = &board.queues[0];
        assert_eq!(q.history.len(), 1);
        assert_eq!(q.history[0], Sample { waiting: 5, active: 2, admissions_per_minute: 30 });
        assert_eq!(q.failure.as_ref().map(|f| f.streak), Some(2));
        board.record("q", Ok(json!({ "waiting": 4, "active": 3 })), now);
        assert!(board.queues[0].failure.is_none());
        assert_eq!(board.queues[0].history.len(), 2);
    }
}
