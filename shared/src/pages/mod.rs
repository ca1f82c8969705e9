//! The buyer's pages: the waiting room (`GET /queues/{queueId}/wait`, served by `queue-api`)
//! and the rankings page (`GET /rankings`, served by `ranking-api`). Their HTML, script,
//! styles and string tables are files beside this one, built into the binary with
//! `include_str!`; the functions only fill in the few values a page needs and serve them
//! from lineup's own origin, under the Content-Security-Policy of [`csp`]: no inline
//! script, no third-party origin but a queue's logo.
//!
//! The rankings page's assets include the rank badge (`badge.js`, [`badge_script`]), which a
//! concert's page on the booking site embeds.
//!
//! Every string a buyer reads lives in one table per language (`i18n/<lang>.json`), served
//! as its own asset ([`strings`]): a page fetches only its buyer's. The scripts carry only
//! each language's tag and name. Another language is one more file and one more line in
//! [`LANGUAGES`].

pub mod settings;

use std::sync::LazyLock;

use crate::error::Error;
use crate::ids::QueueId;
use settings::{LogoUrl, ReturnUrl, Theme};

/// The string tables, by BCP 47 tag, in the language menu's order. The first is the
/// fallback.
pub const LANGUAGES: &[(&str, &str)] = &[
    ("en", include_str!("i18n/en.json")),
    ("ko", include_str!("i18n/ko.json")),
    ("ja", include_str!("i18n/ja.json")),
    ("zh-Hans", include_str!("i18n/zh-Hans.json")),
    ("zh-Hant", include_str!("i18n/zh-Hant.json")),
];

/// `Content-Type` of a page.
pub const HTML: &str = "text/html; charset=utf-8";
/// `Content-Type` of a script.
pub const JAVASCRIPT: &str = "text/javascript; charset=utf-8";
/// `Content-Type` of a stylesheet.
pub const CSS: &str = "text/css; charset=utf-8";
/// `Content-Type` of a string table.
pub const JSON: &str = "application/json; charset=utf-8";

/// `Cache-Control` of a page and of a queue's theme: short, as they follow its settings.
pub const PAGE_CACHE_CONTROL: &str = "public, max-age=60";
/// `Cache-Control` of the waiting room and its theme served without the queue's settings
/// (Redis out of reach): no cache may keep them past the outage.
pub const WITHOUT_SETTINGS_CACHE_CONTROL: &str = "no-store";
/// `Cache-Control` of the scripts, the string tables and the shared stylesheet, which change
/// only with lineup.
pub const ASSET_CACHE_CONTROL: &str = "public, max-age=300";

const WAIT_HTML: &str = include_str!("wait.html");
const RANKINGS_HTML: &str = include_str!("rankings.html");
/// The stylesheet both pages share.
pub const STYLES: &str = include_str!("page.css");
/// The waiting room's service worker (`…/wait/worker.js`): the page shows the turn's
/// notification through it, and a click on that notification brings the page back.
pub const WORKER: &str = include_str!("worker.js");
/// The door's solver (`…/wait/altcha.js`): the ALTCHA project's own PBKDF2 Web Worker
/// (`altcha` on npm, `dist/workers/pbkdf2.js`, MIT, `altcha/LICENSE.txt`), unchanged; a test
/// holds it equal to the version `tests/browser/package.json` pins. The page posts it a
/// challenge and gets the solution back.
pub const ALTCHA_WORKER: &str = include_str!("altcha/pbkdf2.js");
/// `Service-Worker-Allowed` of [`WORKER`], resolved against the worker's own URL: from
/// `…/queues/{queueId}/wait/worker.js`, the page's path `…/queues/{queueId}/wait`, so the
/// worker's scope can be the page (a worker's default scope is its own folder, `…/wait/`).
pub const WORKER_ALLOWED: &str = "../wait";

static WAIT_JS: LazyLock<String> = LazyLock::new(|| with_languages(include_str!("wait.js")));
static RANKINGS_JS: LazyLock<String> =
    LazyLock::new(|| with_languages(&[MOVEMENT_JS, include_str!("rankings.js")].concat()));
static BADGE_JS: LazyLock<String> =
    LazyLock::new(|| with_languages(&[MOVEMENT_JS, include_str!("badge.js")].concat()));
/// A row's movement as its mark and its words, which the rankings page and the badge share.
const MOVEMENT_JS: &str = include_str!("movement.js");

