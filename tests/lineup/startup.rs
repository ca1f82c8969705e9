//! Each function reads only its own settings, and README's configuration table says which
//! ("read by"): the variables each function's cold start and `Deps::new` look up are the ones
//! the column lists for it; a bad value of another function's variable does not stop it, and
//! a bad value of its own stops it with the variable named.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use lineup::cold_start::Started;
use lineup::config::{Config, ConfigError, Environment};
use lineup::metrics::MetricsSink;
use lineup_local::embedded_redis::EmbeddedRedis;

/// The Lambda functions, as README's column names them.
const FUNCTIONS: [&str; 8] = [
    "queue-api",
    "queue-authorizer",
    "queue-promoter",
    "queue-reaper",
    "ranking-api",
    "event-applier",
    "coupon-api",
    "coupon-publisher",
];

/// The local stack, which the column names for what only it reads.
const LOCAL: &str = "lineup-local";

const SECRET: &str = "0123456789abcdef0123456789abcdef";

/// Starts `function` as its `main.rs` does, against `redis`, with the variables `lookup`
/// gives: cold start's settings, then its `Deps::new`. The variable a bad setting names.
async fn start(
    function: &str,
    redis: &str,
    lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
) -> Option<&'static str> {
    let (secrets, publishing) = match function {
        "queue-api" => (queue_api::SECRETS, queue_api::PUBLISHING),
        "queue-authorizer" => (queue_authorizer::SECRETS, queue_authorizer::PUBLISHING),
        "queue-promoter" => (queue_promoter::SECRETS, queue_promoter::PUBLISHING),
        "queue-reaper" => (queue_reaper::SECRETS, queue_reaper::PUBLISHING),
        "ranking-api" => (ranking_api::SECRETS, ranking_api::PUBLISHING),
        "event-applier" => (event_applier::SECRETS, event_applier::PUBLISHING),
        "coupon-api" => (coupon_api::SECRETS, coupon_api::PUBLISHING),
        "coupon-publisher" => (coupon_publisher::SECRETS, coupon_publisher::PUBLISHING),
        other => panic!("no function {other}"),
    };
    let config = match Config::from_lookup(lookup, secrets) {
        Ok(config) => config,
        Err(err) => return Some(err.variable),
    };
    let started = Started::connect(config, redis, publishing)
        .await
        .expect("connect");
    let metrics = MetricsSink::memory;
    let built: Result<(), ConfigError> = match function {
        "queue-api" => queue_api::Deps::new(&started, metrics()).map(drop),
        "queue-authorizer" => queue_authorizer::Deps::new(&started).map(drop),
        "queue-promoter" => queue_promoter::Deps::new(&started, metrics()).map(drop),
        "queue-reaper" => queue_reaper::Deps::new(&started, metrics()).map(drop),
        "ranking-api" => ranking_api::Deps::new(&started).map(drop),
        "event-applier" => event_applier::Deps::new(&started, metrics()).map(drop),
        "coupon-api" => coupon_api::Deps::new(&started, metrics()).map(drop),
        "coupon-publisher" => coupon_publisher::Deps::new(&started).map(drop),
        other => panic!("no function {other}"),
    };
    built.err().map(|err| err.variable)
}

/// README's configuration table: each variable, and the functions its "read by" column
/// names. "every function" is every Lambda function; a reader named by a condition (the AWS
/// clients' variables) names none.
fn readme_readers() -> BTreeMap<String, BTreeSet<&'static str>> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md");
    let readme = std::fs::read_to_string(path).expect("README.md");
    let section = readme
        .split("\n## Configuration\n")
        .nth(1)
        .expect("README.md has a Configuration section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut table = BTreeMap::new();
    for row in section.lines().filter(|line| line.starts_with("| `")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        assert!(cells.len() >= 4, "a row of four cells: {row}");
        let mut readers = BTreeSet::new();
        for named in cells[2]
            .split([',', ';'])
            .flat_map(|part| part.split(" and "))
        {
            match named.trim() {
                "every function" => readers.extend(FUNCTIONS),
                "a function with a secret ARN or an event bus" => {}
                name => {
                    let function = FUNCTIONS
                        .into_iter()
                        .chain([LOCAL])
                        .find(|function| *function == name)
                        .unwrap_or_else(|| panic!("README names no function {name:?}: {row}"));
                    readers.insert(function);
                }
            }
        }
        let variables = cells[0].split('`').skip(1).step_by(2);
        for variable in variables {
            table.insert(variable.to_owned(), readers.clone());
        }
    }
    assert!(table.len() > 40, "README's table, as read: {table:?}");
    table
}

