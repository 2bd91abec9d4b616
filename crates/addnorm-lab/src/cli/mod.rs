//! The `addnorm` command line: `train`, `probe`, `sweep` and `demo`.
//!
//! Every command takes `--backend` (where several are compiled in), `--seed` and `--out`,
//! and writes a `config.json` of everything needed to rerun it. Bad arguments exit with
//! code 2 and a message naming the argument; a diverged `train` exits with code 1.
//!
//! # Shapes
//! Not applicable: this module parses arguments and dispatches to the lab's commands.

//! [`args`] holds the arguments of each command and what they build; [`commands`] runs
//! them.

pub mod args;
pub mod commands;
pub mod dispatch;
pub mod parse;

use std::path::Path;

use clap::{Parser, Subcommand};

pub use args::{
    CommonArgs, DemoArgs, MergeArgs, ParallelArgs, ProbeArgs, ReportArgs, SweepArgs, TaskArgs,
    TrainArgs,
};

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
    Train(TrainArgs),
    /// Experiment A: gradients at initialization across placements, norms and depths.
    Probe(ProbeArgs),
    /// Experiment B: warm-up and learning rate, divergence and speed.
    Sweep(SweepArgs),
    /// Quick versions of A and B, with a report and plots (the main job).
    Demo(DemoArgs),
    /// A sweep's report from the finished runs in --out alone (exit 2 naming missing runs).
    Report(ReportArgs),
    /// Join the directories of a sweep's shards into --out.
    Merge(MergeArgs),
}

/// Checks that `--out` can be created and written, before any work starts.
fn check_writable(out: &Path) -> Result<(), String> {
    // Unique to the process: workers sharing --out start together.
    let probe = out.join(format!(".addnorm-write-test-{}", std::process::id()));
    std::fs::create_dir_all(out)
        .and_then(|_| std::fs::write(&probe, b""))
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {}: cannot write there: {e}", out.display()))
}

/// The largest run a command would train or probe, for [`crate::runner::resources::check`].
fn largest_run(command: &Command) -> Option<crate::experiments::train::TrainConfig> {
    match command {
        Command::Train(a) => Some(a.config()),
        Command::Probe(a) => Some(a.config().largest_run()),
        Command::Sweep(a) => {
            let config = a.config();
            let deepest = config.grid().into_iter().max_by_key(|p| p.depth)?;
            Some(config.point_config(&deepest))
        }
        Command::Demo(_) | Command::Report(_) | Command::Merge(_) => None,
    }
}

/// Refuses a task the generator cannot pose (a Markov language with under 4 symbols).
fn check_task(command: &Command) -> Result<(), String> {
    match command {
        Command::Train(a) => a.task.check(),
        Command::Probe(a) => a.task.check(),
        Command::Sweep(a) => a.task.check(),
        Command::Demo(_) | Command::Report(_) | Command::Merge(_) => Ok(()),
    }
}

/// Refuses a command whose largest run would exhaust this machine's memory, or any
/// machine's time.
fn check_cost(command: &Command) -> Result<(), String> {
    largest_run(command).map_or(Ok(()), |run| {
        crate::runner::resources::check(&run, crate::runner::resources::available_bytes())
    })
}

/// Parses the process arguments and runs the command; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            e.print().ok();
            return code;
        }
    };
    let (backend, out) = match &cli.command {
        Command::Train(a) => (Some(a.common.backend), &a.common.out),
        Command::Probe(a) => (Some(a.common.backend), &a.common.out),
        Command::Sweep(a) => (Some(a.common.backend), &a.common.out),
        Command::Demo(a) => (Some(a.common.backend), &a.common.out),
        Command::Report(a) => (None, &a.out),
        Command::Merge(a) => (None, &a.out),
    };
    // Every check comes before any work: a missing driver would otherwise panic inside
    // Burn's device thread, an unwritable --out would lose a finished run, and a run too
    // large for the machine would abort in an allocation.
    if let Err(message) = backend
        .map_or(Ok(()), |b| b.check_available())
        .and_then(|()| check_task(&cli.command))
        .and_then(|()| check_cost(&cli.command))
        .and_then(|()| check_writable(out))
    {
        eprintln!("error: {message}");
        return 2;
    }
    // Every step reuses the last step's buffers instead of faulting in fresh pages.
    addnorm::kernels::cpu::allocator::keep_freed_memory();
    let result = match &cli.command {
        Command::Train(a) => commands::train(a),
        Command::Probe(a) => commands::probe(a),
        Command::Sweep(a) => commands::sweep(a),
        Command::Demo(a) => commands::demo(a),
        Command::Report(a) => crate::runner::collect::run(&a.out),
        Command::Merge(a) => crate::runner::merge::run(&a.dirs, &a.out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
