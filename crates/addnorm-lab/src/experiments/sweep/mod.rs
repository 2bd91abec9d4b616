//! Experiment B: warm-up and learning rate (Xiong et al. 2020, §3.2; Wortsman et al. 2024).
//!
//! Trains every placement × depth × warm-up × LR × seed with no gradient clipping, and
//! reports
//!
//! ```text
//! divergence rate k/n      per cell; a run diverges if its loss or gradient becomes
//!                          non-finite, or its last 10 losses average above its first
//! final validation loss and accuracy, median steps to 99% exact accuracy   per cell
//! largest stable LR        per (placement, depth, warm-up): the largest LR with no divergence
//! LR sensitivity           E_η[ ℓ(η) − ℓ* ] over the LR grid (Wortsman et al. 2023,
//!                          crate::sensitivity): ℓ(η) the mean over seeds of min(final
//!                          validation loss, ℓ₀), a diverged seed counting as ℓ₀, the
//!                          initial validation loss; ℓ* the best ℓ(η) of every configuration
//! ```
//!
//! Each run lives in `runs/<name>/`; a run whose `summary.json` is complete is reused, and
//! an interrupted one resumes from its checkpoint, so rerunning a sweep continues it.
//!
//! # Shapes
//! Not applicable: a sweep is a grid of [`crate::train`](mod@crate::train) runs.

pub mod tables;

use std::path::Path;
use std::time::Duration;

use addnorm::NormAutodiffBackend;
use addnorm::backend::Kind;
use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use crate::error::{LabError, write_json};
use crate::grid::{NormKind, stack_config};
use crate::jobs::JobPlan;
use crate::lease::Holder;
use crate::sensitivity::{LossTable, sensitivities};
use crate::shard::Shard;
use crate::task::Task;
use crate::train::{Evaluation, TrainConfig, TrainSummary};
pub use crate::worker::finished;
use crate::worker::{RunState, still_held, train_claimed};

/// The grid of a sweep. Saved in `sweep.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SweepConfig {
    /// The task.
    pub task: Task,
    /// Placements.
    pub placements: Vec<Placement>,
    /// The norm of every norm-bearing placement.
    pub norm: NormKind,
    /// Depths.
    pub depths: Vec<usize>,
    /// Warm-up lengths.
    pub warmups: Vec<usize>,
    /// Peak learning rates.
    pub learning_rates: Vec<f64>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Steps per run.
    pub steps: usize,
    /// Model width (heads: d_model / 16, d_ff: 4·d_model).
    pub d_model: usize,
    /// Batch size.
    pub batch_size: usize,
    /// The backend (informative).
    pub backend: Kind,
}

/// One run of the grid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepRun {
    /// The placement name.
    pub placement: Placement,
    /// The norm name.
    pub norm: NormKind,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// Peak LR.
    pub learning_rate: f64,
    /// Seed.
    pub seed: u64,
    /// Whether it diverged (see the module docs).
    pub diverged: bool,
    /// Final validation loss (NaN when it stopped on a non-finite value).
    pub final_loss: f64,
    /// Final token accuracy.
    pub final_token_accuracy: f64,
    /// Final exact-sequence accuracy.
    pub final_exact_accuracy: f64,
    /// First evaluated step with ≥ 99% exact accuracy.
    pub steps_to_99_exact: Option<usize>,
    /// ℓ₀: the validation loss of the initial model (the training loss of step 0 for
    /// runs recorded before the initial evaluation existed).
    pub initial_loss: f64,
    /// Training losses, every step.
    pub losses: Vec<f64>,
    /// Global gradient norms before clipping, every step.
    #[serde(default)]
    pub grad_norms: Vec<f64>,
    /// The initial evaluation (step 0), then every evaluation of the run.
    #[serde(default)]
    pub evaluations: Vec<Evaluation>,
}

/// The aggregate of one (placement, depth, warm-up, LR) cell over its seeds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepCell {
    /// The placement name.
    pub placement: Placement,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// Peak LR.
    pub learning_rate: f64,
    /// Diverged runs.
    pub diverged: usize,
    /// Runs.
    pub runs: usize,
    /// Mean final validation loss of the runs that did not diverge (NaN if none).
    pub mean_final_loss: f64,
    /// Mean final exact accuracy over all runs (diverged count as 0).
    pub mean_exact_accuracy: f64,
    /// Mean final token accuracy over all runs (diverged count as 0).
    pub mean_token_accuracy: f64,
    /// Median steps to 99% exact accuracy over the runs that reached it.
    pub median_steps_to_99: Option<usize>,
}

