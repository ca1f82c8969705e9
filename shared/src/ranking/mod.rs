//! Sales rankings: boards of seats sold per concert, per period bucket, overall and per
//! genre, fed by payment events exactly once; beside each, a rate board of sell-through for
//! the concerts whose capacity concert events gave (their details, latest `updatedAt` wins);
//! rolling last-24h and last-7d boards that a tick keeps current, and trending boards (see
//! `windows.rs`).
//!
//! An apply call records its payments and refunds (dedupe, the payment record) and queues
//! them in the fold queue; the fold (`fold.lua`) writes their boards, within a budget of
//! board entries per call, at the end of the same call and in the tick. So a call's Redis
//! time does not grow with the boards a payment counts on, and a burst of sales of one
//! concert writes each board once per fold call.
//!
//! The top of a board, once read, is kept rendered in the page cache (`page.lua`): a read
//! that finds its page is one `HGET`. Every script call that writes boards or details
//! deletes the cache, so a read after a write shows it.
//!
//! Every ranking key carries the one hash tag `{rk}`, so a batch of events is one atomic
//! script on one shard. The trade-off: one shard carries all ranking writes. A shard takes
//! tens of thousands of small scripts a second, far above a ticketing site's payment rate;
//! if it ever is not, split the tag per period or per genre and route each event's writes
//! by it.
//!
//! Scores are stored negated (−seats), so that Redis's ascending order, which breaks ties
//! by member name, gives most seats first and equal scores by `concertId` ascending.

mod events;
mod period;
pub mod windows;

use std::sync::LazyLock;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use redis::{FromRedisValue, ParsingError, Script, Value};
use serde::{Deserialize, Serialize};
use serde_json::json;

pub use events::{parse_event, Command, ConcertDetails, Parsed, MAX_CAPACITY, MAX_TEXT_CHARS};
pub use period::{default_day, local_day, parse_date, Period};

use crate::config::RankingSettings;
use crate::error::Error;
use crate::ids::{ConcertId, Genre, PaymentId};
use crate::store::{
    assemble, lua_script, primary_read_script, Batch, Conn, NamedScript, ScriptCall, Staged,
};
use windows::{
    bucket_of, Trend, Window, BUCKET_MS, LAST_24H, LAST_7D, MARGIN_SECONDS, TICK_CALLS,
    TICK_FIELDS, TICK_STEPS,
};

/// The board write helpers, which the apply script and the tick both begin with.
const BOARDS_LUA: &str = include_str!("boards.lua");
/// The preludes of the scripts that fold: the board helpers, the window and trending
/// writes, then the fold.
const FOLD_PRELUDES: [&str; 3] = [
    BOARDS_LUA,
    include_str!("windows.lua"),
    include_str!("fold.lua"),
];
/// The apply script: the board helpers, the fold, then the commands. Its keys after the
/// first three are the ones the commands name, given for a cluster's routing.
static APPLY: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&FOLD_PRELUDES, include_str!("apply.lua")))),
    &["DETAILS", "PAGES", "FOLD", "named…"],
    &[
        "TTL",
        "SKEW_MS",
        "MAX_PENDING",
        "WIN",
        "BUDGET",
        "commands…",
    ],
);
/// The tick's fold: the board helpers, the fold, and its one call. Its last key, the
/// watermark hash, is reached through the window templates, given for a cluster's routing.
static FOLD: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&FOLD_PRELUDES, include_str!("fold_tick.lua")))),
    &["DETAILS", "PAGES", "FOLD", "named…"],
    &["TTL", "WIN", "BUDGET"],
);
/// The tick: the board helpers, then the roll of the windows.
static ROLL: NamedScript = NamedScript::new(
    LazyLock::new(|| lua_script(&assemble(&[BOARDS_LUA], include_str!("roll.lua")))),
    &["DETAILS", "PAGES", "WATERMARKS"],
    &["cfg", "budget", "steps"],
);
static PAGE: NamedScript = NamedScript::new(
    LazyLock::new(|| primary_read_script(include_str!("page.lua"))),
    &["ranked", "seat_board", "details", "cache?"],
    &["mode", "target", "count"],
);

/// The page script, for [`crate::bench_support`].
pub(crate) fn page_script() -> &'static Script {
    PAGE.script()
}

/// Most rows read either side of a concert (`around`).
pub const MAX_AROUND: u64 = 10;

/// The pages the page cache keeps: those from the top of a board, of at most this many rows
/// (the ranking API's default page, and the rankings page's). So the cache holds at most this
/// many pages per board and order, whatever the requests ask.
pub const CACHED_LIMIT: u64 = 10;

/// Most events per script call; a larger batch costs one more round trip per this many.
pub const EVENTS_PER_CALL: usize = 100;

/// How far ahead of the server's clock a payment's `completedAt` may be.
pub const FUTURE_SKEW: Duration = Duration::from_secs(60);

/// Most refunds that may wait for one payment that has not landed yet.
pub const MAX_PENDING_REFUNDS: u32 = 8;

