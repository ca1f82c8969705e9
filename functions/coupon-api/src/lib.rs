//! `coupon-api`: first-come coupon campaigns over HTTP (API Gateway HTTP API, payload
//! format 2.0).
//!
//! [`ROUTES`] lists every route this function serves and what it does; it drives the
//! dispatch, the contract tests and the table in docs/http-api.md.
//!
//! A claim's answers, in the order checked: 404 for an unknown campaign, 200 with the
//! buyer's claim when it holds one (whatever its token), 409 before `opensAt` or from
//! `closesAt`, 410 `sold-out`, 429 past the rate limit, 403 `challenge-required` or
//! `challenge-failed` when the campaign asks for a solved challenge (`x-altcha`, docs/door.md)
//! and none or a bad one came, 403 when the campaign has a queue and the body's `token` is not
//! an active token of that queue, 201 for a new claim. A claim is
//! one round trip to Redis, two for a campaign with a queue asked without a token of it.
//!
//! Who the buyer is: as for tokens, the `sub` of the verified JWT, or the body's `userId`
//! where `ALLOW_BODY_USER_ID=unsafe` (the local stack); otherwise 401.
//!
//! Claims reach EventBridge through the outbox and `coupon-publisher`, not from here.

use chrono::Utc;
use lambda_http::http::StatusCode;
use lambda_http::{Body, Request, Response};
use lineup::cold_start::{Publishing, Started};
use lineup::config::{ConfigError, SecretPolicy};
use lineup::coupon::{CampaignChange, CampaignSettings, ClaimView, Coupons};
use lineup::door::{Counted, DoorKey, Proof, Scope};
use lineup::http::{self, json, json_body, json_cached, segments, Route};
use lineup::ids::CouponId;
use lineup::metrics::MetricsSink;
use lineup::token::{TokenClaims, TokenKey};
use lineup::Error;
use serde::Deserialize;

/// What a route does, as the dispatch matches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Configure,
    Read,
    Challenge,
    Claim,
}

/// Every route this function serves. `openapi.yaml` and the template must list exactly
/// these, and docs/http-api.md shows this table; tests check all three.
pub const ROUTES: &[Route<Op>] = &[
    Route {
        method: "PUT",
        path: "/coupons/{couponId}",
        does: "create (201) or update (200) a campaign (IAM-protected in AWS)",
        op: Op::Configure,
    },
    Route {
        method: "GET",
        path: "/coupons/{couponId}",
        does: "the campaign and how many coupons remain; cacheable for a second",
        op: Op::Read,
    },
    Route {
        method: "GET",
        path: "/coupons/{couponId}/challenge",
        does: "a door challenge (ALTCHA PoW v2) to solve before claiming from a campaign that asks for one",
        op: Op::Challenge,
    },
    Route {
        method: "POST",
        path: "/coupons/{couponId}/claims",
        does: "claim a coupon (201), or get one's claim again (200)",
        op: Op::Claim,
    },
];

/// How long a CDN or browser may reuse a campaign read.
pub const CAMPAIGN_CACHE_CONTROL: &str = "public, max-age=1";

/// What the handler needs, created once per container.
#[derive(Clone)]
pub struct Deps {
    pub coupons: Coupons,
    /// Verifies the queue tokens a campaign with a queue asks for.
    pub token_key: TokenKey,
    /// Signs and checks the door's challenges; derived from the token key.
    pub door_key: DoorKey,
    /// `ALLOW_BODY_USER_ID=unsafe`: without a JWT, the body's `userId` is the buyer.
    pub allow_body_user_id: bool,
    /// Where the door's counts go.
    pub metrics: MetricsSink,
}

/// Whether cold start reads `TOKEN_SECRET`. `main.rs` starts with it and [`PUBLISHING`], and
/// so does the test of what each function reads.
pub const SECRETS: SecretPolicy = SecretPolicy::Required;
/// Whether the function publishes (`EVENT_BUS_NAME`).
pub const PUBLISHING: Publishing = Publishing::Nothing;

impl Deps {
    /// The handler's dependencies from what cold start built, with the settings this
    /// function reads, writing metrics to `metrics`: the one place they are wired.
    pub fn new(started: &Started, metrics: MetricsSink) -> Result<Self, ConfigError> {
        Ok(Deps {
            coupons: started.coupons(started.config.env.rate_limits()?),
            token_key: started.config.token_key.clone(),
            door_key: DoorKey::derive(&started.config.token_key),
            allow_body_user_id: started.config.env.body_user_id()?,
            metrics,
        })
    }
}

