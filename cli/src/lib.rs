//! `lineup`: the operator's console for a lineup stack, deployed or local.
//!
//! A tour, from the bottom up:
//! - [`error`]: what can go wrong, and the exit code each failure ends the process with.
//! - [`routes`]: every HTTP call the console makes, as a method and a path template.
//! - [`target`]: where it talks: a URL, a CloudFormation stack's outputs, or a named target
//!   in the config file, and whether requests are signed.
//! - [`sign`]: SigV4 for API Gateway's `AWS_IAM` routes, with credentials from the AWS
//!   credential chain.
//! - [`api`]: one request and its reply: JSON in, JSON or a problem out.
//! - [`output`]: human tables or `--json`, colours only where they belong.
//! - [`confirm`]: the question asked before a step that cannot be undone.
//! - [`args`]: the command line, with an example under every subcommand.
//! - [`commands`]: one module per operator task.
//! - [`watch`]: the live view of one or more queues.
//! - [`dispatch`]: runs a parsed command: a task, or the view.

pub mod api;
pub mod args;
pub mod commands;
pub mod confirm;
pub mod dispatch;
pub mod error;
pub mod output;
pub mod routes;
pub mod sign;
pub mod target;
pub mod watch;

pub use error::CliError;