/// Board entries the fold may write at the end of an apply call. `fold.lua` counts a
/// payment as its boards (24 with two genres) plus 4, or 2 when a payment of the same
/// concert and bucket was folded earlier in the call; the first entry is always folded. About 0.3 ms of Redis time. What
/// is left waits for the next call or the tick.
pub const FOLD_BUDGET_APPLY: u32 = 40;

/// Board entries one fold call of the tick may write: about half a millisecond.
pub const FOLD_BUDGET_TICK: u32 = 80;

/// Most fold calls per tick (160 000 board entries a minute beyond what the apply calls
/// fold); what is left waits for the next tick.
pub const FOLD_CALLS: u32 = 2000;

/// What applying one command did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Applied,
    Duplicate,
    /// A refund whose payment has not landed: kept, and applied when the payment lands.
    Pending,
    /// Valid, but nothing to do (for example a payment for a cancelled concert).
    Ignored(String),
    /// An id seen before with other contents: a producer bug for a person to look at.
    Conflict(String),
    /// A payment whose time lies outside the window around the server's clock.
    Implausible(String),
    /// Valid, but more than the rankings keep (too many refunds waiting for one payment).
    Refused(String),
}

impl Outcome {
    /// Decodes one outcome of the apply script: a word, then `: ` and the reason.
    fn from_reply(reply: &str) -> Result<Self, ParsingError> {
        let (word, reason) = reply.split_once(": ").unwrap_or((reply, ""));
        let reason = reason.to_owned();
        Ok(match word {
            "applied" => Outcome::Applied,
            "duplicate" => Outcome::Duplicate,
            "pending" => Outcome::Pending,
            "ignored" => Outcome::Ignored(reason),
            "conflict" => Outcome::Conflict(reason),
            "implausible" => Outcome::Implausible(reason),
            "refused" => Outcome::Refused(reason),
            other => return Err(format!("ranking script returned {other:?}").into()),
        })
    }
}

/// The apply script's reply holds one outcome per command, in order.
impl FromRedisValue for Outcome {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Outcome::from_reply(&String::from_redis_value(v)?)
    }
}

/// Commands staged with [`Rankings::stage_apply`], one script call per
/// [`EVENTS_PER_CALL`].
pub struct StagedApply(Vec<Staged<Vec<Outcome>>>);

impl StagedApply {
    /// One outcome per staged command, in order, from the batch's replies.
    pub fn read(&self, replies: &[Value]) -> Result<Vec<Outcome>, Error> {
        let mut outcomes = Vec::new();
        for call in &self.0 {
            outcomes.extend(call.read(replies)?);
        }
        Ok(outcomes)
    }
}

/// One board: a period bucket, overall or for one genre.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Board {
    pub period: Period,
    pub bucket: String,
    pub genre: Option<Genre>,
}

impl Board {
    /// The board of a calendar `period` holding `day`. A live period's board is
    /// [`Rankings::board_at`] a moment.
    pub fn on(period: Period, day: NaiveDate, genre: Option<Genre>) -> Self {
        Board {
            period,
            bucket: period.bucket(day),
            genre,
        }
    }
}

/// What a board read ranks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Seats sold, most first (the seat board).
    Seats,
    /// Sell-through, seats ÷ capacity, highest first (the rate board).
    Rate,
}

impl Order {
    pub fn parse(raw: &str) -> Result<Self, Error> {
        match raw {
            "seats" => Ok(Order::Seats),
            "rate" => Ok(Order::Rate),
            _ => Err(Error::invalid("by", "must be seats or rate")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Order::Seats => "seats",
            Order::Rate => "rate",
        }
    }
}

/// One row of a board read: its rank on the board read, its seats, and the concert's
/// details when the rankings know them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Ranked {
    pub rank: u64,
    pub concert_id: String,
    /// Seats sold in the bucket.
    pub score: u64,
    pub capacity: Option<u64>,
    /// `score ÷ capacity`, rounded to 6 decimals.
    pub rate: Option<f64>,
    pub title: Option<String>,
    pub venue: Option<String>,
    pub starts_at: Option<String>,
}

/// A row of a kept page: `[concertId, rank, score, capacity, [title, venue, startsAt]]`, the
/// score as Redis stores it (`page.lua`).
#[derive(Deserialize)]
struct KeptRow(
    String,
    u64,
    Option<String>,
    Option<u64>,
    Option<(String, Option<String>, String)>,
);

/// The part of a details value's JSON a board shows.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shown {
    title: String,
    venue: Option<String>,
    starts_at: String,
}

