//! Script and pipeline plumbing: a script call, a batch of calls from one or more owners,
//! and sending a pipeline so that a server that lost its script cache still runs it.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use redis::cluster_routing::Slot;
use redis::{
    Cmd, FromRedisValue, ParsingError, RedisError, Script, ServerErrorKind, ToRedisArgs, Value,
};
use tokio::sync::OwnedSemaphorePermit;

use super::budget::Limit;

/// A script that only reads, yet must read the primary. Its Redis 7 flags leave out
/// `no-writes`, so a read-only replica refuses it with `READONLY`, as it refuses a write.
/// A container that only reads (the gatekeeper, the ranking reads) then replaces its
/// connection after a failover and follows the primary endpoint, instead of reading the
/// demoted primary for as long as it lives: that one lags, and if cut off from the new
/// primary it stays frozen at the failover. `allow-oom` keeps reads working when Redis is
/// full.
pub fn primary_read_script(body: &str) -> Script {
    lua_script(&format!("#!lua flags=allow-oom\n{body}"))
}

/// The guard a pipeline of plain reads carries, once a period
/// ([`Conn::primary_guard_due`](super::Conn::primary_guard_due)), so that it, too, follows
/// the primary: `UNLINK` of `key`, a key nothing ever writes. It changes nothing, but it is a
/// write command, so a read-only replica refuses it with `READONLY`, as it refuses a script
/// read ([`primary_read_script`]), and the container follows a failover. `UNLINK` is allowed
/// when Redis is out of memory.
pub fn primary_guard(key: &str) -> Cmd {
    redis::cmd("UNLINK").arg(key).clone()
}

/// A script whose text is kept by its SHA1 hash, so that a call the server answers NOSCRIPT
/// is sent again as `EVAL` with the text: the server runs it and caches it, in one round trip
/// (a script made with `Script::new` alone is loaded with `SCRIPT LOAD` first, one more).
pub fn lua_script(code: &str) -> Script {
    let script = Script::new(code);
    SOURCES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .insert(script.get_hash().to_owned(), code.to_owned());
    script
}

/// The text of every script made by [`lua_script`], by SHA1 hash.
static SOURCES: LazyLock<Mutex<HashMap<String, String>>> = LazyLock::new(Mutex::default);

/// The text of the script with SHA1 `hash`, if made by [`lua_script`].
pub fn script_source(hash: &str) -> Option<String> {
    SOURCES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .get(hash)
        .cloned()
}

/// `cmd` (an `EVALSHA`) as an `EVAL` carrying its script's text, if the text is kept.
fn with_text(cmd: &Cmd) -> Option<Cmd> {
    let mut parts = cmd.args_iter().map(|arg| match arg {
        redis::Arg::Simple(bytes) => bytes,
        _ => &[],
    });
    let (Some(b"EVALSHA"), Some(hash)) = (parts.next(), parts.next()) else {
        return None;
    };
    let code = script_source(std::str::from_utf8(hash).ok()?)?;
    let mut eval = redis::cmd("EVAL");
    eval.arg(code);
    for part in parts {
        eval.arg(part);
    }
    Some(eval)
}

/// A script and the names it binds its keys and its arguments to, in order: the `local`
/// statements at the top of its Lua, from `KEYS[k]` and `ARGV[k]`. One list on each side,
/// held equal by a unit test ([`bindings`]), and followed by every call
/// ([`ScriptCall::of`]). A name ending in `?` is optional: a call may leave it out, with all
/// the optional names after it. A last name ending in `…` is a tail of any length: bound in
/// the Lua as `local NAME_from = k`, or not bound at all for keys the script only names for
/// a cluster's routing.
pub struct NamedScript {
    script: LazyLock<Script>,
    pub(crate) keys: &'static [&'static str],
    pub(crate) args: &'static [&'static str],
}

impl NamedScript {
    pub const fn new(
        script: LazyLock<Script>,
        keys: &'static [&'static str],
        args: &'static [&'static str],
    ) -> Self {
        NamedScript { script, keys, args }
    }

    pub fn script(&self) -> &Script {
        &self.script
    }
}

/// One script call: the script, its keys (all under one hash tag) and its arguments. Sent
/// as EVALSHA; a server that lacks the script gets it loaded and the call sent again.
///
/// A call may name its keys and arguments: [`ScriptCall::declare_keys`] and
/// [`ScriptCall::declare`] give the names the script binds, in order (a [`NamedScript`]
/// gives its own through [`ScriptCall::of`]), and [`ScriptCall::named_key`] and
/// [`ScriptCall::named`] add each under its name. A debug build records the names and
/// checks, when the call is sent, that they came as declared.
pub struct ScriptCall {
    script: &'static Script,
    keys: Vec<String>,
    args: Vec<Vec<u8>>,
    key_names: Naming,
    arg_names: Naming,
}

