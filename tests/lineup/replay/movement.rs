//! The replay's movement checks: every calendar board read through the ranking API, each
//! row's previous rank against the model's board one bucket before, under a long and a short
//! retention.

use std::collections::BTreeMap;

use chrono::{Datelike, Duration, NaiveDate, Utc};
use serde_json::{json, Value};

use super::stream::*;

/// A reader's retention: `RANKING_DAILY_RETENTION_DAYS`, `RANKING_WEEKLY_RETENTION_WEEKS`
/// and `RANKING_MONTHLY_RETENTION_MONTHS`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Retention {
    pub(crate) days: u32,
    pub(crate) weeks: u32,
    pub(crate) months: u32,
}

/// The replay's: every bucket of the stream, and the one before each, is kept.
pub(crate) const KEPT: Retention = Retention {
    days: 3650,
    weeks: 520,
    months: 120,
};

/// A redeployed API's: the buckets before the older days, weeks and the older month of the
/// stream are gone by its reckoning (their keys are still there, with the replay's TTLs).
pub(crate) const SHORT: Retention = Retention {
    days: 20,
    weeks: 3,
    months: 2,
};

impl Retention {
    pub(crate) fn vars(self) -> [(&'static str, String); 3] {
        [
            ("RANKING_DAILY_RETENTION_DAYS", self.days.to_string()),
            ("RANKING_WEEKLY_RETENTION_WEEKS", self.weeks.to_string()),
            ("RANKING_MONTHLY_RETENTION_MONTHS", self.months.to_string()),
        ]
    }

    pub(crate) fn describe(self) -> String {
        format!(
            "{} days, {} weeks, {} months",
            self.days, self.weeks, self.months
        )
    }

    /// Whether the board of calendar `bucket` is still kept on `today` (UTC, the replay's
    /// ranking zone): it ends at midnight of its first day plus the retention.
    pub(crate) fn keeps(self, period: &str, bucket: &str, today: NaiveDate) -> bool {
        let start = bucket_start(period, bucket);
        let ends = match period {
            "daily" => start + Duration::days(self.days.into()),
            "weekly" => start + Duration::weeks(self.weeks.into()),
            "monthly" => start
                .checked_add_months(chrono::Months::new(self.months))
                .unwrap(),
            _ => return true,
        };
        ends > today
    }
}

/// concertId → `(updatedAt ms, capacity, details JSON)`, as [`details_model`] gives it.
pub(crate) type Details = BTreeMap<String, (i64, u64, Value)>;

/// `(period, bucket, genre)` of a board of the model.
pub(crate) type BoardKey = (String, String, Option<String>);

/// A board's order: seats sold, or sell-through (the rate boards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum By {
    Seats,
    Rate,
}

impl By {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            By::Seats => "seats",
            By::Rate => "rate",
        }
    }
}

/// The first day of a calendar bucket of the model (the all-time board: any day).
pub(crate) fn bucket_start(period: &str, bucket: &str) -> NaiveDate {
    NaiveDate::parse_from_str(&day_in(period, bucket), "%Y-%m-%d").unwrap()
}

/// The bucket before `bucket`: the day, ISO week or month before; none before all-time.
pub(crate) fn previous_bucket(period: &str, bucket: &str) -> Option<String> {
    let start = bucket_start(period, bucket);
    match period {
        "daily" => Some((start - Duration::days(1)).format("%Y-%m-%d").to_string()),
        "weekly" => {
            let week = (start - Duration::days(7)).iso_week();
            Some(format!("{}-W{:02}", week.year(), week.week()))
        }
        // The last day of the month before is in it.
        "monthly" => Some((start - Duration::days(1)).format("%Y-%m").to_string()),
        _ => None,
    }
}

/// The model's board `key` ordered `by`: concert → seats, or seats × 10⁶ ÷ the latest
/// capacity, rounded down, for the concerts whose capacity is known. Empty where the model
/// has no such board.
pub(crate) fn scored(
    expected: &Boards,
    details: &Details,
    key: &BoardKey,
    by: By,
) -> BTreeMap<String, u64> {
    let Some(seats) = expected.get(key) else {
        return BTreeMap::new();
    };
    match by {
        By::Seats => seats.clone(),
        By::Rate => seats
            .iter()
            .filter_map(|(concert, seats)| {
                let (_, capacity, _) = details.get(concert)?;
                Some((concert.clone(), seats * 1_000_000 / capacity))
            })
            .collect(),
    }
}

