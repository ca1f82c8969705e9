//! `lineup pool show|set|delete`: capacity pools.

use serde_json::{json, Map, Value};

use super::check_id;
use crate::args::PoolCommand;
use crate::confirm::confirm;
use crate::error::CliError;
use crate::output::{cell, Out};
use crate::routes::Route;
use crate::target::Target;

pub async fn run(
    command: PoolCommand,
    target: &Target,
    out: Out,
    yes: bool,
) -> Result<(), CliError> {
    match command {
        PoolCommand::Show { pool } => {
            let pool = check_id(lineup::ids::PoolId::parse, &pool)?;
            let reply = target.api.call(Route::GetPool, &[&pool], &[], None).await?;
            print(out, &reply.body);
            Ok(())
        }
        PoolCommand::Set {
            pool,
            capacity,
            weights,
        } => {
            let pool = check_id(lineup::ids::PoolId::parse, &pool)?;
            let mut by_queue = Map::new();
            for weight in &weights {
                let (queue, value) = weight.split_once('=').ok_or_else(|| {
                    CliError::Usage(format!("--weight {weight:?}: give QUEUE=WEIGHT"))
                })?;
                let queue = super::queue_id(queue)?;
                let value: u64 = value
                    .parse()
                    .map_err(|_| CliError::Usage(format!("--weight {weight:?}: a whole number")))?;
                by_queue.insert(queue, json!(value));
            }
            let body = json!({ "capacity": capacity, "weights": by_queue });
            let reply = target
                .api
                .call(Route::PutPool, &[&pool], &[], Some(&body))
                .await?;
            print(out, &reply.body);
            Ok(())
        }
        PoolCommand::Delete { pool } => {
            let pool = check_id(lineup::ids::PoolId::parse, &pool)?;
            confirm(
                &format!(
                    "Delete pool {pool} on {}? Its queues admit no one new until it is made again.",
                    target.label
                ),
                yes,
            )?;
            target
                .api
                .call(Route::DeletePool, &[&pool], &[], None)
                .await?;
            if out.json {
                out.json(&json!({ "poolId": pool, "deleted": true }));
            } else {
                println!("pool {pool}: deleted");
            }
            Ok(())
        }
    }
}

fn print(out: Out, pool: &Value) {
    if out.json {
        out.json(pool);
        return;
    }
    out.pairs(&[
        ("pool", cell(&pool["poolId"])),
        ("capacity", cell(&pool["capacity"])),
        ("allotted", cell(&pool["allotted"])),
    ]);
    let mut queues: Vec<&String> = pool["weights"]
        .as_object()
        .into_iter()
        .flat_map(|w| w.keys())
        .chain(
            pool["allotments"]
                .as_object()
                .into_iter()
                .flat_map(|a| a.keys()),
        )
        .collect();
    queues.sort();
    queues.dedup();
    if !queues.is_empty() {
        let rows: Vec<Vec<String>> = queues
            .iter()
            .map(|queue| {
                vec![
                    (*queue).clone(),
                    cell(&pool["weights"][queue.as_str()]),
                    cell(&pool["allotments"][queue.as_str()]),
                ]
            })
            .collect();
        println!();
        out.table(&["queue", "weight", "allotment"], &rows);
    }
}
