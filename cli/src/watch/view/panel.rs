//! One queue's box: its title, its state, its numbers and how fresh they are, a failing
//! refresh, and below them its charts. Each line is cut to the column.

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use serde_json::{json, Value};

use super::charts::draw_charts;
use super::text::{bold, clock, decimal, dim, fit, fit_pairs, number, paint, row, text};
use crate::commands::queue::{countdown, opens_in};
use crate::watch::board::{step, Board, Watched};

/// One queue's box; returns how long its charts cover, in seconds.
pub(super) fn draw_queue(
    frame: &mut Frame,
    watched: &Watched,
    area: Rect,
    board: &Board,
    now: DateTime<Utc>,
) -> u64 {
    let mut block = Block::default().borders(Borders::ALL).title(Span::styled(
        format!(" {} ", watched.queue),
        Style::default().add_modifier(Modifier::BOLD),
    ));
    if watched.failure.is_some() {
        block = block.border_style(paint(Color::Red));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);

    let width = inner.width as usize;
    let lines = numbers(watched, width, now);
    let height = (lines.len() as u16).min(inner.height);
    let [text, charts] =
        Layout::vertical([Constraint::Length(height), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(lines), text);

    let step = step(width, board.every);
    if !watched.history.is_empty() {
        draw_charts(frame, watched, charts, step, now);
    }
    (step * inner.width.max(1) as u32).as_secs()
}

/// The state, the numbers, and how fresh they are: one line each, cut to `width`.
fn numbers(watched: &Watched, width: usize, now: DateTime<Utc>) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    match &watched.summary {
        Some(summary) => {
            let pace = &summary["pace"];
            let settings = &summary["settings"];
            lines.push(state(summary, width, now));
            lines.push(row(
                width,
                "waiting",
                vec![bold(number(&summary["waiting"]))],
                vec![],
            ));
            lines.push(row(
                width,
                "active",
                vec![bold(number(&summary["active"]))],
                vec![],
            ));

            // The capacity in force, and what limits it.
            let limited_by = text(&pace["limitedBy"]);
            let mut detail = Vec::new();
            match limited_by.as_str() {
                "ramp" => {
                    if let Some(to) = settings["capacityRamp"]["to"].as_u64() {
                        detail.push(Span::raw(format!(" → {}", number(&json!(to)))));
                    }
                }
                "pool" => {
                    if let Some(pool) = settings["pool"].as_str() {
                        detail.push(Span::raw(format!(" {pool}")));
                    }
                }
                _ => {}
            }
            lines.push(row(
                width,
                "cap",
                vec![
                    Span::raw(number(&pace["capacity"])),
                    Span::raw(" · "),
                    Span::styled(limited_by, paint(Color::Cyan)),
                ],
                detail,
            ));

            let rate = match summary["admissionRatePerMinute"].as_f64() {
                Some(rate) => format!("{}/min", number(&json!(rate.round() as u64))),
                None => "-".into(),
            };
            let per_tick = pace["admitPerTick"]
                .as_f64()
                .map(|n| Span::styled(format!(" · {}/tick", decimal(n)), dim()))
                .into_iter()
                .collect();
            lines.push(row(width, "admitted", vec![Span::raw(rate)], per_tick));

            // The booking system's health: below 1, what holds it down.
            let health = &pace["health"];
            let level = health["level"].as_f64().unwrap_or(1.0);
            let colour = match level {
                l if l <= 0.0 => paint(Color::Red),
                l if l < 1.0 => paint(Color::Yellow),
                _ => Style::default(),
            };
            let mut value = vec![Span::styled(decimal(level), colour)];
            if let Some(reason) = health["reason"].as_str() {
                value.push(Span::styled(format!(" · {reason}"), colour));
            }
            let until = pace["healthUntil"]
                .as_str()
                .and_then(|until| DateTime::parse_from_rfc3339(until).ok())
                .map(|until| Span::styled(format!(" until {}", clock(until.to_utc())), dim()))
                .into_iter()
                .collect();
            lines.push(row(width, "health", value, until));
        }
        None => lines.push(fit(
            vec![Span::styled("waiting for the first answer…", dim())],
            vec![],
            width,
        )),
    }
    if let Some(at) = watched.updated {
        // Through a failure the numbers stay, as old as this says.
        let style = if watched.failure.is_some() {
            paint(Color::Yellow)
        } else {
            dim()
        };
        lines.push(fit(
            vec![Span::styled(format!("updated {}", clock(at)), style)],
            vec![],
            width,
        ));
    }
    if let Some(failure) = &watched.failure {
        let red = paint(Color::Red);
        let mut extras = Vec::new();
        if failure.streak > 1 {
            extras.push(Span::styled(format!(" ×{}", failure.streak), red));
        }
        extras.push(Span::styled(
            format!(" since {}", clock(failure.since)),
            red,
        ));
        lines.push(fit(
            vec![Span::styled(
                "refresh failed",
                red.add_modifier(Modifier::BOLD),
            )],
            extras,
            width,
        ));
        lines.push(fit(
            vec![Span::styled(failure.reason.clone(), red)],
            vec![],
            width,
        ));
    }
    lines
}

/// Sold out, closed, paused, the opening's countdown, or open: the weightiest first, the
/// others after it when they fit.
fn state(summary: &Value, width: usize, now: DateTime<Utc>) -> Line<'static> {
    let settings = &summary["settings"];
    let loud = |label: String, colour: Color| {
        Span::styled(label, paint(colour).add_modifier(Modifier::BOLD))
    };
    let mut states = Vec::new();
    if settings["soldOut"] == json!(true) {
        states.push(loud("SOLD OUT".into(), Color::Red));
    }
    if settings["mode"] == json!("closed") {
        states.push(loud("CLOSED".into(), Color::Red));
    }
    if settings["paused"] == json!(true) {
        states.push(loud("PAUSED".into(), Color::Yellow));
    }
    if let Some(left) = opens_in(summary) {
        states.push(loud(format!("OPENS IN {}", countdown(left)), Color::Yellow));
    }
    let mut details = Vec::new();
    if states.is_empty() {
        states.push(loud("OPEN".into(), Color::Green));
        if settings["mode"] == json!("passthrough") {
            details.push(Span::styled("passthrough", dim()));
        }
    }
    let closes_in = summary["closesAt"]
        .as_str()
        .and_then(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| (at.to_utc() - now).num_seconds())
        .filter(|left| *left > 0);
    if let Some(left) = closes_in {
        details.push(Span::styled(
            format!("closes in {}", countdown(left)),
            dim(),
        ));
    }
    let mut spans = states.into_iter();
    let first = spans.next().into_iter().collect();
    let extras = spans
        .chain(details)
        .flat_map(|span| [Span::raw(" · "), span])
        .collect::<Vec<_>>();
    // " · " and what follows it go in whole or not at all.
    fit_pairs(first, extras, width)
}