impl Ranked {
    /// A row from its concert, rank, score as stored, and its capacity and shown details
    /// (title, venue, startsAt) if the rankings know them.
    fn new(
        concert_id: String,
        rank: u64,
        score: Option<&str>,
        details: Option<(u64, Shown)>,
    ) -> Result<Self, String> {
        // A seat score is negated seats; a trending score a fraction, shown rounded down.
        let score = match score {
            Some(raw) => {
                let stored: f64 = raw
                    .parse()
                    .map_err(|_| format!("malformed score {raw:?} of {concert_id}"))?;
                (-stored) as u64
            }
            None => 0,
        };
        let capacity = details.as_ref().map(|(capacity, _)| *capacity);
        let shown = details.map(|(_, shown)| shown);
        Ok(Ranked {
            rank,
            concert_id,
            score,
            capacity,
            rate: capacity
                .filter(|capacity| *capacity > 0)
                .map(|capacity| (score as f64 / capacity as f64 * 1e6).round() / 1e6),
            title: shown.as_ref().map(|shown| shown.title.clone()),
            venue: shown.as_ref().and_then(|shown| shown.venue.clone()),
            starts_at: shown.map(|shown| shown.starts_at),
        })
    }

    /// A row of a kept page.
    fn kept(row: KeptRow) -> Result<Self, String> {
        let KeptRow(concert_id, rank, score, capacity, shown) = row;
        let details = match (capacity, shown) {
            (Some(capacity), Some((title, venue, starts_at))) => Some((
                capacity,
                Shown {
                    title,
                    venue,
                    starts_at,
                },
            )),
            (None, None) => None,
            _ => return Err(format!("malformed concert details of {concert_id}")),
        };
        Ranked::new(concert_id, rank, score.as_deref(), details)
    }

    /// A row of a page read from the boards: the details as the hash holds them,
    /// `<updatedAtMs> <capacity> <json>`.
    fn read(
        concert_id: String,
        rank: u64,
        score: Option<&str>,
        details: Option<&str>,
    ) -> Result<Self, String> {
        let details = match details {
            Some(details) => {
                let (capacity, json) = details
                    .split_once(' ')
                    .and_then(|(_, rest)| rest.split_once(' '))
                    .ok_or_else(|| format!("malformed concert details {details:?}"))?;
                let capacity: u64 = capacity
                    .parse()
                    .map_err(|_| format!("malformed capacity in {details:?}"))?;
                let shown: Shown = serde_json::from_str(json)
                    .map_err(|err| format!("malformed concert details JSON: {err}"))?;
                Some((capacity, shown))
            }
            None => None,
        };
        Ranked::new(concert_id, rank, score, details)
    }
}

/// A page of a board and the number of concerts on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    pub total: u64,
    pub items: Vec<Ranked>,
}

/// A concert's row on a board, with the rows just above and below it.
#[derive(Debug, Clone, PartialEq)]
pub struct Around {
    pub entry: Ranked,
    pub above: Vec<Ranked>,
    pub below: Vec<Ranked>,
}

/// The page script's reply (`page.lua`): a kept page as JSON, `[total, focus, [row, ...]]`;
/// or a page read from the boards as a flat array, total, focus, then per row concertId,
/// rank, score and details.
#[derive(Debug)]
struct PageReply {
    total: u64,
    rows: Vec<Ranked>,
    focus: usize,
}

impl FromRedisValue for PageReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        Ok(match v {
            Value::Array(items) => PageReply::flat(items)?,
            other => PageReply::parse(&Vec::<u8>::from_redis_value(other)?)?,
        })
    }
}

impl PageReply {
    /// A kept page.
    fn parse(json: &[u8]) -> Result<Self, String> {
        let (total, focus, rows): (u64, usize, Vec<KeptRow>) =
            serde_json::from_slice(json).map_err(|err| format!("malformed page: {err}"))?;
        let rows = rows
            .into_iter()
            .map(Ranked::kept)
            .collect::<Result<_, _>>()?;
        Ok(PageReply { total, rows, focus })
    }

    /// A page read from the boards.
    fn flat(items: Vec<Value>) -> Result<Self, ParsingError> {
        if items.len() < 2 || items.len() % 4 != 2 {
            return Err(format!("a page of {} values", items.len()).into());
        }
        let mut items = items.into_iter();
        let (total, focus) = (
            u64::from_redis_value(items.next().unwrap_or(Value::Nil))?,
            usize::from_redis_value(items.next().unwrap_or(Value::Nil))?,
        );
        let mut rows = Vec::new();
        while let Some(concert) = items.next() {
            let mut next = || items.next().unwrap_or(Value::Nil);
            let (rank, score, details) = (next(), next(), next());
            rows.push(Ranked::read(
                String::from_redis_value(concert)?,
                u64::from_redis_value(rank)?,
                Option::<String>::from_redis_value(score)?.as_deref(),
                Option::<String>::from_redis_value(details)?.as_deref(),
            )?);
        }
        Ok(PageReply { total, rows, focus })
    }

    /// The rows split around the focus row, or `None` when the concert is not on the board.
    fn around(mut self) -> Option<Around> {
        if self.focus == 0 || self.focus > self.rows.len() {
            return None;
        }
        let below = self.rows.split_off(self.focus);
        let entry = self.rows.pop()?;
        Some(Around {
            entry,
            above: self.rows,
            below,
        })
    }
}

/// The tick script's `{fields taken off, more}`.
struct RollReply {
    processed: u64,
    more: bool,
}

