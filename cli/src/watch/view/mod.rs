//! Draws the board: the queues side by side, in rows when more than fit across, each with its
//! state, its numbers, and charts of the last minutes; a footer with the target and the keys.
//!
//! Every line is cut to its column rather than wrapped, so each one shows at 80 columns with
//! three queues, whatever the numbers: what matters comes first on a line, and a detail that
//! does not fit whole is left off. A wider terminal gets longer charts, which cover more
//! history, and the details; a taller one, taller charts.
//!
//! - `panel`: one queue's box: its state, its numbers, how fresh they are, a failure.
//! - `charts`: the charts of the last minutes under a queue's numbers.
//! - `footer`: the footer line, and what gives way in it on a narrow terminal.
//! - `text`: fitting and cutting lines to a column, formatting numbers and times, styles.

mod charts;
mod footer;
mod panel;
mod text;

use chrono::{DateTime, Utc};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::board::Board;
use footer::footer_line;
use panel::draw_queue;

pub use text::number;

/// The narrowest a queue's column gets; more queues than fit across at this width go on
/// another row, or are counted in the footer.
pub const MIN_COLUMN_WIDTH: u16 = 24;
/// The shortest a row of queues gets: its numbers, a failure, and one chart.
pub const MIN_ROW_HEIGHT: u16 = 11;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{CliError, Problem};
    use crate::watch::board::Board;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use serde_json::{json, Value};
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
}