/// `body` after the languages' tags and names in [`LANGUAGES`]' order, as
/// `window.LINEUP_LANGUAGES = {"en":"English",…}`, and the language helpers both pages share
/// (`i18n.js`).
fn with_languages(body: &str) -> String {
    let names: Vec<String> = LANGUAGES
        .iter()
        .map(|(lang, table)| {
            let quoted = |text: &str| serde_json::Value::from(text).to_string();
            format!("{}:{}", quoted(lang), quoted(&name_of(lang, table)))
        })
        .collect();
    format!(
        "window.LINEUP_LANGUAGES = {{{}}};\n{}{}",
        names.join(","),
        without_comment_lines(include_str!("i18n.js")),
        without_comment_lines(body)
    )
}

/// `script` as served: without its lines that are only a `//` comment. The comments are for
/// whoever reads the source; a buyer's browser fetches only the code. The scripts hold no
/// multi-line string, so no line of a string is taken for a comment.
fn without_comment_lines(script: &str) -> String {
    script
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// A language's name in its own words: its table's `lang.name`, else its tag.
fn name_of(lang: &str, table: &str) -> String {
    serde_json::from_str::<serde_json::Value>(table)
        .ok()
        .and_then(|table| table["lang.name"].as_str().map(str::to_owned))
        .unwrap_or_else(|| lang.to_owned())
}

/// The string tables as served: each without the whitespace between its tokens.
static SERVED_TABLES: LazyLock<Vec<(&'static str, String)>> = LazyLock::new(|| {
    LANGUAGES
        .iter()
        .map(|(lang, table)| (*lang, compact(table)))
        .collect()
});

/// `json` without the whitespace between its tokens; as it is if it is no JSON (a unit test
/// holds that every table is).
fn compact(json: &str) -> String {
    serde_json::from_str::<serde_json::Value>(json)
        .map(|value| value.to_string())
        .unwrap_or_else(|_| json.to_owned())
}

/// The string table of the language tagged `lang` (exactly as in [`LANGUAGES`]), as JSON.
pub fn strings(lang: &str) -> Result<&'static str, Error> {
    SERVED_TABLES
        .iter()
        .find(|(tag, _)| *tag == lang)
        .map(|(_, table)| table.as_str())
        .ok_or_else(|| Error::NotFound(format!("no language {lang}")))
}

/// The waiting room's script.
pub fn wait_script() -> &'static str {
    &WAIT_JS
}

/// The rankings page's script.
pub fn rankings_script() -> &'static str {
    &RANKINGS_JS
}

/// The rank badge a concert's page on the booking site embeds (`/rankings/assets/badge.js`):
/// each of its elements `data-lineup-rank="<concertId>"` shows the concert's rank and
/// movement, from one read of the many-concerts route.
pub fn badge_script() -> &'static str {
    &BADGE_JS
}

/// The rankings page.
pub fn rankings_html() -> &'static str {
    RANKINGS_HTML
}

/// What the waiting-room page is filled in with.
pub struct WaitPage<'a> {
    pub queue: &'a QueueId,
    /// Where the buyer goes when admitted; already checked against the allow-list.
    pub return_url: Option<&'a ReturnUrl>,
    /// A return URL was asked for but not checked (Redis out of reach): the page asks for
    /// itself again once Redis answers, and takes the checked one from that copy.
    pub return_unchecked: bool,
    pub logo: Option<&'a LogoUrl>,
    /// Show the typed-in user id join (the local stack, `ALLOW_BODY_USER_ID=unsafe`).
    pub local_join: bool,
}

impl WaitPage<'_> {
    /// The page's HTML.
    pub fn html(&self) -> String {
        let logo = self
            .logo
            .map(|logo| format!("<img src=\"{}\" alt=\"\">", escape(logo.as_str())))
            .unwrap_or_default();
        let queue = escape(self.queue.as_str());
        let return_url = escape(self.return_url.map(ReturnUrl::as_str).unwrap_or(""));
        fill(WAIT_HTML, |name| match name {
            "queue" => &queue,
            "return" => &return_url,
            "return_check" if self.return_unchecked => "pending",
            "local_join" => {
                if self.local_join {
                    "1"
                } else {
                    "0"
                }
            }
            "logo" => &logo,
            _ => "",
        })
    }

    /// The page's Content-Security-Policy: its own origin only, and the logo's for images.
    pub fn csp(&self) -> String {
        csp(self.logo.map(LogoUrl::origin).as_deref())
    }
}

