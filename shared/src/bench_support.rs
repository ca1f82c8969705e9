//! The one door `lineup-bench` uses into the library: the script calls the handlers make,
//! as command lines, so `redis-benchmark` can send exactly the same commands beside the
//! handlers. Nothing else uses it; the functions never do. Everything behind it stays
//! private to the library.

use crate::ids::QueueId;
use crate::queue::WaitingRoom;
use crate::ranking::{Board, Order, Rankings};

/// The issue script's call as `room` sends it for `queue` (`EVALSHA`, hash, key count,
/// keys with the redemption bitmap a join without a solution is given, the configuration's
/// leading arguments), then `rest`.
pub fn issue_command(room: &WaitingRoom, queue: &QueueId, rest: &[&str]) -> Vec<Vec<u8>> {
    let redeemed = crate::queue::keys::redeemed_key(room.prefix(), queue, 0);
    queue_command(room, crate::queue::issue_script(), queue, &[redeemed], rest)
}

/// The status script's call, built as [`issue_command`] builds the issue script's.
pub fn status_command(room: &WaitingRoom, queue: &QueueId, rest: &[&str]) -> Vec<Vec<u8>> {
    queue_command(room, crate::queue::status_script(), queue, &[], rest)
}

/// The leave script's call, built as [`issue_command`] builds the issue script's.
pub fn leave_command(room: &WaitingRoom, queue: &QueueId, rest: &[&str]) -> Vec<Vec<u8>> {
    queue_command(room, crate::queue::leave_script(), queue, &[], rest)
}

/// The summary script's call, built as [`issue_command`] builds the issue script's.
pub fn summary_command(room: &WaitingRoom, queue: &QueueId) -> Vec<Vec<u8>> {
    queue_command(room, crate::queue::summary_script(), queue, &[], &[])
}

/// Waiters the reaper examines per script call: the bench times one such chunk.
pub const REAP_CHUNK: u32 = crate::queue::REAP_CHUNK;

/// The SHA1 hash the ranking reads' page script is sent by (`EVALSHA`).
pub fn top_script_hash() -> &'static str {
    crate::ranking::page_script().get_hash()
}

/// The top-`limit` read of `board` ranked by `order`, compared with `against` when given,
/// as `rankings` sends it.
pub fn top_command(
    rankings: &Rankings,
    board: &Board,
    against: Option<&crate::ranking::Against>,
    order: Order,
    limit: u64,
) -> Vec<Vec<u8>> {
    rankings
        .page_call(board, against, order, 0, limit)
        .command_line()
}

/// Most bucket fields one tick call takes off.
pub const TICK_FIELDS: u32 = crate::ranking::windows::TICK_FIELDS;

/// One call of the rankings' tick script, as `rankings` sends it.
pub fn roll_command(rankings: &crate::ranking::Rankings) -> Vec<Vec<u8>> {
    rankings.roll_call().command_line()
}

/// The bucket fields taken off, from the reply of a call [`roll_command`] built.
pub fn roll_fields(reply: redis::Value) -> Result<u64, redis::ParsingError> {
    crate::ranking::roll_fields(reply)
}

/// The key templates the rankings' window scripts get: watermark hash, per window its
/// bucket hash prefix and overall board.
pub fn window_templates(rankings: &crate::ranking::Rankings) -> serde_json::Value {
    rankings.window_templates()
}

/// `script`'s call with its own `keys` after the queue's, and `rest` as its own arguments,
/// named as the script binds them. The arguments `rest` leaves out at its end are sent
/// empty, as the handlers send one unset.
fn queue_command(
    room: &WaitingRoom,
    script: &'static crate::queue::QueueScript,
    queue: &QueueId,
    keys: &[String],
    rest: &[&str],
) -> Vec<Vec<u8>> {
    let mut call = room.invocation(script, queue);
    for key in keys {
        call.key(key);
    }
    let tail = script
        .arg_names()
        .last()
        .is_some_and(|name| name.ends_with('…'));
    for (i, name) in script.arg_names().iter().enumerate() {
        if tail && i + 1 == script.arg_names().len() {
            let stem = name.trim_end_matches('…');
            for arg in rest.iter().skip(i) {
                call.named(stem, *arg);
            }
        } else {
            call.named(name, rest.get(i).copied().unwrap_or(""));
        }
    }
    call.command_line()
}

/// The text of a script by its SHA1 hash (`lineup-bench`'s profiling dump).
pub fn script_source(hash: &str) -> Option<String> {
    crate::store::script_source(hash)
}
