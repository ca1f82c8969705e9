//! The waiting-room page, its assets (script, styles, the queue's theme, the service worker,
//! the door's solver) and its string tables.

use lambda_http::http::{HeaderName, HeaderValue};
use lambda_http::{Body, Request, Response};
use lineup::http;
use lineup::ids::QueueId;
use lineup::pages;
use lineup::pages::settings::{PageSettings, Theme};
use lineup::Error;

use crate::deps::Deps;

/// The waiting-room page. A `return` URL must be on the queue's allow-list (400 otherwise:
/// no open redirect). One `HGET` of the queue's page settings.
pub(super) async fn wait_page(
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
pub(super) async fn wait_asset(
    deps: &Deps,
    queue: &QueueId,
    asset: &str,
) -> Result<Response<Body>, Error> {
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

/// The page's string table in `lang`.
pub(super) fn strings(lang: &str) -> Result<Response<Body>, Error> {
    http::page(
        pages::strings(lang)?,
        pages::JSON,
        pages::ASSET_CACHE_CONTROL,
        &pages::csp(None),
    )
}
