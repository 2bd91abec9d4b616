//! A command with its configuration built once ([`Plan`]): the model check and the cost
//! check read that configuration, and [`Plan::run`] runs it: the lab's code on the named
//! backend, the outcome printed, and the exit code returned (0 done, 1 diverged, 2 refused).
//!
//! ```text
//! arguments ──Plan::of──▶ configuration ──models───────▶ model check (each model's check)
//!                              ├──────largest_run──────▶ cost check
//!                              └──────────run──────────▶ train, probe, sweep, demo
//! ```
//!
//! # Shapes
//! Not applicable.

use std::path::Path;

use addnorm::nn::TransformerStackConfig;

use super::args::{DemoArgs, MergeArgs, ProbeArgs, ReportArgs, SweepArgs, TrainArgs};
use super::command_line::Command;
use super::dispatch::with_backend;
use crate::error::{LabError, write_json};
use crate::experiments::probe::ProbeConfig;
use crate::experiments::sweep::{SweepConfig, sweep as run_sweep};
use crate::experiments::train::{TrainConfig, TrainOptions};
use crate::runner::config_diff::adopt_config;
use crate::study::{DemoConfig, demo_since};

/// A command and the configuration it runs.
pub enum Plan<'a> {
    /// `addnorm train`.
    Train(&'a TrainArgs, TrainConfig),
    /// `addnorm probe`.
    Probe(&'a ProbeArgs, ProbeConfig),
    /// `addnorm sweep`.
    Sweep(&'a SweepArgs, SweepConfig),
    /// `addnorm demo`.
    Demo(&'a DemoArgs, Box<DemoConfig>),
    /// `addnorm report`.
    Report(&'a ReportArgs),
    /// `addnorm merge`.
    Merge(&'a MergeArgs),
}

impl<'a> Plan<'a> {
    /// Builds the configuration of `command` (its task must have passed its check).
    pub fn of(command: &'a Command) -> Self {
        match command {
            Command::Train(a) => Plan::Train(a, a.config()),
            Command::Probe(a) => Plan::Probe(a, a.config()),
            Command::Sweep(a) => Plan::Sweep(a, a.config()),
            Command::Demo(a) => Plan::Demo(a, Box::new(a.config())),
            Command::Report(a) => Plan::Report(a),
            Command::Merge(a) => Plan::Merge(a),
        }
    }

    /// The largest run it would train or probe, for [`crate::runner::resources::check`].
    pub fn largest_run(&self) -> Option<TrainConfig> {
        match self {
            Plan::Train(_, config) => Some(config.clone()),
            Plan::Probe(_, config) => Some(config.largest_run()),
            Plan::Sweep(_, config) => {
                let deepest = config.grid().into_iter().max_by_key(|p| p.depth)?;
                Some(config.point_config(&deepest))
            }
            Plan::Demo(..) | Plan::Report(_) | Plan::Merge(_) => None,
        }
    }

    /// The models it would build, one per distinct configuration, for
    /// [`TransformerStackConfig::check`]: `train`'s, each probe cell's (placement × norm ×
    /// depth), each sweep placement and depth's (its warm-ups, learning rates and seeds
    /// share a model); none for `demo`, whose models are its fixed experiments'.
    pub fn models(&self) -> Vec<TransformerStackConfig> {
        match self {
            Plan::Train(_, config) => vec![config.model.stack.clone()],
            Plan::Probe(_, config) => config
                .pairs()
                .into_iter()
                .flat_map(|(p, n)| {
                    config
                        .depths
                        .iter()
                        .map(move |&d| config.cell_model(p, n, d))
                })
                .collect(),
            Plan::Sweep(_, config) => {
                // The grid's order keeps the runs of one placement and depth together.
                let mut grid = config.grid();
                grid.dedup_by_key(|p| (p.placement, p.depth));
                let stack = |p| config.point_config(p).model.stack;
                grid.iter().map(stack).collect()
            }
            Plan::Demo(..) | Plan::Report(_) | Plan::Merge(_) => Vec::new(),
        }
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        match self {
            Plan::Train(a, _) => &a.common.out,
            Plan::Probe(a, _) => &a.common.out,
            Plan::Sweep(a, _) => &a.common.out,
            Plan::Demo(a, _) => &a.common.out,
            Plan::Report(a) => &a.out,
            Plan::Merge(a) => &a.out,
        }
    }

    /// Runs the command; returns the exit code.
    ///
    /// # Errors
    /// What the command fails with.
    pub fn run(&self) -> Result<i32, LabError> {
        match self {
            Plan::Train(a, config) => train(a, config),
            Plan::Probe(a, config) => probe(a, config),
            Plan::Sweep(a, config) => sweep(a, config),
            Plan::Demo(a, config) => demo(a, config),
            Plan::Report(a) => crate::runner::collect::run(&a.out),
            Plan::Merge(a) => crate::runner::merge::run(&a.dirs, &a.out),
        }
    }
}

/// `addnorm train`: trains `config`.
fn train(args: &TrainArgs, config: &TrainConfig) -> Result<i32, LabError> {
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
fn probe(args: &ProbeArgs, config: &ProbeConfig) -> Result<i32, LabError> {
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
fn sweep(args: &SweepArgs, config: &SweepConfig) -> Result<i32, LabError> {
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

/// `addnorm demo`: runs this worker's share of `config`, with `--processes − 1` helper
/// processes beside it ([`super::processes`]); once they are done, a second pass writes the
/// report if the first left it to them.
fn demo(args: &DemoArgs, config: &DemoConfig) -> Result<i32, LabError> {
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
    let started = std::time::Instant::now();
    let helpers = super::processes::Helpers::spawn(args)?;
    let pass = || {
        with_backend!(config.backend(), |B, device| {
            demo_since::<B>(config, out, &options, &device, started)
        })
    };
    let mut outcome = pass()?;
    if !helpers.is_empty() {
        let failed = helpers.wait();
        if failed > 0 {
            eprintln!(
                "warning: {failed} helper process(es) of this demo failed; this worker takes \
                 over what they held"
            );
        }
        if outcome.report.is_none() {
            outcome = pass()?;
        }
    }
    super::print::print_demo_outcome(&outcome, out);
    Ok(0)
}
