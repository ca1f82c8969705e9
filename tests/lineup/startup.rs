//! Each function reads only its own settings: a bad value of another function's variable does
//! not stop it, and a bad value of its own stops it with the variable named (README's
//! configuration table, "read by").

use std::collections::HashMap;

use lineup::cold_start::{Publishing, Started};
use lineup::config::{Config, ConfigError, SecretPolicy};
use lineup::metrics::MetricsSink;
use lineup_local::embedded_redis::EmbeddedRedis;

/// Which functions start with `variable` set to `value`, and the variable the others name.
async fn started_with(variable: &str, value: &str) -> HashMap<&'static str, Option<String>> {
    let redis = EmbeddedRedis::start().await.expect("redis-server");
    let vars = HashMap::from([
        (
            "TOKEN_SECRET".to_owned(),
            "0123456789abcdef0123456789abcdef".to_owned(),
        ),
        (variable.to_owned(), value.to_owned()),
    ]);
    let config = Config::from_lookup(move |name| vars.get(name).cloned(), SecretPolicy::Required)
        .expect("cold start's own settings are good");
    let started = Started::connect(config, &redis.url(), Publishing::Nothing)
        .await
        .expect("connect");
    let named = |result: Result<(), ConfigError>| result.err().map(|err| err.variable.to_owned());
    let metrics = || MetricsSink::memory();
    HashMap::from([
        (
            "queue-api",
            named(queue_api::Deps::new(&started, MetricsSink::memory()).map(drop)),
        ),
        (
            "queue-authorizer",
            named(queue_authorizer::Deps::new(&started).map(drop)),
        ),
        (
            "queue-promoter",
            named(queue_promoter::Deps::new(&started, metrics()).map(drop)),
        ),
        (
            "queue-reaper",
            named(queue_reaper::Deps::new(&started, metrics()).map(drop)),
        ),
        (
            "ranking-api",
            named(ranking_api::Deps::new(&started).map(drop)),
        ),
        (
            "ranking-updater",
            named(ranking_updater::Deps::new(&started, metrics()).map(drop)),
        ),
        (
            "coupon-api",
            named(coupon_api::Deps::new(&started, MetricsSink::memory()).map(drop)),
        ),
        (
            "coupon-publisher",
            named(coupon_publisher::Deps::new(&started).map(drop)),
        ),
    ])
}

#[tokio::test]
async fn a_bad_setting_stops_only_the_functions_that_read_it() {
    let waiting_room = [
        "queue-api",
        "queue-authorizer",
        "queue-promoter",
        "queue-reaper",
        "ranking-updater",
    ];
    let cases: [(&str, &str, &[&str]); 5] = [
        ("SESSION_SECONDS", "ten", &waiting_room),
        (
            "RANKING_TIME_ZONE",
            "Mars/Olympus",
            &["ranking-api", "ranking-updater"],
        ),
        (
            "RATE_LIMIT_USER_PER_MINUTE",
            "many",
            &["queue-api", "coupon-api"],
        ),
        ("ALLOW_BODY_USER_ID", "yes", &["queue-api", "coupon-api"]),
        ("JWT_AUDIENCE", "lineup", &["queue-authorizer"]),
    ];
    for (variable, value, readers) in cases {
        let started = started_with(variable, value).await;
        for (function, stopped) in started {
            if readers.contains(&function) {
                assert_eq!(stopped.as_deref(), Some(variable), "{function}, {variable}");
            } else {
                assert_eq!(stopped, None, "{function} read {variable}");
            }
        }
    }
}
