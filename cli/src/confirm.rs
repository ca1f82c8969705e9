//! The question asked before a step that cannot be undone (`queue delete`, `queue
//! sold-out`, `pool delete`). `--yes` answers it; without a terminal to ask on, and without
//! `--yes`, the step is refused.

use std::io::{BufRead, IsTerminal, Write};

use crate::error::CliError;

/// Asks `question` on the terminal unless `yes`; anything but `y` or `yes` is no.
pub fn confirm(question: &str, yes: bool) -> Result<(), CliError> {
    if yes {
        return Ok(());
    }
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Err(CliError::NotConfirmed(format!(
            "{question} Not asked: no terminal. Give --yes to go ahead."
        )));
    }
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{question} [y/N] ");
    let _ = stderr.flush();
    let mut answer = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut answer)
        .map_err(|err| CliError::NotConfirmed(format!("no answer: {err}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(CliError::NotConfirmed(
            "not confirmed; nothing was done".into(),
        )),
    }
}
