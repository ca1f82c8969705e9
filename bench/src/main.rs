//! `cargo run --release --bin lineup-bench`: lineup against raw Redis and against the designs
//! it replaces, in one run on one machine. Starts its own `redis-server`. Prints a Markdown
//! report; BENCHMARKS.md holds its figures against their goals and baselines. Speeds are
//! reported, never asserted.
//!
//! Each section of the report is a module of its own, whose doc comment says how it measures
//! and what limits its figures. [`SECTIONS`] is the one table of them:
//! each section's name on the command line, whether the full run includes it, and the
//! function that runs it. `lineup-bench` runs the full run's sections in the table's order.
//! `lineup-bench <name>` runs that one section alone. An unknown name prints the names.
//! `opening-spike`, `arrivals` and `line-opening` are not in the full run: they run only alone.
//!
//! For the cold-start section, build the function binaries first:
//! `cargo build --release --bins`.

// The sections.
mod admission;
mod arrivals;
mod boards;
mod capacity;
mod cold_start;
mod coupons;
mod dedupe;
mod door;
mod ingest;
mod line_costs;
mod line_opening;
mod memory;
mod movement;
mod opening;
mod pace;
mod per_request;
mod ranking_writes;
mod reads;
mod redis_time;
mod round_trips;
mod scale;
mod spike;
mod spike_plan;
mod throughput;

// What they share, and the parts of the larger ones.
mod baseline;
mod line_calibrate;
mod line_figures;
mod line_replay;
mod measure;
mod probe;
mod report;
mod snapshots;
mod spike_replay;
mod spike_report;
mod util;

use std::future::Future;
use std::pin::Pin;

use measure::Bench;
use report::Report;

/// A section's function: it runs the section on the bench and writes its rows to the report.
type Run = for<'a> fn(&'a Bench, &'a mut Report) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// A section of the report.
struct Section {
    /// Its name on the command line.
    name: &'static str,
    /// Whether the full run (no name given) includes it.
    full: bool,
    /// The function that runs it.
    run: Run,
}

/// Every section. The full run takes those it includes in this order.
const SECTIONS: &[Section] = &[
    // First, while the server is still empty and quiet: it only has to accept connections.
    Section {
        name: "cold-start",
        full: true,
        run: |bench, report| Box::pin(cold_start::run(bench, report)),
    },
    Section {
        name: "round-trips",
        full: true,
        run: |bench, report| Box::pin(round_trips::run(bench, report)),
    },
    Section {
        name: "throughput",
        full: true,
        run: |bench, report| Box::pin(throughput::run(bench, report)),
    },
    Section {
        name: "scale",
        full: true,
        run: |bench, report| Box::pin(scale::run(bench, report)),
    },
    Section {
        name: "memory",
        full: true,
        run: |bench, report| Box::pin(memory::run(bench, report)),
    },
    Section {
        name: "redis-time",
        full: true,
        run: |bench, report| Box::pin(redis_time::run(bench, report)),
    },
    Section {
        name: "per-request",
        full: true,
        run: |bench, report| Box::pin(per_request::per_request(bench, report)),
    },
    Section {
        name: "line",
        full: true,
        run: |bench, report| Box::pin(line_costs::run(bench, report)),
    },
    Section {
        name: "capacity",
        full: true,
        run: |bench, report| Box::pin(capacity::run(bench, report)),
    },
    Section {
        name: "reads",
        full: true,
        run: |bench, report| Box::pin(reads::run(bench, report)),
    },
    Section {
        name: "movement",
        full: true,
        run: |bench, report| {
            Box::pin(async move {
                let pings = movement::run(bench, report).await;
                snapshots::run(bench, report, &pings).await;
            })
        },
    },
    Section {
        name: "ranking-writes",
        full: true,
        run: |bench, report| Box::pin(ranking_writes::run(bench, report)),
    },
    Section {
        name: "dedupe",
        full: true,
        run: |bench, report| Box::pin(dedupe::run(bench, report)),
    },
    Section {
        name: "boards",
        full: true,
        run: |bench, report| Box::pin(boards::run(bench, report)),
    },
    Section {
        name: "ingest",
        full: true,
        run: |bench, report| Box::pin(ingest::run(bench, report)),
    },
    Section {
        name: "coupons",
        full: true,
        run: |bench, report| Box::pin(coupons::run(bench, report)),
    },
    Section {
        name: "door",
        full: true,
        run: |bench, report| Box::pin(door::run(bench, report)),
    },
    Section {
        name: "admission",
        full: true,
        run: |bench, report| Box::pin(admission::run(bench, report)),
    },
    Section {
        name: "pace",
        full: true,
        run: |bench, report| Box::pin(pace::run(bench, report)),
    },
    Section {
        name: "opening",
        full: true,
        run: |bench, report| Box::pin(opening::run(bench, report)),
    },
    Section {
        name: "opening-spike",
        full: false,
        run: |bench, report| Box::pin(spike::opening_spike(bench, report)),
    },
    Section {
        name: "arrivals",
        full: false,
        run: |bench, report| Box::pin(arrivals::arrivals(bench, report)),
    },
    Section {
        name: "line-opening",
        full: false,
        run: |bench, report| Box::pin(line_opening::run(bench, report)),
    },
];

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sections: Vec<&Section> = match std::env::args().nth(1) {
        None => SECTIONS.iter().filter(|section| section.full).collect(),
        Some(name) => match SECTIONS.iter().find(|section| section.name == name) {
            Some(section) => vec![section],
            None => {
                let names: Vec<&str> = SECTIONS.iter().map(|section| section.name).collect();
                eprintln!(
                    "lineup-bench: no section is named {name:?}. The sections: {}.",
                    names.join(", ")
                );
                std::process::exit(2);
            }
        },
    };
    let mut report = Report::new();
    let bench = Bench::start().await?;
    report.heading(&format!(
        "lineup-bench, {} ({} cores, {}), Redis {}",
        chrono::Utc::now().format("%Y-%m-%d"),
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1),
        std::env::consts::ARCH,
        bench.redis_version().await
    ));
    for section in sections {
        (section.run)(&bench, &mut report).await;
    }
    report.print();
    Ok(())
}
