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
    let cli = Cli::parse();
    if let Command::Completions { shell } = cli.command {
        clap_complete::generate(shell, &mut Cli::command(), "lineup", &mut std::io::stdout());
        return ExitCode::SUCCESS;
    }
    let out = Out::new(cli.global.json);
    let result = match Target::resolve(cli.global.place(), cli.global.target.as_deref()).await {
        Ok(target) => lineup_cli::commands::run(cli.command, &target, out, cli.global.yes).await,
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
            eprintln!("{prefix} {err}");
            err.exit()
        }
    }
}
