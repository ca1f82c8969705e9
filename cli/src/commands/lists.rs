//! `lineup priority add|remove` and `lineup access add|remove`: one request per buyer.
//! Every id is checked before the first is sent; each buyer's result is shown.

use serde_json::{json, Value};

use super::{queue_id, user_id};
use crate::args::{AccessCommand, PriorityCommand, Users};
use crate::error::CliError;
use crate::output::Out;
use crate::routes::Route;
use crate::target::Target;

pub async fn priority(command: PriorityCommand, target: &Target, out: Out) -> Result<(), CliError> {
    match command {
        PriorityCommand::Add(users) => each(target, out, Route::PutPriority, users, "added").await,
        PriorityCommand::Remove(users) => {
            each(target, out, Route::DeletePriority, users, "removed").await
        }
    }
}

/// `access add|remove`; `access import` is [`super::access::import`].
pub async fn access(command: AccessCommand, target: &Target, out: Out) -> Result<(), CliError> {
    match command {
        AccessCommand::Add(users) => each(target, out, Route::PutAccessUser, users, "added").await,
        AccessCommand::Remove(users) => {
            each(target, out, Route::DeleteAccessUser, users, "removed").await
        }
        AccessCommand::Import {
            queue,
            file,
            column,
            batch,
        } => super::access::import(target, out, &queue, &file, column.as_deref(), batch).await,
    }
}

/// Sends `route` for each user, going on past a refusal; ends with the first failure's
/// code when every request failed, or "partly done" when some did.
async fn each(
    target: &Target,
    out: Out,
    route: Route,
    Users { queue, users }: Users,
    done: &str,
) -> Result<(), CliError> {
    let queue = queue_id(&queue)?;
    let users = users
        .iter()
        .map(|user| user_id(user))
        .collect::<Result<Vec<_>, _>>()?;
    let mut results = Vec::new();
    let mut failures = Vec::new();
    let mut size = Value::Null;
    for user in &users {
        match target.api.call(route, &[&queue, user], &[], None).await {
            Ok(reply) => {
                size = reply.body["size"].clone();
                results.push(json!({ "userId": user, "result": done }));
            }
            Err(err) => {
                results.push(
                    json!({ "userId": user, "result": "failed", "problem": err.to_string() }),
                );
                failures.push(err);
            }
        }
    }
    if out.json {
        out.json(&json!({ "queueId": queue, "results": results, "size": size }));
    } else {
        let rows: Vec<Vec<String>> = results
            .iter()
            .map(|r| {
                let result = r["result"].as_str().unwrap_or("").to_owned();
                let shown = match r["problem"].as_str() {
                    Some(problem) => out.red(&format!("{result}: {problem}")),
                    None => out.green(&result),
                };
                vec![r["userId"].as_str().unwrap_or("").to_owned(), shown]
            })
            .collect();
        out.table(&["user", "result"], &rows);
        if !size.is_null() {
            println!("the list holds {size}");
        }
    }
    let failed = failures.len();
    match failures.into_iter().next() {
        None => Ok(()),
        Some(first) if failed == users.len() => Err(first),
        Some(_) => Err(CliError::Partial(format!(
            "{failed} of {} failed",
            users.len()
        ))),
    }
}
