//! The operator's routes (IAM-protected in AWS): a queue's settings and closing it, capacity
//! pools, the priority and presale access lists, and access codes.

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::http::{self, json, json_body};
use lineup::ids::{PoolId, QueueId, UserId};
use lineup::queue::access::{ListSize, ACCESS_BULK_MAX};
use lineup::queue::pool::PoolChange;
use lineup::queue::SettingsChange;
use lineup::Error;
use serde::{Deserialize, Serialize};

use crate::deps::Deps;

pub(super) async fn configure(
    request: &Request,
    deps: &Deps,
    queue: QueueId,
) -> Result<Response<Body>, Error> {
    let change: SettingsChange = json_body(request)?;
    let configured = deps.room.configure(&queue, &change).await?;
    tracing::info!(%queue, settings = ?configured.settings, "queue settings changed");
    deps.publisher.publish(&configured.events).await;
    Ok(json(StatusCode::OK, &configured.settings))
}

/// A list of buyers an operator edits one user id at a time.
#[derive(Clone, Copy, Debug)]
pub(super) enum BuyerList {
    /// Admitted first, in a lane of their own.
    Priority,
    /// Who may join a presale.
    Access,
}

/// Puts `user` on `queue`'s `list` (`add`) or takes them off; answers the list's size.
pub(super) async fn edit_list(
    deps: &Deps,
    list: BuyerList,
    queue: &QueueId,
    user: &UserId,
    add: bool,
) -> Result<Response<Body>, Error> {
    let room = &deps.room;
    let size = match (list, add) {
        (BuyerList::Priority, true) => room.add_priority(queue, user).await?,
        (BuyerList::Priority, false) => room.remove_priority(queue, user).await?,
        (BuyerList::Access, true) => room.add_access(queue, std::slice::from_ref(user)).await?,
        (BuyerList::Access, false) => room.remove_access(queue, user).await?,
    };
    tracing::info!(%queue, ?list, add, size, "buyer list changed");
    Ok(json(StatusCode::OK, &ListSize { size }))
}

/// The body of `PUT /queues/{queueId}/access`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AccessUpload {
    user_ids: Vec<String>,
}

/// Puts up to 10,000 user ids on `queue`'s access list, every id checked first; answers the
/// list's size.
pub(super) async fn add_access(
    request: &Request,
    deps: &Deps,
    queue: &QueueId,
) -> Result<Response<Body>, Error> {
    let upload: AccessUpload = http::bulk_json_body(request)?;
    if upload.user_ids.len() > ACCESS_BULK_MAX {
        return Err(Error::invalid(
            "userIds",
            format!("at most {ACCESS_BULK_MAX} user ids a request"),
        ));
    }
    let users = upload
        .user_ids
        .iter()
        .map(|raw| UserId::parse(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let size = deps.room.add_access(queue, &users).await?;
    tracing::info!(%queue, added = users.len(), size, "access list changed");
    Ok(json(StatusCode::OK, &ListSize { size }))
}

/// The body of `POST /queues/{queueId}/access-codes`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MintRequest {
    count: serde_json::Number,
}

/// The minted codes: shown this once, never stored in clear.
#[derive(Serialize)]
struct MintedCodes {
    codes: Vec<String>,
}

pub(super) async fn mint_codes(
    request: &Request,
    deps: &Deps,
    queue: &QueueId,
) -> Result<Response<Body>, Error> {
    let MintRequest { count } = json_body(request)?;
    let codes = deps.room.mint_access_codes(queue, &count).await?;
    tracing::info!(%queue, count = codes.len(), "access codes minted");
    Ok(json(
        StatusCode::CREATED,
        &MintedCodes {
            codes: codes.iter().map(|c| c.as_str().to_owned()).collect(),
        },
    ))
}

pub(super) async fn close(deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    deps.room.close(&queue).await?;
    tracing::info!(%queue, "queue closed");
    Ok(http::empty(StatusCode::NO_CONTENT))
}

/// Sets `pool`'s capacity and weights, creating it.
pub(super) async fn put_pool(
    request: &Request,
    deps: &Deps,
    pool: PoolId,
) -> Result<Response<Body>, Error> {
    let change: PoolChange = json_body(request)?;
    let view = deps.room.configure_pool(&pool, &change).await?;
    tracing::info!(%pool, capacity = view.capacity, "pool set");
    Ok(json(StatusCode::OK, &view))
}

/// The pool: its capacity, weights and each queue's allotment.
pub(super) async fn pool(deps: &Deps, pool: PoolId) -> Result<Response<Body>, Error> {
    Ok(json(StatusCode::OK, &deps.room.pool(&pool).await?))
}

/// Deletes `pool`: its queues admit no one new until it is made again.
pub(super) async fn delete_pool(deps: &Deps, pool: PoolId) -> Result<Response<Body>, Error> {
    deps.room.delete_pool(&pool).await?;
    tracing::info!(%pool, "pool deleted");
    Ok(http::empty(StatusCode::NO_CONTENT))
}
