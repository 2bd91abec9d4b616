//! The worker processes of `addnorm demo --processes P`: the command starts `P − 1` copies
//! of itself on the same `--out` (`--helper`), computes its own share, waits for them, and
//! writes the report (helpers never do, so two processes never write it at once).
//!
//! Why processes and not more jobs in one process: Burn's autodiff graph registry is one
//! per process, and its clean-up after each backward pass takes one lock over every graph
//! in it and frees their memory there; two training loops in one process wait on that lock
//! and on glibc's heap locks. On 2 cores, two jobs in one process kept the cores 170–188%
//! busy; two processes on the same `--out` ran the same demo 1.11× faster with the same CPU
//! time and the same results (the lab's PERFORMANCE.md). The processes share nothing but
//! the run directory, whose claims ([`crate::runner::lease`]) already split its parts and
//! runs between workers.
//!
//! # Shapes
//! Not applicable: process management.

use std::process::{Child, Command, Stdio};

use super::args::DemoArgs;
use crate::error::LabError;

/// The helper processes started for one `addnorm demo`; they are killed if this value is
/// dropped before [`Helpers::wait`] (this worker failed), so none outlives it.
pub struct Helpers(Vec<Child>);

impl Helpers {
    /// Starts `args.processes() − 1` helpers (none for a helper or one process), each with
    /// [`DemoArgs::helper_args`]: stdout discarded (this worker prints the progress and the
    /// report), stderr shared (their errors show).
    ///
    /// # Errors
    /// If this executable cannot be found or started.
    pub fn spawn(args: &DemoArgs) -> Result<Self, LabError> {
        let count = args.processes().saturating_sub(1);
        if count == 0 {
            return Ok(Self(vec![]));
        }
        let exe = std::env::current_exe().map_err(|e| LabError::io("the addnorm executable", e))?;
        let helper_args = args.helper_args();
        let mut children = Vec::with_capacity(count);
        for _ in 0..count {
            let child = Command::new(&exe)
                .args(&helper_args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| LabError::io(&exe, e))?;
            children.push(child);
        }
        Ok(Self(children))
    }

    /// Whether no helper was started.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Waits for every helper; returns how many exited with an error (their claims are then
    /// stale at once, since their processes are gone, and the next pass takes them over).
    pub fn wait(mut self) -> usize {
        let children = std::mem::take(&mut self.0);
        children
            .into_iter()
            .map(|mut child| child.wait().is_ok_and(|status| status.success()))
            .filter(|ok| !ok)
            .count()
    }
}

impl Drop for Helpers {
    fn drop(&mut self) {
        for child in &mut self.0 {
            // Best effort: a helper that already exited cannot be killed.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::args::DemoArgs;
    use super::super::command_line::{Cli, Command};
    use crate::runner::jobs::{JobPlan, cores};

    fn demo_args(flags: &[&str]) -> DemoArgs {
        // ndarray named: a build with `wgpu` or `cuda` prefers those.
        let argv = ["addnorm", "demo", "--backend", "ndarray", "--out", "runs/x"]
            .iter()
            .chain(flags);
        match Cli::try_parse_from(argv).expect("valid flags").command {
            Command::Demo(args) => args,
            other => panic!("parsed {other:?}"),
        }
    }

    fn config_json(args: &DemoArgs) -> String {
        serde_json::to_string(&args.config()).expect("serializable")
    }

    #[test]
    fn by_default_each_core_gets_a_process_of_one_job_and_the_seeds_are_unchanged() {
        let args = demo_args(&[]);
        assert_eq!(args.processes(), cores());
        assert_eq!(
            args.options().plan,
            JobPlan {
                jobs: 1,
                threads: 1
            }
        );
        // The seed count is the one `cores` jobs in one process had (8 on 2 cores).
        let jobs = JobPlan::new(None, None, addnorm::backend::Kind::Ndarray);
        assert_eq!(args.seeds(), crate::study::default_seeds(jobs));
        assert!(args.options().progress);
    }

    #[test]
    fn explicit_jobs_keep_one_process_and_explicit_processes_win() {
        let args = demo_args(&["--jobs", "2"]);
        assert_eq!(args.processes(), 1);
        assert_eq!(args.options().plan.jobs, 2);
        let args = demo_args(&["--processes", "3", "--jobs", "2", "--threads", "1"]);
        assert_eq!(args.processes(), 3);
        assert_eq!(
            args.options().plan,
            JobPlan {
                jobs: 2,
                threads: 1
            }
        );
        assert_eq!(args.seeds(), 10, "6 runs at once: 4 per job, at most 10");
    }

    #[test]
    fn a_helper_runs_the_same_configuration_quietly_and_starts_no_one() {
        for flags in [
            &[][..],
            &["--full", "--seed", "7"],
            &["--processes", "2", "--seeds", "3"],
        ] {
            let parent = demo_args(flags);
            let argv: Vec<std::ffi::OsString> = std::iter::once("addnorm".into())
                .chain(parent.helper_args())
                .collect();
            let helper = match Cli::try_parse_from(argv)
                .expect("helper flags parse")
                .command
            {
                Command::Demo(args) => args,
                other => panic!("parsed {other:?}"),
            };
            assert_eq!(config_json(&helper), config_json(&parent), "{flags:?}");
            assert_eq!(helper.out(), parent.out());
            assert_eq!(helper.processes(), 1);
            assert_eq!(helper.options().plan, parent.options().plan);
            assert!(!helper.options().progress);
            assert!(
                !helper.options().writes_report,
                "the first worker writes it"
            );
            assert!(parent.options().writes_report);
        }
    }
}
