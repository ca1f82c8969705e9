//! Draws the board: one column per queue, side by side, each with its state, its numbers
//! and charts of the last minutes; a footer with the target and the keys. Fits 80×24; a wider
//! or taller terminal gets longer and taller charts.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};
use ratatui::Frame;
use serde_json::{json, Value};

use super::board::{Board, Watched};
use crate::commands::queue::{countdown, opens_in};
use crate::output::colour_allowed;

/// Draws the whole board.
pub fn draw(frame: &mut Frame, board: &Board) {
    let [body, footer] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(frame.area());
    let columns = Layout::horizontal(
        board
            .queues
            .iter()
            .map(|_| Constraint::Ratio(1, board.queues.len() as u32)),
    )
    .split(body);
    for (watched, area) in board.queues.iter().zip(columns.iter()) {
        draw_queue(frame, watched, *area);
    }
    let failing = board.queues.iter().filter(|w| w.failure.is_some()).count();
    let mut spans = vec![Span::raw(format!(
        " lineup watch · {} · every {} s · q quits",
        board.target,
        board.every.as_secs()
    ))];
    if failing > 0 {
        spans.push(Span::styled(
            format!(" · {failing} refresh failing, retrying"),
            paint(Color::Red),
        ));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), footer);
}

fn draw_queue(frame: &mut Frame, watched: &Watched, area: Rect) {
    let block = Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(
            format!(" {} ", watched.queue),
            Style::default().add_modifier(Modifier::BOLD),
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let mut lines = Vec::new();
    match &watched.summary {
        Some(summary) => {
            lines.push(state(summary));
            let pace = &summary["pace"];
            lines.push(row("waiting", number(&summary["waiting"])));
            lines.push(row(
                "active",
                format!(
                    "{} of {} ({})",
                    number(&summary["active"]),
                    number(&pace["capacity"]),
                    text(&pace["limitedBy"])
                ),
            ));
            lines.push(row(
                "admitted",
                match summary["admissionRatePerMinute"].as_f64() {
                    Some(rate) => format!("{rate:.0}/min"),
                    None => "-".into(),
                },
            ));
            let health = &pace["health"];
            let level = health["level"].as_f64().unwrap_or(1.0);
            let mut health_text = format!("{level}");
            if let Some(reason) = health["reason"].as_str() {
                health_text.push_str(&format!(" ({reason})"));
            }
            lines.push(row("health", health_text));
        }
        None => lines.push(Line::from("waiting for the first answer…")),
    }
    match (&watched.failure, &watched.updated) {
        (Some(failure), _) => lines.push(Line::from(Span::styled(
            format!(
                "refresh failed {} ({}×): {}",
                failure.at.format("%H:%M:%S"),
                failure.streak,
                failure.reason
            ),
            paint(Color::Red),
        ))),
        (None, Some(at)) => lines.push(Line::from(Span::styled(
            format!("updated {}", at.format("%H:%M:%S")),
            Style::default().add_modifier(Modifier::DIM),
        ))),
        (None, None) => {}
    }
    let text_height = (lines.len() as u16).min(inner.height);
    let [numbers, charts] =
        Layout::vertical([Constraint::Length(text_height), Constraint::Min(0)]).areas(inner);
    frame.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
        numbers,
    );

    // Charts of the last minutes: as many samples as the column is wide.
    let width = charts.width as usize;
    let series: [(&str, Vec<u64>, Color); 3] = [
        ("waiting", watched.history.iter().map(|s| s.waiting).collect(), Color::Cyan),
        ("active", watched.history.iter().map(|s| s.active).collect(), Color::Green),
        (
            "admitted/min",
            watched.history.iter().map(|s| s.admissions_per_minute).collect(),
            Color::Yellow,
        ),
    ];
    let each = Layout::vertical([Constraint::Ratio(1, 3); 3]).split(charts);
    for ((label, data, colour), area) in series.iter().zip(each.iter()) {
        if area.height < 2 {
            continue;
        }
        let shown = &data[data.len().saturating_sub(width)..];
        let last = shown.last().copied().unwrap_or(0);
        let chart = Sparkline::default()
            .block(Block::default().title(format!("{label} {last}")))
            .data(shown)
            .style(paint(*colour));
        frame.render_widget(chart, *area);
    }
}

/// Sold out, closed, paused, the opening's countdown, or open.
fn state(summary: &Value) -> Line<'static> {
    let settings = &summary["settings"];
    let (label, colour) = if settings["soldOut"] == json!(true) {
        ("SOLD OUT".to_owned(), Color::Red)
    } else if settings["mode"] == json!("closed") {
        ("CLOSED".to_owned(), Color::Red)
    } else if settings["paused"] == json!(true) {
        ("PAUSED".to_owned(), Color::Yellow)
    } else if let Some(left) = opens_in(summary) {
        (format!("OPENS IN {}", countdown(left)), Color::Yellow)
    } else {
        ("OPEN".to_owned(), Color::Green)
    };
    Line::from(Span::styled(label, paint(colour).add_modifier(Modifier::BOLD)))
}

fn row(label: &str, value: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(format!("{label:<9}"), Style::default().add_modifier(Modifier::DIM)),
        Span::raw(value),
    ])
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

fn text(value: &Value) -> String {
    crate::output::cell(value)
}

/// A colour, unless `NO_COLOR` forbids it.
fn paint(colour: Color) -> Style {
    if colour_allowed() {
        Style::default().fg(colour)
    } else {
        Style::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::board::Board;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::time::Duration;

    fn summary(waiting: u64) -> Value {
        json!({
            "queueId": "onsale-1", "waiting": waiting, "active": 12, "admissionRatePerMinute": 60.0,
            "settings": { "paused": false, "soldOut": false, "mode": "queue" },
            "pace": { "capacity": 100, "limitedBy": "capacity", "admitPerTick": 10, "health": { "level": 1 } },
            "opensAt": null
        })
    }

    fn screen(board: &Board, width: u16, height: u16) -> String {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| draw(frame, board)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| (0..width).map(|x| buffer[(x, y)].symbol().to_owned()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn three_queues_fit_80_by_24_with_their_numbers() {
        let names: Vec<String> = ["onsale-1", "onsale-2", "onsale-3"].map(String::from).into();
        let mut board = Board::new(&names, "http://127.0.0.1:3000", Duration::from_secs(2));
        for (at, name) in names.iter().enumerate() {
            board.record(name, Ok(summary(1_234_567 + at as u64)), chrono::Utc::now());
        }
        let shown = screen(&board, 80, 24);
        assert!(shown.contains("onsale-3"), "{shown}");
        assert!(shown.contains("1,234,569"), "{shown}");
        assert!(shown.contains("q quits"), "{shown}");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(number(&json!(1_234_567)), "1,234,567");
        assert_eq!(number(&json!(999)), "999");
    }
}
