//! The waiting-room page's own settings: its theme (colours, font, logo) and the allow-list
//! of URLs it may send a buyer back to. Every value is parsed on the way in, so what is
//! stored is safe to put in CSS, HTML and a CSP header. The queue stores them as one JSON
//! field of its settings hash (`queue::settings`).

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Error;

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
    pub(crate) fn from_stored(json: &str) -> Result<PageSettings, Error> {
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

#[cfg(test)]
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
