//! `lineup access import`: a file of user ids onto the presale access list, in batches
//! within the route's limit, with a progress bar, summing up what was refused.

use std::io::Read;
use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};
use lineup::queue::access::ACCESS_BULK_MAX;
use serde_json::{json, Value};

use super::queue_id;
use crate::error::CliError;
use crate::output::Out;
use crate::routes::Route;
use crate::target::Target;

/// An id the import left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The line of the file, from 1.
    pub line: usize,
    pub id: String,
    pub reason: String,
}

/// What a file holds: the ids to send, in file order and once each, and those refused.
#[derive(Debug, Default, PartialEq)]
pub struct Parsed {
    pub ids: Vec<String>,
    pub refused: Vec<Refused>,
    pub repeated: usize,
}

/// Reads ids: one per line, or a CSV (the `column` by header name, else the first column).
/// A file is a CSV when a column is named or its first line holds a comma.
pub fn parse(text: &str, column: Option<&str>) -> Result<Parsed, CliError> {
    let csv = column.is_some() || text.lines().next().is_some_and(|line| line.contains(','));
    let mut found: Vec<(usize, String)> = Vec::new();
    if csv {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(column.is_some())
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        let at = match column {
            Some(name) => reader
                .headers()
                .map_err(|err| CliError::Usage(format!("the CSV's header: {err}")))?
                .iter()
                .position(|header| header == name)
                .ok_or_else(|| CliError::Usage(format!("the CSV has no column {name:?}")))?,
            None => 0,
        };
        let first_line = usize::from(column.is_some()) + 1;
        for (index, record) in reader.records().enumerate() {
            let record = record.map_err(|err| CliError::Usage(format!("the CSV: {err}")))?;
            let line = record
                .position()
                .map_or(first_line + index, |p| p.line() as usize);
            found.push((line, record.get(at).unwrap_or("").to_owned()));
        }
    } else {
        for (index, line) in text.lines().enumerate() {
            found.push((index + 1, line.trim().to_owned()));
        }
    }
    let mut parsed = Parsed::default();
    let mut seen = std::collections::HashSet::new();
    for (line, id) in found {
        if id.is_empty() {
            continue;
        }
        if let Err(err) = lineup::ids::UserId::parse(&id) {
            parsed.refused.push(Refused {
                line,
                id,
                reason: err.to_string(),
            });
        } else if seen.insert(id.clone()) {
            parsed.ids.push(id);
        } else {
            parsed.repeated += 1;
        }
    }
    Ok(parsed)
}

pub async fn import(
    target: &Target,
    out: Out,
    queue: &str,
    file: &Path,
    column: Option<&str>,
    batch: usize,
) -> Result<(), CliError> {
    let queue = queue_id(queue)?;
    if batch == 0 || batch > ACCESS_BULK_MAX {
        return Err(CliError::Usage(format!("--batch: 1 to {ACCESS_BULK_MAX}")));
    }
    let mut text = String::new();
    let read = if file.as_os_str() == "-" {
        std::io::stdin().read_to_string(&mut text)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_string(&mut text))
    };
    read.map_err(|err| CliError::Usage(format!("{}: {err}", file.display())))?;
    let parsed = parse(&text, column)?;

    let bar = ProgressBar::new(parsed.ids.len() as u64);
    if out.json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} ids {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut sent = 0usize;
    let mut size = Value::Null;
    let mut stopped: Option<CliError> = None;
    for chunk in parsed.ids.chunks(batch) {
        let body = json!({ "userIds": chunk });
        match target
            .api
            .call(Route::PutAccessList, &[&queue], &[], Some(&body))
            .await
        {
            Ok(reply) => {
                sent += chunk.len();
                size = reply.body["size"].clone();
                bar.inc(chunk.len() as u64);
            }
            Err(err) => {
                stopped = Some(err);
                break;
            }
        }
    }
    bar.finish_and_clear();
    let not_sent = parsed.ids.len() - sent;
    if out.json {
        out.json(&json!({
            "queueId": queue,
            "sent": sent,
            "notSent": not_sent,
            "repeated": parsed.repeated,
            "size": size,
            "refused": parsed.refused.iter().map(|r| json!({ "line": r.line, "id": r.id, "reason": r.reason })).collect::<Vec<_>>(),
            "stoppedBy": stopped.as_ref().map(|err| err.to_string()),
        }));
    } else {
        println!(
            "{sent} ids sent to {queue}'s access list{}",
            if size.is_null() {
                String::new()
            } else {
                format!("; it holds {size}")
            }
        );
        if parsed.repeated > 0 {
            println!("{} repeated ids sent once", parsed.repeated);
        }
        if !parsed.refused.is_empty() {
            println!(
                "{}",
                out.red(&format!("{} ids refused:", parsed.refused.len()))
            );
            for refused in parsed.refused.iter().take(20) {
                println!(
                    "  line {}: {:?}: {}",
                    refused.line, refused.id, refused.reason
                );
            }
            if parsed.refused.len() > 20 {
                println!(
                    "  … and {} more (--json lists them all)",
                    parsed.refused.len() - 20
                );
            }
        }
        if let Some(err) = &stopped {
            println!(
                "{}",
                out.red(&format!("stopped: {err}; {not_sent} ids not sent"))
            );
        }
    }
    match stopped {
        Some(err) if sent == 0 => Err(err),
        Some(err) => Err(CliError::Partial(format!("{not_sent} ids not sent: {err}"))),
        None if sent == 0 && !parsed.refused.is_empty() => Err(CliError::Usage(format!(
            "no id to send: {} refused",
            parsed.refused.len()
        ))),
        None if !parsed.refused.is_empty() => Err(CliError::Partial(format!(
            "{} ids refused",
            parsed.refused.len()
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_file_is_one_id_a_line_each_sent_once_and_bad_ids_refused() {
        let parsed = parse("u-1\n\nu-2\nbad id\nu-1\n", None).unwrap();
        assert_eq!(parsed.ids, vec!["u-1", "u-2"]);
        assert_eq!(parsed.repeated, 1);
        assert_eq!(parsed.refused.len(), 1);
        assert_eq!(parsed.refused[0].line, 4);
    }

    #[test]
    fn a_csv_gives_the_named_column() {
        let parsed = parse(
            "name,user_id\nAda,auth0:1\nBob,\"auth0:2\"\n",
            Some("user_id"),
        )
        .unwrap();
        assert_eq!(parsed.ids, vec!["auth0:1", "auth0:2"]);
        assert!(parse("a,b\n1,2\n", Some("missing")).is_err());
    }
}
