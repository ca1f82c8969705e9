//! Text helpers: a line fitted to its column (what matters cut with an ellipsis, details
//! whole or not at all), counts, levels and times as the view shows them, and its styles.

use chrono::{DateTime, Utc};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;

use crate::output::colour_allowed;

/// The width of a number's label.
const LABEL: usize = 9;

/// A number's line: its label, its value (cut if it must be), then details that fit whole.
pub(super) fn row(
    width: usize,
    label: &str,
    value: Vec<Span<'static>>,
    details: Vec<Span<'static>>,
) -> Line<'static> {
    let mut spans = vec![Span::styled(format!("{label:<LABEL$}"), dim())];
    spans.extend(value);
    fit(spans, details, width)
}

/// `essential` cut to `width` with an ellipsis if it must be, then each of `extras` while it
/// fits whole.
pub(super) fn fit(
    essential: Vec<Span<'static>>,
    extras: Vec<Span<'static>>,
    width: usize,
) -> Line<'static> {
    let mut line = cut(essential, width);
    for extra in extras {
        if line.width() + extra.width() > width {
            break;
        }
        line.push_span(extra);
    }
    line
}

/// As [`fit`], with `extras` in pairs (a separator and what it separates) that go in together.
pub(super) fn fit_pairs(
    essential: Vec<Span<'static>>,
    extras: Vec<Span<'static>>,
    width: usize,
) -> Line<'static> {
    let mut line = cut(essential, width);
    let mut extras = extras.into_iter();
    while let (Some(separator), Some(extra)) = (extras.next(), extras.next()) {
        if line.width() + separator.width() + extra.width() > width {
            break;
        }
        line.push_span(separator);
        line.push_span(extra);
    }
    line
}

/// `spans` as one line of at most `width` columns, ending in `…` when cut.
pub(super) fn cut(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    let line = Line::from(spans);
    if line.width() <= width {
        return line;
    }
    let mut out = Vec::new();
    let mut used = 0;
    let mut last_style = Style::default();
    'spans: for span in line.spans {
        last_style = span.style;
        let mut kept = String::new();
        for ch in span.content.chars() {
            let w = width_of(ch.encode_utf8(&mut [0; 4]));
            if used + w + 1 > width {
                out.push(Span::styled(kept, span.style));
                break 'spans;
            }
            used += w;
            kept.push(ch);
        }
        out.push(Span::styled(kept, span.style));
    }
    if width > 0 {
        out.push(Span::styled("…", last_style));
    }
    Line::from(out)
}

/// `text` cut to `width` columns, ending in `…` when cut.
pub(super) fn truncate(text: &str, width: usize) -> String {
    cut(vec![Span::raw(text.to_owned())], width).to_string()
}

/// How many columns `text` takes.
pub(super) fn width_of(text: &str) -> usize {
    Span::raw(text).width()
}

/// A count with thousands separated: 1,234,567.
pub fn number(value: &Value) -> String {
    let Some(n) = value.as_u64() else {
        return text(value);
    };
    let digits = n.to_string();
    let mut out = String::new();
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A level or a rate: at most two decimals, none when whole: `1`, `0.5`, `0.33`.
pub(super) fn decimal(n: f64) -> String {
    let text = format!("{n:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A moment as the operator's clock shows it.
pub(super) fn clock(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local)
        .format("%H:%M:%S")
        .to_string()
}

pub(super) fn text(value: &Value) -> String {
    crate::output::cell(value)
}

pub(super) fn bold(text: String) -> Span<'static> {
    Span::styled(text, bold_style())
}

pub(super) fn bold_style() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub(super) fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
}

/// A colour, unless `NO_COLOR` forbids it.
pub(super) fn paint(colour: Color) -> Style {
    if colour_allowed() {
        Style::default().fg(colour)
    } else {
        Style::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_are_cut_not_wrapped_and_details_go_in_whole() {
        let cut_line = fit(
            vec![Span::raw("Service Unavailable (503): Redis")],
            vec![],
            12,
        );
        assert_eq!(cut_line.to_string(), "Service Una…");
        let whole = fit(
            vec![Span::raw("cap 5")],
            vec![Span::raw(" · ramp → 500")],
            12,
        );
        assert_eq!(whole.to_string(), "cap 5");
        assert_eq!(decimal(1.0), "1");
        assert_eq!(decimal(0.5), "0.5");
        assert_eq!(decimal(1.0 / 3.0), "0.33");
    }
    #[test]
    fn thousands_are_separated() {
        assert_eq!(number(&json!(1_234_567)), "1,234,567");
        assert_eq!(number(&json!(999)), "999");
    }
}