impl FromRedisValue for RollReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (processed, more): (u64, u8) = FromRedisValue::from_redis_value(v)?;
        Ok(RollReply {
            processed,
            more: more == 1,
        })
    }
}

/// The tick's fold script's `{entries folded, entries left, entries set aside}`.
struct FoldReply {
    folded: u64,
    left: u64,
    rejected: u64,
}

impl FromRedisValue for FoldReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (folded, left, rejected) = FromRedisValue::from_redis_value(v)?;
        Ok(FoldReply {
            folded,
            left,
            rejected,
        })
    }
}

/// What a tick's fold did: payments and refunds folded onto the boards, script calls,
/// entries left in the fold queue, and entries set aside as unreadable (kept for the dedupe
/// window in `fold:rejected`; never written by this version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fold {
    pub folded: u64,
    pub calls: u32,
    pub left: u64,
    pub rejected: u64,
}

/// What a tick did: payments and refunds folded onto the boards and those left in the fold
/// queue, bucket fields taken off the rolling boards, script calls, and whether work was
/// left for the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    pub folded: u64,
    pub fold_left: u64,
    pub fold_rejected: u64,
    pub processed: u64,
    pub calls: u32,
    pub more: bool,
}

impl Tick {
    /// The handler's answer: `{"folded", "foldLeft", "foldRejected", "processed", "calls",
    /// "more"}`.
    pub fn to_json(self) -> serde_json::Value {
        json!({"folded": self.folded, "foldLeft": self.fold_left,
               "foldRejected": self.fold_rejected, "processed": self.processed,
               "calls": self.calls, "more": self.more})
    }
}

/// The rankings over one Redis. Cheap to clone.
#[derive(Clone)]
pub struct Rankings {
    conn: Conn,
    prefix: String,
    settings: RankingSettings,
}

impl Rankings {
    pub fn new(conn: Conn, prefix: impl Into<String>, settings: RankingSettings) -> Self {
        Rankings {
            conn,
            prefix: prefix.into(),
            settings,
        }
    }

    pub fn settings(&self) -> &RankingSettings {
        &self.settings
    }

    fn key(&self, rest: &str) -> String {
        format!("{}:{{rk}}:{rest}", self.prefix)
    }

    /// A board ranked by seats sold.
    pub fn board_key(&self, board: &Board) -> String {
        self.key(&format!("board:{}", Self::board_name(board)))
    }

    /// The same board ranked by sell-through (millionths of capacity); `apply.lua` derives
    /// it from the seat board's key the same way.
    pub fn rate_key(&self, board: &Board) -> String {
        self.key(&format!("rate:{}", Self::board_name(board)))
    }

    fn board_name(board: &Board) -> String {
        match &board.genre {
            None => format!("{}:{}", board.period, board.bucket),
            Some(genre) => format!("{}:{}:genre:{genre}", board.period, board.bucket),
        }
    }

    /// The trending decay.
    pub fn trend(&self) -> Trend {
        Trend {
            half_life_ms: self.settings.trending_half_life.as_millis() as i64,
        }
    }

    /// The board a read at `now` uses: for a calendar period the bucket of `now`'s day in
    /// the ranking zone; `rolling` for a window; the current generation for trending.
    pub fn board_at(&self, period: Period, now: DateTime<Utc>, genre: Option<Genre>) -> Board {
        let bucket = match period {
            Period::Trending => self.trend().generation_at(now).to_string(),
            Period::Last24h | Period::Last7d => "rolling".to_owned(),
            _ => return Board::on(period, local_day(now, self.settings.time_zone), genre),
        };
        Board {
            period,
            bucket,
            genre,
        }
    }

    /// [`Rankings::board_at`] now.
    pub fn board_now(&self, period: Period, genre: Option<Genre>) -> Board {
        self.board_at(period, Utc::now(), genre)
    }

    /// The watermark hash: per window, the last bucket taken off its boards.
    fn windows_state_key(&self) -> String {
        self.key("windows")
    }

    /// What `windows.lua` and `roll.lua` need to name the window keys: the watermarks, the
    /// genre infix and per window its bucket hashes (without the index) and overall board.
    pub(crate) fn window_templates(&self) -> serde_json::Value {
        let window = |window: Window, period: Period| {
            json!({
                "name": window.name,
                "hash": self.key(&format!("window:{}:", window.name)),
                "board": self.board_key(&Board { period, bucket: "rolling".into(), genre: None }),
                "n": window.buckets,
                "keep": window.keep_seconds(),
            })
        };
        json!({
            "g": BUCKET_MS,
            "state": self.windows_state_key(),
            "state_keep": LAST_7D.keep_seconds() + MARGIN_SECONDS,
            "genre": ":genre:",
            "windows": [window(LAST_24H, Period::Last24h), window(LAST_7D, Period::Last7d)],
        })
    }

