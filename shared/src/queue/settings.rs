//! A queue's own settings, changed at runtime (`PUT /queues/{queueId}/settings`) and read
//! by every script of that queue in the same round trip as its work. A setting a queue
//! has not set follows the environment's default. The first change creates the queue
//! (under `QUEUE_CREATION=operator`); `DELETE /queues/{queueId}/settings` closes it.
//!
//! The waiting-room page's settings ([`PageSettings`]: theme and return-URL allow-list) are
//! stored as one JSON field of the same hash, checked here before they are stored, and read
//! with one `HGET` when the page is served.

use redis::{FromRedisValue, ParsingError, Value};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Number;

use chrono::{DateTime, Utc};

use super::access::Access;
use super::availability::{changed_events, Availability, AvailabilityChange, Mode};
use super::keys::QueueKeys;
use super::schedule::{DrawSeed, Schedule, ScheduleChange};
use super::{QueueEvent, WaitingRoom, CLOSE, CONFIGURE};
use crate::bounds::{self, Bounds};
use crate::error::Error;
use crate::ids::QueueId;

/// The settings in force for one queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueSettings {
    /// Most buyers active at once.
    pub capacity: u32,
    /// How long an admitted buyer stays active.
    pub session_seconds: u64,
    /// Most buyers one promotion tick admits.
    pub admit_per_tick: u32,
    /// A waiter unseen this long is abandoned.
    pub waiting_idle_seconds: u64,
    /// No admissions while true; the line still forms and reports positions.
    pub paused: bool,
    /// Mode, sold out, message and maxWaiting.
    #[serde(flatten)]
    pub availability: Availability,
    /// opensAt, closesAt and prequeueOpensAt.
    #[serde(flatten)]
    pub schedule: Schedule,
    /// Whether the priority lane is admitted before `opensAt` (within the schedule's gates);
    /// by default nobody is.
    pub lane_before_opening: bool,
    /// Who may take a new place: `open`, `list` or `code` (see [`super::access`]).
    pub access: Access,
}

/// The scripts' `{capacity, session ms, admit per tick, idle ms, paused, availability,
/// schedule, lane before opening, access}` (`settings_reply` in `replies.lua`: part of configure's and
/// summary's replies).
impl FromRedisValue for QueueSettings {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        let (
            capacity,
            session_ms,
            admit,
            idle_ms,
            paused,
            availability,
            schedule,
            lane_early,
            access,
        ): (u32, u64, u32, u64, u8, Availability, Schedule, u8, String) =
            FromRedisValue::from_redis_value(v)?;
        let access = serde_json::from_value(serde_json::Value::String(access.clone()))
            .map_err(|_| format!("settings hold access {access:?}"))?;
        Ok(QueueSettings {
            capacity,
            session_seconds: session_ms / 1000,
            admit_per_tick: admit,
            waiting_idle_seconds: idle_ms / 1000,
            paused: paused == 1,
            availability,
            schedule,
            lane_before_opening: lane_early == 1,
            access,
        })
    }
}

/// Configure's reply: `{settings in force, sold out before (0|1), mode before}`, or a
/// schedule change refused: `{'invalid', field, why}` or `{'locked', why}`.
enum ConfigureReply {
    Applied {
        settings: QueueSettings,
        was_sold_out: bool,
        was: Mode,
    },
    Refused(Error),
}

