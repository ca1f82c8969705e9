//! `ranking-api`: reads the sales boards over HTTP.
//!
//! [`ROUTES`] lists every route this function serves and what it does; it drives the
//! dispatch, the contract tests and the table in docs/http-api.md.
//!
//! The board reads answer `Cache-Control: public, max-age=5` (errors `no-store`): a page every visitor
//! refreshes every few seconds reaches the rankings shard once per five seconds per cache.

use std::collections::HashMap;

use chrono::Utc;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::bounds::Bounds;
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, RankingSettings, SecretPolicy};
use lineup::http::{self, json_cached, segments, Route};
use lineup::ids::{ConcertId, Genre};
use lineup::pages;
use lineup::ranking::{
    parse_date, percentile, Board, Order, Period, Ranked, Rankings, Standings, MAX_AROUND,
};
use lineup::Error;
use serde::Serialize;

/// `Cache-Control` of a board read.
pub const BOARD_CACHE_CONTROL: &str = "public, max-age=5";

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub rankings: Rankings,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Unused;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::Nothing;

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads: the one place they are wired.
    pub fn new(started: &Started) -> Result<Self, ConfigError> {
        Ok(Deps {
            rankings: started.rankings(RankingSettings {
                early_cutoff: started.config.env.early_cutoff()?,
                ..started.config.env.ranking()?
            }),
        })
    }
}

/// What a route does, as the dispatch matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Page,
    Concert,
    Concerts,
    RankingsPage,
    Asset,
    Strings,
}

/// Every route this function serves, the page's assets before the boards (a path
/// `/rankings/assets/…` is an asset's). `openapi.yaml` and the template must list exactly
/// these, and docs/http-api.md shows this table; tests check all three, and that each is
/// really served.
pub const ROUTES: &[Route<Op>] = &[
    Route {
        method: "GET",
        path: "/rankings",
        does: "the rankings page (HTML), which reads the boards below",
        op: Op::RankingsPage,
    },
    Route {
        method: "GET",
        path: "/rankings/assets/{asset}",
        does: "its script (`rankings.js`) and styles (`page.css`); the rank badge a concert's page embeds (`badge.js`)",
        op: Op::Asset,
    },
    Route {
        method: "GET",
        path: "/rankings/assets/i18n/{lang}",
        does: "its string table in one language (JSON)",
        op: Op::Strings,
    },
    Route {
        method: "GET",
        path: "/rankings/{period}",
        does: "a page of a board, `?date&genre&by&limit&offset`",
        op: Op::Page,
    },
    Route {
        method: "GET",
        path: "/rankings/{period}/concerts/{concertId}",
        does: "one concert's row, with `around` rows either side, and its percentile, `?date&genre&by&around`",
        op: Op::Concert,
    },
    Route {
        method: "GET",
        path: "/rankings/{period}/concerts",
        does: "up to 100 concerts' standing on a board, in one round trip, `?ids&date&genre&by`",
        op: Op::Concerts,
    },
];

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(request: Request, deps: &Deps) -> http::Answered {
    http::answer(dispatch(&request, deps)).await
}

