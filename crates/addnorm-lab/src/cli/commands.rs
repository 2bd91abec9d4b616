//! What each `addnorm` command does with its arguments: run the lab's code on the named
//! backend, print the outcome, and return the exit code (0 done, 1 diverged, 2 refused).
//!
//! # Shapes
//! Not applicable.

use std::path::Path;

use super::args::{DemoArgs, ProbeArgs, SweepArgs, TrainArgs};
use crate::cli::dispatch::with_backend;
use crate::error::{LabError, write_json};
use crate::experiments::sweep::{SweepOutcome, sweep as run_sweep};
use crate::experiments::train::TrainOptions;
use crate::runner::config_diff::adopt_config;
use crate::study::{DemoOutcome, claims_table, demo_with};

/// `addnorm train`.
pub fn train(args: &TrainArgs) -> Result<i32, LabError> {
    let config = args.config();
    let options = TrainOptions {
        resume: args.resume,
        progress: true,
        inject_nan_at: args.inject_nan_at,
    };
    let out = &args.common.out;
    let summary = crate::runner::jobs::on_own_pool(None, || {
        with_backend!(args.common.backend, |B, device| {
            crate::experiments::train::train::<B>(&config, out, &options, &device)
        })
    })?;
    if let Some(d) = &summary.diverged {
        let kept =
            d.last_checkpoint
                .map_or("no checkpoint was written before it".to_string(), |s| {
                    format!(
                        "the last good checkpoint (step {s}) is kept in {}",
                        out.display()
                    )
                });
        eprintln!("error: diverged at step {}: {}; {kept}", d.step, d.reason);
        return Ok(1);
    }
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
    Ok(0)
}

/// `addnorm probe`.
pub fn probe(args: &ProbeArgs) -> Result<i32, LabError> {
    let config = args.config();
    let out = &args.common.out;
    write_json(&out.join("config.json"), &config)?;
    let report = with_backend!(args.common.backend, |B, device| {
        crate::experiments::probe::probe::<B>(&config, Some(out), true, &device)
    })?;
    print!("{}", crate::experiments::probe::table::probe_table(&report));
    println!("expected (Xiong et al. 2020, Theorem 1): post ≈ 0, pre ≈ −0.5");
    println!("files: {}", out.join("probe.json").display());
    Ok(0)
}

/// Prints what a worker ended with; the exit code is 0 in every case.
fn print_sweep_outcome(outcome: &SweepOutcome, out: &Path) {
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

/// `addnorm sweep`: runs this worker's share of the grid and prints the tables once every
/// run is finished.
pub fn sweep(args: &SweepArgs) -> Result<i32, LabError> {
    let config = args.config();
    let out = args.out();
    if let Some(d) = adopt_config(&config, out)? {
        eprintln!(
            "error: --out {} holds a sweep of another configuration ({d}); use another --out",
            out.display()
        );
        return Ok(2);
    }
    let options = args.options();
    let outcome = with_backend!(config.model.backend, |B, device| {
        run_sweep::<B>(&config, out, &options, &device)
    })?;
    print_sweep_outcome(&outcome, out);
    Ok(0)
}

/// Prints what a worker ended with.
fn print_demo_outcome(outcome: &DemoOutcome, out: &Path) {
    match &outcome.report {
        Some(report) => {
            println!("{}", claims_table(&report.claims));
            let reproduced = report.claims.iter().filter(|c| c.reproduced).count();
            println!(
                "{reproduced}/{} claims reproduced in {:.0} s. Report: {}",
                report.claims.len(),
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

/// `addnorm demo`.
pub fn demo(args: &DemoArgs) -> Result<i32, LabError> {
    let options = args.options();
    let config = args.config();
    let out = args.out();
    if let Some(d) = adopt_config(&config, out)? {
        eprintln!(
            "error: --out {} holds a demo of another configuration ({d}); use another --out \
             or the same flags",
            out.display()
        );
        return Ok(2);
    }
    let outcome = with_backend!(config.backend(), |B, device| {
        demo_with::<B>(&config, out, &options, &device)
    })?;
    print_demo_outcome(&outcome, out);
    Ok(0)
}
