//! `lineup`: parses the command line, resolves the target, runs the command, and ends with
//! the exit code README's table gives.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use lineup_cli::args::{Cli, Command};
use lineup_cli::output::{colour_allowed, Out};
use lineup_cli::target::Target;

#[tokio::main]
async fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "lineup", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let out = Out::new(cli.global.json);
    let result = match Target::resolve(cli.global.place(), cli.global.target.as_deref()).await {
        Ok(target) => lineup_cli::dispatch::run(cli.command, &target, out, cli.global.yes).await,
        Err(err) => Err(err),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            let prefix = if colour_allowed() && std::io::stderr().is_terminal() {
                "\x1b[31mlineup:\x1b[0m"
            } else {
                "lineup:"
            };
            // One line: the SDK's messages can span several.
            let message = err
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            eprintln!("{prefix} {message}");
            err.exit()
        }
    }
}

/// Output piped to a command that stops reading (`lineup … | head`) ends the process quietly,
/// as it does any Unix tool, instead of a panic in `println!`: Rust ignores SIGPIPE by default.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: sets the process's SIGPIPE disposition back to the default; no handler runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
