//! The footer line: the target, the refresh, how long the charts cover, the queues left
//! off, the failing refreshes, and the keys; what gives way, and in what order, when the
//! terminal is narrow.

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::text::{bold_style, dim, paint, truncate, width_of};
use crate::watch::board::{span_label, Board};

/// The footer: the target, the refresh, how long the charts cover, the queues left off,
/// the failing refreshes, and the keys. What must show (the last three) always does; the
/// rest gives way on a narrow terminal.
pub(super) fn footer_line(
    board: &Board,
    width: usize,
    hidden: usize,
    span: Option<u64>,
) -> Line<'static> {
    /// A piece of the footer: its text, a shorter one for a narrow terminal, its style, and
    /// the order it gives way in (lowest first; none: it never does).
    struct Item {
        text: String,
        short: Option<String>,
        style: Style,
        gives_way: Option<u8>,
    }
    let item = |text: String, style: Style, gives_way: Option<u8>| Item {
        text,
        short: None,
        style,
        gives_way,
    };
    let failing = board.queues.iter().filter(|w| w.failure.is_some()).count();
    let mut items = vec![
        item("lineup watch".into(), bold_style(), Some(0)),
        item(board.target.clone(), Style::default(), Some(3)),
        item(format!("every {} s", board.every.as_secs()), dim(), Some(2)),
    ];
    if let Some(span) = span {
        items.push(item(format!("charts {}", span_label(span)), dim(), Some(1)));
    }
    if hidden > 0 {
        items.push(Item {
            short: Some(format!("+{hidden}")),
            ..item(
                format!("+{hidden} more"),
                paint(Color::Yellow).add_modifier(Modifier::BOLD),
                None,
            )
        });
    }
    if failing > 0 {
        let what = if failing == 1 { "refresh" } else { "refreshes" };
        items.push(Item {
            short: Some(format!("{failing} failing")),
            ..item(
                format!("{failing} {what} failing, retrying"),
                paint(Color::Red).add_modifier(Modifier::BOLD),
                None,
            )
        });
    }
    items.push(item("q quits".into(), bold_style(), None));
    let total = |items: &[Item]| {
        1 + items.iter().map(|i| width_of(&i.text)).sum::<usize>()
            + 3 * items.len().saturating_sub(1)
    };
    while total(&items) > width {
        let weakest = items
            .iter()
            .enumerate()
            .filter_map(|(at, i)| i.gives_way.map(|order| (order, at)))
            .min();
        match weakest {
            // The target is cut before it goes.
            Some((3, at))
                if width.saturating_sub(total(&items) - width_of(&items[at].text)) >= 8 =>
            {
                let room = width - (total(&items) - width_of(&items[at].text));
                items[at].text = truncate(&items[at].text, room);
            }
            Some((_, at)) => {
                items.remove(at);
            }
            // Only what must show is left: in its shorter words, the failures first.
            None => {
                let Some(longer) = items.iter_mut().rev().find(|i| i.short.is_some()) else {
                    break;
                };
                longer.text = longer.short.take().unwrap_or_default();
            }
        }
    }
    let mut spans = vec![Span::raw(" ")];
    for (at, item) in items.into_iter().enumerate() {
        if at > 0 {
            spans.push(Span::styled(" · ", dim()));
        }
        spans.push(Span::styled(item.text, item.style));
    }
    Line::from(spans)
}
