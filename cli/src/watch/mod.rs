//! `lineup watch`: a live view of one or more queues, side by side, refreshed every 1–2 s
//! from the summary route (`GET /queues/{queueId}`). A failed refresh keeps the last numbers
//! on screen and says so; the next refresh tries again. `q`, Esc or Ctrl-C quits.
//!
//! - `board`: what the view knows of each queue: its last summary, its history, its last
//!   failure. No terminal in it, so it is tested alone.
//! - `view`: draws the board with ratatui; fits 80×24 and spreads over a wide terminal.
//!
//! Each queue has at most one request out: a refresh that hangs (up to the API's request
//! timeout) is not joined by another, so answers come back in order and a slow target is not
//! flooded. The screen is drawn every 100 ms, so a countdown ticks between refreshes.

pub mod board;
pub mod view;

use std::collections::HashSet;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use tokio::sync::mpsc;

use crate::commands::queue_id;
use crate::error::CliError;
use crate::routes::Route;
use crate::target::Target;
use board::Board;

/// Runs the view until the operator quits.
pub async fn run(target: &Target, queues: &[String], every: u64) -> Result<(), CliError> {
    let queues = queues
        .iter()
        .map(|queue| queue_id(queue))
        .collect::<Result<Vec<_>, _>>()?;
    if !std::io::stdout().is_terminal() {
        return Err(CliError::Usage(
            "watch draws on a terminal; for scripts, poll `lineup queue show --json`".into(),
        ));
    }
    let every = Duration::from_secs(every);
    let mut board = Board::new(&queues, &target.label, every);
    let (results, mut arrivals) = mpsc::unbounded_channel();
    let mut terminal = ratatui::init();
    let mut next_refresh = Instant::now();
    // The queues with a request out.
    let mut asking: HashSet<String> = HashSet::new();
    let outcome = loop {
        if Instant::now() >= next_refresh {
            next_refresh = Instant::now() + every;
            for watched in &board.queues {
                if !asking.insert(watched.queue.clone()) {
                    continue;
                }
                let api = target.api.clone();
                let queue = watched.queue.clone();
                let results = results.clone();
                tokio::spawn(async move {
                    let answer = api.call_once(Route::GetQueue, &[&queue], &[], None).await;
                    let _ = results.send((queue, answer.map(|reply| reply.body)));
                });
            }
        }
        while let Ok((queue, answer)) = arrivals.try_recv() {
            asking.remove(&queue);
            board.record(&queue, answer, chrono::Utc::now());
        }
        if let Err(err) = terminal.draw(|frame| view::draw(frame, &board)) {
            break Err(CliError::Usage(format!("cannot draw: {err}")));
        }
        // Waiting for a key blocks this worker for at most 100 ms; requests run on others.
        match tokio::task::block_in_place(|| event::poll(Duration::from_millis(100))) {
            Ok(true) => match event::read() {
                Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => {
                    let ctrl_c = key.code == KeyCode::Char('c')
                        && key.modifiers.contains(KeyModifiers::CONTROL);
                    if matches!(key.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                        break Ok(());
                    }
                }
                Ok(_) => {}
                Err(err) => break Err(CliError::Usage(format!("cannot read keys: {err}"))),
            },
            Ok(false) => {}
            Err(err) => break Err(CliError::Usage(format!("cannot read keys: {err}"))),
        }
    };
    ratatui::restore();
    outcome
}
