//! The charts of the last minutes under a queue's numbers: waiting, active, admissions a
//! minute, each titled with its last value and its peak; a gap where refreshes failed.

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Color;
use ratatui::text::Span;
use ratatui::widgets::{Block, Sparkline};
use ratatui::Frame;
use serde_json::json;

use super::text::{bold, dim, fit, number, paint};
use crate::watch::board::{Sample, Watched};

/// The charts of the last minutes, as many as fit, each as wide as the column: waiting,
/// active, admissions a minute.
pub(super) fn draw_charts(
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
