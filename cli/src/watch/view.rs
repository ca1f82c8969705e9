//! Draws the board: the queues side by side, in rows when more than fit across, each with its
//! state, its numbers, and charts of the last minutes; a footer with the target and the keys.
//!
//! Every line is cut to its column rather than wrapped, so each one shows at 80 columns with
//! three queues, whatever the numbers: what matters comes first on a line, and a detail that
//! does not fit whole is left off. A wider terminal gets longer charts, which cover more
//! history, and the details; a taller one, taller charts.

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Sparkline};
use ratatui::Frame;
use serde_json::{json, Value};

use super::board::{span_label, step, Board, Sample, Watched};
use crate::commands::queue::{countdown, opens_in};
use crate::output::colour_allowed;

/// The narrowest a queue's column gets; more queues than fit across at this width go on
/// another row, or are counted in the footer.
pub const MIN_COLUMN_WIDTH: u16 = 24;
/// The shortest a row of queues gets: its numbers, a failure, and one chart.
pub const MIN_ROW_HEIGHT: u16 = 11;
/// The width of a number's label.
const LABEL: usize = 9;

/// Rows and columns for `queues` in `area`: one row while they fit across at
/// [`MIN_COLUMN_WIDTH`], then as many rows as fit at [`MIN_ROW_HEIGHT`].
pub fn grid(queues: usize, area: Rect) -> (usize, usize) {
    let most_columns = usize::from((area.width / MIN_COLUMN_WIDTH).max(1));
    let most_rows = usize::from((area.height / MIN_ROW_HEIGHT).max(1));
    if queues <= most_columns {
        return (1, queues.max(1));
    }
    let rows = queues.div_ceil(most_columns).min(most_rows);
    (rows, queues.div_ceil(rows).min(most_columns))
}

/// Draws the whole board now.
pub fn draw(frame: &mut Frame, board: &Board) {
    draw_at(frame, board, Utc::now());
}

/// Draws the whole board as it stands at `now`.
pub fn draw_at(frame: &mut Frame, board: &Board, now: DateTime<Utc>) {
    let [body, footer] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(frame.area());
    let (rows, columns) = grid(board.queues.len(), body);
    let shown = board.queues.len().min(rows * columns);
    let row_areas =
        Layout::vertical((0..rows).map(|_| Constraint::Ratio(1, rows as u32))).split(body);
    let mut span = None;
    for (row, row_area) in row_areas.iter().enumerate() {
        let cells = Layout::horizontal((0..columns).map(|_| Constraint::Ratio(1, columns as u32)))
            .split(*row_area);
        for (column, cell) in cells.iter().enumerate() {
            let Some(watched) = board.queues[..shown].get(row * columns + column) else {
                break;
            };
            let covers = draw_queue(frame, watched, *cell, board, now);
            span.get_or_insert(covers);
        }
    }
    let hidden = board.queues.len() - shown;
    frame.render_widget(
        Paragraph::new(footer_line(board, footer.width as usize, hidden, span)),
        footer,
    );
}

