//! The `addnorm` command line: `train`, `probe`, `sweep` and `demo`.
//!
//! Every command takes `--backend` (where several are compiled in), `--seed` and `--out`,
//! and writes a `config.json` of everything needed to rerun it. Bad arguments exit with
//! code 2 and a message naming the argument; a diverged `train` exits with code 1.
//!
//! One concept per file: [`command_line`] (the commands), [`args`] (the arguments of each
//! and the configurations they build), [`parse`] (the value parsers), [`plan`] (a command
//! with its configuration, built once, and running it), [`print`](mod@print) (what they
//! print) and [`dispatch`] (the backend chosen at run time).
//!
//! # Shapes
//! Not applicable: this module parses arguments and dispatches to the lab's commands.

pub mod args;
pub mod command_line;
pub mod dispatch;
pub mod parse;
pub mod plan;
pub mod print;
pub mod processes;

use std::path::Path;

use addnorm::backend::Kind;
use clap::Parser;

use plan::Plan;

pub use args::{
    CommonArgs, DemoArgs, MergeArgs, ModelArgs, ParallelArgs, ProbeArgs, ReportArgs, SweepArgs,
    TaskArgs, TrainArgs,
};
pub use command_line::{Cli, Command};

/// Checks that `--out` can be created and written, before any work starts.
fn check_writable(out: &Path) -> Result<(), String> {
    // Unique to the process: workers sharing --out start together.
    let probe = out.join(format!(".addnorm-write-test-{}", std::process::id()));
    std::fs::create_dir_all(out)
        .and_then(|_| std::fs::write(&probe, b""))
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {}: cannot write there: {e}", out.display()))
}

/// Refuses a task the generator cannot pose (a Markov language with under 4 symbols),
/// widths the attention cannot split into heads, and `train`'s block options that its
/// placement cannot take.
fn check_task(command: &Command) -> Result<(), String> {
    match command {
        Command::Train(a) => a
            .task
            .check()
            .and(a.model.check())
            .and(a.recipes.check(a.placement)),
        Command::Probe(a) => a.task.check().and(a.model.check()),
        Command::Sweep(a) => a.task.check().and(a.model.check()),
        Command::Demo(_) | Command::Report(_) | Command::Merge(_) => Ok(()),
    }
}

/// Refuses a plan whose largest run would exhaust this machine's memory, or any
/// machine's time.
fn check_cost(plan: &Plan) -> Result<(), String> {
    plan.largest_run().map_or(Ok(()), |run| {
        crate::runner::resources::check(&run, crate::runner::resources::available_bytes())
    })
}

/// The backend a command runs on, if it runs any.
fn backend(command: &Command) -> Option<Kind> {
    match command {
        Command::Train(a) => Some(a.common.backend),
        Command::Probe(a) => Some(a.common.backend),
        Command::Sweep(a) => Some(a.common.backend),
        Command::Demo(a) => Some(a.common.backend),
        Command::Report(_) | Command::Merge(_) => None,
    }
}

/// Every check, before any work: a task the generator cannot pose would panic in it, a run
/// too large for the machine would abort in an allocation, a missing driver would panic
/// inside Burn's device thread, and an unwritable --out would lose a finished run. The
/// arguments are checked before the machine, so a bad argument is named as such on any
/// machine, with or without a GPU driver. The configuration is built once, after the
/// task's check.
fn checked_plan(command: &Command) -> Result<Plan<'_>, String> {
    check_task(command)?;
    let plan = Plan::of(command);
    check_cost(&plan)?;
    backend(command).map_or(Ok(()), |b| b.check_available())?;
    check_writable(plan.out())?;
    Ok(plan)
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
    let plan = match checked_plan(&cli.command) {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("error: {message}");
            return 2;
        }
    };
    // Every step reuses the last step's buffers instead of faulting in fresh pages.
    addnorm::kernels::cpu::allocator::keep_freed_memory();
    let result = plan.run();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}
