//! The command line. Every subcommand carries examples in its `--help`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::target::{SignMode, Where};

#[derive(Debug, Parser)]
#[command(
    name = "lineup",
    version,
    about = "The operator's console for a lineup stack: settings, lists, codes, pools, coupons, health, rankings, and a live view",
    after_help = "Examples:
  lineup --stack lineup-prod --profile ops queue show onsale-1
  lineup --url http://127.0.0.1:3000 watch onsale-1 onsale-2
  lineup --target prod queue set onsale-1 --capacity 500 --admit-per-tick 50
  lineup completions bash > /etc/bash_completion.d/lineup

Targets: --url, --stack, or a named target in ~/.config/lineup/config.toml (LINEUP_CONFIG).
With none, lineup-local on http://127.0.0.1:3000."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Args)]
pub struct Global {
    /// The API's URL (lineup-local's, or API Gateway's)
    #[arg(long, global = true, env = "LINEUP_URL")]
    pub url: Option<String>,
    /// A CloudFormation stack: the API's URL and the event bus come from its outputs
    #[arg(long, global = true, env = "LINEUP_STACK")]
    pub stack: Option<String>,
    /// A named target in the config file
    #[arg(long, global = true)]
    pub target: Option<String>,
    /// The AWS profile for credentials and region
    #[arg(long, global = true)]
    pub profile: Option<String>,
    /// The AWS region to sign for and call AWS in
    #[arg(long, global = true)]
    pub region: Option<String>,
    /// Sign requests with SigV4: auto signs for a stack and for https URLs
    #[arg(long, global = true, value_enum)]
    pub sign: Option<SignMode>,
    /// The EventBridge bus for `health send` (the stack's EventBusName otherwise)
    #[arg(long, global = true)]
    pub event_bus: Option<String>,
    /// The source of `health send`'s events (the stack's PaymentEventSource otherwise)
    #[arg(long, global = true)]
    pub event_source: Option<String>,
    /// Print JSON instead of tables
    #[arg(long, global = true)]
    pub json: bool,
    /// Answer yes to the question before a step that cannot be undone
    #[arg(long, short = 'y', global = true)]
    pub yes: bool,
}

impl Global {
    pub fn place(&self) -> Where {
        Where {
            url: self.url.clone(),
            stack: self.stack.clone(),
            profile: self.profile.clone(),
            region: self.region.clone(),
            sign: self.sign,
            event_bus: self.event_bus.clone(),
            event_source: self.event_source.clone(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// A queue's summary and settings; change them, pause, resume, sell out, delete
    #[command(
        subcommand,
        after_help = "Examples:
  lineup queue show onsale-1
  lineup queue set onsale-1 --capacity 500
  lineup queue pause onsale-1 --message \"Back in a minute\""
    )]
    Queue(QueueCommand),
    /// The priority list: buyers who go in the priority lane
    #[command(
        subcommand,
        after_help = "Examples:
  lineup priority add onsale-1 auth0:u-1 auth0:u-2
  lineup priority remove onsale-1 auth0:u-1"
    )]
    Priority(PriorityCommand),
    /// The presale access list
    #[command(
        subcommand,
        after_help = "Examples:
  lineup access add onsale-1 auth0:u-1
  lineup access import onsale-1 fans.csv --column user_id"
    )]
    Access(AccessCommand),
    /// Presale access codes
    #[command(
        subcommand,
        after_help = "Examples:
  lineup codes create onsale-1 --count 25000 --out codes.txt"
    )]
    Codes(CodesCommand),
    /// Capacity pools: queues that share one capacity
    #[command(
        subcommand,
        after_help = "Examples:
  lineup pool set arena --capacity 2000 --weight onsale-1=3
  lineup pool show arena"
    )]
    Pool(PoolCommand),
    /// Coupon campaigns
    #[command(
        subcommand,
        after_help = "Examples:
  lineup coupon create early-bird --quantity 1000
  lineup coupon close early-bird"
    )]
    Coupon(CouponCommand),
    /// The booking system's health, as a BookingHealth event
    #[command(
        subcommand,
        after_help = "Examples:
  lineup health send onsale-1 --level 0.5"
    )]
    Health(HealthCommand),
    /// Sales rankings
    #[command(
        subcommand,
        after_help = "Examples:
  lineup rankings top daily --limit 20"
    )]
    Rankings(RankingsCommand),
    /// A live view of one or more queues, refreshed every 2 s; q quits
    #[command(after_help = "Examples:
  lineup watch onsale-1
  lineup --stack lineup-prod watch onsale-1 onsale-2 onsale-3 --every 1")]
    Watch(WatchArgs),
    /// Shell completions, on stdout
    #[command(after_help = "Examples:
  lineup completions bash > ~/.local/share/bash-completion/completions/lineup
  lineup completions zsh > \"${fpath[1]}/_lineup\"
  lineup completions fish > ~/.config/fish/completions/lineup.fish")]
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
pub enum QueueCommand {
    /// The queue at a glance: waiting, active, the pace in force, the schedule, the settings
    #[command(after_help = "Examples:
  lineup queue show onsale-1
  lineup queue show onsale-1 --json")]
    Show { queue: String },
    /// Change settings, from flags or a JSON file, and show what changed
    #[command(after_help = "Examples:
  lineup queue set onsale-1 --capacity 500 --admit-per-tick 50
  lineup queue set onsale-1 --opens-at 2026-12-01T10:00:00Z --access list
  lineup queue set onsale-1 --file settings.json
  lineup queue set onsale-1 --set 'capacityRamp={\"from\":100,\"step\":100,\"everySeconds\":60,\"to\":1000}'
  lineup queue set onsale-1 --reset message

A JSON file holds the fields of PUT /queues/{queueId}/settings (openapi.yaml, SettingsChange);
null returns a field to its default. Flags win over the file.")]
    Set(Box<SetArgs>),
    /// Stop admitting; waiters keep their places
    #[command(after_help = "Examples:
  lineup queue pause onsale-1 --message \"Back in a minute\"")]
    Pause {
        queue: String,
        /// The operator's message buyers see
        #[arg(long)]
        message: Option<String>,
    },
    /// Admit again after a pause
    #[command(after_help = "Examples:
  lineup queue resume onsale-1")]
    Resume { queue: String },
    /// Mark the queue sold out: nobody more is admitted and the line is given back (asks first)
    #[command(after_help = "Examples:
  lineup queue sold-out onsale-1 --message \"All seats are gone\"
  lineup queue sold-out onsale-1 --undo --yes")]
    SoldOut {
        queue: String,
        /// The operator's message buyers see
        #[arg(long)]
        message: Option<String>,
        /// Clear sold out, so the promoter admits again
        #[arg(long)]
        undo: bool,
    },
    /// Close an empty queue: its settings go (asks first)
    #[command(after_help = "Examples:
  lineup queue delete onsale-1
  lineup queue delete onsale-1 --yes")]
    Delete { queue: String },
}