/// Per (placement, depth, warm-up): stability across the LR grid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepConfiguration {
    /// The placement name.
    pub placement: Placement,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// The largest LR at which no seed diverged.
    pub largest_stable_lr: Option<f64>,
    /// Wortsman et al.'s LR sensitivity against the best loss of every configuration of
    /// the sweep (lower is more robust; see [`crate::sensitivity`]).
    pub lr_sensitivity: f64,
}

/// What `sweep.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SweepReport {
    /// The grid.
    pub config: SweepConfig,
    /// Every run.
    pub runs: Vec<SweepRun>,
    /// Every cell.
    pub cells: Vec<SweepCell>,
    /// Every configuration.
    pub configurations: Vec<SweepConfiguration>,
}

impl SweepConfig {
    /// The training configuration of one run.
    pub fn train_config(
        &self,
        placement: Placement,
        depth: usize,
        warmup: usize,
        lr: f64,
        seed: u64,
    ) -> TrainConfig {
        let model = stack_config(
            self.d_model,
            (self.d_model / 16).max(1),
            4 * self.d_model,
            depth,
            placement,
            self.norm,
        );
        TrainConfig::for_task(self.task, model)
            .with_learning_rate(lr)
            .with_warmup_steps(warmup)
            .with_steps(self.steps)
            .with_batch_size(self.batch_size)
            .with_seed(seed)
            .with_eval_every((self.steps / 8).max(1))
            .with_stats_every(self.steps)
            // Four checkpoints a run, so that a run taken over from a dead worker resumes
            // from at most a quarter back.
            .with_checkpoint_every((self.steps / 4).max(1))
            .with_validation_size(128)
            .with_backend(self.backend)
    }
}

/// The directory name of one run.
pub fn run_name(
    placement: Placement,
    norm: NormKind,
    depth: usize,
    warmup: usize,
    lr: f64,
    seed: u64,
) -> String {
    format!(
        "{placement}-{}-L{depth}-w{warmup}-lr{lr:e}-s{seed}",
        norm.name()
    )
}

/// Turns a finished run's summary into its [`SweepRun`].
pub fn summarize(config: &TrainConfig, norm: NormKind, summary: &TrainSummary) -> SweepRun {
    let first_loss = summary.losses.first().copied().unwrap_or(f64::NAN);
    let tail = &summary.losses[summary.losses.len().saturating_sub(10)..];
    let tail_mean = tail.iter().sum::<f64>() / tail.len().max(1) as f64;
    // A NaN tail counts as diverged too: `partial_cmp` is None then.
    let worse_than_start = !matches!(
        tail_mean.partial_cmp(&first_loss),
        Some(core::cmp::Ordering::Less | core::cmp::Ordering::Equal)
    );
    let diverged = summary.diverged.is_some() || worse_than_start;
    let last = summary.final_evaluation();
    SweepRun {
        placement: config.model.placement,
        norm,
        depth: config.model.n_layers,
        warmup: config.warmup_steps,
        learning_rate: config.learning_rate,
        seed: config.seed,
        diverged,
        final_loss: if summary.diverged.is_some() {
            f64::NAN
        } else {
            last.map_or(f64::NAN, |e| e.loss)
        },
        final_token_accuracy: last.map_or(0.0, |e| e.accuracy.token),
        final_exact_accuracy: last.map_or(0.0, |e| e.accuracy.exact),
        steps_to_99_exact: summary.steps_to_99_exact,
        initial_loss: summary
            .initial_evaluation
            .as_ref()
            .map_or(first_loss, |e| e.loss),
        losses: summary.losses.clone(),
        grad_norms: summary.grad_norms.clone(),
        evaluations: summary
            .initial_evaluation
            .iter()
            .chain(&summary.evaluations)
            .cloned()
            .collect(),
    }
}

