//! `queue-api`: the waiting room over HTTP (API Gateway HTTP API, payload format 2.0).
//!
//! | route | does |
//! |---|---|
//! | `GET /queues/{queueId}/challenge` | a door challenge (ALTCHA PoW v2) for the buyer to solve before joining a queue that asks for one |
//! | `POST /queues/{queueId}/tokens` | take a place (201), or get one's existing place (200) |
//! | `GET /queues/{queueId}/tokens/{token}` | where the token stands; a waiter's heartbeat |
//! | `DELETE /queues/{queueId}/tokens/{token}` | leave the line or give up the session (204) |
//! | `GET /queues/{queueId}` | the queue's summary and settings in force; cacheable for a few seconds |
//! | `PUT /queues/{queueId}/settings` | change the queue's settings, creating it (IAM-protected in AWS) |
//! | `DELETE /queues/{queueId}/settings` | close an empty queue: its settings go (IAM-protected in AWS) |
//! | `PUT /pools/{poolId}` | set a capacity pool's capacity and weights, creating it (IAM-protected in AWS) |
//! | `GET /pools/{poolId}` | the pool: capacity, weights, each queue's allotment (IAM-protected in AWS) |
//! | `DELETE /pools/{poolId}` | delete the pool: its queues admit no one new until it is made again (IAM-protected in AWS) |
//! | `PUT /queues/{queueId}/priority/{userId}` | put a user on the priority list (IAM-protected in AWS) |
//! | `DELETE /queues/{queueId}/priority/{userId}` | take a user off it (IAM-protected in AWS) |
//! | `PUT /queues/{queueId}/access` | put up to 10,000 user ids on the presale access list (IAM-protected in AWS) |
//! | `PUT /queues/{queueId}/access/{userId}` | put one user on it (IAM-protected in AWS) |
//! | `DELETE /queues/{queueId}/access/{userId}` | take a user off it (IAM-protected in AWS) |
//! | `POST /queues/{queueId}/access-codes` | mint up to 10,000 presale access codes, shown once (IAM-protected in AWS) |
//! | `GET /queues/{queueId}/admission` | a sample payment route behind `queue-authorizer`: shows what it let through |
//! | `GET /queues/{queueId}/seats` | a sample browse route behind API Gateway's JWT authorizer on lineup's own issuer: shows the admission claims it let through |
//! | `GET /.well-known/jwks.json` | the admission JWT's public keys (JWKS); public, cacheable |
//! | `GET /.well-known/openid-configuration` | the issuer's OpenID discovery document, naming the JWKS; public, cacheable |
//! | `GET /queues/{queueId}/wait?return=…` | the waiting-room page (HTML); the token comes in the URL fragment |
//! | `GET /queues/{queueId}/wait/{asset}` | its script (`wait.js`), styles (`page.css`), the queue's theme (`theme.css`), its service worker (`worker.js`) and the door's solver (`altcha.js`) |
//! | `GET /queues/{queueId}/wait/i18n/{lang}` | its string table in one language (JSON) |
//!
//! A token that no longer holds a place is 410 Gone on both token routes, with a problem type
//! saying why (`session-ended`, `dropped-for-absence`, `left`, `sold-out`); one the queue does
//! not know (forged, malformed, another queue's, or gone too long ago) is 404 `not-found`.
//! A held token's status is `waiting`, `active` or `soldout` (with the operator's message).
//! An active buyer's answer carries `admission`, a JWT the booking API verifies by itself
//! against the JWKS (docs/booking.md); each status poll renews it until the session ends.
//! A new arrival that cannot join is refused: 410 `sold-out`, 409 `queue-closed`, or 429
//! `queue-full` with `Retry-After`; the detail is the operator's message when there is one.
//! In a presale (`access` `list` or `code`), a new arrival not on the list, or without a
//! valid access code (body `accessCode`), is 403 `access-denied`.
//!
//! Who the buyer is: in AWS, the `sub` of the JWT that API Gateway's JWT authorizer verified
//! on the buyer routes (take a place, status, leave). A body `userId` names the buyer only
//! where `ALLOW_BODY_USER_ID=unsafe` (the local stack); otherwise a request without a
//! verified `sub` is 401. A token binds its user: status and leave with another user's JWT
//! are 403.
//!
//! Leaving publishes `QueueTokenReleased`, and `QueueTokenActivated` for whoever took the
//! freed place; an issue admitted at once publishes `QueueTokenActivated`.

