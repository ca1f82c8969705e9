//! `lineup queue show|set|pause|resume|sold-out|delete`: the queue's summary and settings.

use serde_json::{json, Map, Value};

use super::{instant, queue_id};
use crate::args::{QueueCommand, SetArgs};
use crate::confirm::confirm;
use crate::error::CliError;
use crate::output::{cell, Out};
use crate::routes::Route;
use crate::target::Target;

pub async fn run(
    command: QueueCommand,
    target: &Target,
    out: Out,
    yes: bool,
) -> Result<(), CliError> {
    match command {
        QueueCommand::Show { queue } => show(target, out, &queue_id(&queue)?).await,
        QueueCommand::Set(args) => {
            let queue = queue_id(&args.queue)?;
            let change = change_from(&args)?;
            apply(target, out, &queue, change).await
        }
        QueueCommand::Pause { queue, message } => {
            let mut change = json!({ "paused": true });
            if let Some(message) = message {
                change["message"] = json!(message);
            }
            apply(target, out, &queue_id(&queue)?, change).await
        }
        QueueCommand::Resume { queue } => {
            apply(target, out, &queue_id(&queue)?, json!({ "paused": false })).await
        }
        QueueCommand::SoldOut {
            queue,
            message,
            undo,
        } => {
            let queue = queue_id(&queue)?;
            let mut change = json!({ "soldOut": !undo });
            if let Some(message) = message {
                change["message"] = json!(message);
            }
            if !undo {
                confirm(
                    &format!(
                        "Mark {queue} sold out on {}? Nobody more is admitted and waiters are told it is sold out.",
                        target.label
                    ),
                    yes,
                )?;
            }
            apply(target, out, &queue, change).await
        }
        QueueCommand::Delete { queue } => {
            let queue = queue_id(&queue)?;
            confirm(
                &format!(
                    "Delete {queue}'s settings on {}? Only an empty queue closes.",
                    target.label
                ),
                yes,
            )?;
            target
                .api
                .call(Route::DeleteSettings, &[&queue], &[], None)
                .await?;
            if out.json {
                out.json(&json!({ "queueId": queue, "deleted": true }));
            } else {
                println!("{queue}: deleted");
            }
            Ok(())
        }
    }
}

/// `queue show`.
async fn show(target: &Target, out: Out, queue: &str) -> Result<(), CliError> {
    let summary = target
        .api
        .call(Route::GetQueue, &[queue], &[], None)
        .await?
        .body;
    if out.json {
        out.json(&summary);
        return Ok(());
    }
    out.pairs(&summary_rows(&summary, out));
    println!();
    println!("{}", out.bold("settings"));
    let rows: Vec<(String, String)> = summary["settings"]
        .as_object()
        .map(|settings| {
            settings
                .iter()
                .map(|(name, value)| (format!("  {name}"), cell(value)))
                .collect()
        })
        .unwrap_or_default();
    let rows: Vec<(&str, String)> = rows.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    out.pairs(&rows);
    Ok(())
}

/// The summary's headline rows.
pub fn summary_rows(summary: &Value, out: Out) -> Vec<(&'static str, String)> {
    let settings = &summary["settings"];
    let pace = &summary["pace"];
    let mut rows = vec![
        ("queue", cell(&summary["queueId"])),
        ("state", state(summary, out)),
        ("waiting", cell(&summary["waiting"])),
        (
            "active",
            format!(
                "{} of {} (limited by {})",
                cell(&summary["active"]),
                cell(&pace["capacity"]),
                cell(&pace["limitedBy"])
            ),
        ),
        (
            "admissions",
            match summary["admissionRatePerMinute"].as_f64() {
                Some(rate) => format!("{rate:.0} a minute"),
                None => "-".into(),
            },
        ),
        ("admit per tick", cell(&pace["admitPerTick"])),
        ("health", health(&pace["health"], &pace["healthUntil"])),
    ];
    for (label, field) in [
        ("prequeue opens", "prequeueOpensAt"),
        ("opens at", "opensAt"),
        ("closes at", "closesAt"),
    ] {
        if !summary[field].is_null() {
            rows.push((label, cell(&summary[field])));
        }
    }
    if let Some(message) = settings["message"].as_str() {
        rows.push(("message", message.to_owned()));
    }
    if let Some(draw) = summary["draw"].as_object() {
        rows.push((
            "draw",
            format!(
                "seed sha256 {}, {} members",
                cell(&draw["seedSha256"]),
                cell(&draw["members"])
            ),
        ));
    }
    rows
}

/// Sold out, closed, paused, the opening's countdown, or open.
pub fn state(summary: &Value, out: Out) -> String {
    let settings = &summary["settings"];
    if settings["soldOut"] == json!(true) {
        return out.red("sold out");
    }
    if settings["mode"] == json!("closed") {
        return out.red("closed");
    }
    if settings["paused"] == json!(true) {
        return out.yellow("paused");
    }
    if let Some(left) = opens_in(summary) {
        return out.yellow(&format!("opens in {}", countdown(left)));
    }
    out.green(&match settings["mode"].as_str() {
        Some("passthrough") => "open (passthrough)".to_owned(),
        _ => "open".to_owned(),
    })
}

