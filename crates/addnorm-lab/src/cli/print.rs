//! What the commands print: a run's outcome, the probe's slopes, and what a sweep or demo
//! worker ended with.
//!
//! # Shapes
//! Not applicable: text on the terminal.

use std::path::Path;

use crate::experiments::probe::ProbeReport;
use crate::experiments::sweep::SweepOutcome;
use crate::experiments::train::{Divergence, TrainSummary};
use crate::study::{DemoOutcome, claims_table};

/// Says on standard error where a run diverged and which checkpoint is kept.
pub fn print_divergence(d: &Divergence, out: &Path) {
    let kept = d
        .last_checkpoint
        .map_or("no checkpoint was written before it".to_string(), |s| {
            format!(
                "the last good checkpoint (step {s}) is kept in {}",
                out.display()
            )
        });
    eprintln!("error: diverged at step {}: {}; {kept}", d.step, d.reason);
}

/// A finished run's speed and final metrics, and where its files are.
pub fn print_trained(summary: &TrainSummary, out: &Path) {
    let e = summary.final_evaluation();
    println!(
        "trained {} steps in {:.1}s ({:.1} steps/s); validation loss {:.4}, token accuracy {:.1}%, exact {:.1}%{}",
        summary.steps_completed,
        summary.wall_seconds,
        summary.steps_per_second,
        e.map_or(f64::NAN, |e| e.loss),
        100.0 * e.map_or(0.0, |e| e.accuracy.token),
        100.0 * e.map_or(0.0, |e| e.accuracy.exact),
        summary
            .steps_to_99_exact
            .map_or(String::new(), |s| format!("; 99% exact at step {s}")),
    );
    println!("files: {}", out.display());
}

/// The probe's slopes, what Theorem 1 expects, and where `probe.json` is.
pub fn print_probe(report: &ProbeReport, out: &Path) {
    print!("{}", crate::experiments::probe::table::probe_table(report));
    println!("expected (Xiong et al. 2020, Theorem 1): post ≈ 0, pre ≈ −0.5");
    println!("files: {}", out.join("probe.json").display());
}

/// Prints what a worker ended with; the exit code is 0 in every case.
pub fn print_sweep_outcome(outcome: &SweepOutcome, out: &Path) {
    match outcome {
        SweepOutcome::Complete(report) => {
            print!(
                "{}",
                crate::experiments::sweep::tables::sweep_tables(report)
            );
            println!("files: {}", out.join("sweep.json").display());
        }
        SweepOutcome::Waiting(held) => {
            println!(
                "this worker is done; {} runs are still held by other workers, so the report is \
                 left to the last of them (or to `addnorm report --out {}`):",
                held.len(),
                out.display()
            );
            for (name, holder) in held {
                println!("  {name}: {holder}");
            }
        }
        SweepOutcome::ShardDone(n) => println!(
            "shard finished: {n} runs in {}; join the shards with `addnorm merge DIR... --out DIR`",
            out.display()
        ),
    }
}

/// Prints what a worker ended with.
pub fn print_demo_outcome(outcome: &DemoOutcome, out: &Path) {
    match &outcome.report {
        Some(report) => {
            println!("{}", claims_table(&report.claims));
            println!(
                "Claims: {}. In {:.0} s. Report: {}",
                crate::study::claim::headline(&report.claims),
                report.wall_seconds,
                out.join("report.md").display()
            );
        }
        None => {
            let held = &outcome.held;
            println!(
                "this worker is done; {} parts are still held by other workers, so the report \
                 is left to the last of them (rerun `addnorm demo` with the same --out to \
                 take over a dead worker's part):",
                held.len()
            );
            for (name, holder) in held {
                println!("  {name}: {holder}");
            }
        }
    }
}
