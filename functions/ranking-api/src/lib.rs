//! `ranking-api`: reads the sales boards over HTTP.
//!
//! | route | does |
//! |---|---|
//! | `GET /rankings/{period}?date&genre&by&limit&offset` | a page of a board |
//! | `GET /rankings/{period}/concerts/{concertId}?date&genre&by&around` | one concert's row, with `around` rows either side, and its percentile |
//! | `GET /rankings/{period}/concerts?ids&date&genre&by` | up to 100 concerts' standing on a board, in one round trip |
//! | `GET /rankings` | the rankings page (HTML), which reads the boards above |
//! | `GET /rankings/assets/{asset}` | its script (`rankings.js`) and styles (`page.css`); the rank badge a concert's page embeds (`badge.js`) |
//! | `GET /rankings/assets/i18n/{lang}` | its string table in one language (JSON) |
//!
//! The board reads answer `Cache-Control: public, max-age=5` (errors `no-store`): a page every visitor
//! refreshes every few seconds reaches the rankings shard once per five seconds per cache.

use std::collections::HashMap;

use chrono::Utc;

use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::bounds::Bounds;
use lineup::cold_start::Started;
use lineup::config::ConfigError;
use lineup::http::{self, allow, json_cached, no_route, segments};
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

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads: the one place they are wired.
    pub fn new(started: &Started) -> Result<Self, ConfigError> {
        Ok(Deps {
            rankings: started.rankings()?,
        })
    }
}

/// Every route this function serves, as `(method, path)`. `openapi.yaml` and the template
/// must list exactly these; a test checks both, and that each is really served.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/rankings/{period}"),
    ("GET", "/rankings/{period}/concerts/{concertId}"),
    ("GET", "/rankings/{period}/concerts"),
    ("GET", "/rankings"),
    ("GET", "/rankings/assets/{asset}"),
    ("GET", "/rankings/assets/i18n/{lang}"),
];

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(request: Request, deps: &Deps) -> http::Answered {
    http::answer(route(&request, deps)).await
}

async fn route(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let segments = segments(request)?;
    let (period, read) = match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["rankings"] => return allow(request.method(), "GET").and_then(|()| page_part("")),
        ["rankings", "assets", asset] => {
            return allow(request.method(), "GET").and_then(|()| page_part(asset))
        }
        ["rankings", "assets", "i18n", lang] => {
            allow(request.method(), "GET")?;
            return http::page(
                pages::strings(lang)?,
                pages::JSON,
                pages::ASSET_CACHE_CONTROL,
                &pages::csp(None),
            );
        }
        ["rankings", period] => (period, Read::Page),
        ["rankings", period, "concerts"] => (period, Read::Concerts),
        ["rankings", period, "concerts", concert] => (period, Read::Concert(concert)),
        _ => return Err(no_route(request)),
    };
    allow(request.method(), "GET")?;
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
