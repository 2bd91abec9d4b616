//! The `addnorm` command line ([`Cli`]) and its commands ([`Command`]), with the defaults
//! each command gives the shared [`ModelArgs`](super::args::ModelArgs).
//!
//! ```text
//!            --d-model   --heads          --d-ff
//! train      32          2                128
//! probe      64          4                256
//! sweep      32          d_model / 16     4 · d_model
//! ```
//!
//! # Shapes
//! Not applicable: argument parsing.

use clap::{Parser, Subcommand};

use super::args::{DemoArgs, MergeArgs, ProbeArgs, ReportArgs, SweepArgs, TrainArgs};

/// Normalization layers and their training behaviour, on Burn.
#[derive(Parser, Debug)]
#[command(name = "addnorm", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The lab's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one configuration on a toy task.
    #[command(
        mut_arg("heads", |a| a.default_value("2")),
        mut_arg("d_ff", |a| a.default_value("128"))
    )]
    Train(TrainArgs),
    /// Experiment A: gradients at initialization across placements, norms and depths.
    #[command(
        mut_arg("d_model", |a| a.default_value("64")),
        mut_arg("heads", |a| a.default_value("4")),
        mut_arg("d_ff", |a| a.default_value("256"))
    )]
    Probe(ProbeArgs),
    /// Experiment B: warm-up and learning rate, divergence and speed.
    #[command(
        mut_arg("heads", |a| a.help("Attention heads [default: d_model / 16]")),
        mut_arg("d_ff", |a| a.help("Feed-forward width [default: 4 · d_model]"))
    )]
    Sweep(SweepArgs),
    /// Quick versions of A and B, with a report and plots (the main job).
    Demo(DemoArgs),
    /// A sweep's report from the finished runs in --out alone (exit 2 naming missing runs).
    Report(ReportArgs),
    /// Join the directories of a sweep's shards into --out.
    Merge(MergeArgs),
}