use chrono::{DateTime, SecondsFormat, Utc};
use lambda_http::http::{HeaderName, HeaderValue, Method, StatusCode};
use lambda_http::{Body, Request, Response};
use lineup::admission::{self, Issuer, Session};
use lineup::cold_start::Started;
use lineup::config::ConfigError;
use lineup::door::{Counted, DoorKey, Proof, Scope};
use lineup::http::{self, allow, json, json_body, lambda_authorizer_context, no_route, segments};
use lineup::ids::{PoolId, QueueId, UserId};
use lineup::metrics::MetricsSink;
use lineup::pages;
use lineup::pages::settings::{PageSettings, Theme};
use lineup::publish::Publisher;
use lineup::queue::access::{AccessCode, ListSize, ACCESS_BULK_MAX};
use lineup::queue::pool::PoolChange;
use lineup::queue::{SettingsChange, Standing, TokenState, WaitingRoom};
use lineup::token::{TokenClaims, TokenKey};
use lineup::Error;
use serde::{Deserialize, Serialize};

/// Every route this function serves, as `(method, path)`. `openapi.yaml` and the template
/// must list exactly these; a test checks both, and that each is really served.
pub const ROUTES: &[(&str, &str)] = &[
    ("GET", "/queues/{queueId}"),
    ("PUT", "/queues/{queueId}/settings"),
    ("DELETE", "/queues/{queueId}/settings"),
    ("PUT", "/pools/{poolId}"),
    ("GET", "/pools/{poolId}"),
    ("DELETE", "/pools/{poolId}"),
    ("PUT", "/queues/{queueId}/priority/{userId}"),
    ("DELETE", "/queues/{queueId}/priority/{userId}"),
    ("PUT", "/queues/{queueId}/access"),
    ("PUT", "/queues/{queueId}/access/{userId}"),
    ("DELETE", "/queues/{queueId}/access/{userId}"),
    ("POST", "/queues/{queueId}/access-codes"),
    ("GET", "/queues/{queueId}/admission"),
    ("GET", "/queues/{queueId}/seats"),
    ("GET", "/.well-known/jwks.json"),
    ("GET", "/.well-known/openid-configuration"),
    ("GET", "/queues/{queueId}/challenge"),
    ("POST", "/queues/{queueId}/tokens"),
    ("GET", "/queues/{queueId}/tokens/{token}"),
    ("DELETE", "/queues/{queueId}/tokens/{token}"),
    ("GET", "/queues/{queueId}/wait"),
    ("GET", "/queues/{queueId}/wait/{asset}"),
    ("GET", "/queues/{queueId}/wait/i18n/{lang}"),
];

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub room: WaitingRoom,
    pub token_key: TokenKey,
    /// Signs and checks the door's challenges; derived from the token key.
    pub door_key: DoorKey,
    pub publisher: Publisher,
    /// `ALLOW_BODY_USER_ID=unsafe`: without a JWT, the body's `userId` is the buyer.
    pub allow_body_user_id: bool,
    /// Where the door's counts go.
    pub metrics: MetricsSink,
    /// Signs the admission JWT; `None` without `ADMISSION_ISSUER`.
    pub admission: Option<Issuer>,
}

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads, writing metrics to `metrics`: the one place they are wired.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        Ok(Deps {
            room: started.room()?,
            token_key: started.config.token_key.clone(),
            door_key: DoorKey::derive(&started.config.token_key),
            publisher: started.publisher.clone(),
            allow_body_user_id: started.config.env.body_user_id()?,
            metrics,
            admission: started.config.env.admission()?,
        })
    }
}

/// How long a CDN or browser may reuse a queue summary.
pub const SUMMARY_CACHE_CONTROL: &str = "public, max-age=2";

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(request: Request, deps: &Deps) -> http::Answered {
    http::answer(route(&request, deps)).await
}

/// Whether `method` adds (`PUT`) or removes (`DELETE`); any other is 405.
fn put_or_delete(method: &Method) -> Result<bool, Error> {
    allow(method, "PUT, DELETE")?;
    Ok(*method == Method::PUT)
}