async fn dispatch(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let segments = segments(request)?;
    let (op, values) = http::find(ROUTES, request, &segments)?;
    let read = match op {
        Op::RankingsPage => return page_part(""),
        Op::Asset => return page_part(values.get(0)?),
        Op::Strings => {
            return http::page(
                pages::strings(values.get(0)?)?,
                pages::JSON,
                pages::ASSET_CACHE_CONTROL,
                &pages::csp(None),
            )
        }
        Op::Page => Read::Page,
        Op::Concerts => Read::Concerts,
        Op::Concert => Read::Concert(values.get(1)?),
    };
    let period = values.get(0)?;
    let period = Period::parse(period)?;
    let query = Query::parse(request.uri().query().unwrap_or(""))?;
    let genre = query.get("genre").map(Genre::parse).transpose()?;
    let order = query.get("by").map_or(Ok(Order::Seats), Order::parse)?;
    // The board served, the day it holds (none for a live board) and whether the read fell
    // back to the bucket before.
    let (board, day, fell_back) = match query.get("date") {
        Some(_) if period.is_live() => {
            return Err(Error::invalid(
                "date",
                "a last-24h, last-7d or trending board is read as of now, without a date",
            ))
        }
        Some(raw) => {
            let day = parse_date(raw)?;
            (Board::on(period, day, genre), Some(day), false)
        }
        None if period.is_live() => (deps.rankings.board_now(period, genre), None, false),
        None => {
            let (day, fell_back) = deps.rankings.served_day(period);
            (Board::on(period, day, genre), Some(day), fell_back)
        }
    };
    // Movement compares with the bucket before the one served while it is kept, or with a
    // live board's last snapshot.
    let against = deps.rankings.against(&board, day, Utc::now());
    if period == Period::Trending && order == Order::Rate {
        return Err(Error::invalid(
            "by",
            "a trending board scores decayed sales: it has no rate order",
        ));
    }
    let served = Served {
        period: period.as_str(),
        bucket: &board.bucket,
        fell_back,
        genre: board.genre.as_ref(),
        by: order.as_str(),
    };
    match read {
        Read::Page => {
            let limit = query.number("limit", 10, Bounds::new(1, 100))?;
            let offset = query.number("offset", 0, Bounds::new(0, 1_000_000))?;
            let page = deps
                .rankings
                .page(&board, against.as_ref(), order, offset, limit)
                .await?;
            Ok(json_cached(
                StatusCode::OK,
                &PageBody {
                    served,
                    total: page.total,
                    items: page.items,
                },
                BOARD_CACHE_CONTROL,
            ))
        }
        Read::Concerts => {
            let ids = query
                .get("ids")
                .ok_or_else(|| Error::invalid("ids", "name 1 to 100 concerts, comma-separated"))?
                .split(',')
                .map(ConcertId::parse)
                .collect::<Result<Vec<_>, _>>()?;
            let standings = deps
                .rankings
                .concerts(&board, against.as_ref(), order, &ids)
                .await?;
            Ok(json_cached(
                StatusCode::OK,
                &StandingsBody { served, standings },
                BOARD_CACHE_CONTROL,
            ))
        }
        Read::Concert(concert) => {
            let concert = ConcertId::parse(concert)?;
            let n = query.number("around", 0, Bounds::new(0, MAX_AROUND))?;
            let around = deps
                .rankings
                .around(&board, against.as_ref(), order, &concert, n)
                .await?
                .ok_or_else(|| {
                    Error::NotFound(format!("concert {concert} is not on this board"))
                })?;
            Ok(json_cached(
                StatusCode::OK,
                &PositionBody {
                    served,
                    percentile: percentile(around.entry.rank, around.total),
                    total: around.total,
                    entry: around.entry,
                    above: around.above,
                    below: around.below,
                },
                BOARD_CACHE_CONTROL,
            ))
        }
    }
}

/// What a board route reads: a page, one concert with its neighbours, or many concerts.
enum Read<'a> {
    Page,
    Concert(&'a str),
    Concerts,
}

/// The rankings page (`""`), its script or its styles, or the badge's script.
fn page_part(asset: &str) -> Result<Response<Body>, Error> {
    let csp = pages::csp(None);
    match asset {
        "" => http::page(
            pages::rankings_html(),
            pages::HTML,
            pages::PAGE_CACHE_CONTROL,
            &csp,
        ),
        "rankings.js" => http::page(
            pages::rankings_script(),
            pages::JAVASCRIPT,
            pages::ASSET_CACHE_CONTROL,
            &csp,
        ),
        "page.css" => http::page(pages::STYLES, pages::CSS, pages::ASSET_CACHE_CONTROL, &csp),
        "badge.js" => http::page(
            pages::badge_script(),
            pages::JAVASCRIPT,
            pages::ASSET_CACHE_CONTROL,
            &csp,
        ),
        _ => Err(Error::NotFound(format!("no asset {asset}"))),
    }
}

/// Which board a read served.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Served<'a> {
    period: &'static str,
    bucket: &'a str,
    /// The read had no date and, before `RANKING_EARLY_CUTOFF`, served the previous bucket.
    fell_back: bool,
    genre: Option<&'a Genre>,
    by: &'static str,
}

#[derive(Serialize)]
struct PageBody<'a> {
    #[serde(flatten)]
    served: Served<'a>,
    total: u64,
    items: Vec<Ranked>,
}

#[derive(Serialize)]
struct StandingsBody<'a> {
    #[serde(flatten)]
    served: Served<'a>,
    #[serde(flatten)]
    standings: Standings,
}

#[derive(Serialize)]
struct PositionBody<'a> {
    #[serde(flatten)]
    served: Served<'a>,
    /// Concerts on the board.
    total: u64,
    /// The share of the board at or below the concert's rank ([`percentile`]).
    percentile: f64,
    #[serde(flatten)]
    entry: Ranked,
    above: Vec<Ranked>,
    below: Vec<Ranked>,
}

/// The query string's parameters. A parameter given twice is ambiguous and rejected.
struct Query(HashMap<String, String>);

impl Query {
    fn parse(raw: &str) -> Result<Self, Error> {
        let mut map = HashMap::new();
        for (name, value) in form_urlencoded::parse(raw.as_bytes()) {
            if map.insert(name.to_string(), value.into_owned()).is_some() {
                return Err(Error::invalid(
                    "query",
                    format!("{name} is given more than once"),
                ));
            }
        }
        Ok(Query(map))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    fn number(&self, name: &'static str, default: u64, bounds: Bounds) -> Result<u64, Error> {
        match self.get(name) {
            None => Ok(default),
            Some(raw) => bounds
                .parse(raw)
                .map_err(|err| Error::invalid(name, err.to_string())),
        }
    }
}
