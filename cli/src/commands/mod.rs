//! One module per operator task. Each command checks its ids before anything is sent,
//! makes its calls through [`crate::api`], and prints through [`crate::output`].

pub mod access;
pub mod codes;
pub mod coupon;
pub mod health;
pub mod lists;
pub mod pool;
pub mod queue;
pub mod rankings;

use crate::error::CliError;

/// Checks an id as lineup checks it before it reaches a Redis key.
pub fn check_id<T>(
    parse: fn(&str) -> Result<T, lineup::Error>,
    raw: &str,
) -> Result<String, CliError> {
    parse(raw)
        .map(|_| raw.to_owned())
        .map_err(|err| CliError::Usage(err.to_string()))
}

/// A queue id, checked.
pub fn queue_id(raw: &str) -> Result<String, CliError> {
    check_id(lineup::ids::QueueId::parse, raw)
}

/// A user id, checked.
pub fn user_id(raw: &str) -> Result<String, CliError> {
    check_id(lineup::ids::UserId::parse, raw)
}

/// An RFC 3339 instant, checked, as given.
pub fn instant(field: &str, raw: &str) -> Result<String, CliError> {
    chrono::DateTime::parse_from_rfc3339(raw)
        .map(|_| raw.to_owned())
        .map_err(|err| CliError::Usage(format!("{field}: {raw:?} is not RFC 3339 ({err})")))
}

/// Runs one command against its target.
pub async fn run(
    command: crate::args::Command,
    target: &crate::target::Target,
    out: crate::output::Out,
    yes: bool,
) -> Result<(), CliError> {
    use crate::args::{CodesCommand, Command, HealthCommand, RankingsCommand};
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
