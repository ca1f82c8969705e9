//! One test binary for every end-to-end test, so the workspace links it once.

mod abuse;
mod access;
mod availability;
mod bad_input;
mod browser;
mod cluster;
mod contract;
mod coupon;
mod departures;
mod estimates;
mod faults;
mod fixtures;
mod gate;
mod gate_identity;
mod identity;
mod keys;
mod load;
mod local_stack;
mod metrics;
mod overload;
mod prequeue;
mod presence;
mod priority;
mod queue;
mod queue_events;
mod ranking_reads;
mod rankings;
mod replan;
mod replay;
mod samples;
mod secrets;
mod settings;
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