/// One queue's box; returns how long its charts cover, in seconds.
fn draw_queue(
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

/// The charts of the last minutes, as many as fit, each as wide as the column: waiting,
/// active, admissions a minute.
fn draw_charts(
    frame: &mut Frame,
    watched: &Watched,
    area: Rect,
    step: std::time::Duration,
    now: DateTime<Utc>,
) {
    fn waiting(s: &Sample) -> u64 {
        s.waiting
    }
    fn active(s: &Sample) -> u64 {
        s.active
    }
    fn admitted(s: &Sample) -> u64 {
        s.admissions_per_minute
    }
    type Pick = fn(&Sample) -> u64;
    let series: [(&str, Pick, Color); 3] = [
        ("waiting", waiting, Color::Cyan),
        ("active", active, Color::Green),
        ("admitted/min", admitted, Color::Yellow),
    ];
    // A title and at least one line of bars each.
    let count = usize::from(area.height / 2).min(series.len());
    if count == 0 || area.width == 0 {
        return;
    }
    let areas =
        Layout::vertical((0..count).map(|_| Constraint::Ratio(1, count as u32))).split(area);
    let last = watched.last_sample();
    for ((label, pick, colour), area) in series.iter().zip(areas.iter()) {
        let data = watched.series(*pick, area.width as usize, step, now);
        let peak = data.iter().flatten().max().copied().unwrap_or(0);
        let title = fit(
            vec![
                Span::styled(format!("{label} "), dim()),
                bold(last.map_or("-".into(), |s| number(&json!(pick(&s))))),
            ],
            vec![Span::styled(
                format!(" · peak {}", number(&json!(peak))),
                dim(),
            )],
            area.width as usize,
        );
        let chart = Sparkline::default()
            .block(Block::default().title(title))
            .data(data)
            .style(paint(*colour))
            // A stretch where every refresh failed.
            .absent_value_symbol("░")
            .absent_value_style(paint(Color::Red));
        frame.render_widget(chart, *area);
    }
}

/// The footer: the target, the refresh, how long the charts cover, the queues left off,
/// the failing refreshes, and the keys. What must show (the last three) always does; the
/// rest gives way on a narrow terminal.
fn footer_line(board: &Board, width: usize, hidden: usize, span: Option<u64>) -> Line<'static> {
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

/// A number's line: its label, its value (cut if it must be), then details that fit whole.
fn row(
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
fn fit(essential: Vec<Span<'static>>, extras: Vec<Span<'static>>, width: usize) -> Line<'static> {
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
fn fit_pairs(
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
fn cut(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
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
fn truncate(text: &str, width: usize) -> String {
    cut(vec![Span::raw(text.to_owned())], width).to_string()
}

/// How many columns `text` takes.
fn width_of(text: &str) -> usize {
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
fn decimal(n: f64) -> String {
    let text = format!("{n:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A moment as the operator's clock shows it.
fn clock(at: DateTime<Utc>) -> String {
    at.with_timezone(&chrono::Local)
        .format("%H:%M:%S")
        .to_string()
}

fn text(value: &Value) -> String {
    crate::output::cell(value)
}

fn bold(text: String) -> Span<'static> {
    Span::styled(text, bold_style())
}

fn bold_style() -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

fn dim() -> Style {
    Style::default().add_modifier(Modifier::DIM)
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
    use crate::error::{CliError, Problem};
    use crate::watch::board::Board;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use std::time::Duration;

    fn summary(waiting: u64) -> Value {
        json!({
            "queueId": "onsale-1", "waiting": waiting, "active": 12, "admittedThrough": 40,
            "admissionRatePerMinute": 60.0,
            "settings": { "paused": false, "soldOut": false, "mode": "queue", "capacity": 100,
                          "capacityRamp": null, "pool": null },
            "pace": { "capacity": 100, "limitedBy": "capacity", "admitPerTick": 10.0,
                      "health": { "level": 1.0 } },
            "opensAt": null, "closesAt": null
        })
    }

    /// The screen as text, one string a row.
    fn screen(board: &Board, width: u16, height: u16, now: DateTime<Utc>) -> Vec<String> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
        terminal.draw(|frame| draw_at(frame, board, now)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..height)
            .map(|y| {
                (0..width)
                    .map(|x| buffer[(x, y)].symbol().to_owned())
                    .collect()
            })
            .collect()
    }

    /// The rows of the box titled `queue`, inside its borders.
    fn column(rows: &[String], queue: &str) -> Vec<String> {
        let (top, line) = rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.contains(&format!("┌ {queue} ")))
            .unwrap_or_else(|| panic!("no box for {queue}:\n{}", rows.join("\n")));
        let chars: Vec<char> = line.chars().collect();
        let title = line.find(&format!("┌ {queue} ")).unwrap();
        let left = line[..title].chars().count();
        let right = (left + 1..chars.len()).find(|x| chars[*x] == '┐').unwrap();
        rows[top + 1..]
            .iter()
            .take_while(|row| row.chars().nth(left) == Some('│'))
            .map(|row| row.chars().skip(left + 1).take(right - left - 1).collect())
            .collect()
    }

    /// Asserts `lines` holds a line that begins with `expected`, whole.
    #[track_caller]
    fn shows(lines: &[String], expected: &str) {
        assert!(
            lines.iter().any(|line| line.starts_with(expected)),
            "{expected:?} not shown whole:\n{}",
            lines.join("\n")
        );
    }

    /// A board of `names`, each refreshed every 2 s for the last `seconds`, waiting rising.
    fn board_of(names: &[&str], seconds: i64, now: DateTime<Utc>) -> Board {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut board = Board::new(&names, "http://127.0.0.1:3000", Duration::from_secs(2));
        for ago in (0..=seconds).rev().step_by(2) {
            for name in &names {
                let at = now - chrono::Duration::seconds(ago);
                board.record(name, Ok(summary(1_234_567 - ago as u64)), at);
            }
        }
        board
    }

    #[test]
    fn one_queue_at_80_by_24_shows_every_number_whole_and_three_charts() {
        let now = Utc::now();
        let board = board_of(&["onsale-1"], 300, now);
        let rows = screen(&board, 80, 24, now);
        let inside = column(&rows, "onsale-1");
        for line in [
            "OPEN",
            "waiting  1,234,567",
            "active   12",
            "cap      100 · capacity",
            "admitted 60/min · 10/tick",
            "health   1",
            "updated ",
            "waiting 1,234,567 · peak 1,234,567",
            "active 12 · peak 12",
            "admitted/min 60 · peak 60",
        ] {
            shows(&inside, line);
        }
        // The waiting chart has bars across the column: five minutes of refreshes.
        let bars = |line: &String| line.chars().filter(|c| "▁▂▃▄▅▆▇█".contains(*c)).count();
        assert!(
            inside.iter().any(|line| bars(line) >= 70),
            "{}",
            rows.join("\n")
        );
        let footer = &rows[23];
        assert!(footer.contains("q quits"), "{footer}");
        assert!(footer.contains("http://127.0.0.1:3000"), "{footer}");
        assert!(footer.contains("charts 2 min"), "{footer}");
    }

    #[test]
    fn three_queues_at_80_by_24_show_every_line_whole_with_what_limits_them() {
        let now = Utc::now();
        let mut board = board_of(&["onsale-1", "onsale-2", "onsale-3"], 120, now);
        let mut ramped = summary(1_234_567);
        ramped["settings"]["paused"] = json!(true);
        ramped["settings"]["capacityRamp"] =
            json!({ "from": 50, "step": 50, "everySeconds": 60, "to": 500 });
        ramped["pace"] = json!({ "capacity": 50, "limitedBy": "ramp", "admitPerTick": 5.0,
                                 "health": { "level": 0.5, "reason": "booking" } });
        board.record("onsale-1", Ok(ramped), now);
        let mut pooled = summary(7);
        pooled["settings"]["soldOut"] = json!(true);
        pooled["settings"]["pool"] = json!("hall");
        pooled["pace"] = json!({ "capacity": 40, "limitedBy": "pool", "admitPerTick": 0.0,
                                 "health": { "level": 0.0, "reason": "alarm" } });
        board.record("onsale-2", Ok(pooled), now);
        let mut opening = summary(0);
        opening["opensAt"] = json!((now + chrono::Duration::minutes(90)).to_rfc3339());
        board.record("onsale-3", Ok(opening), now);
        let down = || {
            Err(CliError::Failed(Problem {
                status: 503,
                title: "Service Unavailable".into(),
                detail: "Redis is out of reach".into(),
                retry_after: Some(1),
            }))
        };
        board.record("onsale-3", down(), now);
        board.record("onsale-3", down(), now);
        let rows = screen(&board, 80, 24, now);

        let first = column(&rows, "onsale-1");
        assert!(first[0].chars().count() >= 23, "{}", rows.join("\n"));
        for line in [
            "PAUSED",
            "waiting  1,234,567",
            "active   12",
            "cap      50 · ramp",
            "admitted 60/min",
            "health   0.5 · booking",
            "updated ",
            "waiting 1,234,567",
        ] {
            shows(&first, line);
        }
        let second = column(&rows, "onsale-2");
        for line in [
            "SOLD OUT",
            "waiting  7",
            "cap      40 · pool",
            "health   0 · alarm",
        ] {
            shows(&second, line);
        }
        let third = column(&rows, "onsale-3");
        for line in [
            "OPENS IN 01:",
            "waiting  0",
            "updated ",
            "refresh failed ×2",
            "503 Service Unavailable",
            "waiting 0",
        ] {
            shows(&third, line);
        }
        let footer = &rows[23];
        assert!(footer.contains("1 refresh failing, retrying"), "{footer}");
        assert!(footer.contains("q quits"), "{footer}");
    }

    #[test]
    fn more_queues_than_fit_across_go_on_rows_and_the_rest_are_counted() {
        let now = Utc::now();
        let four = board_of(&["a1", "a2", "a3", "a4"], 60, now);
        let rows = screen(&four, 80, 24, now);
        for queue in ["a1", "a2", "a3", "a4"] {
            let inside = column(&rows, queue);
            for line in [
                "OPEN",
                "waiting  1,234,567",
                "cap      100 · capacity",
                "updated ",
            ] {
                shows(&inside, line);
            }
        }
        assert!(!rows[23].contains("more"), "{}", rows[23]);

        // A deployed API's long URL gives way before what must show.
        let mut eight = board_of(&["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"], 60, now);
        eight.target = "https://abcdefghij.execute-api.eu-central-1.amazonaws.com/prod".into();
        eight.record("b2", Err(CliError::Usage("down".into())), now);
        let rows = screen(&eight, 80, 24, now);
        for queue in ["b1", "b2", "b3", "b4", "b5", "b6"] {
            let inside = column(&rows, queue);
            shows(&inside, "waiting  1,234,567");
            shows(&inside, "health   1");
        }
        assert!(!rows.iter().any(|row| row.contains("b7")));
        for shown in [
            "https://abcdefghij.",
            "… · +2 more",
            "1 refresh failing",
            "q quits",
        ] {
            assert!(rows[23].contains(shown), "{shown}: {}", rows[23]);
        }
    }

    #[test]
    fn a_wide_terminal_spreads_the_queues_and_charts_more_history() {
        let now = Utc::now();
        let bars = |line: &String| line.chars().filter(|c| "▁▂▃▄▅▆▇█".contains(*c)).count();
        let most_bars =
            |rows: &[String], queue: &str| column(rows, queue).iter().map(bars).max().unwrap_or(0);

        // Three queues: wider columns, the details that did not fit, taller charts.
        let three = board_of(&["onsale-1", "onsale-2", "onsale-3"], 600, now);
        let narrow = screen(&three, 80, 24, now);
        let wide = screen(&three, 240, 60, now);
        let inside = column(&wide, "onsale-2");
        assert!(most_bars(&wide, "onsale-2") >= 70, "{}", wide.join("\n"));
        assert!(
            most_bars(&narrow, "onsale-2") <= 25,
            "{}",
            narrow.join("\n")
        );
        shows(&inside, "admitted 60/min · 10/tick");
        assert!(!column(&narrow, "onsale-2")
            .iter()
            .any(|line| line.contains("/tick")));
        let tall = inside.iter().filter(|line| bars(line) >= 70).count();
        assert!(tall >= 30, "{tall}: {}", wide.join("\n"));

        // One queue: its chart as wide as the terminal, covering minutes more.
        let one = board_of(&["onsale-1"], 600, now);
        let narrow = screen(&one, 80, 24, now);
        let wide = screen(&one, 240, 24, now);
        assert!(narrow[23].contains("charts 2 min"), "{}", narrow[23]);
        assert!(wide[23].contains("charts 7 min"), "{}", wide[23]);
        assert!(most_bars(&wide, "onsale-1") >= 230, "{}", wide.join("\n"));
    }

    #[test]
    fn an_outage_shows_as_a_gap_in_the_charts_and_the_first_answer_is_awaited() {
        let now = Utc::now();
        let names = ["onsale-1".to_string(), "later".to_string()];
        let mut board = Board::new(&names, "http://127.0.0.1:3000", Duration::from_secs(1));
        let at = |ago: i64| now - chrono::Duration::seconds(ago);
        for ago in (40..80).rev() {
            board.record("onsale-1", Ok(summary(ago as u64)), at(ago));
        }
        for ago in (1..40).rev() {
            board.record("onsale-1", Err(CliError::Usage("down".into())), at(ago));
        }
        board.record("onsale-1", Ok(summary(3)), now);
        let rows = screen(&board, 80, 24, now);
        let inside = column(&rows, "onsale-1");
        assert!(
            inside.iter().any(|line| line.contains('░')),
            "{}",
            rows.join("\n")
        );
        assert!(!inside.iter().any(|line| line.contains("refresh failed")));
        shows(&inside, "waiting  3");
        shows(&column(&rows, "later"), "waiting for the first answer…");
    }

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
    fn a_tiny_terminal_draws_what_fits_without_failing() {
        let now = Utc::now();
        let mut board = board_of(&["onsale-1", "onsale-2", "onsale-3", "onsale-4"], 30, now);
        board.record("onsale-2", Err(CliError::Usage("down".into())), now);
        for (width, height) in [(1, 1), (10, 3), (23, 8), (30, 12), (79, 10)] {
            let rows = screen(&board, width, height, now);
            assert_eq!(rows.len(), usize::from(height));
        }
        let rows = screen(&board, 30, 12, now);
        shows(&column(&rows, "onsale-1"), "waiting  1,234,567");
        assert_eq!(rows[11].trim_end(), " +3 more · 1 failing · q quits");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(number(&json!(1_234_567)), "1,234,567");
        assert_eq!(number(&json!(999)), "999");
    }
}