    /// Folds what the apply calls left in the fold queue onto the boards (fold calls while
    /// entries are left, up to [`FOLD_CALLS`]), then takes the buckets that left each
    /// rolling window off its boards: one script call, and another while the last says
    /// there is more, up to [`TICK_CALLS`]. Each call is one round trip.
    pub async fn tick(&self) -> Result<Tick, Error> {
        let mut tick = Tick {
            folded: 0,
            fold_left: 0,
            fold_rejected: 0,
            processed: 0,
            calls: 0,
            more: false,
        };
        let fold = self.fold().await?;
        tick.folded = fold.folded;
        tick.fold_left = fold.left;
        tick.fold_rejected = fold.rejected;
        tick.calls = fold.calls;
        let mut more = true;
        let mut roll_calls = 0;
        while more && roll_calls < TICK_CALLS {
            let RollReply {
                processed,
                more: now_more,
            } = self.call(self.roll_call()).await?;
            tick.processed += processed;
            roll_calls += 1;
            more = now_more;
        }
        tick.calls += roll_calls;
        tick.more = fold.left > 0 || more;
        Ok(tick)
    }

    /// The tick's first part: fold calls while the fold queue holds entries, up to
    /// [`FOLD_CALLS`].
    pub async fn fold(&self) -> Result<Fold, Error> {
        let mut fold = Fold {
            folded: 0,
            calls: 0,
            left: 1,
            rejected: 0,
        };
        while fold.left > 0 && fold.calls < FOLD_CALLS {
            let FoldReply {
                folded,
                left,
                rejected,
            } = self.call(self.fold_call()).await?;
            fold.folded += folded;
            fold.calls += 1;
            fold.left = left;
            fold.rejected = rejected;
        }
        Ok(fold)
    }

    /// One script call, through the batch path the apply script takes: no second copy of
    /// the single-call path.
    async fn call<T: FromRedisValue>(&self, call: ScriptCall) -> Result<T, Error> {
        let mut batch = Batch::new();
        let staged: Staged<T> = batch.stage(call);
        Ok(staged.read(&self.conn.send(&batch).await?)?)
    }

    /// One call of the tick's fold.
    pub(crate) fn fold_call(&self) -> ScriptCall {
        let mut invocation = ScriptCall::of(&FOLD);
        invocation
            .named_key("DETAILS", self.details_key())
            .named_key("PAGES", self.page_cache_key())
            .named_key("FOLD", self.fold_key())
            .named_key("named", self.windows_state_key())
            .named("TTL", self.settings.dedupe.as_secs())
            .named("WIN", self.window_templates().to_string())
            .named("BUDGET", FOLD_BUDGET_TICK);
        invocation
    }

    /// The fold queue: payments and refunds recorded and not yet on the boards.
    fn fold_key(&self) -> String {
        self.key("fold")
    }

    /// One tick script call.
    pub(crate) fn roll_call(&self) -> ScriptCall {
        let mut invocation = ScriptCall::of(&ROLL);
        invocation
            .named_key("DETAILS", self.details_key())
            .named_key("PAGES", self.page_cache_key())
            .named_key("WATERMARKS", self.windows_state_key())
            .named("cfg", self.window_templates().to_string())
            .named("budget", TICK_FIELDS)
            .named("steps", TICK_STEPS);
        invocation
    }

    /// The one hash of concert details: `concertId` → `<updatedAt ms> <capacity> <json>`.
    pub fn details_key(&self) -> String {
        self.key("concert-details")
    }

    /// The page cache: the pages [`Rankings::page`] keeps, rendered, deleted by every script
    /// call that writes boards or details (`page.lua`).
    pub fn page_cache_key(&self) -> String {
        self.key("page-cache")
    }

    /// Today in the ranking zone.
    pub fn today(&self) -> NaiveDate {
        local_day(Utc::now(), self.settings.time_zone)
    }

    /// The day a read of `period` without a date serves now, and whether it fell back to
    /// an earlier bucket ([`default_day`]).
    pub fn served_day(&self, period: Period) -> (NaiveDate, bool) {
        default_day(Utc::now(), &self.settings, period)
    }

    /// Stages `commands` in `batch`, atomically per call of up to [`EVENTS_PER_CALL`], so
    /// they share one round trip with other work (the updater's releases); the handle reads
    /// their outcomes.
    pub fn stage_apply(&self, batch: &mut Batch, commands: &[Command]) -> StagedApply {
        let calls = commands
            .chunks(EVENTS_PER_CALL)
            .map(|chunk| {
                let mut invocation = ScriptCall::of(&APPLY);
                // The details hash, which every command may read; the page cache, which the
                // call deletes; the fold queue.
                let (details, pages, fold) =
                    (self.details_key(), self.page_cache_key(), self.fold_key());
                invocation
                    .named_key("DETAILS", &details)
                    .named_key("PAGES", &pages)
                    .named_key("FOLD", &fold);
                let mut keys = vec![self.windows_state_key()];
                invocation
                    .named("TTL", self.settings.dedupe.as_secs())
                    .named("SKEW_MS", FUTURE_SKEW.as_millis() as u64)
                    .named("MAX_PENDING", MAX_PENDING_REFUNDS)
                    .named("WIN", self.window_templates().to_string())
                    .named("BUDGET", FOLD_BUDGET_APPLY);
                for command in chunk {
                    let (op, fold) = self.op(command, &mut keys);
                    invocation.named("commands", op.to_string());
                    if let Some(fold) = fold {
                        invocation.named("commands", fold);
                    }
                }
                keys.sort();
                keys.dedup();
                for key in keys
                    .iter()
                    .filter(|key| **key != details && **key != pages && **key != fold)
                {
                    invocation.named_key("named", key);
                }
                batch.stage(invocation)
            })
            .collect();
        StagedApply(calls)
    }

