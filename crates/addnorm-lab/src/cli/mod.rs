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

/// Refuses a task the generator cannot pose (a Markov language with under 4 symbols).
fn check_task(command: &Command) -> Result<(), String> {
    match command {
        Command::Train(a) => a.task.check(),
        Command::Probe(a) => a.task.check(),
        Command::Sweep(a) => a.task.check(),
        Command::Demo(_) | Command::Report(_) | Command::Merge(_) => Ok(()),
    }
}

/// Refuses a model that the plan would build and whose `init` would panic (widths the
/// attention cannot split into heads, a block option its placement cannot take, ...):
/// every distinct model goes through [`addnorm::nn::TransformerStackConfig::check`], and
/// the message names the flags behind the refused field ([`args::model_refusal`]).
fn check_models(plan: &Plan) -> Result<(), String> {
    plan.models()
        .iter()
        .try_for_each(|stack| stack.check().map_err(|e| args::model_refusal(&e, stack)))
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
/// task's check; its models are checked before their cost.
fn checked_plan(command: &Command) -> Result<Plan<'_>, String> {
    check_task(command)?;
    let plan = Plan::of(command);
    check_models(&plan)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The plan of `addnorm <args>`, parsed as the command line would be.
    fn command(args: &[&str]) -> Command {
        let args = ["addnorm"].iter().chain(args).copied();
        Cli::try_parse_from(args)
            .expect("the arguments parse")
            .command
    }

    fn models_check(args: &[&str]) -> Result<(), String> {
        check_models(&Plan::of(&command(args)))
    }

    #[test]
    fn a_width_the_heads_do_not_divide_is_refused_naming_the_flags() {
        for name in ["train", "probe", "sweep"] {
            let args = [name, "--out", "unused", "--d-model", "30", "--heads", "4"];
            assert_eq!(
                models_check(&args),
                Err(
                    "--d-model 30 and --heads 4: TransformerStackConfig.block.d_model (30) \
                     must be a positive multiple of n_heads (4)"
                        .to_string()
                ),
                "{name}"
            );
        }
        // The command's default head count counts too: train's is 2.
        let refusal = models_check(&["train", "--out", "unused", "--d-model", "31"]);
        assert!(
            refusal
                .unwrap_err()
                .starts_with("--d-model 31 and --heads 2: ")
        );
    }

    #[test]
    fn residual_gating_on_a_parallel_block_is_refused_naming_the_flags() {
        let args = [
            "train",
            "--out",
            "unused",
            "--placement",
            "parallel",
            "--residual-gate",
        ];
        assert_eq!(
            models_check(&args),
            Err(
                "--residual-gate with --placement parallel: TransformerBlockConfig.residual_gate \
                 replaces a residual sum x + F(x) by a GRU cell; placement parallel with \
                 conditioning None has none to replace"
                    .to_string()
            )
        );
        let pre = ["train", "--out", "unused", "--residual-gate"];
        assert_eq!(models_check(&pre), Ok(()));
    }

    #[test]
    fn every_distinct_model_of_the_plan_is_checked() {
        for args in [
            &[
                "train",
                "--out",
                "unused",
                "--normformer",
                "--layer-scale",
                "0.1",
            ][..],
            &["probe", "--out", "unused"],
            &["sweep", "--out", "unused", "--d-model", "64"],
        ] {
            assert_eq!(models_check(args), Ok(()), "{args:?}");
        }
        let models = |args: &[&str]| Plan::of(&command(args)).models().len();
        // Probe: 2 placements × 1 norm × 4 depths; sweep: 2 placements × 2 depths (its
        // warm-ups, learning rates and seeds share a model).
        assert_eq!(models(&["probe", "--out", "unused"]), 8);
        assert_eq!(models(&["sweep", "--out", "unused", "--depths", "2,3"]), 4);
        assert_eq!(models(&["demo", "--out", "unused"]), 0);
    }
}