/// Competition ranks (1, 2, 2, 4): one more than the concerts scoring more.
pub(crate) fn competition_ranks(board: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    board
        .iter()
        .map(|(concert, score)| {
            let above = board.values().filter(|other| *other > score).count();
            (concert.clone(), above as u64 + 1)
        })
        .collect()
}

/// Counts of the rows a movement check compared, by what the model expects of them.
#[derive(Debug, Default)]
pub(crate) struct MovementCounts {
    pub(crate) reads: usize,
    pub(crate) rows: usize,
    pub(crate) up: usize,
    pub(crate) down: usize,
    pub(crate) same: usize,
    pub(crate) new: usize,
    /// Rows whose rank before is shared with another concert there.
    pub(crate) tied_before: usize,
    /// Null on the all-time board.
    pub(crate) all_time: usize,
    /// Null on a calendar board: the bucket before is no longer kept.
    pub(crate) gone: usize,
    /// Top-10 pages read twice, of boards not empty: each kept in the page cache.
    pub(crate) kept_pages: usize,
}

/// A read's row as compared: `[concertId, seats, rank, previousRank, movement]`; a field
/// the read leaves out shows as `"absent"`, so it never passes for null.
pub(crate) fn shown_row(item: &Value) -> Value {
    let field = |name: &str| item.get(name).cloned().unwrap_or(json!("absent"));
    json!([
        field("concertId"),
        field("score"),
        field("rank"),
        field("previousRank"),
        field("movement")
    ])
}

pub(crate) fn shown_rows(items: &Value) -> Value {
    Value::Array(
        items
            .as_array()
            .expect("rows")
            .iter()
            .map(shown_row)
            .collect(),
    )
}

/// The model's rows of board `key` ordered `by`, best first (score descending, then
/// concertId), each as [`shown_row`]: its competition rank, and its competition rank on the
/// model's board one bucket before while `retention` keeps that bucket on `today` (`null`
/// and `new` when the concert is not on it; both `null` without a bucket before).
pub(crate) fn model_rows(
    expected: &Boards,
    details: &Details,
    key: &BoardKey,
    by: By,
    retention: Retention,
    today: NaiveDate,
    counts: &mut MovementCounts,
) -> Vec<Value> {
    let (period, bucket, genre) = key;
    let board = scored(expected, details, key, by);
    let ranks = competition_ranks(&board);
    let before = previous_bucket(period, bucket)
        .filter(|previous| retention.keeps(period, previous, today))
        .map(|previous| {
            let key = (period.clone(), previous, genre.clone());
            competition_ranks(&scored(expected, details, &key, by))
        });
    let mut order: Vec<(&String, &u64)> = board.iter().collect();
    order.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    order
        .into_iter()
        .map(|(concert, _)| {
            let rank = ranks[concert];
            let (was, moved) = match &before {
                None if period == "all-time" => {
                    counts.all_time += 1;
                    (Value::Null, Value::Null)
                }
                None => {
                    counts.gone += 1;
                    (Value::Null, Value::Null)
                }
                Some(before) => match before.get(concert) {
                    None => {
                        counts.new += 1;
                        (Value::Null, json!({"kind": "new"}))
                    }
                    Some(&was) => {
                        if before.values().filter(|r| **r == was).count() > 1 {
                            counts.tied_before += 1;
                        }
                        let moved = if was > rank {
                            counts.up += 1;
                            json!({"kind": "up", "by": was - rank})
                        } else if was < rank {
                            counts.down += 1;
                            json!({"kind": "down", "by": rank - was})
                        } else {
                            counts.same += 1;
                            json!({"kind": "same"})
                        };
                        (json!(was), moved)
                    }
                },
            };
            counts.rows += 1;
            json!([concert, expected[key][concert], rank, was, moved])
        })
        .collect()
}

/// `GET path` through the ranking API `api`.
pub(crate) async fn read_through(api: &ranking_api::Deps, path: &str) -> lineup_tests::Reply {
    let reply = lineup_tests::Reply::from(
        ranking_api::handle(lineup_tests::api_request("GET", path, None), api)
            .await
            .expect("infallible"),
    );
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply
}

/// One read's path, what it showed and what the model says.
pub(crate) type Shown = Vec<(String, Value, Value)>;