/// The names given and declared for one array of a call (debug builds only).
#[derive(Default, Debug)]
struct Naming {
    /// The name of each key or argument added by name.
    given: Vec<&'static str>,
    /// Each declared list of names, with the count of names given before it.
    declared: Vec<(usize, &'static [&'static str])>,
}

impl Naming {
    fn declare(&mut self, names: &'static [&'static str]) {
        if cfg!(debug_assertions) {
            self.declared.push((self.given.len(), names));
        }
    }

    fn give(&mut self, name: &'static str) {
        if cfg!(debug_assertions) {
            self.given.push(name);
        }
    }

    /// Whether every declared list was given, name by name, and all `count` were named.
    fn as_declared(&self, count: usize) -> bool {
        if self.declared.is_empty() {
            return true;
        }
        self.given.len() == count
            && self
                .declared
                .iter()
                .enumerate()
                .all(|(i, (from, declared))| {
                    let to = self
                        .declared
                        .get(i + 1)
                        .map_or(self.given.len(), |next| next.0);
                    names_match(declared, &self.given[*from..to])
                })
    }
}

impl ScriptCall {
    pub fn new(script: &'static Script) -> Self {
        ScriptCall {
            script,
            keys: Vec::new(),
            args: Vec::new(),
            key_names: Naming::default(),
            arg_names: Naming::default(),
        }
    }

    /// A call of `named`, which declares its keys' and arguments' names.
    pub fn of(named: &'static NamedScript) -> Self {
        let mut call = ScriptCall::new(&named.script);
        call.declare_keys(named.keys).declare(named.args);
        call
    }

    pub fn key(&mut self, key: impl Into<String>) -> &mut Self {
        self.keys.push(key.into());
        self
    }

    pub fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        self.args.extend(arg.to_redis_args());
        self
    }

    /// The names the script binds to the keys that follow, in order.
    pub fn declare_keys(&mut self, names: &'static [&'static str]) -> &mut Self {
        self.key_names.declare(names);
        self
    }

    /// The names the script binds to the arguments that follow, in order.
    pub fn declare(&mut self, names: &'static [&'static str]) -> &mut Self {
        self.arg_names.declare(names);
        self
    }

    /// Adds a key the script binds as `name`.
    pub fn named_key(&mut self, name: &'static str, key: impl Into<String>) -> &mut Self {
        self.key_names.give(name);
        self.key(key)
    }

    /// Adds an argument the script binds as `name` (one Redis argument).
    pub fn named(&mut self, name: &'static str, arg: impl ToRedisArgs) -> &mut Self {
        self.arg_names.give(name);
        self.arg(arg)
    }

    fn command(&self) -> Cmd {
        debug_assert!(
            self.key_names.as_declared(self.keys.len()),
            "script keys {:?} do not follow the declared names",
            self.key_names
        );
        debug_assert!(
            self.arg_names.as_declared(self.args.len()),
            "script arguments {:?} do not follow the declared names",
            self.arg_names
        );
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.script.get_hash())
            .arg(self.keys.len())
            .arg(&self.keys)
            .arg(&self.args);
        cmd
    }

    #[cfg(feature = "bench")]
    /// The call as one command line (`EVALSHA`, hash, key count, keys, arguments), for a tool
    /// that sends it itself: the benchmark's `redis-benchmark` runs ([`crate::bench_support`]).
    pub(crate) fn command_line(&self) -> Vec<Vec<u8>> {
        self.command()
            .args_iter()
            .filter_map(|arg| match arg {
                redis::Arg::Simple(bytes) => Some(bytes.to_vec()),
                _ => None,
            })
            .collect()
    }
}

/// Whether `given` names follow `declared` in order. A last declared name ending in `…`
/// matches any number of its stem; names ending in `?` may be left out from the first one
/// left out on.
pub fn names_match(declared: &[&str], given: &[&str]) -> bool {
    if let Some((last, fixed)) = declared.split_last() {
        if let Some(stem) = last.strip_suffix('…') {
            return given.len() >= fixed.len()
                && given[..fixed.len()] == *fixed
                && given[fixed.len()..].iter().all(|name| *name == stem);
        }
    }
    let required = declared
        .iter()
        .take_while(|name| !name.ends_with('?'))
        .count();
    (required..=declared.len()).contains(&given.len())
        && given
            .iter()
            .zip(declared)
            .all(|(given, declared)| *given == declared.trim_end_matches('?'))
}