#[derive(Debug, Args)]
pub struct SetArgs {
    pub queue: String,
    /// A JSON file of settings (SettingsChange); `-` reads stdin
    #[arg(long)]
    pub file: Option<PathBuf>,
    /// Most buyers active at once
    #[arg(long)]
    pub capacity: Option<u64>,
    /// How long an admitted buyer's session lasts
    #[arg(long)]
    pub session_seconds: Option<u64>,
    /// The most a promotion tick admits
    #[arg(long)]
    pub admit_per_tick: Option<u64>,
    /// A waiter unseen this long is dropped
    #[arg(long)]
    pub waiting_idle_seconds: Option<u64>,
    /// Most waiters; past it new arrivals are refused
    #[arg(long)]
    pub max_waiting: Option<u64>,
    /// queue, passthrough or closed
    #[arg(long)]
    pub mode: Option<String>,
    /// The operator's message buyers see
    #[arg(long)]
    pub message: Option<String>,
    /// The opening (RFC 3339)
    #[arg(long)]
    pub opens_at: Option<String>,
    /// When new arrivals stop (RFC 3339)
    #[arg(long)]
    pub closes_at: Option<String>,
    /// When the pre-queue opens (RFC 3339)
    #[arg(long)]
    pub prequeue_opens_at: Option<String>,
    /// open, list or code
    #[arg(long)]
    pub access: Option<String>,
    /// off, on or adaptive
    #[arg(long)]
    pub challenge: Option<String>,
    /// The capacity pool the queue shares its capacity with
    #[arg(long)]
    pub pool: Option<String>,
    /// Any field as NAME=JSON, for example capacityRamp={...}
    #[arg(long = "set", value_name = "NAME=JSON")]
    pub fields: Vec<String>,
    /// Return a field to its default (null)
    #[arg(long = "reset", value_name = "NAME")]
    pub reset: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum PriorityCommand {
    /// Put buyers on the priority list
    #[command(after_help = "Examples:
  lineup priority add onsale-1 auth0:u-1 auth0:u-2")]
    Add(Users),
    /// Take buyers off the priority list
    #[command(after_help = "Examples:
  lineup priority remove onsale-1 auth0:u-1")]
    Remove(Users),
}

/// A queue and the buyers a list command adds or removes.
#[derive(Debug, Args)]
pub struct Users {
    pub queue: String,
    #[arg(required = true)]
    pub users: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum AccessCommand {
    /// Put buyers on the presale access list
    #[command(after_help = "Examples:
  lineup access add onsale-1 auth0:u-1 auth0:u-2")]
    Add(Users),
    /// Take buyers off the presale access list
    #[command(after_help = "Examples:
  lineup access remove onsale-1 auth0:u-1")]
    Remove(Users),
    /// Upload a file of user ids: one per line, or a CSV with a user id column
    #[command(after_help = "Examples:
  lineup access import onsale-1 fans.txt
  lineup access import onsale-1 fans.csv --column user_id
  cut -d, -f1 fans.csv | lineup access import onsale-1 -

Ids are checked before anything is sent; a bad id is listed and left out. Batches of up to
10,000 go one after another, with a progress bar on a terminal.")]
    Import {
        queue: String,
        /// The file; `-` reads stdin
        file: PathBuf,
        /// In a CSV, the column holding user ids (by header name; the first column otherwise)
        #[arg(long)]
        column: Option<String>,
        /// Ids per request, at most 10,000
        #[arg(long, default_value_t = 10_000)]
        batch: usize,
    },
}

#[derive(Debug, Subcommand)]
pub enum CodesCommand {
    /// Mint presale access codes, written out batch by batch
    #[command(after_help = "Examples:
  lineup codes create onsale-1 --count 25000 --out codes.txt
  lineup codes create onsale-1 --count 100 --json

Codes are shown once. Each batch (up to 10,000) is written and flushed before the next is
asked for, and a failed batch is never sent again by itself: rerun for the rest.")]
    Create {
        queue: String,
        /// How many codes
        #[arg(long)]
        count: u64,
        /// Append the codes to this file instead of stdout
        #[arg(long)]
        out: Option<PathBuf>,
        /// Codes per request, at most 10,000
        #[arg(long, default_value_t = 10_000)]
        batch: u64,
    },
}

#[derive(Debug, Subcommand)]
pub enum PoolCommand {
    /// A pool: capacity, weights, each queue's allotment
    #[command(after_help = "Examples:
  lineup pool show arena")]
    Show { pool: String },
    /// Set a pool's capacity and weights, creating it
    #[command(after_help = "Examples:
  lineup pool set arena --capacity 2000
  lineup pool set arena --capacity 2000 --weight onsale-1=3 --weight onsale-2=1")]
    Set {
        pool: String,
        #[arg(long)]
        capacity: u64,
        /// A queue's share of the free places, as QUEUE=WEIGHT
        #[arg(long = "weight", value_name = "QUEUE=WEIGHT")]
        weights: Vec<String>,
    },
    /// Delete a pool: its queues admit no one new until it is made again (asks first)
    #[command(after_help = "Examples:
  lineup pool delete arena --yes")]
    Delete { pool: String },
}

#[derive(Debug, Subcommand)]
pub enum CouponCommand {
    /// Create or update a campaign (the whole campaign each time)
    #[command(after_help = "Examples:
  lineup coupon create early-bird --quantity 1000
  lineup coupon create vip --quantity 50 --queue onsale-1 --opens-at 2026-12-01T10:00:00Z --challenge on")]
    Create {
        coupon: String,
        #[arg(long)]
        quantity: u64,
        /// Only buyers active in this queue may claim
        #[arg(long)]
        queue: Option<String>,
        /// No claims before it (RFC 3339)
        #[arg(long)]
        opens_at: Option<String>,
        /// No claims from it (RFC 3339)
        #[arg(long)]
        closes_at: Option<String>,
        /// off or on: a door challenge before each claim
        #[arg(long)]
        challenge: Option<String>,
        /// The challenge's cost, PBKDF2 iterations per try
        #[arg(long)]
        challenge_cost: Option<u64>,
    },
    /// A campaign and how many coupons remain
    #[command(after_help = "Examples:
  lineup coupon show early-bird")]
    Show { coupon: String },
    /// Close a campaign now: its closesAt becomes this moment
    #[command(after_help = "Examples:
  lineup coupon close early-bird")]
    Close { coupon: String },
}

#[derive(Debug, Subcommand)]
pub enum HealthCommand {
    /// Send the booking system's health level for queues (0: admit nobody, 1: full pace)
    #[command(after_help = "Examples:
  lineup health send onsale-1 --level 0.5
  lineup --stack lineup-prod health send onsale-1 onsale-2 --level 0

Deployed, the BookingHealth event goes to EventBridge (the stack's bus and payment source);
locally, to lineup-local's POST /events.")]
    Send {
        #[arg(required = true)]
        queues: Vec<String>,
        #[arg(long)]
        level: f64,
    },
}

#[derive(Debug, Subcommand)]
pub enum RankingsCommand {
    /// A board's top rows
    #[command(after_help = "Examples:
  lineup rankings top daily
  lineup rankings top weekly --genre kpop --date 2026-11-23 --limit 20
  lineup rankings top all-time --by rate")]
    Top {
        /// daily, weekly, monthly, all-time, last-24h, last-7d or trending
        period: String,
        #[arg(long)]
        genre: Option<String>,
        /// A past bucket's date (YYYY-MM-DD)
        #[arg(long)]
        date: Option<String>,
        /// seats or rate
        #[arg(long)]
        by: Option<String>,
        /// How many rows, at most 100
        #[arg(long, default_value_t = 10)]
        limit: u32,
    },
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// The queues to watch, side by side
    #[arg(required = true)]
    pub queues: Vec<String>,
    /// Seconds between refreshes, 1 or 2
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=2))]
    pub every: u64,
}
