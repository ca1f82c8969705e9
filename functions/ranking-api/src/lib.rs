//! `ranking-api`: reads the sales boards over HTTP.
//!
//! | route | does |
//! |---|---|
//! | `GET /rankings/{period}?date&genre&limit&offset` | a page of a board |
//! | `GET /rankings/{period}/concerts/{concertId}?date&genre` | one concert's rank and score |

use std::collections::HashMap;

use lambda_http::http::{Method, StatusCode};
use lambda_http::{Body, Request, Response};
use lineup::bounds::Bounds;
use lineup::cold_start::Started;
use lineup::http::{json, no_route, respond, segments};
use lineup::ids::{ConcertId, Genre};
use lineup::ranking::{parse_date, Board, Period, Ranked, Rankings};
use lineup::Error;
use serde::Serialize;

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub rankings: Rankings,
}

impl Deps {
    /// The handler's dependencies from what cold start built: the one place they are wired.
    pub fn new(started: &Started) -> Self {
        Deps {
            rankings: started.rankings(),
        }
    }
}

/// Every route this function serves, as `(method, path)`. `openapi.yaml` and the template
/// must list exactly these; a test checks both, and that each is really served.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/rankings/{period}"),
    ("GET", "/rankings/{period}/concerts/{concertId}"),
];

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(
    request: Request,
    deps: &Deps,
) -> Result<Response<Body>, std::convert::Infallible> {
    Ok(respond(route(&request, deps).await))
}

async fn route(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let segments = segments(request);
    let (period, concert) = match segments.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["rankings", period] => (period, None),
        ["rankings", period, "concerts", concert] => (period, Some(concert)),
        _ => return Err(no_route(request)),
    };
    if request.method() != Method::GET {
        return Err(Error::MethodNotAllowed { allow: "GET" });
    }
    let period = Period::parse(period)?;
    let query = Query::parse(request.uri().query().unwrap_or(""))?;
    let genre = query.get("genre").map(Genre::parse).transpose()?;
    let board = match query.get("date") {
        Some(_) if period.is_live() => {
            return Err(Error::invalid(
                "date",
                "a last-24h, last-7d or trending board is read as of now, without a date",
            ))
        }
        Some(raw) => Board::on(period, parse_date(raw)?, genre),
        None => deps.rankings.board_now(period, genre),
    };
    match concert {
        None => {
            let limit = query.number("limit", 10, Bounds::new(1, 100))?;
            let offset = query.number("offset", 0, Bounds::new(0, 1_000_000))?;
            let (total, items) = deps.rankings.page(&board, offset, limit).await?;
            Ok(json(
                StatusCode::OK,
                &Page {
                    period: period.as_str(),
                    bucket: &board.bucket,
                    genre: board.genre.as_ref(),
                    total,
                    items,
                },
            ))
        }
        Some(concert) => {
            let concert = ConcertId::parse(concert)?;
            let (rank, score) =
                deps.rankings
                    .position(&board, &concert)
                    .await?
                    .ok_or_else(|| {
                        Error::NotFound(format!("concert {concert} is not on this board"))
                    })?;
            Ok(json(
                StatusCode::OK,
                &Position {
                    period: period.as_str(),
                    bucket: &board.bucket,
                    genre: board.genre.as_ref(),
                    concert_id: &concert,
                    rank,
                    score,
                },
            ))
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<'a> {
    period: &'static str,
    bucket: &'a str,
    genre: Option<&'a Genre>,
    total: u64,
    items: Vec<Ranked>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Position<'a> {
    period: &'static str,
    bucket: &'a str,
    genre: Option<&'a Genre>,
    concert_id: &'a ConcertId,
    rank: u64,
    score: u64,
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
