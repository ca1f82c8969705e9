//! One test binary for every end-to-end test, so the workspace links it once.

mod abuse;
mod access;
mod admission;
mod aging;
mod availability;
mod bad_input;
mod browser;
mod builds;
mod cli;
mod cli_signing;
mod cli_watch;
mod cluster;
mod contract;
mod coupon;
mod departures;
mod docs;
mod door;
mod estimates;
mod faults;
mod fixtures;
mod gate;
mod gate_identity;
mod health;
mod identity;
mod keys;
mod line;
mod line_control;
mod line_door;
mod line_failover;
mod line_open;
mod line_pace;
mod line_served;
mod load;
mod local_stack;
mod metrics;
mod overload;
mod pace;
mod pool;
mod pool_changes;
mod prequeue;
mod presence;
mod priority;
mod queue;
mod queue_events;
mod ranking_movement;
mod ranking_reads;
mod ranking_snapshots;
mod ranking_standings;
mod rankings;
mod records;
mod replan;
mod replay;
mod replay_snapshots;
mod samples;
mod secrets;
mod settings;
mod startup;
mod tls;
mod windows;

/// `tests/cluster-suites` lists the suites that run once more against a local Redis Cluster
/// (`.ci/run`, RELIABILITY.md): each is a suite of this binary.
#[test]
fn every_cluster_suite_is_a_suite_of_this_binary() {
    let main = include_str!("main.rs");
    let suites = include_str!("../cluster-suites");
    assert!(suites.lines().count() > 10);
    for suite in suites.lines() {
        assert!(main.contains(&format!("\nmod {suite};\n")), "{suite}");
    }
}

/// `tests/real-time` lists the suites, and the tests of other suites, whose subject is real
/// time: each waits out sessions, idle periods, TTLs or ticks on the real clock. Every other
/// test forms the fast tier, which README's fast command runs by skipping these. Each entry
/// is a suite or a test of this binary, and RELIABILITY.md names each.
#[test]
fn every_real_time_entry_is_a_suite_or_a_test_of_this_binary_and_reliability_names_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let main = include_str!("main.rs");
    let reliability = include_str!("../../RELIABILITY.md");
    let entries = lineup_tests::REAL_TIME;
    assert!(entries.lines().count() > 5);
    for entry in entries.lines() {
        let (suite, test) = entry.split_once("::").expect("suite::[test]");
        assert!(main.contains(&format!("\nmod {suite};\n")), "{entry}");
        if !test.is_empty() {
            let source = std::fs::read_to_string(root.join(format!("lineup/{suite}.rs")))
                .expect("the suite's source");
            assert!(source.contains(&format!("fn {test}(")), "{entry}");
        }
        assert!(
            reliability.contains(&format!("`{entry}`")),
            "RELIABILITY.md: {entry}"
        );
    }
}

/// Every test of this binary sleeps through `lineup_tests::sleep`, which fails a sleep longer
/// than two seconds outside `tests/real-time`: no suite calls a clock's sleep by itself.
#[test]
fn every_test_sleeps_through_the_one_sleep_that_knows_the_real_time_tier() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("lineup");
    let mut checked = 0;
    // The suites, and the files of a suite that is a folder.
    let mut paths = Vec::new();
    for file in std::fs::read_dir(&dir).expect("tests/lineup") {
        let path = file.expect("an entry").path();
        if path.is_dir() {
            for inner in std::fs::read_dir(&path).expect("a suite's folder") {
                paths.push(inner.expect("an entry").path());
            }
        } else {
            paths.push(path);
        }
    }
    for path in paths {
        if path.ends_with("main.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&path).expect("a suite's source");
        for own in ["tokio::time::sleep", "thread::sleep", "time::{sleep"] {
            assert!(
                !source.contains(own),
                "{}: {own}; use lineup_tests::sleep",
                path.display()
            );
        }
        checked += 1;
    }
    assert!(checked > 20);
}
