//! A command with its configuration built once ([`Plan`]): the cost check reads that
//! configuration, and the command runs it.
//!
//! ```text
//! arguments ──Plan::of──▶ configuration ──largest_run──▶ cost check
//!                              └──────────run──────────▶ commands
//! ```
//!
//! # Shapes
//! Not applicable.

use std::path::Path;

use super::args::{DemoArgs, MergeArgs, ProbeArgs, ReportArgs, SweepArgs, TrainArgs};
use super::command_line::Command;
use super::commands;
use crate::error::LabError;
use crate::experiments::probe::ProbeConfig;
use crate::experiments::sweep::SweepConfig;
use crate::experiments::train::TrainConfig;
use crate::study::DemoConfig;

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
            Plan::Train(a, config) => commands::train(a, config),
            Plan::Probe(a, config) => commands::probe(a, config),
            Plan::Sweep(a, config) => commands::sweep(a, config),
            Plan::Demo(a, config) => commands::demo(a, config),
            Plan::Report(a) => crate::runner::collect::run(&a.out),
            Plan::Merge(a) => crate::runner::merge::run(&a.dirs, &a.out),
        }
    }
}
