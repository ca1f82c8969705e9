//! The build script of every Lambda binary (and of the benchmark's hello-world yardstick, so
//! the two are linked alike): on Linux, link the executable at a fixed address (non-PIE).
//!
//! Why: a position-independent executable has every pointer in its static tables patched by
//! the dynamic loader at each start, and each patched page is copied. In these binaries that
//! is 14 000 to 42 000 relocations (the ranking functions' time-zone tables are most of them)
//! and up to 1 MB of relocation records. Non-PIE, the addresses are fixed at link time: about
//! 1 ms less per cold start and 0.3–1 MB smaller (bench/src/cold_start.rs). The cost: the
//! binary's own code is not placed at a random address (its libraries, stack and heap still
//! are). Go links its Linux binaries this way by default.

fn main() {
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
