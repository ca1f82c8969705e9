//! What the rankings' keys are called, all under the one hash tag `{rk}`: the boards and
//! their rate boards ([`Board`], [`Order`]), the windows' watermarks and templates, the fold
//! queue, the concert details, the page cache and a payment's pending refunds.

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::json;

use super::period::{local_day, Period};
use super::rankings::Rankings;
use super::windows::{Trend, Window, BUCKET_MS, LAST_24H, LAST_7D, MARGIN_SECONDS};
use crate::error::Error;
use crate::ids::{Genre, PaymentId};

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

impl Rankings {
    pub(super) fn key(&self, rest: &str) -> String {
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

    /// The board a read ranked by `order` reads: the seat board or its rate board.
    pub fn ranked_key(&self, board: &Board, order: Order) -> String {
        match order {
            Order::Seats => self.board_key(board),
            Order::Rate => self.rate_key(board),
        }
    }

    pub(super) fn board_name(board: &Board) -> String {
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

    /// The board a read of `period`'s bucket holding `day` compares with for movement: the
    /// bucket before, while it is kept (its retention has not ended at `now`). `None` for the
    /// all-time and live boards, and where the bucket before is gone: movement is then
    /// unknown, never new.
    pub fn previous_board(
        &self,
        period: Period,
        day: NaiveDate,
        genre: Option<Genre>,
        now: DateTime<Utc>,
    ) -> Option<Board> {
        let before = period.previous_day(day)?;
        let kept = period
            .expires_at(before, &self.settings)
            .is_none_or(|ends| ends > now);
        kept.then(|| Board::on(period, before, genre))
    }

    /// [`Rankings::board_at`] now.
    pub fn board_now(&self, period: Period, genre: Option<Genre>) -> Board {
        self.board_at(period, Utc::now(), genre)
    }

    /// The watermark hash: per window, the last bucket taken off its boards.
    pub(super) fn windows_state_key(&self) -> String {
        self.key("windows")
    }

    /// What `windows.lua` and `roll.lua` need to name the window keys: the watermarks, the
    /// genre infix and per window its bucket hashes (without the index) and overall board;
    /// and what `record.lua` needs to name the boards a record says its payment counted on:
    /// a calendar board's key before its period, the calendar periods, and a trending
    /// generation's key before its index.
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
            "calendar": self.key("board:"),
            "periods": Period::ALL.map(Period::as_str),
            "trending": self.key(&format!("board:{}:", Period::Trending)),
            "live": self.live_genres_key(),
        })
    }

    /// The fold queue: payments and refunds recorded and not yet on the boards.
    pub(super) fn fold_key(&self) -> String {
        self.key("fold")
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

    /// The refunds waiting for `payment` to land.
    pub(super) fn pending_key(&self, payment: &PaymentId) -> String {
        self.key(&format!("payment:{payment}:pending-refunds"))
    }
}