/// Seconds to the opening, while it is ahead.
pub fn opens_in(summary: &Value) -> Option<i64> {
    let opens = summary["opensAt"].as_str()?;
    let opens = chrono::DateTime::parse_from_rfc3339(opens).ok()?;
    let left = (opens.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_seconds();
    (left > 0).then_some(left)
}

/// `1d 02:03:04`, `02:03:04` or `03:04`.
pub fn countdown(seconds: i64) -> String {
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    let (hours, minutes, secs) = (rest / 3600, rest % 3600 / 60, rest % 60);
    match (days, hours) {
        (0, 0) => format!("{minutes:02}:{secs:02}"),
        (0, _) => format!("{hours:02}:{minutes:02}:{secs:02}"),
        _ => format!("{days}d {hours:02}:{minutes:02}:{secs:02}"),
    }
}

/// The health level and what holds it down.
pub fn health(health: &Value, until: &Value) -> String {
    let level = health["level"].as_f64().unwrap_or(1.0);
    let mut text = format!("{level}");
    if let Some(reason) = health["reason"].as_str() {
        text.push_str(&format!(" ({reason})"));
    }
    if let Some(until) = until.as_str() {
        text.push_str(&format!(", until {until}"));
    }
    text
}

/// The settings change `queue set` sends: the file, then the flags, then `--set` and
/// `--reset`.
pub fn change_from(args: &SetArgs) -> Result<Value, CliError> {
    let mut change = match &args.file {
        Some(path) => {
            let text = if path.as_os_str() == "-" {
                std::io::read_to_string(std::io::stdin())
            } else {
                std::fs::read_to_string(path)
            }
            .map_err(|err| CliError::Usage(format!("{}: {err}", path.display())))?;
            match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(fields)) => fields,
                Ok(_) => {
                    return Err(CliError::Usage(format!(
                        "{}: settings are a JSON object",
                        path.display()
                    )))
                }
                Err(err) => return Err(CliError::Usage(format!("{}: {err}", path.display()))),
            }
        }
        None => Map::new(),
    };
    let numbers = [
        ("capacity", args.capacity),
        ("sessionSeconds", args.session_seconds),
        ("admitPerTick", args.admit_per_tick),
        ("waitingIdleSeconds", args.waiting_idle_seconds),
        ("maxWaiting", args.max_waiting),
    ];
    for (name, value) in numbers {
        if let Some(value) = value {
            change.insert(name.into(), json!(value));
        }
    }
    let texts = [
        ("mode", &args.mode),
        ("message", &args.message),
        ("access", &args.access),
        ("challenge", &args.challenge),
        ("pool", &args.pool),
    ];
    for (name, value) in texts {
        if let Some(value) = value {
            change.insert(name.into(), json!(value));
        }
    }
    let instants = [
        ("opensAt", &args.opens_at),
        ("closesAt", &args.closes_at),
        ("prequeueOpensAt", &args.prequeue_opens_at),
    ];
    for (name, value) in instants {
        if let Some(value) = value {
            change.insert(name.into(), json!(instant(name, value)?));
        }
    }
    for field in &args.fields {
        let (name, raw) = field
            .split_once('=')
            .ok_or_else(|| CliError::Usage(format!("--set {field:?}: give NAME=JSON")))?;
        let value = serde_json::from_str(raw)
            .or_else(|_| Ok::<_, CliError>(Value::String(raw.to_owned())))?;
        change.insert(name.to_owned(), value);
    }
    for name in &args.reset {
        change.insert(name.clone(), Value::Null);
    }
    if change.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give a flag, --set, --reset or --file".into(),
        ));
    }
    Ok(Value::Object(change))
}

/// Sends a settings change and shows what it changed.
async fn apply(target: &Target, out: Out, queue: &str, change: Value) -> Result<(), CliError> {
    // The settings before, to show what changed; a queue that cannot be read yet (new)
    // shows every field it is given.
    // Read once, without retries: during an outage the write's own tries say so.
    let before = target
        .api
        .call_once(Route::GetQueue, &[queue], &[], None)
        .await
        .ok()
        .map(|reply| reply.body["settings"].clone())
        .unwrap_or(Value::Null);
    let after = target
        .api
        .call(Route::PutSettings, &[queue], &[], Some(&change))
        .await?
        .body;
    let changed = diff(&before, &after);
    if out.json {
        out.json(&json!({ "queueId": queue, "settings": after, "changed": changed }));
        return Ok(());
    }
    if changed.is_empty() {
        println!("{queue}: nothing changed");
        return Ok(());
    }
    let rows: Vec<Vec<String>> = changed
        .iter()
        .map(|(name, both)| vec![name.clone(), cell(&both["before"]), cell(&both["after"])])
        .collect();
    out.table(&["setting", "before", "after"], &rows);
    Ok(())
}

/// Each setting whose value differs, with both values.
pub fn diff(before: &Value, after: &Value) -> Map<String, Value> {
    let mut changed = Map::new();
    if let Some(after) = after.as_object() {
        for (name, value) in after {
            let old = before.get(name).cloned().unwrap_or(Value::Null);
            if &old != value {
                changed.insert(name.clone(), json!({ "before": old, "after": value }));
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_countdown_reads_as_a_clock() {
        assert_eq!(countdown(65), "01:05");
        assert_eq!(countdown(3_725), "01:02:05");
        assert_eq!(countdown(90_061), "1d 01:01:01");
    }

    #[test]
    fn the_diff_lists_only_what_changed() {
        let before = json!({ "capacity": 100, "paused": false });
        let after = json!({ "capacity": 500, "paused": false });
        let changed = diff(&before, &after);
        assert_eq!(changed.len(), 1);
        assert_eq!(changed["capacity"], json!({ "before": 100, "after": 500 }));
    }
}