/// The Content-Security-Policy of every page: `default-src 'self'`, no inline script, workers
/// from lineup's own origin only (the door's solver, the notification worker), and
/// `img_origin` (a queue's logo) added to `img-src`.
pub fn csp(img_origin: Option<&str>) -> String {
    let img = match img_origin {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".into(),
    };
    format!(
        "default-src 'self'; img-src {img}; worker-src 'self'; base-uri 'none'; form-action 'self'; \
         frame-ancestors 'none'; object-src 'none'"
    )
}

/// A queue's theme as CSS custom properties; dark-scheme values override in dark mode, and
/// where a theme sets only light colours the dark scheme keeps lineup's own.
pub fn theme_css(theme: &Theme) -> String {
    let declare = |properties: Vec<(&str, &str)>| {
        properties
            .into_iter()
            .map(|(name, value)| format!("  {name}: {value};\n"))
            .collect::<String>()
    };
    let mut dark = theme.dark_properties();
    for (name, _) in theme.properties() {
        if matches!(name, "--lineup-bg" | "--lineup-text") && !dark.iter().any(|(n, _)| *n == name)
        {
            dark.push((name, "initial"));
        }
    }
    format!(
        "/* This queue's theme (PUT /queues/{{queueId}}/settings, page.theme). */\n:root {{\n{}}}\n\
         @media (prefers-color-scheme: dark) {{\n:root {{\n{}}}\n}}\n",
        declare(theme.properties()),
        declare(dark)
    )
}

/// The query parameter `name`, at most once.
pub fn query_param(query: &str, name: &str) -> Result<Option<String>, Error> {
    let mut found = None;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        if key == name && found.replace(value.into_owned()).is_some() {
            return Err(Error::invalid(
                "query",
                format!("{name} is given more than once"),
            ));
        }
    }
    Ok(found)
}

