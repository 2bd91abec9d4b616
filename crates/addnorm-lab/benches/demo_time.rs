//! The demo's time limit, checked by a benchmark (not a test): `addnorm demo` must finish in
//! at most 5 minutes on 2 CPU cores with the default features.
//!
//! ```text
//! cargo bench --bench demo_time
//! ```
//!
//! It runs the demo as `addnorm demo` does (the quick configuration, the default `--jobs`
//! and the seed count that goes with it, `keep_freed_memory`) once on ndarray into a temporary directory, and
//! prints the wall time against the 300 s budget and the claims' outcome.

use std::time::Instant;

use addnorm_lab::study::{DemoConfig, DemoOptions, default_seeds, demo_with};

const BUDGET_SECONDS: f64 = 300.0;

fn main() {
    // As the `addnorm` binary does.
    addnorm::kernels::cpu::allocator::keep_freed_memory();
    let out = std::env::temp_dir().join(format!("addnorm-demo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&out).expect("temporary directory");
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let options = DemoOptions::new(addnorm::backend::Kind::Ndarray, false);
    let seeds = default_seeds(options.plan);
    let config = DemoConfig::quick(addnorm::backend::Kind::Ndarray, 0).with_seed_count(seeds);
    let started = Instant::now();
    let report = demo_with::<addnorm::backend::ndarray::AutodiffBackend>(
        &config,
        &out,
        &options,
        &addnorm::backend::ndarray::device(),
    )
    .expect("the demo runs")
    .report
    .expect("no other worker shares the directory");
    let seconds = started.elapsed().as_secs_f64();
    let steps: usize = report.runs.iter().map(|r| r.losses.len()).sum();
    println!(
        "addnorm demo, quick configuration, ndarray, {threads} threads available, --jobs {}, \
         {seeds} seeds",
        options.plan.jobs
    );
    println!("| what | value |\n|---|---|");
    println!("| wall time | {seconds:.1} s |");
    println!("| budget | {BUDGET_SECONDS:.0} s |");
    println!(
        "| fraction of budget | {:.0}% |",
        100.0 * seconds / BUDGET_SECONDS
    );
    println!("| probe runs (A) | {} |", report.probe.results.len());
    println!(
        "| training runs (B) | {} ({steps} steps) |",
        report.runs.len()
    );
    println!(
        "| verdicts | {} |",
        addnorm_lab::study::claim::headline(&report.claims)
    );
    println!(
        "{}",
        if seconds <= BUDGET_SECONDS {
            "within budget"
        } else {
            "OVER BUDGET"
        }
    );
    std::fs::remove_dir_all(&out).ok();
}