impl FromRedisValue for ConfigureReply {
    fn from_redis_value(v: Value) -> Result<Self, ParsingError> {
        if let Value::Array(items) = &v {
            if let Some(Value::BulkString(first)) = items.first() {
                let why = |i: usize| -> Result<String, ParsingError> {
                    items
                        .get(i)
                        .cloned()
                        .map(String::from_redis_value)
                        .unwrap_or_else(|| Err("configure refusal without a reason".into()))
                };
                return Ok(ConfigureReply::Refused(match first.as_slice() {
                    b"locked" => Error::Conflict(why(1)?),
                    b"invalid" => {
                        let field = match why(1)?.as_str() {
                            "closesAt" => "closesAt",
                            "prequeueOpensAt" => "prequeueOpensAt",
                            "mode" => "mode",
                            _ => "opensAt",
                        };
                        Error::invalid(field, why(2)?)
                    }
                    other => {
                        return Err(format!(
                            "configure script returned {:?}",
                            String::from_utf8_lossy(other)
                        )
                        .into())
                    }
                }));
            }
        }
        let (settings, was_sold_out, was): (QueueSettings, u8, String) =
            FromRedisValue::from_redis_value(v)?;
        Ok(ConfigureReply::Applied {
            settings,
            was_sold_out: was_sold_out == 1,
            was: serde_json::from_value(serde_json::Value::String(was.clone()))
                .map_err(|_| format!("configure script returned mode {was:?}"))?,
        })
    }
}

/// The settings in force after a change, and the queue events it causes.
#[derive(Debug, Clone)]
pub struct Configured {
    pub settings: QueueSettings,
    pub events: Vec<QueueEvent>,
}

/// A change to a queue's settings. Each field is left alone when absent, set when given,
/// and returned to the environment's default when `null`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SettingsChange {
    #[serde(default, deserialize_with = "present")]
    pub capacity: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub session_seconds: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub admit_per_tick: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub waiting_idle_seconds: Option<Option<Number>>,
    #[serde(default, deserialize_with = "present")]
    pub paused: Option<Option<bool>>,
    /// The waiting-room page's theme and return-URL allow-list, replaced whole.
    #[serde(default, deserialize_with = "present")]
    pub page: Option<Option<PageSettings>>,
    #[serde(default, deserialize_with = "present")]
    pub mode: Option<Option<Mode>>,
    #[serde(default, deserialize_with = "present")]
    pub sold_out: Option<Option<bool>>,
    #[serde(default, deserialize_with = "present")]
    pub message: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub max_waiting: Option<Option<Number>>,
    /// The opening (RFC 3339); before it arrivals join the pre-queue.
    #[serde(default, deserialize_with = "present")]
    pub opens_at: Option<Option<DateTime<Utc>>>,
    /// From when new arrivals are refused (RFC 3339, after opensAt).
    #[serde(default, deserialize_with = "present")]
    pub closes_at: Option<Option<DateTime<Utc>>>,
    /// From when arrivals may join the pre-queue (RFC 3339, before opensAt; default: when
    /// the schedule is set).
    #[serde(default, deserialize_with = "present")]
    pub prequeue_opens_at: Option<Option<DateTime<Utc>>>,
    /// Whether the priority lane is admitted before the opening (default false).
    #[serde(default, deserialize_with = "present")]
    pub lane_before_opening: Option<Option<bool>>,
    /// Who may take a new place (default `open`).
    #[serde(default, deserialize_with = "present")]
    pub access: Option<Option<Access>>,
}

/// The settings field holding [`PageSettings`] as JSON.
const PAGE_FIELD: &str = "page";

/// Most return-URL prefixes a queue may allow.
pub const MAX_RETURN_URLS: usize = 10;

/// How the waiting-room page looks and where it may send a buyer back to. Every value is
/// parsed on the way in, so what is stored is safe to put in CSS, HTML and a CSP header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageSettings {
    #[serde(default)]
    pub theme: Theme,
    /// URL prefixes a return URL must start with (same origin, path under the prefix's).
    #[serde(default, deserialize_with = "return_urls")]
    pub return_urls: Vec<ReturnUrlPrefix>,
}

/// Theme values, served as CSS custom properties (`--lineup-accent`, …).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Theme {
    pub accent: Option<Colour>,
    pub background: Option<Colour>,
    pub text: Option<Colour>,
    pub dark_background: Option<Colour>,
    pub dark_text: Option<Colour>,
    pub font: Option<FontFamily>,
    pub logo_url: Option<LogoUrl>,
}