/// Work from one or more owners (the rankings and the waiting room, say) sent together.
/// Each owner stages its calls ([`Batch::stage`], [`Batch::stage_command`]) and later reads
/// its own replies through the [`Staged`] handles they gave it.
#[derive(Default)]
pub struct Batch {
    /// Each staged command, with the hash slot of its first key.
    pub(super) entries: Vec<(Slot, Cmd)>,
    /// The scripts the commands call, to load after a NOSCRIPT.
    pub(super) scripts: Vec<&'static Script>,
}

impl Batch {
    pub fn new() -> Self {
        Batch::default()
    }

    /// Adds a script call; returns the index its reply will have.
    pub(super) fn script(&mut self, call: ScriptCall) -> usize {
        if !self.scripts.iter().any(|s| std::ptr::eq(*s, call.script)) {
            self.scripts.push(call.script);
        }
        let slot = Slot::for_key(call.keys.first().map(String::as_str).unwrap_or_default());
        self.entries.push((slot, call.command()));
        self.entries.len() - 1
    }

    /// Adds a plain command on `key`; returns the index its reply will have.
    pub(super) fn command(&mut self, key: &str, cmd: Cmd) -> usize {
        self.entries.push((Slot::for_key(key), cmd));
        self.entries.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// A call staged in a [`Batch`]: once the batch is sent, decodes its own reply as `T` from
/// the batch's replies. Owners hand these out from their `stage_*` methods, so no caller
/// counts pipeline indices or decodes another owner's reply.
pub struct Staged<T> {
    index: usize,
    reply: PhantomData<fn() -> T>,
}

impl<T: FromRedisValue> Staged<T> {
    /// This call's reply, from what [`super::Conn::send`] returned for the batch.
    pub fn read(&self, replies: &[Value]) -> Result<T, RedisError> {
        let reply = replies
            .get(self.index)
            .ok_or_else(|| ParsingError::from(format!("no reply {}", self.index)))?;
        Ok(T::from_redis_value_ref(reply)?)
    }

    /// This call's reply, from what [`super::Conn::send_each`] returned for the batch: the
    /// error of its own shard where that one failed.
    pub fn read_each(&self, replies: &[Result<Value, RedisError>]) -> Result<T, RedisError> {
        match replies.get(self.index) {
            Some(Ok(reply)) => Ok(T::from_redis_value_ref(reply)?),
            Some(Err(err)) => Err(err.clone()),
            None => Err(ParsingError::from(format!("no reply {}", self.index)).into()),
        }
    }
}

impl Batch {
    /// Adds a script call whose reply decodes as `T`.
    pub fn stage<T: FromRedisValue>(&mut self, call: ScriptCall) -> Staged<T> {
        Staged {
            index: self.script(call),
            reply: PhantomData,
        }
    }

    /// Adds a plain command on `key` whose reply decodes as `T`.
    pub fn stage_command<T: FromRedisValue>(&mut self, key: &str, cmd: Cmd) -> Staged<T> {
        Staged {
            index: self.command(key, cmd),
            reply: PhantomData,
        }
    }
}

/// Sends `pipe` in one round trip. If the server lost its script cache (a restart, a
/// failover, `SCRIPT FLUSH`), sends again only the calls that answered NOSCRIPT: those ran
/// nothing, while the others in the pipeline already ran and must not run twice. A call
/// whose script text is kept ([`lua_script`]) goes again as `EVAL`, in one round trip more;
/// for any other, `scripts` are loaded first. A server error in any reply fails the whole
/// send.
///
/// Each reply waits at most what `limit` allows. A reply given up on is still awaited in the
/// background, holding `in_flight` (the call's place under the connection's cap) until it
/// comes or the connection's own, longer timeout passes: the server still has that work
/// queued, so it still counts.
pub(super) async fn run_pipeline<C>(
    conn: &C,
    pipe: &redis::Pipeline,
    scripts: &[&'static Script],
    limit: &Limit,
    in_flight: &Arc<OwnedSemaphorePermit>,
) -> Result<Vec<Value>, RedisError>
where
    C: redis::aio::ConnectionLike + Clone + Send + 'static,
{
    let mut first = pipe.clone();
    first.ignore_errors();
    let mut replies = query(conn, first, limit, in_flight).await?;
    let missing: Vec<usize> = (0..replies.len())
        .filter(|&index| is_noscript(&replies[index]))
        .collect();
    if !missing.is_empty() {
        let commands: Vec<&Cmd> = pipe.cmd_iter().collect();
        let mut again = redis::pipe();
        again.ignore_errors();
        let mut loaded = false;
        for &index in &missing {
            let Some(cmd) = commands.get(index) else {
                continue;
            };
            match with_text(cmd) {
                Some(eval) => again.add_command(eval),
                None => {
                    if !loaded {
                        let mut conn = conn.clone();
                        for script in scripts {
                            in_time(limit.next_reply(), script.load_async(&mut conn)).await?;
                        }
                        loaded = true;
                    }
                    again.add_command((*cmd).clone())
                }
            };
        }
        let retried = query(conn, again, limit, in_flight).await?;
        for (index, reply) in missing.into_iter().zip(retried) {
            replies[index] = reply;
        }
    }
    match replies.iter().find_map(|reply| match reply {
        Value::ServerError(err) => Some(err.clone()),
        _ => None,
    }) {
        Some(err) => Err(err.into()),
        None => Ok(replies),
    }
}

/// `pipe`'s replies, or a timeout error once `limit` allows no more. A reply given up on is
/// awaited in the background, holding `in_flight`.
async fn query<C>(
    conn: &C,
    pipe: redis::Pipeline,
    limit: &Limit,
    in_flight: &Arc<OwnedSemaphorePermit>,
) -> Result<Vec<Value>, RedisError>
where
    C: redis::aio::ConnectionLike + Clone + Send + 'static,
{
    let within = limit.next_reply();
    if within.is_zero() {
        // Not sent at all: the request has no time left to wait for it.
        return Err(timed_out());
    }
    let mut conn = conn.clone();
    let mut reply = Box::pin(async move { pipe.query_async::<Vec<Value>>(&mut conn).await });
    match tokio::time::timeout(within, &mut reply).await {
        Ok(replies) => replies,
        Err(_) => {
            let held = in_flight.clone();
            tokio::spawn(async move {
                let _ = reply.await;
                drop(held);
            });
            Err(timed_out())
        }
    }
}

/// What `reply` gives, or a timeout error (`is_timeout`) once `within` has passed.
pub(super) async fn in_time<T>(
    within: Duration,
    reply: impl std::future::Future<Output = Result<T, RedisError>>,
) -> Result<T, RedisError> {
    tokio::time::timeout(within, reply)
        .await
        .unwrap_or_else(|_| Err(timed_out()))
}

/// The error of a reply that did not come in time (`is_timeout`).
pub(super) fn timed_out() -> RedisError {
    std::io::Error::from(std::io::ErrorKind::TimedOut).into()
}

/// Whether `reply` says its script is not in the server's cache (after a restart or failover).
fn is_noscript(reply: &Value) -> bool {
    matches!(reply, Value::ServerError(err) if err.kind() == Some(ServerErrorKind::NoScript))
}

/// The names a script's Lua binds its keys and arguments to, for the unit tests that hold
/// them equal to Rust's lists ([`NamedScript`], the queue scripts' `QueueScript`).
#[cfg(test)]
pub(crate) mod bindings {
    use super::NamedScript;

    /// How a script indexes an array: from 1 (`KEYS[k]`, `ARGV[k]`), or from `ARG` (a queue
    /// script's own arguments: `ARGV[ARG]`, `ARGV[ARG + k]`, after the prelude's).
    #[derive(Clone, Copy, PartialEq)]
    pub(crate) enum Base {
        One,
        Arg,
    }

    /// The names `source` binds `array` (`KEYS` or `ARGV`) to, in order: `local` statements
    /// (a continuation line indented) whose values read `ARRAY[k]`; for `ARGV`, a tail too,
    /// `local NAME_from = k` (`ARG + k`), named `NAME…`. Fails when the array is read by
    /// number outside those statements, or when the names do not take places 1, 2, 3, ….
    pub(crate) fn bound(source: &str, array: &str, base: Base) -> Vec<String> {
        let code: Vec<&str> = source
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .collect();
        let mut statements: Vec<String> = Vec::new();
        for line in &code {
            if line.starts_with("local ") {
                statements.push((*line).to_owned());
            } else if line.starts_with("  ") && statements.last().is_some_and(|s| s.ends_with(','))
            {
                if let Some(last) = statements.last_mut() {
                    last.push(' ');
                    last.push_str(line.trim());
                }
            }
        }
        let open = format!("{array}[");
        // The place (from 0) an expression reads, if it reads the array by number.
        let index = |expr: &str| -> Option<usize> {
            let rest = &expr[expr.find(&open)? + open.len()..];
            let number = |text: &str| -> Option<usize> {
                text.chars()
                    .take_while(char::is_ascii_digit)
                    .collect::<String>()
                    .parse()
                    .ok()
            };
            match base {
                Base::One => number(rest)?.checked_sub(1),
                Base::Arg if rest.starts_with("ARG]") => Some(0),
                Base::Arg => number(rest.strip_prefix("ARG + ")?),
            }
        };
        let mut found: Vec<(usize, String)> = Vec::new();
        let mut reads = 0;
        for statement in &statements {
            let Some((names, values)) = statement["local ".len()..].split_once(" = ") else {
                continue;
            };
            let names: Vec<&str> = names.split(", ").collect();
            if array == "ARGV" && names.len() == 1 && names[0].ends_with("_from") {
                let place = match base {
                    Base::One => values
                        .trim()
                        .parse::<usize>()
                        .ok()
                        .and_then(|k| k.checked_sub(1)),
                    Base::Arg => values
                        .strip_prefix("ARG + ")
                        .and_then(|k| k.trim().parse().ok()),
                };
                if let Some(place) = place {
                    found.push((place, format!("{}…", names[0].trim_end_matches("_from"))));
                    continue;
                }
            }
            // The values, split at commas outside brackets.
            let (mut depth, mut start, mut exprs) = (0, 0, Vec::new());
            for (i, c) in values.char_indices() {
                match c {
                    '(' | '{' | '[' => depth += 1,
                    ')' | '}' | ']' => depth -= 1,
                    ',' if depth == 0 => {
                        exprs.push(&values[start..i]);
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            exprs.push(&values[start..]);
            for (name, expr) in names.iter().zip(&exprs) {
                if let Some(k) = index(expr) {
                    found.push((k, (*name).to_owned()));
                    reads += 1;
                }
            }
        }
        // Every read of the array by number.
        let all: usize = code
            .iter()
            .map(|l| {
                l.match_indices(&open)
                    .filter(|(at, _)| index(&l[*at..]).is_some())
                    .count()
            })
            .sum();
        assert_eq!(
            reads, all,
            "{array} read outside the bindings at the top: {source}"
        );
        found.sort();
        for (i, (k, name)) in found.iter().enumerate() {
            assert_eq!(*k, i, "{name} reads {array} place {}, not {}", k + 1, i + 1);
        }
        found.into_iter().map(|(_, name)| name).collect()
    }

    /// Fails unless `source` (the script's whole text) binds the keys and arguments `named`
    /// declares, by the same names in the same order. A declared tail of keys is not bound:
    /// those keys are only named for a cluster's routing.
    pub(crate) fn assert_binds(source: &str, named: &NamedScript) {
        let plain = |names: &[&str]| -> Vec<String> {
            names
                .iter()
                .map(|name| name.trim_end_matches('?').to_owned())
                .collect()
        };
        let keys: Vec<&str> = named
            .keys
            .iter()
            .copied()
            .filter(|name| !name.ends_with('…'))
            .collect();
        assert_eq!(
            bound(source, "KEYS", Base::One),
            plain(&keys),
            "keys of {source}"
        );
        assert_eq!(
            bound(source, "ARGV", Base::One),
            plain(named.args),
            "arguments of {source}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::names_match;

    /// A call that names its arguments otherwise than declared is caught in a debug build.
    #[test]
    fn names_follow_the_declared_list_with_an_open_tail() {
        assert!(names_match(&["user", "ticket"], &["user", "ticket"]));
        assert!(!names_match(&["user", "ticket"], &["ticket", "user"]));
        assert!(!names_match(&["user", "ticket"], &["user"]));
        assert!(names_match(&["op", "values…"], &["op"]));
        assert!(names_match(&["op", "values…"], &["op", "values", "values"]));
        assert!(!names_match(&["op", "values…"], &["op", "value"]));
        assert!(names_match(&["A", "B?", "C?"], &["A"]));
        assert!(names_match(&["A", "B?", "C?"], &["A", "B"]));
        assert!(names_match(&["A", "B?", "C?"], &["A", "B", "C"]));
        assert!(!names_match(&["A", "B?", "C?"], &["A", "C"]));
        assert!(!names_match(&["A", "B?"], &[]));
    }
}