fn median(mut v: Vec<usize>) -> Option<usize> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The aggregate of one cell's runs (one LR of one configuration).
fn cell(
    (placement, depth, warmup, lr): (Placement, usize, usize, f64),
    group: &[&SweepRun],
) -> SweepCell {
    let ok: Vec<&&SweepRun> = group.iter().filter(|r| !r.diverged).collect();
    let n = group.len() as f64;
    let mean_of_ok = |f: fn(&SweepRun) -> f64| {
        group
            .iter()
            .map(|r| if r.diverged { 0.0 } else { f(r) })
            .sum::<f64>()
            / n
    };
    SweepCell {
        placement,
        depth,
        warmup,
        learning_rate: lr,
        diverged: group.len() - ok.len(),
        runs: group.len(),
        mean_final_loss: if ok.is_empty() {
            f64::NAN
        } else {
            ok.iter().map(|r| r.final_loss).sum::<f64>() / ok.len() as f64
        },
        mean_exact_accuracy: mean_of_ok(|r| r.final_exact_accuracy),
        mean_token_accuracy: mean_of_ok(|r| r.final_token_accuracy),
        median_steps_to_99: median(group.iter().filter_map(|r| r.steps_to_99_exact).collect()),
    }
}

/// Aggregates runs into cells and configurations. Every configuration's LR sensitivity is
/// measured against the best loss of all of them ([`crate::sensitivity`]).
pub fn aggregate(
    config: &SweepConfig,
    runs: &[SweepRun],
) -> (Vec<SweepCell>, Vec<SweepConfiguration>) {
    let mut cells = vec![];
    let mut keys = vec![];
    let mut tables = vec![];
    for &placement in &config.placements {
        for &depth in &config.depths {
            for &warmup in &config.warmups {
                let mine: Vec<&SweepRun> = runs
                    .iter()
                    .filter(|r| r.placement == placement && r.depth == depth && r.warmup == warmup)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                for &lr in &config.learning_rates {
                    let group: Vec<&SweepRun> = mine
                        .iter()
                        .copied()
                        .filter(|r| r.learning_rate == lr)
                        .collect();
                    if !group.is_empty() {
                        cells.push(cell((placement, depth, warmup, lr), &group));
                    }
                }
                keys.push((placement, depth, warmup));
                tables.push(LossTable::from_runs(
                    &mine,
                    &config.learning_rates,
                    &config.seeds,
                ));
            }
        }
    }
    let all_seeds: Vec<usize> = (0..config.seeds.len()).collect();
    let table_refs: Vec<&LossTable> = tables.iter().collect();
    let scores = sensitivities(&table_refs, &all_seeds);
    let configurations = keys
        .into_iter()
        .zip(&tables)
        .zip(scores)
        .map(
            |(((placement, depth, warmup), table), lr_sensitivity)| SweepConfiguration {
                placement,
                depth,
                warmup,
                largest_stable_lr: table.largest_stable_lr(),
                lr_sensitivity,
            },
        )
        .collect();
    (cells, configurations)
}

/// One run of the grid, by its position in the grid's fixed order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridPoint {
    /// The placement.
    pub placement: Placement,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// Peak LR.
    pub learning_rate: f64,
    /// Seed.
    pub seed: u64,
}

impl SweepConfig {
    /// Every run, in the fixed order placement × depth × warm-up × LR × seed.
    pub fn grid(&self) -> Vec<GridPoint> {
        let mut grid = vec![];
        for &placement in &self.placements {
            for &depth in &self.depths {
                for &warmup in &self.warmups {
                    for &learning_rate in &self.learning_rates {
                        for &seed in &self.seeds {
                            grid.push(GridPoint {
                                placement,
                                depth,
                                warmup,
                                learning_rate,
                                seed,
                            });
                        }
                    }
                }
            }
        }
        grid
    }

    /// The directory name of a run.
    pub fn run_name(&self, p: &GridPoint) -> String {
        run_name(
            p.placement,
            self.norm,
            p.depth,
            p.warmup,
            p.learning_rate,
            p.seed,
        )
    }

    /// The training configuration of a run.
    pub fn point_config(&self, p: &GridPoint) -> TrainConfig {
        self.train_config(p.placement, p.depth, p.warmup, p.learning_rate, p.seed)
    }
}

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
    let bar = crate::jobs::runs_bar(mine.len(), "sweep", options.progress);
    let states = crate::jobs::run_jobs(&mine, options.plan, |p| {
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