/// Handles one HTTP request. Never fails: every error becomes a problem response.
pub async fn handle(request: Request, deps: &Deps) -> http::Answered {
    http::answer(dispatch(&request, deps)).await
}

async fn dispatch(request: &Request, deps: &Deps) -> Result<Response<Body>, Error> {
    let segments = segments(request)?;
    let (op, values) = http::find(ROUTES, request, &segments)?;
    let coupon = CouponId::parse(values.get(0)?)?;
    match op {
        Op::Configure => configure(request, deps, &coupon).await,
        Op::Read => read(deps, &coupon).await,
        Op::Challenge => challenge(request, deps, &coupon).await,
        Op::Claim => claim(request, deps, &coupon).await,
    }
}

async fn read(deps: &Deps, coupon: &CouponId) -> Result<Response<Body>, Error> {
    Ok(json_cached(
        StatusCode::OK,
        &deps.coupons.campaign(coupon).await?,
        CAMPAIGN_CACHE_CONTROL,
    ))
}

async fn configure(
    request: &Request,
    deps: &Deps,
    coupon: &CouponId,
) -> Result<Response<Body>, Error> {
    let change: CampaignChange = json_body(request)?;
    let settings = CampaignSettings::try_from(&change)?;
    let (campaign, created) = deps
        .coupons
        .configure(coupon, &settings, Utc::now())
        .await?;
    tracing::info!(%coupon, ?settings, created, "coupon campaign changed");
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(status, &campaign))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ClaimBody {
    #[serde(default)]
    user_id: Option<String>,
    /// The buyer's queue token, for a campaign with a queue.
    #[serde(default)]
    token: Option<String>,
    /// A solved door challenge, where no `x-altcha` header brings one.
    #[serde(default)]
    altcha: Option<String>,
}

/// A door challenge for the caller to claim from `coupon` (docs/door.md): the buyer is the JWT
/// `sub`, else `?userId=` where the deployment takes a named buyer.
async fn challenge(
    request: &Request,
    deps: &Deps,
    coupon: &CouponId,
) -> Result<Response<Body>, Error> {
    let claimed = lineup::pages::query_param(request.uri().query().unwrap_or(""), "userId")?;
    let user = http::buyer(request, claimed.as_deref(), deps.allow_body_user_id)?;
    let challenge = deps
        .coupons
        .challenge(&deps.door_key, coupon, &user, Utc::now())
        .await?;
    deps.metrics
        .emit(&Counted::Issued.record(Scope::Coupon(coupon)));
    Ok(json(StatusCode::OK, &challenge))
}

async fn claim(request: &Request, deps: &Deps, coupon: &CouponId) -> Result<Response<Body>, Error> {
    let subject = http::verified_subject(request, deps.allow_body_user_id)?;
    let body: ClaimBody = match (&subject, request.body().as_ref().is_empty()) {
        // With a verified identity the body is optional.
        (Some(_), true) => ClaimBody {
            user_id: None,
            token: None,
            altcha: None,
        },
        _ => json_body(request)?,
    };
    let user = http::buyer(request, body.user_id.as_deref(), deps.allow_body_user_id)?;
    // A token that does not verify, or is another buyer's, counts as none: a buyer holding
    // a claim still gets it, and the other answers come first (docs/coupon.md).
    let session = body.token.as_deref().and_then(|token| {
        TokenClaims::verify(token, &deps.token_key).filter(|claims| claims.user == user)
    });
    let refused_token = body.token.is_some() && session.is_none();
    let payload = http::door_payload(request, body.altcha)?;
    let proof = Proof::check(
        payload.as_deref(),
        &deps.door_key,
        Scope::Coupon(coupon),
        &user,
    );
    let reply = deps
        .coupons
        .claim(
            coupon,
            &user,
            http::source_ip(request),
            session
                .as_ref()
                .map(|claims| (&claims.queue, claims.ticket)),
            &proof,
        )
        .await?;
    let answer = reply.into_result(coupon, &proof).map_err(|err| match err {
        Error::Forbidden(detail) if refused_token => Error::Forbidden(format!(
            "the token is not a queue token of this buyer; {detail}"
        )),
        err => err,
    });
    if let Some(counted) = Counted::answer(&answer, |(_, created)| *created, &proof) {
        deps.metrics.emit(&counted.record(Scope::Coupon(coupon)));
    }
    let (claim, created) = answer?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(status, &ClaimView::new(coupon, &user, &claim)))
}
