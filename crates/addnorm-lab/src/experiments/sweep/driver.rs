//! A sweep worker: trains its share of the grid (its shard, the runs no live worker holds),
//! `plan.jobs` at a time, and writes `sweep.json` once every run is finished.
//!
//! ```text
//! runs       runs/<name>/ (summary.json when finished; resumed from a checkpoint otherwise)
//! outcome    Complete (sweep.json written) | Waiting (others hold runs) | ShardDone
//! ```
//!
//! # Shapes
//! Not applicable: a driver over [`crate::runner::worker`].

use std::path::Path;
use std::time::Duration;

use addnorm::NormAutodiffBackend;

use super::aggregate::{aggregate, summarize};
use super::config::{GridPoint, SweepConfig};
use super::record::SweepReport;
use crate::error::{LabError, write_json};
use crate::runner::jobs::JobPlan;
use crate::runner::lease::Holder;
use crate::runner::shard::Shard;
use crate::runner::worker::{RunState, finished, still_held, train_claimed};

/// How a sweep worker runs: progress, concurrency, its shard, and when a claim is stale.
#[derive(Clone, Copy, Debug)]
pub struct SweepOptions {
    /// Show a progress bar.
    pub progress: bool,
    /// Runs at once, threads per run.
    pub plan: JobPlan,
    /// The part of the grid this worker takes.
    pub shard: Shard,
    /// A claim whose heartbeat is older than this is taken over.
    pub stale_after: Duration,
}

impl Default for SweepOptions {
    fn default() -> Self {
        Self {
            progress: false,
            plan: JobPlan::sequential(),
            shard: Shard::default(),
            stale_after: Duration::from_secs(300),
        }
    }
}

/// What a sweep worker ended with.
#[derive(Debug)]
pub enum SweepOutcome {
    /// Every run is finished; `sweep.json` is written.
    Complete(Box<SweepReport>),
    /// This worker's runs are finished; others hold these runs (name, holder).
    Waiting(Vec<(String, Holder)>),
    /// Every run of this shard is finished (a shard writes no `sweep.json`).
    ShardDone(usize),
}

/// Trains run `p` unless it is finished or another worker holds it.
fn run_point<B: NormAutodiffBackend>(
    config: &SweepConfig,
    out: &Path,
    p: &GridPoint,
    stale_after: Duration,
    device: &B::Device,
) -> Result<RunState, LabError> {
    let name = config.run_name(p);
    train_claimed::<B>(out, &name, &config.point_config(p), stale_after, device)
}

/// The report of the runs finished in `out`, or the names of those that are not.
///
/// # Errors
/// If `sweep.json` cannot be written.
pub fn collect(
    config: &SweepConfig,
    out: &Path,
) -> Result<Result<SweepReport, Vec<String>>, LabError> {
    let mut runs = vec![];
    let mut missing = vec![];
    for p in config.grid() {
        let name = config.run_name(&p);
        let train_config = config.point_config(&p);
        match finished(&out.join("runs").join(&name), train_config.steps) {
            Some(s) => runs.push(summarize(&train_config, config.norm, &s)),
            None => missing.push(name),
        }
    }
    if !missing.is_empty() {
        return Ok(Err(missing));
    }
    let (cells, configurations) = aggregate(config, &runs);
    let report = SweepReport {
        config: config.clone(),
        runs,
        cells,
        configurations,
    };
    write_json(&out.join("sweep.json"), &report)?;
    Ok(Ok(report))
}

/// Runs (or continues) this worker's share of the sweep in `out`; writes `sweep.json` once
/// every run of the grid is finished. Any number of workers may share `out`.
///
/// # Errors
/// If a run directory cannot be written or read.
pub fn sweep<B>(
    config: &SweepConfig,
    out: &Path,
    options: &SweepOptions,
    device: &B::Device,
) -> Result<SweepOutcome, LabError>
where
    B: NormAutodiffBackend,
{
    let mine: Vec<GridPoint> = config
        .grid()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| options.shard.takes(*i))
        .map(|(_, p)| p)
        .collect();
    let bar = crate::runner::jobs::runs_bar(mine.len(), "sweep", options.progress);
    let states = crate::runner::jobs::run_jobs(&mine, options.plan, |p| {
        let state = run_point::<B>(config, out, p, options.stale_after, device);
        bar.set_message(config.run_name(p));
        bar.inc(1);
        state
    })
    .into_iter()
    .collect::<Result<Vec<RunState>, LabError>>()?;
    bar.finish_and_clear();
    // A run held when this worker reached it may have finished since.
    let held = still_held(states, |name| {
        finished(&out.join("runs").join(name), config.steps).is_some()
    });
    if !held.is_empty() {
        return Ok(SweepOutcome::Waiting(held));
    }
    if !options.shard.is_whole() {
        return Ok(SweepOutcome::ShardDone(mine.len()));
    }
    match collect(config, out)? {
        Ok(report) => Ok(SweepOutcome::Complete(Box::new(report))),
        // Only a worker on another shard can leave runs missing here.
        Err(missing) => Ok(SweepOutcome::Waiting(
            missing
                .into_iter()
                .map(|name| (name, Holder::unknown()))
                .collect(),
        )),
    }
}