    /// Sends `batch`, which holds this owner's staged work and whatever shares its round
    /// trip; the staged handles read the replies.
    pub async fn send(&self, batch: &Batch) -> Result<Vec<Value>, Error> {
        Ok(self.conn.send(batch).await?)
    }

    /// The script's instruction for `command`, noting every key it names in `keys`; for a
    /// payment also its entry in the fold queue (`fold.lua`).
    fn op(&self, command: &Command, keys: &mut Vec<String>) -> (serde_json::Value, Option<String>) {
        let mut note = |key: String| {
            keys.push(key.clone());
            key
        };
        let op = match command {
            Command::Payment {
                payment,
                concert,
                seats,
                genres,
                completed_at,
                ..
            } => {
                let record = note(self.key(&format!("payment:{payment}")));
                let cancelled = note(self.key(&format!("concert:{concert}:cancelled")));
                let index = note(self.key(&format!("concert:{concert}:boards")));
                let bucket = bucket_of(*completed_at);
                let csv = genres
                    .iter()
                    .map(Genre::as_str)
                    .collect::<Vec<_>>()
                    .join(",");
                let boards = self.boards_for(*completed_at, genres);
                let generations = self.trend().generations_for(*completed_at);
                // The fold's entry (fold.lua): words, as no key or id holds a space. First
                // what is the payment's own, then its shape, which the payments of one
                // concert in one bucket share.
                let weights = generations
                    .iter()
                    .map(|generation| generation.weight.to_string())
                    .collect::<Vec<_>>()
                    .join(",");
                let mut fold = format!(
                    "{record} {} {concert} {index} {cancelled} {} {bucket} {}",
                    if weights.is_empty() { "-" } else { &weights },
                    if csv.is_empty() { "-" } else { &csv },
                    boards.len()
                );
                for (board, expires) in boards {
                    let key = note(self.board_key(&board));
                    fold += &format!(" {key} {}", expires.map_or(0, |t| t.timestamp()));
                }
                for generation in generations {
                    let key = note(self.board_key(&Board {
                        period: Period::Trending,
                        bucket: generation.index.to_string(),
                        genre: None,
                    }));
                    fold += &format!(" {key} {}", generation.expires_at);
                }
                // Declare the window keys this payment may write, as for every other key.
                for (window, period) in [(LAST_24H, Period::Last24h), (LAST_7D, Period::Last7d)] {
                    note(self.key(&format!("window:{}:{bucket}", window.name)));
                    for genre in std::iter::once(None).chain(genres.iter().cloned().map(Some)) {
                        note(self.board_key(&Board {
                            period,
                            bucket: "rolling".into(),
                            genre,
                        }));
                    }
                }
                let genres: Vec<&str> = genres.iter().map(Genre::as_str).collect();
                let op = json!({
                    "op": "pay",
                    "record": record,
                    "pending": note(self.pending_key(payment)),
                    "cancelled": cancelled,
                    "concert": concert.as_str(),
                    "seats": seats,
                    "genres": genres,
                    "at": completed_at.timestamp_millis(),
                });
                return (op, Some(fold));
            }
            Command::Refund {
                payment,
                refund,
                concert,
                seats,
            } => {
                let dedupe = match refund {
                    Some(refund) => format!("refund:r:{refund}"),
                    None => format!("refund:p:{payment}"),
                };
                json!({
                    "op": "refund",
                    "record": note(self.key(&format!("payment:{payment}"))),
                    "pending": note(self.pending_key(payment)),
                    "dedupe": note(self.key(&dedupe)),
                    "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                    "payment": payment.as_str(),
                    "concert": concert.as_str(),
                    "seats": seats,
                })
            }
            Command::Cancel { concert } => json!({
                "op": "cancel",
                "index": note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
            }),
            Command::Details {
                concert,
                details,
                updated_at,
            } => json!({
                "op": "details",
                "index": note(self.key(&format!("concert:{concert}:boards"))),
                "cancelled": note(self.key(&format!("concert:{concert}:cancelled"))),
                "concert": concert.as_str(),
                // What the hash holds: the script reads the first two words only.
                "value": format!(
                    "{} {} {}",
                    updated_at.timestamp_millis(),
                    details.capacity,
                    json!(details)
                ),
            }),
        };
        (op, None)
    }

    /// The refunds waiting for `payment` to land.
    fn pending_key(&self, payment: &PaymentId) -> String {
        self.key(&format!("payment:{payment}:pending-refunds"))
    }

