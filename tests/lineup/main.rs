//! One test binary for every end-to-end test, so the workspace links it once.

mod abuse;
mod bad_input;
mod browser;
mod cluster;
mod contract;
mod departures;
mod estimates;
mod faults;
mod fixtures;
mod gate;
mod identity;
mod keys;
mod load;
mod local_stack;
mod metrics;
mod presence;
mod queue;
mod queue_events;
mod ranking_reads;
mod rankings;
mod replay;
mod samples;
mod secrets;
mod settings;
mod tls;
mod windows;
