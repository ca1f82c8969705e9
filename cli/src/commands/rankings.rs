//! `lineup rankings top`: a board's top rows.

use super::check_id;
use crate::error::CliError;
use crate::output::{cell, Out};
use crate::routes::Route;
use crate::target::Target;

/// The boards, as the route names them.
pub const PERIODS: &[&str] = &[
    "daily", "weekly", "monthly", "all-time", "last-24h", "last-7d", "trending",
];

pub async fn top(
    target: &Target,
    out: Out,
    period: &str,
    genre: Option<&str>,
    date: Option<&str>,
    by: Option<&str>,
    limit: u32,
) -> Result<(), CliError> {
    if !PERIODS.contains(&period) {
        return Err(CliError::Usage(format!(
            "period {period:?}: one of {}",
            PERIODS.join(", ")
        )));
    }
    let mut query = vec![("limit", limit.to_string())];
    if let Some(genre) = genre {
        query.push(("genre", check_id(lineup::ids::Genre::parse, genre)?));
    }
    if let Some(date) = date {
        query.push(("date", date.to_owned()));
    }
    if let Some(by) = by {
        query.push(("by", by.to_owned()));
    }
    let board = target
        .api
        .call(Route::GetBoard, &[period], &query, None)
        .await?
        .body;
    if out.json {
        out.json(&board);
        return Ok(());
    }
    println!(
        "{} {} ({} concerts{}{})",
        out.bold(period),
        cell(&board["bucket"]),
        cell(&board["total"]),
        board["genre"]
            .as_str()
            .map(|g| format!(", {g}"))
            .unwrap_or_default(),
        if board["fellBack"] == serde_json::json!(true) {
            ", the previous bucket"
        } else {
            ""
        },
    );
    let rows: Vec<Vec<String>> = board["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|item| {
                    vec![
                        cell(&item["rank"]),
                        cell(&item["concertId"]),
                        cell(&item["title"]),
                        cell(&item["score"]),
                        cell(&item["rate"]),
                    ]
                })
                .collect()
        })
        .unwrap_or_default();
    out.table(&["rank", "concert", "title", "seats", "rate"], &rows);
    Ok(())
}