async fn route(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let method = request.method();
    let segments = segments(request)?;
    let parts: Vec<&str> = segments.iter().map(String::as_str).collect();
    match parts.as_slice() {
        ["queues", queue] => {
            allow(method, "GET")?;
            summary(deps, QueueId::parse(queue)?).await
        }
        ["queues", queue, "settings"] => match *method {
            Method::PUT => configure(request, deps, QueueId::parse(queue)?).await,
            Method::DELETE => close(deps, QueueId::parse(queue)?).await,
            _ => Err(Error::MethodNotAllowed {
                allow: "PUT, DELETE",
            }),
        },
        ["pools", pool] => {
            allow(method, "PUT, GET, DELETE")?;
            let pool = PoolId::parse(pool)?;
            match *method {
                Method::PUT => {
                    let change: PoolChange = json_body(request)?;
                    let view = deps.room.configure_pool(&pool, &change).await?;
                    tracing::info!(%pool, capacity = view.capacity, "pool set");
                    Ok(json(StatusCode::OK, &view))
                }
                Method::GET => Ok(json(StatusCode::OK, &deps.room.pool(&pool).await?)),
                Method::DELETE => {
                    deps.room.delete_pool(&pool).await?;
                    tracing::info!(%pool, "pool deleted");
                    Ok(http::empty(StatusCode::NO_CONTENT))
                }
                _ => Err(Error::MethodNotAllowed {
                    allow: "PUT, GET, DELETE",
                }),
            }
        }
        ["queues", queue, list @ ("priority" | "access"), user] => {
            let put = put_or_delete(method)?;
            let list = match *list {
                "priority" => BuyerList::Priority,
                _ => BuyerList::Access,
            };
            edit_list(
                deps,
                list,
                &QueueId::parse(queue)?,
                &UserId::parse(user)?,
                put,
            )
            .await
        }
        ["queues", queue, "access"] => {
            allow(method, "PUT")?;
            add_access(request, deps, &QueueId::parse(queue)?).await
        }
        ["queues", queue, "access-codes"] => {
            allow(method, "POST")?;
            mint_codes(request, deps, &QueueId::parse(queue)?).await
        }
        ["queues", queue, "admission"] => {
            allow(method, "GET")?;
            admission(request, &QueueId::parse(queue)?)
        }
        ["queues", queue, "seats"] => {
            allow(method, "GET")?;
            seats(request, &QueueId::parse(queue)?)
        }
        [".well-known", "jwks.json"] => {
            allow(method, "GET")?;
            let issuer = issuer(deps)?;
            Ok(http::json_cached(
                StatusCode::OK,
                &issuer.jwks(Utc::now()),
                admission::DISCOVERY_CACHE_CONTROL,
            ))
        }
        [".well-known", "openid-configuration"] => {
            allow(method, "GET")?;
            Ok(http::json_cached(
                StatusCode::OK,
                &issuer(deps)?.discovery(),
                admission::DISCOVERY_CACHE_CONTROL,
            ))
        }
        ["queues", queue, "wait"] => {
            allow(method, "GET")?;
            wait_page(request, deps, &QueueId::parse(queue)?).await
        }
        ["queues", queue, "wait", asset] => {
            allow(method, "GET")?;
            wait_asset(deps, &QueueId::parse(queue)?, asset).await
        }
        ["queues", queue, "wait", "i18n", lang] => match *method {
            Method::GET => {
                QueueId::parse(queue)?;
                http::page(
                    pages::strings(lang)?,
                    pages::JSON,
                    pages::ASSET_CACHE_CONTROL,
                    &pages::csp(None),
                )
            }
            _ => Err(Error::MethodNotAllowed { allow: "GET" }),
        },
        ["queues", queue, "challenge"] => {
            allow(method, "GET")?;
            challenge(request, deps, &QueueId::parse(queue)?).await
        }
        ["queues", queue, "tokens"] => {
            allow(method, "POST")?;
            issue(request, deps, QueueId::parse(queue)?).await
        }
        ["queues", queue, "tokens", token] => {
            let queue = QueueId::parse(queue)?;
            allow(method, "GET, DELETE")?;
            let claims = claims_on(request, &queue, token, deps)?;
            if *method == Method::GET {
                status(deps, &claims).await
            } else {
                leave(deps, &claims).await
            }
        }
        _ => Err(no_route(request)),
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IssueBody {
    user_id: Option<String>,
    /// A presale's access code (`access` `code`).
    access_code: Option<String>,
    /// A solved door challenge, where no `x-altcha` header brings one.
    altcha: Option<String>,
}

/// Who is joining and what they bring to the door.
struct Caller {
    user: UserId,
    code: Option<AccessCode>,
    altcha: Option<String>,
}

/// The caller's user id: the JWT `sub` when an authorizer ran, else the body's `userId`
/// where the deployment allows it; the access code the body brings, if any; and the solved
/// challenge the `x-altcha` header or the body brings, if any.
fn caller(request: &Request, deps: &Deps) -> Result<Caller, Error> {
    let subject = http::verified_subject(request, deps.allow_body_user_id)?;
    let body: Option<IssueBody> = match (&subject, request.body().as_ref().is_empty()) {
        // With a verified identity the body is optional.
        (Some(_), true) => None,
        _ => Some(json_body(request)?),
    };
    let (claimed, code, altcha) = match body {
        Some(body) => (body.user_id, body.access_code, body.altcha),
        None => (None, None, None),
    };
    Ok(Caller {
        user: http::buyer(request, claimed.as_deref(), deps.allow_body_user_id)?,
        code: code.as_deref().map(AccessCode::parse).transpose()?,
        altcha: http::door_payload(request, altcha)?,
    })
}

/// A door challenge for the caller to join `queue` (docs/door.md): the buyer is the JWT `sub`,
/// else `?userId=` where the deployment takes a named buyer. Never cached.
async fn challenge(
    request: &Request,
    deps: &Deps,
    queue: &QueueId,
) -> Result<Response<Body>, Error> {
    let claimed = pages::query_param(request.uri().query().unwrap_or(""), "userId")?;
    let user = http::buyer(request, claimed.as_deref(), deps.allow_body_user_id)?;
    let challenge = deps.room.challenge(&deps.door_key, queue, &user).await?;
    deps.metrics
        .emit(&Counted::Issued.record(Scope::Queue(queue)));
    Ok(json(StatusCode::OK, &challenge))
}

async fn issue(request: &Request, deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    let Caller { user, code, altcha } = caller(request, deps)?;
    let proof = Proof::check(
        altcha.as_deref(),
        &deps.door_key,
        Scope::Queue(&queue),
        &user,
    );
    let issued = deps
        .room
        .issue_at_door(
            &queue,
            &user,
            http::source_ip(request),
            code.as_ref(),
            &proof,
        )
        .await;
    if let Some(counted) = Counted::answer(&issued, |issued| issued.created, &proof) {
        deps.metrics.emit(&counted.record(Scope::Queue(&queue)));
    }
    let issued = issued?;
    deps.publisher.publish(&issued.events()).await;
    let status = if issued.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(
        status,
        &TokenStatus::new(&issued.claims, &issued.state, deps),
    ))
}

/// The claims of a token shown on `queue`'s path, held by the caller. Malformed, forged and
/// other queues' tokens are all simply not found here; a token issued to another user than
/// the caller's verified JWT names is 403.
fn claims_on(
    request: &Request,
    queue: &QueueId,
    token: &str,
    deps: &Deps,
) -> Result<TokenClaims, Error> {
    let subject = http::verified_subject(request, deps.allow_body_user_id)?;
    let claims = TokenClaims::verify(token, &deps.token_key)
        .filter(|claims| &claims.queue == queue)
        .ok_or_else(Error::unknown_token)?;
    match subject {
        Some(sub) if sub != claims.user.as_str() => Err(Error::Forbidden(
            "this token was issued to another user".into(),
        )),
        _ => Ok(claims),
    }
}

/// A token's standing; 410 with the reason when its session or place is over.
async fn status(deps: &Deps, claims: &TokenClaims) -> Result<Response<Body>, Error> {
    let state = deps.room.status(claims).await?;
    Ok(json(
        StatusCode::OK,
        &TokenStatus::new(claims, &state, deps),
    ))
}

/// Leaves the line, or gives up the session.
async fn leave(deps: &Deps, claims: &TokenClaims) -> Result<Response<Body>, Error> {
    let left = deps.room.leave(claims).await?;
    deps.publisher.publish(&left.events).await;
    Ok(http::empty(StatusCode::NO_CONTENT))
}

async fn summary(deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    Ok(http::json_cached(
        StatusCode::OK,
        &deps.room.summary(&queue).await?,
        SUMMARY_CACHE_CONTROL,
    ))
}

async fn configure(
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
enum BuyerList {
    /// Admitted first, in a lane of their own.
    Priority,
    /// Who may join a presale.
    Access,
}

/// Puts `user` on `queue`'s `list` (`add`) or takes them off; answers the list's size.
async fn edit_list(
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
async fn add_access(
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

async fn mint_codes(
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

async fn close(deps: &Deps, queue: QueueId) -> Result<Response<Body>, Error> {
    deps.room.close(&queue).await?;
    tracing::info!(%queue, "queue closed");
    Ok(http::empty(StatusCode::NO_CONTENT))
}

/// The waiting-room page. A `return` URL must be on the queue's allow-list (400 otherwise:
/// no open redirect). One `HGET` of the queue's page settings.
async fn wait_page(
    request: &Request,
    deps: &Deps,
    queue: &QueueId,
) -> Result<Response<Body>, Error> {
    let asked = pages::query_param(request.uri().query().unwrap_or(""), "return")?;
    let Some(settings) = page_settings(deps, queue).await? else {
        // No return URL is checked, so none is on the page; the page asks for itself again
        // once a poll answers, and takes the return URL from that copy.
        let page = pages::WaitPage {
            queue,
            return_url: None,
            return_unchecked: asked.is_some(),
            logo: None,
            local_join: deps.allow_body_user_id,
        };
        return http::page(
            page.html(),
            pages::HTML,
            pages::WITHOUT_SETTINGS_CACHE_CONTROL,
            &page.csp(),
        );
    };
    let return_url = asked.map(|raw| settings.return_url(&raw)).transpose()?;
    let page = pages::WaitPage {
        queue,
        return_url: return_url.as_ref(),
        return_unchecked: false,
        logo: settings.theme.logo_url.as_ref(),
        local_join: deps.allow_body_user_id,
    };
    http::page(
        page.html(),
        pages::HTML,
        pages::PAGE_CACHE_CONTROL,
        &page.csp(),
    )
}

/// `queue`'s page settings, or `None` while Redis is out of reach: the page and its theme
/// are then served without them (lineup's own theme, no logo, no return URL), never cached,
/// so that loading or reloading the page in an outage gives the page, whose polling says it
/// is retrying and resumes the place once Redis answers.
async fn page_settings(deps: &Deps, queue: &QueueId) -> Result<Option<PageSettings>, Error> {
    match deps.room.page_settings(queue).await {
        Ok(settings) => Ok(Some(settings)),
        Err(Error::Unavailable { source, .. }) => {
            tracing::warn!(error = %source, %queue, "redis unavailable: the page without its settings");
            Ok(None)
        }
        Err(err) => Err(err),
    }
}

/// The waiting room's script and styles, the queue's theme as CSS custom properties, and the
/// page's service worker, which may take the page's own path as its scope.
async fn wait_asset(deps: &Deps, queue: &QueueId, asset: &str) -> Result<Response<Body>, Error> {
    let csp = pages::csp(None);
    match asset {
        "wait.js" => http::page(
            pages::wait_script(),
            pages::JAVASCRIPT,
            pages::ASSET_CACHE_CONTROL,
            &csp,
        ),
        "page.css" => http::page(pages::STYLES, pages::CSS, pages::ASSET_CACHE_CONTROL, &csp),
        "altcha.js" => http::page(
            pages::ALTCHA_WORKER,
            pages::JAVASCRIPT,
            pages::ASSET_CACHE_CONTROL,
            &csp,
        ),
        "worker.js" => {
            let mut worker = http::page(
                pages::WORKER,
                pages::JAVASCRIPT,
                pages::ASSET_CACHE_CONTROL,
                &csp,
            )?;
            worker.headers_mut().insert(
                HeaderName::from_static("service-worker-allowed"),
                HeaderValue::from_static(pages::WORKER_ALLOWED),
            );
            Ok(worker)
        }
        "theme.css" => {
            let (theme, cache_control) = match page_settings(deps, queue).await? {
                Some(settings) => (settings.theme, pages::PAGE_CACHE_CONTROL),
                None => (Theme::default(), pages::WITHOUT_SETTINGS_CACHE_CONTROL),
            };
            http::page(pages::theme_css(&theme), pages::CSS, cache_control, &csp)
        }
        _ => Err(Error::NotFound(format!("no asset {asset}"))),
    }
}

/// What `queue-authorizer` let through: its context, which never holds the token.
fn admission(request: &Request, queue: &QueueId) -> Result<Response<Body>, Error> {
    let context = lambda_authorizer_context(request)
        .ok_or_else(|| Error::Forbidden("no queue authorizer ran for this request".into()))?;
    if context.get("queueId").and_then(|q| q.as_str()) != Some(queue.as_str()) {
        return Err(Error::Forbidden(
            "the authorizer admitted another queue".into(),
        ));
    }
    Ok(json(StatusCode::OK, &context))
}

/// The admission issuer, or 404 where none is configured.
fn issuer(deps: &Deps) -> Result<&Issuer, Error> {
    deps.admission.as_ref().ok_or_else(|| {
        Error::NotFound(
            "this deployment issues no admission JWT (ADMISSION_ISSUER is unset)".into(),
        )
    })
}

/// What API Gateway's JWT authorizer on lineup's issuer let through: the admission's claims,
/// for this queue only (a booking API checks `qid` against the route's concert the same way).
fn seats(request: &Request, queue: &QueueId) -> Result<Response<Body>, Error> {
    let claims = http::jwt_claims(request).ok_or_else(|| {
        Error::Unauthorized("an admission JWT (Authorization: Bearer) is required".into())
    })?;
    if claims.get("qid").map(String::as_str) != Some(queue.as_str()) {
        return Err(Error::Forbidden(
            "the admission is for another queue".into(),
        ));
    }
    Ok(json(StatusCode::OK, claims))
}

/// The token status body.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenStatus<'a> {
    token: String,
    queue_id: &'a QueueId,
    user_id: &'a UserId,
    status: &'static str,
    position: Option<u64>,
    ticket: u64,
    estimated_wait_seconds: Option<u64>,
    /// Where the wait lies: null exactly when `estimated_wait_seconds` is.
    estimated_wait_range: Option<WaitRangeSeconds>,
    active_until: Option<String>,
    poll_after_seconds: u64,
    /// Admissions are paused: the place holds, but no estimate is honest until they resume.
    paused: bool,
    /// The operator's message, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    /// In the pre-queue: the opening.
    #[serde(skip_serializing_if = "Option::is_none")]
    opens_at: Option<String>,
    /// Placed by the draw: the value that placed the buyer, to check (docs/draw.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    draw: Option<DrawValue>,
    /// An active buyer's admission JWT (docs/booking.md), renewed by each poll.
    #[serde(skip_serializing_if = "Option::is_none")]
    admission: Option<String>,
}

/// The range of a waiter's wait, in whole seconds.
#[derive(Debug, Serialize)]
struct WaitRangeSeconds {
    low: u64,
    high: u64,
}

/// A buyer's draw value: 7 hex digits, the top 28 bits of HMAC-SHA256(seed, userId).
#[derive(Debug, Serialize)]
struct DrawValue {
    value: String,
}

impl<'a> TokenStatus<'a> {
    fn new(claims: &'a TokenClaims, state: &TokenState, deps: &Deps) -> Self {
        let now: DateTime<Utc> = Utc::now();
        let mut opens_at = None;
        let admission = match (&state.standing, &deps.admission) {
            (Standing::Active { since, until }, Some(issuer)) => {
                let session = Session {
                    queue: &claims.queue,
                    user: &claims.user,
                    ticket: state.ticket,
                    since: *since,
                    until: *until,
                };
                issuer.sign(&session, now).unwrap_or_else(|reason| {
                    tracing::error!(%reason, "no admission JWT was signed");
                    None
                })
            }
            _ => None,
        };
        let (status, position, active_until) = match &state.standing {
            Standing::Waiting { position } => ("waiting", Some(*position), None),
            // On the striped line, before a tick has counted the place's segment.
            Standing::Placing { .. } => ("waiting", None, None),
            Standing::Active { until, .. } => (
                "active",
                None,
                Some(until.to_rfc3339_opts(SecondsFormat::Millis, true)),
            ),
            Standing::SoldOut => ("soldout", None, None),
            Standing::Prequeue { opens_at: at } => {
                opens_at = Some(at.to_rfc3339_opts(SecondsFormat::Millis, true));
                ("prequeue", None, None)
            }
        };
        TokenStatus {
            token: claims.sign(&deps.token_key),
            queue_id: &claims.queue,
            user_id: &claims.user,
            status,
            position,
            ticket: state.ticket,
            estimated_wait_seconds: state.estimated_wait_seconds(),
            estimated_wait_range: state
                .estimated_wait_range()
                .map(|(low, high)| WaitRangeSeconds { low, high }),
            active_until,
            poll_after_seconds: match (&admission, &deps.admission) {
                // A front end that polls as told renews the admission before it expires.
                (Some(_), Some(issuer)) => state
                    .poll_after_seconds(now)
                    .min(issuer.ttl.as_secs() * 3 / 4),
                _ => state.poll_after_seconds(now),
            },
            paused: state.paused,
            message: state.message.clone(),
            opens_at,
            draw: state.draw_value().map(|value| DrawValue { value }),
            admission,
        }
    }
}