/// The names a lookup was asked for.
type Seen = Arc<Mutex<BTreeSet<String>>>;

/// A lookup that gives `vars` and records every name looked up.
fn recording(
    vars: HashMap<&'static str, String>,
) -> (
    impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    Seen,
) {
    let seen = Arc::new(Mutex::new(BTreeSet::new()));
    let record = Arc::clone(&seen);
    let lookup = move |name: &str| {
        record.lock().unwrap().insert(name.to_owned());
        vars.get(name).cloned()
    };
    (lookup, seen)
}

#[tokio::test]
async fn each_function_reads_exactly_the_variables_readme_lists_for_it() {
    let redis = EmbeddedRedis::start().await.expect("redis-server");
    let table = readme_readers();
    let mut read: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for function in FUNCTIONS {
        let (lookup, seen) = recording(HashMap::from([("TOKEN_SECRET", SECRET.to_owned())]));
        assert_eq!(
            start(function, &redis.url(), lookup).await,
            None,
            "{function}"
        );
        read.insert(function, seen.lock().unwrap().clone());
    }
    let (lookup, seen) = recording(HashMap::new());
    Environment::new(lookup)
        .local()
        .expect("the local stack's own settings");
    read.insert(LOCAL, seen.lock().unwrap().clone());

    for (function, names) in &read {
        for name in names {
            let readers = table
                .get(name)
                .unwrap_or_else(|| panic!("{function} reads {name}, which README's table lacks"));
            assert!(
                readers.contains(function),
                "{function} reads {name}; README's \"read by\" column lists {readers:?}"
            );
        }
    }
    // The variables read outside the settings (the secrets' ARNs, the AWS clients', RUST_LOG,
    // HOST and PORT) are no function's lookups; for every other, the column lists no more.
    let looked_up: BTreeSet<&String> = read.values().flatten().collect();
    for (name, readers) in table.iter().filter(|(name, _)| looked_up.contains(name)) {
        for function in readers {
            assert!(
                read[function].contains(name),
                "README lists {function} as reading {name}, which it does not"
            );
        }
    }
}

#[tokio::test]
async fn a_bad_setting_stops_only_the_functions_that_read_it() {
    let redis = EmbeddedRedis::start().await.expect("redis-server");
    let table = readme_readers();
    let cases = [
        ("TOKEN_SECRET", "short"),
        ("SESSION_SECONDS", "ten"),
        ("PROMOTE_BUDGET_SECONDS", "soon"),
        ("QUEUE_CREATION", "anyone"),
        ("MAX_QUEUES", "0"),
        ("RATE_LIMIT_USER_PER_MINUTE", "many"),
        ("RANKING_TIME_ZONE", "Mars/Olympus"),
        ("RANKING_EARLY_CUTOFF", "noon"),
        ("RANKING_SNAPSHOT_TOP", "0"),
        ("ALLOW_BODY_USER_ID", "yes"),
        ("JWT_AUDIENCE", "lineup"),
    ];
    for (variable, value) in cases {
        let readers = &table[variable];
        for function in FUNCTIONS {
            let vars = HashMap::from([
                ("TOKEN_SECRET", SECRET.to_owned()),
                (variable, value.to_owned()),
            ]);
            let stopped = start(function, &redis.url(), move |name| vars.get(name).cloned()).await;
            if readers.contains(function) {
                assert_eq!(stopped, Some(variable), "{function}, {variable}");
            } else {
                assert_eq!(stopped, None, "{function} read {variable}");
            }
        }
    }
}
