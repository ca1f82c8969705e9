//! `lineup codes create`: presale access codes in batches within the route's 10,000. Codes
//! are shown once, so each batch is written and flushed before the next is asked for, and a
//! batch that fails is not sent again: the operator reruns for the rest.

use std::io::Write;
use std::path::Path;

use lineup::queue::access::ACCESS_MINT;
use serde_json::json;

use super::queue_id;
use crate::error::CliError;
use crate::output::Out;
use crate::routes::Route;
use crate::target::Target;

pub async fn create(
    target: &Target,
    out: Out,
    queue: &str,
    count: u64,
    file: Option<&Path>,
    batch: u64,
) -> Result<(), CliError> {
    let queue = queue_id(queue)?;
    if count == 0 {
        return Err(CliError::Usage("--count: at least 1".into()));
    }
    if !(ACCESS_MINT.min..=ACCESS_MINT.max).contains(&batch) {
        return Err(CliError::Usage(format!(
            "--batch: {} to {}",
            ACCESS_MINT.min, ACCESS_MINT.max
        )));
    }
    let mut sink: Box<dyn Write> = match file {
        Some(path) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .map_err(|err| CliError::Usage(format!("{}: {err}", path.display())))?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let mut minted = 0u64;
    while minted < count {
        let asked = batch.min(count - minted);
        let reply = match target
            .api
            .call(Route::PostAccessCodes, &[&queue], &[], Some(&json!({ "count": asked })))
            .await
        {
            Ok(reply) => reply,
            Err(err) if minted == 0 => return Err(err),
            Err(err) => {
                return Err(CliError::Partial(format!(
                    "{minted} of {count} codes minted and written; the next batch failed and was not sent again ({err}); run again with --count {}",
                    count - minted
                )))
            }
        };
        let codes: Vec<String> = reply.body["codes"]
            .as_array()
            .map(|codes| {
                codes
                    .iter()
                    .filter_map(|c| c.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        let written = if out.json {
            writeln!(sink, "{}", json!({ "queueId": queue, "codes": codes }))
        } else {
            codes.iter().try_for_each(|code| writeln!(sink, "{code}"))
        };
        written
            .and_then(|()| sink.flush())
            .map_err(|err| CliError::Partial(format!("codes minted but not written: {err}")))?;
        minted += codes.len() as u64;
        eprintln!("{minted} of {count} codes written");
        if (codes.len() as u64) < asked {
            return Err(CliError::Partial(format!(
                "the API minted {} where {asked} were asked",
                codes.len()
            )));
        }
    }
    Ok(())
}