    /// Every board a payment at `at` counts on, with each board's expiry.
    fn boards_for(
        &self,
        at: DateTime<Utc>,
        genres: &[Genre],
    ) -> Vec<(Board, Option<DateTime<Utc>>)> {
        let day = local_day(at, self.settings.time_zone);
        let genres = std::iter::once(None).chain(genres.iter().cloned().map(Some));
        genres
            .flat_map(|genre| {
                Period::ALL.into_iter().map(move |period| {
                    (
                        Board::on(period, day, genre.clone()),
                        period.expires_at(day, &self.settings),
                    )
                })
            })
            .collect()
    }

    /// The page script's call on `board` ranked by `order`, its arguments still to come.
    fn read_call(&self, board: &Board, order: Order) -> ScriptCall {
        let mut invocation = ScriptCall::of(&PAGE);
        let seats = self.board_key(board);
        let ranked = match order {
            Order::Seats => seats.clone(),
            Order::Rate => self.rate_key(board),
        };
        invocation
            .named_key("ranked", ranked)
            .named_key("seat_board", seats)
            .named_key("details", self.details_key());
        invocation
    }

    /// The page script's call for a page: with the page cache when the page is one it keeps
    /// (the top [`CACHED_LIMIT`] rows or fewer).
    pub(crate) fn page_call(
        &self,
        board: &Board,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> ScriptCall {
        let mut invocation = self.read_call(board, order);
        if offset == 0 && limit <= CACHED_LIMIT {
            invocation.named_key("cache", self.page_cache_key());
        }
        invocation
            .named("mode", "page")
            .named("target", offset)
            .named("count", limit);
        invocation
    }

    /// A page of `board` ranked by `order`, and the number of concerts on it.
    pub async fn page(
        &self,
        board: &Board,
        order: Order,
        offset: u64,
        limit: u64,
    ) -> Result<Page, Error> {
        let invocation = self.page_call(board, order, offset, limit);
        let PageReply {
            total, mut rows, ..
        } = self.conn.invoke(invocation).await?;
        without_rate_on_trending(board, &mut rows);
        Ok(Page { total, items: rows })
    }

    /// `concert`'s row on `board` ranked by `order`, with up to `n` rows either side
    /// ([`MAX_AROUND`] at most), if it is on the board.
    pub async fn around(
        &self,
        board: &Board,
        order: Order,
        concert: &ConcertId,
        n: u64,
    ) -> Result<Option<Around>, Error> {
        let mut invocation = self.read_call(board, order);
        invocation
            .named("mode", "around")
            .named("target", concert.as_str())
            .named("count", n.min(MAX_AROUND));
        let mut reply: PageReply = self.conn.invoke(invocation).await?;
        without_rate_on_trending(board, &mut reply.rows);
        Ok(reply.around())
    }
}

/// A trending score is decayed sales, not seats: a rate from it would mean nothing.
fn without_rate_on_trending(board: &Board, rows: &mut [Ranked]) {
    if board.period == Period::Trending {
        for row in rows {
            row.rate = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Outcome, PageReply};
    use redis::{FromRedisValue, Value};

    fn parse(json: &str) -> PageReply {
        PageReply::parse(json.as_bytes()).unwrap()
    }

    fn flat(values: Vec<Value>) -> PageReply {
        PageReply::from_redis_value(Value::Array(values)).unwrap()
    }

    fn text(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    const STORED: &str = r#"{"title":"T","venue":null,"startsAt":"2026-12-24T19:00:00Z","capacity":3,"genres":["rock"]}"#;

    #[test]
    fn page_rows_read_from_the_boards_decode_with_their_details_and_rate() {
        let row = |id: &str, rank: i64, score: Option<&str>, details: Option<String>| {
            vec![
                text(id),
                Value::Int(rank),
                score.map_or(Value::Nil, text),
                details.map_or(Value::Nil, |d| text(&d)),
            ]
        };
        let mut values = vec![Value::Int(9), Value::Int(0)];
        values.extend(row(
            "c1",
            3,
            Some("-2"),
            Some(format!("1700000000000 3 {STORED}")),
        ));
        values.extend(row("c2", 4, Some("-2"), None));
        values.extend(row("c3", 5, None, None));
        values.extend(row("c4", 6, Some("-1.75"), None));
        values.extend(row("c5", 7, Some("-2"), Some(format!("1 0 {STORED}"))));
        let page = flat(values);
        assert_eq!((page.total, page.focus, page.rows.len()), (9, 0, 5));
        let full = &page.rows[0];
        assert_eq!(
            (full.rank, full.score, full.capacity, full.rate),
            (3, 2, Some(3), Some(0.666667))
        );
        assert_eq!(full.title.as_deref(), Some("T"));
        assert_eq!(full.venue, None);
        assert_eq!(full.starts_at.as_deref(), Some("2026-12-24T19:00:00Z"));
        let bare = &page.rows[1];
        assert_eq!(
            (bare.concert_id.as_str(), bare.capacity, bare.rate),
            ("c2", None, None)
        );
        assert_eq!(bare.title, None);
        // No seat score: 0 seats. A trending score shows its whole part.
        assert_eq!((page.rows[2].score, page.rows[3].score), (0, 1));
        // A capacity of 0 never divides: no rate.
        assert_eq!((page.rows[4].capacity, page.rows[4].rate), (Some(0), None));
        for bad in ["garbage", "1 x {}", "1 3 not json", "1 3 {}"] {
            let mut values = vec![Value::Int(1), Value::Int(0)];
            values.extend(row("c1", 1, Some("-1"), Some(bad.to_owned())));
            assert!(
                PageReply::from_redis_value(Value::Array(values)).is_err(),
                "{bad}"
            );
        }
        let mut short = vec![Value::Int(1), Value::Int(0)];
        short.extend(row("c1", 1, Some("-1"), None));
        short.pop();
        assert!(PageReply::from_redis_value(Value::Array(short)).is_err());
        // An empty board, and a concert not on it.
        let empty = flat(vec![Value::Int(0), Value::Int(0)]);
        assert_eq!((empty.total, empty.rows.len()), (0, 0));
        assert!(empty.around().is_none());
    }

    #[test]
    fn kept_pages_decode_as_the_same_rows() {
        let page = parse(
            r#"[9,0,[["c1",3,"-2",3,["T",null,"2026-12-24T19:00:00Z"]],["c2",4,"-2",null,null],
                ["c3",5,null,null,null],["c5",7,"-2",0,["T","V","2027"]]]]"#,
        );
        assert_eq!((page.total, page.focus, page.rows.len()), (9, 0, 4));
        let full = &page.rows[0];
        assert_eq!(
            (full.rank, full.score, full.capacity, full.rate),
            (3, 2, Some(3), Some(0.666667))
        );
        assert_eq!(
            (
                full.title.as_deref(),
                full.venue.as_deref(),
                full.starts_at.as_deref()
            ),
            (Some("T"), None, Some("2026-12-24T19:00:00Z"))
        );
        assert_eq!(
            (page.rows[1].capacity, page.rows[1].title.as_deref()),
            (None, None)
        );
        assert_eq!(page.rows[2].score, 0);
        assert_eq!((page.rows[3].capacity, page.rows[3].rate), (Some(0), None));
        assert_eq!(page.rows[3].venue.as_deref(), Some("V"));
        for bad in [
            "",
            "[1,0]",
            "[1,0,{}]",
            r#"[1,0,[["c1",1,"x",null,null]]]"#,
            r#"[1,0,[["c1",1,"-1","3",["T",null,"S"]]]]"#,
            r#"[1,0,[["c1",1,"-1",3,null]]]"#,
            r#"[1,0,[["c1",1,"-1",null,["T",null,"S"]]]]"#,
            r#"[1,0,[["c1",1,"-1",3,[null,null,"S"]]]]"#,
        ] {
            assert!(PageReply::parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert_eq!(parse("[0,0,[]]").rows.len(), 0);
    }

    #[test]
    fn a_page_around_a_concert_splits_at_its_row() {
        let mut values = vec![Value::Int(5), Value::Int(2)];
        for id in ["c1", "c2", "c3"] {
            values.extend([text(id), Value::Int(1), text("-1"), Value::Nil]);
        }
        let around = flat(values).around().unwrap();
        assert_eq!(around.entry.concert_id, "c2");
        assert_eq!((around.above.len(), around.below.len()), (1, 1));
    }

    #[test]
    fn script_outcomes_decode_with_their_reasons() {
        let cases = [
            ("applied", Outcome::Applied),
            ("duplicate", Outcome::Duplicate),
            ("pending", Outcome::Pending),
            (
                "ignored: concert cancelled",
                Outcome::Ignored("concert cancelled".into()),
            ),
            ("conflict: a: b", Outcome::Conflict("a: b".into())),
            ("implausible: ahead", Outcome::Implausible("ahead".into())),
            ("refused: full", Outcome::Refused("full".into())),
        ];
        for (reply, outcome) in cases {
            assert_eq!(Outcome::from_reply(reply).unwrap(), outcome, "{reply}");
        }
        assert!(Outcome::from_reply("exploded").is_err());
    }

    /// Each ranking script binds its keys and arguments by the names Rust sends them under.
    #[test]
    fn each_script_binds_its_keys_and_arguments_by_the_names_rust_sends_them_under() {
        use super::{APPLY, FOLD, PAGE, ROLL};
        use crate::store::bindings::assert_binds;
        let boards = include_str!("boards.lua");
        let fold = [include_str!("windows.lua"), include_str!("fold.lua")].concat();
        assert_binds(&[boards, &fold, include_str!("apply.lua")].concat(), &APPLY);
        assert_binds(
            &[boards, &fold, include_str!("fold_tick.lua")].concat(),
            &FOLD,
        );
        assert_binds(&[boards, include_str!("roll.lua")].concat(), &ROLL);
        assert_binds(include_str!("page.lua"), &PAGE);
    }
}