impl Theme {
    /// `(custom property, value)` for every value set, in a fixed order.
    pub fn properties(&self) -> Vec<(&'static str, &str)> {
        [
            (
                "--lineup-accent",
                self.accent.as_ref().map(|c| c.0.as_str()),
            ),
            (
                "--lineup-bg",
                self.background.as_ref().map(|c| c.0.as_str()),
            ),
            ("--lineup-text", self.text.as_ref().map(|c| c.0.as_str())),
            ("--lineup-font", self.font.as_ref().map(|f| f.0.as_str())),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
    }

    /// The dark-scheme overrides, as [`Theme::properties`].
    pub fn dark_properties(&self) -> Vec<(&'static str, &str)> {
        [
            (
                "--lineup-bg",
                self.dark_background.as_ref().map(|c| c.0.as_str()),
            ),
            (
                "--lineup-text",
                self.dark_text.as_ref().map(|c| c.0.as_str()),
            ),
        ]
        .into_iter()
        .filter_map(|(name, value)| Some((name, value?)))
        .collect()
    }
}

/// A CSS colour: `#rgb` or `#rrggbb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Colour(String);

impl TryFrom<String> for Colour {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        let hex = value.strip_prefix('#').unwrap_or("");
        if matches!(hex.len(), 3 | 6) && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            Ok(Colour(value))
        } else {
            Err(format!("{value:?} is not a colour like #1a2b3c"))
        }
    }
}

impl From<Colour> for String {
    fn from(value: Colour) -> String {
        value.0
    }
}

/// A CSS `font-family` list: letters, digits, spaces, commas, hyphens and single quotes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct FontFamily(String);

impl TryFrom<String> for FontFamily {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        let fits = !value.trim().is_empty()
            && value.len() <= 120
            && value
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, ' ' | ',' | '-' | '\''));
        if fits {
            Ok(FontFamily(value))
        } else {
            Err("font: up to 120 letters, digits, spaces, commas, hyphens and quotes".into())
        }
    }
}

impl From<FontFamily> for String {
    fn from(value: FontFamily) -> String {
        value.0
    }
}

/// An image's absolute `https` URL with a host and no user, at most 500 characters, holding
/// none of the characters that could end an HTML attribute, a CSS value or a CSP source
/// (quotes, backquote, `;`, `\`, `<`, `>`, whitespace, control characters). It is kept as
/// the URL parser writes it (lower-case host, dot segments resolved). Its origin joins the
/// page's `img-src`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LogoUrl(url::Url);

impl LogoUrl {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// `https://host[:port]`, for a CSP source list.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }
}

impl TryFrom<String> for LogoUrl {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        const RULE: &str = "logoUrl: an absolute https URL with a host and no user, of at most \
                            500 characters, without quotes, `;`, `\\`, `<`, `>` or whitespace";
        // The parser drops tabs and newlines and reads `\` as `/`: look at the text first.
        let unsafe_char = |c: char| {
            c.is_whitespace()
                || c.is_control()
                || matches!(c, '"' | '\'' | '`' | ';' | '\\' | '<' | '>')
        };
        if value.len() > 500 || value.chars().any(unsafe_char) {
            return Err(RULE.into());
        }
        let url = url::Url::parse(&value).map_err(|err| format!("logoUrl: {err}"))?;
        let plain = url.scheme() == "https"
            && url.host().is_some()
            && url.username().is_empty()
            && url.password().is_none()
            && url.as_str().len() <= 500
            && !url.as_str().chars().any(unsafe_char);
        if !plain {
            return Err(RULE.into());
        }
        Ok(LogoUrl(url))
    }
}

impl From<LogoUrl> for String {
    fn from(value: LogoUrl) -> String {
        value.0.into()
    }
}