/// Reads every calendar board of the model through `api`, by seats and by rate: the whole
/// board as one page and every concert as one many-concerts read (in another order, one id
/// twice, the cancelled concerts and those with no sales in the bucket included); with
/// `all_reads` also the top 10 twice (rendered, then kept) and the middle concert's own read
/// with 3 rows either side. Returns what each read showed beside the model at `retention`
/// on `today`, for the caller to compare.
pub(crate) async fn movement_reads(
    api: &ranking_api::Deps,
    expected: &Boards,
    details: &Details,
    retention: Retention,
    today: NaiveDate,
    all_reads: bool,
) -> (Shown, MovementCounts) {
    let mut counts = MovementCounts::default();
    let mut shown: Shown = Vec::new();
    // Every concert, in an order of its own, and one of them twice.
    let mut ids: Vec<String> = (0..CONCERTS)
        .map(|k| concert_id(k * 17 % CONCERTS))
        .collect();
    ids.push(concert_id(3));
    let ids = ids.join(",");
    for key in expected.keys() {
        let (period, bucket, genre) = key;
        for by in [By::Seats, By::Rate] {
            let rows = model_rows(expected, details, key, by, retention, today, &mut counts);
            let mut query = format!("date={}&by={}", day_in(period, bucket), by.as_str());
            if let Some(genre) = genre {
                query.push_str(&format!("&genre={genre}"));
            }
            let path = format!("/rankings/{period}?{query}&limit=100");
            let page = read_through(api, &path).await.body;
            shown.push((
                path.clone(),
                json!([page["bucket"], page["total"], shown_rows(&page["items"])]),
                json!([bucket, rows.len(), rows]),
            ));
            // The standings: each concert once, sorted by id; all null off the board.
            let path = format!("/rankings/{period}/concerts?{query}&ids={ids}");
            let many = read_through(api, &path).await.body;
            let got: Vec<Value> = many["concerts"]
                .as_array()
                .expect("concerts")
                .iter()
                .map(|c| {
                    let percentile = c["percentile"].as_f64().map(|p| (p * 100.0).round());
                    json!([shown_row(c), c["onBoard"], percentile])
                })
                .collect();
            let total = rows.len() as u64;
            let want: Vec<Value> = (0..CONCERTS)
                .map(|k| {
                    let id = concert_id(k);
                    match rows.iter().find(|r| r[0] == json!(id)) {
                        Some(row) => {
                            // 100 × (total − rank + 1) ÷ total in hundredths, half up.
                            let rank = row[2].as_u64().unwrap();
                            let hundredths = ((total - rank + 1) * 20_000 + total) / (2 * total);
                            json!([row, true, hundredths as f64])
                        }
                        None => json!([[id, null, null, null, null], false, null]),
                    }
                })
                .collect();
            shown.push((path, json!([many["total"], got]), json!([total, want])));
            counts.reads += 2;
            if !all_reads {
                continue;
            }
            // The top 10, rendered and then from the page cache.
            let top = &rows[..rows.len().min(10)];
            for _ in 0..2 {
                let path = format!("/rankings/{period}?{query}&limit=10");
                let page = read_through(api, &path).await.body;
                shown.push((path, shown_rows(&page["items"]), json!(top)));
                counts.reads += 1;
            }
            if rows.is_empty() {
                continue;
            }
            counts.kept_pages += 1;
            // The middle concert's own read, with its neighbours.
            let at = rows.len() / 2;
            let concert = rows[at][0].as_str().unwrap();
            let path = format!("/rankings/{period}/concerts/{concert}?{query}&around=3");
            let own = read_through(api, &path).await.body;
            shown.push((
                path,
                json!([
                    shown_rows(&own["above"]),
                    shown_row(&own),
                    shown_rows(&own["below"])
                ]),
                json!([
                    rows[at.saturating_sub(3)..at],
                    rows[at],
                    rows[at + 1..rows.len().min(at + 4)]
                ]),
            ));
            counts.reads += 1;
        }
    }
    (shown, counts)
}

/// [`movement_reads`] through `api` as of now, read again if the day changes meanwhile (a
/// bucket before may leave retention at midnight); asserts each read equals the model.
pub(crate) async fn check_movement(
    api: &ranking_api::Deps,
    expected: &Boards,
    details: &Details,
    retention: Retention,
    all_reads: bool,
) -> MovementCounts {
    loop {
        let today = Utc::now().date_naive();
        let (shown, counts) =
            movement_reads(api, expected, details, retention, today, all_reads).await;
        if Utc::now().date_naive() == today {
            for (path, got, want) in &shown {
                assert_eq!(got, want, "{path} ({retention:?})");
            }
            return counts;
        }
    }
}
