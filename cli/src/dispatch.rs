//! Runs one parsed command against its target: the operator tasks in [`crate::commands`], the
//! live view in [`crate::watch`].

use crate::args::{CodesCommand, Command, HealthCommand, RankingsCommand};
use crate::commands::{codes, coupon, health, lists, pool, queue, rankings};
use crate::error::CliError;

/// Runs one command against its target.
pub async fn run(
    command: Command,
    target: &crate::target::Target,
    out: crate::output::Out,
    yes: bool,
) -> Result<(), CliError> {
    match command {
        Command::Queue(command) => queue::run(command, target, out, yes).await,
        Command::Priority(command) => lists::priority(command, target, out).await,
        Command::Access(command) => lists::access(command, target, out).await,
        Command::Codes(CodesCommand::Create {
            queue,
            count,
            out: file,
            batch,
        }) => codes::create(target, out, &queue, count, file.as_deref(), batch).await,
        Command::Pool(command) => pool::run(command, target, out, yes).await,
        Command::Coupon(command) => coupon::run(command, target, out).await,
        Command::Health(HealthCommand::Send { queues, level }) => {
            health::send(target, out, &queues, level).await
        }
        Command::Rankings(RankingsCommand::Top {
            period,
            genre,
            date,
            by,
            limit,
        }) => {
            rankings::top(
                target,
                out,
                &period,
                genre.as_deref(),
                date.as_deref(),
                by.as_deref(),
                limit,
            )
            .await
        }
        Command::Watch(args) => crate::watch::run(target, &args.queues, args.every).await,
        Command::Completions { .. } => Ok(()),
    }
}