/// A prefix return URLs may start with: an `https` URL (or `http` on localhost) with a path
/// ending in `/`, no query or fragment. A return URL matches when it has the same origin and
/// its path starts with the prefix's path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ReturnUrlPrefix(url::Url);

fn is_local(url: &url::Url) -> bool {
    matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"))
}

impl TryFrom<String> for ReturnUrlPrefix {
    type Error = String;
    fn try_from(value: String) -> Result<Self, String> {
        let url = url::Url::parse(&value).map_err(|err| format!("returnUrls: {err}"))?;
        let scheme_ok = url.scheme() == "https" || (url.scheme() == "http" && is_local(&url));
        if !scheme_ok
            || url.host().is_none()
            || !url.path().ends_with('/')
            || url.query().is_some()
            || url.fragment().is_some()
            || !url.username().is_empty()
            || value.len() > 500
        {
            return Err(format!(
                "returnUrls: {value:?} must be an https URL (http only on localhost) whose \
                 path ends in /, without query, fragment or user"
            ));
        }
        Ok(ReturnUrlPrefix(url))
    }
}

impl From<ReturnUrlPrefix> for String {
    fn from(value: ReturnUrlPrefix) -> String {
        value.0.into()
    }
}

fn return_urls<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<ReturnUrlPrefix>, D::Error> {
    let urls = Vec::<ReturnUrlPrefix>::deserialize(deserializer)?;
    if urls.len() > MAX_RETURN_URLS {
        return Err(serde::de::Error::custom(format!(
            "at most {MAX_RETURN_URLS} return URLs"
        )));
    }
    Ok(urls)
}

/// A return URL the queue's allow-list admits: parsed, without fragment (the page adds the
/// token there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnUrl(url::Url);

impl ReturnUrl {
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl PageSettings {
    /// The page settings as stored. A logo stored under older rules that today's refuse is
    /// left out, so the page is served without it rather than not at all; anything else that
    /// does not read is an internal error.
    fn from_stored(json: &str) -> Result<PageSettings, Error> {
        let unreadable =
            |err: serde_json::Error| Error::Internal(format!("stored page settings: {err}"));
        let err = match serde_json::from_str(json) {
            Ok(settings) => return Ok(settings),
            Err(err) => err,
        };
        let mut value: serde_json::Value = serde_json::from_str(json).map_err(unreadable)?;
        let dropped = value
            .get_mut("theme")
            .and_then(|theme| theme.as_object_mut())
            .and_then(|theme| theme.remove("logoUrl"));
        match dropped {
            Some(_) => serde_json::from_value(value).map_err(unreadable),
            None => Err(unreadable(err)),
        }
    }

    /// `raw` as a return URL, if it is absolute, has no fragment or user, and starts with
    /// one of the allowed prefixes; anything else is refused, so the page is no open
    /// redirect.
    pub fn return_url(&self, raw: &str) -> Result<ReturnUrl, Error> {
        let refuse = || Error::invalid("return", "is not on this queue's return-URL allow-list");
        if raw.len() > 2000 {
            return Err(refuse());
        }
        let url = url::Url::parse(raw).map_err(|_| refuse())?;
        if url.fragment().is_some() || !url.username().is_empty() || url.password().is_some() {
            return Err(refuse());
        }
        let allowed = self.return_urls.iter().any(|prefix| {
            prefix.0.origin() == url.origin() && url.path().starts_with(prefix.0.path())
        });
        if allowed {
            Ok(ReturnUrl(url))
        } else {
            Err(refuse())
        }
    }
}

/// Tells a field given as `null` (`Some(None)`) from one left out (`None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

impl SettingsChange {
    /// The script arguments: pairs of stored field and value, an empty value for a reset.
    /// Every value is checked here, so nothing invalid reaches Redis.
    fn arguments(&self) -> Result<Vec<(&'static str, String)>, Error> {
        let mut args = Vec::new();
        let mut number = |field: &'static str,
                          stored: &'static str,
                          change: &Option<Option<Number>>,
                          within: Bounds,
                          scale: u64|
         -> Result<(), Error> {
            match change {
                None => {}
                Some(None) => args.push((stored, String::new())),
                Some(Some(value)) => {
                    let value = within
                        .json(value)
                        .map_err(|err| Error::invalid(field, err.to_string()))?;
                    args.push((stored, (value * scale).to_string()))
                }
            }
            Ok(())
        };
        number("capacity", "capacity", &self.capacity, bounds::CAPACITY, 1)?;
        number(
            "sessionSeconds",
            "session-ms",
            &self.session_seconds,
            bounds::SESSION_SECONDS,
            1000,
        )?;
        number(
            "admitPerTick",
            "admit-per-tick",
            &self.admit_per_tick,
            bounds::ADMIT_PER_TICK,
            1,
        )?;
        number(
            "waitingIdleSeconds",
            "idle-ms",
            &self.waiting_idle_seconds,
            bounds::WAITING_IDLE_SECONDS,
            1000,
        )?;
        match self.paused {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("paused", String::new())),
            Some(Some(true)) => args.push(("paused", "1".into())),
        }
        match self.lane_before_opening {
            None => {}
            Some(None) | Some(Some(false)) => args.push(("lane-before-opening", String::new())),
            Some(Some(true)) => args.push(("lane-before-opening", "1".into())),
        }
        match self.access {
            None => {}
            Some(access) => args.push((
                "access",
                access.and_then(Access::stored).unwrap_or_default().into(),
            )),
        }
        match &self.page {
            None => {}
            Some(None) => args.push((PAGE_FIELD, String::new())),
            Some(Some(page)) => args.push((
                PAGE_FIELD,
                serde_json::to_string(page).map_err(|err| Error::Internal(err.to_string()))?,
            )),
        }
        AvailabilityChange {
            mode: &self.mode,
            sold_out: &self.sold_out,
            message: &self.message,
            max_waiting: &self.max_waiting,
        }
        .arguments(&mut args)?;
        self.schedule().arguments(&mut args)?;
        Ok(args)
    }