/// `template` with each `{{name}}` replaced by `value(name)`, in one pass: a filled-in value
/// is never read as a placeholder.
fn fill<'a>(template: &str, value: impl Fn(&str) -> &'a str) -> String {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        out.push_str(&rest[..start]);
        out.push_str(value(&rest[start + 2..start + end]));
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// `text` safe inside HTML text and double-quoted attributes.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeSet;

    type Table = serde_json::Map<String, serde_json::Value>;

    fn tables() -> Vec<(&'static str, Table)> {
        LANGUAGES
            .iter()
            .map(|(lang, table)| (*lang, serde_json::from_str(table).expect("a JSON object")))
            .collect()
    }

    /// The `{placeholders}` of a string, in order.
    fn placeholders(text: &str) -> Vec<&str> {
        text.split('{')
            .skip(1)
            .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
            .collect()
    }

    #[test]
    fn every_language_has_exactly_the_strings_of_the_first_with_its_placeholders() {
        let tables = tables();
        let (first_lang, first) = &tables[0];
        assert_eq!(*first_lang, "en", "English is the fallback");
        let keys: BTreeSet<&String> = first.keys().collect();
        for (lang, table) in &tables {
            let theirs: BTreeSet<&String> = table.keys().collect();
            let missing: Vec<_> = keys.difference(&theirs).collect();
            assert!(missing.is_empty(), "{lang} misses {missing:?}");
            let extra: Vec<_> = theirs.difference(&keys).collect();
            assert!(
                extra.is_empty(),
                "{lang} has strings English lacks: {extra:?}"
            );
            for (key, text) in table {
                let text = text.as_str().unwrap_or_default();
                assert!(!text.trim().is_empty(), "{lang} {key} is not a string");
                let mut want = placeholders(first[key].as_str().unwrap_or_default());
                let mut got = placeholders(text);
                want.sort_unstable();
                got.sort_unstable();
                assert_eq!(got, want, "{lang} {key}: {text}");
            }
        }
    }

    #[test]
    fn each_language_has_its_own_name_and_tag() {
        let names: BTreeSet<String> = LANGUAGES
            .iter()
            .map(|(lang, table)| name_of(lang, table))
            .collect();
        assert_eq!(names.len(), LANGUAGES.len(), "{names:?}");
        for (lang, table) in LANGUAGES {
            assert_ne!(name_of(lang, table), *lang, "{lang} has a lang.name");
            assert_eq!(strings(lang).ok(), Some(compact(table).as_str()), "{lang}");
        }
        assert!(strings("zh").is_err() && strings("EN").is_err() && strings("").is_err());
    }

    #[test]
    fn the_scripts_carry_the_languages_names_and_no_table() {
        for script in [wait_script(), rankings_script(), badge_script()] {
            let head = script.lines().next().unwrap_or_default();
            assert_eq!(
                head,
                r#"window.LINEUP_LANGUAGES = {"en":"English","ko":"한국어","ja":"日本語","zh-Hans":"简体中文","zh-Hant":"繁體中文"};"#
            );
            for (lang, table) in tables() {
                let recipe = table["wait.draw.recipe"].as_str().unwrap_or_default();
                assert!(
                    !script.contains(recipe),
                    "the script carries the {lang} table"
                );
            }
        }
    }

    #[test]
    fn a_script_is_served_with_every_line_of_code_and_no_line_that_is_only_a_comment() {
        let source = include_str!("wait.js");
        let served = super::without_comment_lines(source);
        let code: Vec<&str> = source
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect();
        assert_eq!(served.lines().collect::<Vec<_>>(), code);
        assert!(code.len() > 300 && code.len() < source.lines().count());
        assert!(
            code.iter().all(|line| !line.contains('`')),
            "a multi-line string could hold a line like a comment"
        );
        assert!(wait_script().ends_with(&served));
    }

    /// What a page load fetches, a page, its script, its styles and one string table as served
    /// (the largest), stays within the budget, however many languages there are. The service
    /// worker is fetched only once the buyer asks for notifications, and the badge by a
    /// concert's page on the booking site: each has a budget of its own.
    #[test]
    fn the_pages_with_their_scripts_styles_and_one_string_table_are_at_most_40_kb() {
        let (lang, table) = SERVED_TABLES
            .iter()
            .max_by_key(|(_, table)| table.len())
            .expect("a language");
        let waiting = WAIT_HTML.len() + wait_script().len() + STYLES.len() + table.len();
        let rankings = RANKINGS_HTML.len() + rankings_script().len() + STYLES.len() + table.len();
        // A concert's page on the booking site fetches the badge's script and one table.
        let badge = badge_script().len() + table.len();
        println!(
            "with the {lang} table ({} bytes): waiting room: {waiting} bytes; rankings: {rankings} bytes; badge: {badge} bytes",
            table.len()
        );
        assert!(waiting <= 40 * 1024, "waiting room: {waiting} bytes");
        assert!(rankings <= 40 * 1024, "rankings: {rankings} bytes");
        assert!(badge <= 16 * 1024, "badge: {badge} bytes");
        assert!(WORKER.len() <= 2 * 1024, "worker: {} bytes", WORKER.len());
    }

    #[test]
    fn no_page_has_inline_script_or_style() {
        for html in [WAIT_HTML, RANKINGS_HTML] {
            for script in html.split("<script").skip(1) {
                assert!(
                    script.trim_start().starts_with("src="),
                    "inline script in {html}"
                );
            }
            assert!(!html.contains("<style") && !html.contains("style="));
            assert!(!html.contains("onclick=") && !html.contains("onload="));
        }
    }

    #[test]
    fn a_filled_in_value_is_never_read_as_a_placeholder() {
        let filled = fill("<a data-x=\"{{a}}\">{{b}}</a>", |name| match name {
            "a" => "{{b}}",
            _ => "<img>",
        });
        assert_eq!(filled, "<a data-x=\"{{b}}\"><img></a>");
    }

    #[test]
    fn a_theme_without_dark_colours_leaves_the_dark_scheme_to_lineup() {
        let theme: Theme = serde_json::from_value(serde_json::json!({
            "accent": "#c2410c", "background": "#fffaf5", "darkText": "#fafaf9",
        }))
        .expect("a valid theme");
        let css = theme_css(&theme);
        let (light, dark) = css
            .split_once("@media (prefers-color-scheme: dark)")
            .unwrap();
        assert!(
            light.contains("--lineup-accent: #c2410c;") && light.contains("--lineup-bg: #fffaf5;")
        );
        assert!(dark.contains("--lineup-bg: initial;"), "{css}");
        assert!(dark.contains("--lineup-text: #fafaf9;"), "{css}");
        assert!(!dark.contains("--lineup-accent"), "{css}");
    }

    #[test]
    fn filled_in_values_cannot_break_out_of_their_attribute() {
        assert_eq!(escape("\"><script>"), "&quot;&gt;&lt;script&gt;");
    }
}
