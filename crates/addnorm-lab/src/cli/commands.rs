//! What each `addnorm` command does with its arguments: run the lab's code on the named
//! backend, print the outcome, and return the exit code (0 done, 1 diverged, 2 refused).
//!
//! # Shapes
//! Not applicable.

use super::args::{DemoArgs, ProbeArgs, SweepArgs, TrainArgs};
use super::dispatch::with_backend;
use crate::error::{LabError, write_json};
use crate::experiments::probe::ProbeConfig;
use crate::experiments::sweep::{SweepConfig, sweep as run_sweep};
use crate::experiments::train::{TrainConfig, TrainOptions};
use crate::runner::config_diff::adopt_config;
use crate::study::{DemoConfig, demo_with};

/// `addnorm train`: trains `config`.
pub fn train(args: &TrainArgs, config: &TrainConfig) -> Result<i32, LabError> {
    let options = TrainOptions {
        resume: args.resume,
        progress: true,
        inject_nan_at: args.inject_nan_at,
    };
    let out = &args.common.out;
    let summary = crate::runner::jobs::on_own_pool(None, || {
        with_backend!(config.model.backend, |B, device| {
            crate::experiments::train::train::<B>(config, out, &options, &device)
        })
    })?;
    if let Some(d) = &summary.diverged {
        super::print::print_divergence(d, out);
        return Ok(1);
    }
    super::print::print_trained(&summary, out);
    Ok(0)
}

/// `addnorm probe`: measures `config`.
pub fn probe(args: &ProbeArgs, config: &ProbeConfig) -> Result<i32, LabError> {
    let out = &args.common.out;
    write_json(&out.join("config.json"), config)?;
    let report = with_backend!(config.model.backend, |B, device| {
        crate::experiments::probe::probe::<B>(config, Some(out), true, &device)
    })?;
    super::print::print_probe(&report, out);
    Ok(0)
}

/// `addnorm sweep`: runs this worker's share of the grid and prints the tables once every
/// run is finished.
pub fn sweep(args: &SweepArgs, config: &SweepConfig) -> Result<i32, LabError> {
    let out = args.out();
    if let Some(d) = adopt_config(config, out)? {
        eprintln!(
            "error: --out {} holds a sweep of another configuration ({d}); use another --out",
            out.display()
        );
        return Ok(2);
    }
    let options = args.options();
    let outcome = with_backend!(config.model.backend, |B, device| {
        run_sweep::<B>(config, out, &options, &device)
    })?;
    super::print::print_sweep_outcome(&outcome, out);
    Ok(0)
}

/// `addnorm demo`: runs this worker's share of `config`.
pub fn demo(args: &DemoArgs, config: &DemoConfig) -> Result<i32, LabError> {
    let options = args.options();
    let out = args.out();
    if let Some(d) = adopt_config(config, out)? {
        eprintln!(
            "error: --out {} holds a demo of another configuration ({d}); use another --out \
             or the same flags",
            out.display()
        );
        return Ok(2);
    }
    let outcome = with_backend!(config.backend(), |B, device| {
        demo_with::<B>(config, out, &options, &device)
    })?;
    super::print::print_demo_outcome(&outcome, out);
    Ok(0)
}