    fn schedule(&self) -> ScheduleChange<'_> {
        ScheduleChange {
            opens_at: &self.opens_at,
            closes_at: &self.closes_at,
            prequeue_opens_at: &self.prequeue_opens_at,
        }
    }
}

impl WaitingRoom {
    /// Applies `change` to `queue`'s settings; returns the settings now in force. Takes
    /// effect from the next operation on the queue. Changing the idle period restarts
    /// presence: every waiter gets one whole new idle period to poll. Selling out, closing
    /// and reopening are reported as queue events. Setting an opening when none is pending
    /// starts a new draw with a fresh seed (see [`super::schedule`]); a pending one keeps
    /// its seed.
    pub async fn configure(
        &self,
        queue: &QueueId,
        change: &SettingsChange,
    ) -> Result<Configured, Error> {
        let args = change.arguments()?;
        let mut invocation = self.invocation(&CONFIGURE, queue);
        let (seed, commitment) = if change.schedule().sets_opening() {
            let seed = DrawSeed::random();
            (seed.hex(), seed.commitment())
        } else {
            (String::new(), String::new())
        };
        invocation
            .named("seed", seed)
            .named("commitment", commitment);
        for (field, value) in &args {
            invocation.named("pairs", *field).named("pairs", value);
        }
        let (settings, was_sold_out, was) = match self.conn.invoke(invocation).await? {
            ConfigureReply::Applied {
                settings,
                was_sold_out,
                was,
            } => (settings, was_sold_out, was),
            ConfigureReply::Refused(err) => return Err(err),
        };
        let events = changed_events(queue, was_sold_out, was, &settings.availability);
        Ok(Configured { settings, events })
    }

    /// `queue`'s page settings: one `HGET`, the defaults where none are set.
    pub async fn page_settings(&self, queue: &QueueId) -> Result<PageSettings, Error> {
        let key = QueueKeys::new(&self.prefix, queue).settings;
        let mut cmd = redis::cmd("HGET");
        cmd.arg(&key).arg(PAGE_FIELD);
        let stored: Option<String> = self.conn.query(&key, cmd).await?;
        match stored {
            None => Ok(PageSettings::default()),
            Some(json) => PageSettings::from_stored(&json),
        }
    }

    /// Removes `queue`'s settings, and so (under `QUEUE_CREATION=operator`) the queue: no
    /// more token requests. Only an empty queue closes ([`Error::Conflict`] otherwise: pause
    /// it and let it drain). The reaper then retires it as any idle queue.
    pub async fn close(&self, queue: &QueueId) -> Result<(), Error> {
        let closed: bool = self.conn.invoke(self.invocation(&CLOSE, queue)).await?;
        if !closed {
            return Err(Error::Conflict(
                "the queue still has buyers waiting or active; pause it and let it drain".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowing(prefixes: &[&str]) -> PageSettings {
        serde_json::from_value(serde_json::json!({ "returnUrls": prefixes })).expect("valid")
    }

    #[test]
    fn a_return_url_must_share_an_allowed_prefix_origin_and_path() {
        let page = allowing(&["https://tickets.example.com/book/"]);
        assert!(page
            .return_url("https://tickets.example.com/book/42?seat=A1")
            .is_ok());
        for refused in [
            "https://evil.example.net/book/",
            "https://tickets.example.com.evil.net/book/",
            "https://tickets.example.com/admin",
            "http://tickets.example.com/book/",
            "https://user@tickets.example.com/book/",
            "https://tickets.example.com/book/#x",
            "//tickets.example.com/book/",
            "javascript:alert(1)",
        ] {
            assert!(page.return_url(refused).is_err(), "{refused} was allowed");
        }
        assert!(PageSettings::default()
            .return_url("https://tickets.example.com/book/")
            .is_err());
    }

    #[test]
    fn page_settings_refuse_what_could_escape_css_html_or_csp() {
        for bad in [
            serde_json::json!({ "returnUrls": ["https://tickets.example.com/book"] }),
            serde_json::json!({ "returnUrls": ["http://tickets.example.com/"] }),
            serde_json::json!({ "theme": { "accent": "red;}body{x:y" } }),
            serde_json::json!({ "theme": { "font": "x;}</style>" } }),
            serde_json::json!({ "theme": { "logoUrl": "http://cdn.example.com/a.png" } }),
            serde_json::json!({ "theme": { "logoUrl": "data:image/png;base64,AA" } }),
            serde_json::json!({ "theme": { "logoUrl": "https://cdn.example/l.png'; img-src *" } }),
            serde_json::json!({ "theme": { "logoUrl": "https://u@cdn.example.com/a.png" } }),
        ] {
            assert!(
                serde_json::from_value::<PageSettings>(bad.clone()).is_err(),
                "{bad} was accepted"
            );
        }
    }

    /// A logo stored before the rules refused it is left out when read; the rest stands.
    #[test]
    fn a_logo_stored_under_older_rules_is_left_out_not_the_page() {
        let stored = serde_json::json!({
            "theme": { "accent": "#112233", "logoUrl": "https://cdn.example/l.png'; img-src *" },
            "returnUrls": ["https://tickets.example.com/book/"]
        })
        .to_string();
        let read = PageSettings::from_stored(&stored).expect("readable");
        assert_eq!(read.theme.logo_url, None);
        assert_eq!(read.theme.accent, allowing_accent("#112233"));
        assert_eq!(read.return_urls.len(), 1);
        let broken = serde_json::json!({ "theme": { "accent": "red;}" } }).to_string();
        assert!(PageSettings::from_stored(&broken).is_err());
    }

    fn allowing_accent(colour: &str) -> Option<Colour> {
        serde_json::from_value(serde_json::json!(colour)).expect("a colour")
    }
}
