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
//! LR sensitivity           E_η[ min(ℓ(η), ℓ₀) − ℓ* ]  over the LR grid (Wortsman et al.),
//!                          ℓ(η) final validation loss, ℓ₀ the loss at initialization,
//!                          ℓ* the best ℓ(η)
//! ```
//!
//! Each run lives in `runs/<name>/`; a run whose `summary.json` is complete is reused, and
//! an interrupted one resumes from its checkpoint, so rerunning a sweep continues it.
//!
//! # Shapes
//! Not applicable: a sweep is a grid of [`crate::train`](mod@crate::train) runs.

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
use crate::shard::Shard;
use crate::task::Task;
use crate::train::{TrainConfig, TrainSummary};
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
    /// The training loss of step 0, ℓ₀.
    pub initial_loss: f64,
    /// Training losses, every step.
    pub losses: Vec<f64>,
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
    /// Wortsman et al.'s LR sensitivity (lower is more robust).
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
    let initial_loss = summary.losses.first().copied().unwrap_or(f64::NAN);
    let tail = &summary.losses[summary.losses.len().saturating_sub(10)..];
    let tail_mean = tail.iter().sum::<f64>() / tail.len().max(1) as f64;
    // A NaN tail counts as diverged too: `partial_cmp` is None then.
    let worse_than_start = !matches!(
        tail_mean.partial_cmp(&initial_loss),
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
        initial_loss,
        losses: summary.losses.clone(),
    }
}

fn median(mut v: Vec<usize>) -> Option<usize> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// Aggregates runs into cells and configurations.
pub fn aggregate(
    config: &SweepConfig,
    runs: &[SweepRun],
) -> (Vec<SweepCell>, Vec<SweepConfiguration>) {
    let mut cells = vec![];
    let mut configurations = vec![];
    for placement in &config.placements {
        for &depth in &config.depths {
            for &warmup in &config.warmups {
                let of = |lr: f64| -> Vec<&SweepRun> {
                    runs.iter()
                        .filter(|r| {
                            r.placement == *placement
                                && r.depth == depth
                                && r.warmup == warmup
                                && r.learning_rate == lr
                        })
                        .collect()
                };
                let mut finals = vec![];
                let mut initial = f64::NAN;
                let mut largest_stable = None;
                for &lr in &config.learning_rates {
                    let group = of(lr);
                    if group.is_empty() {
                        continue;
                    }
                    let ok: Vec<&&SweepRun> = group.iter().filter(|r| !r.diverged).collect();
                    let n = group.len() as f64;
                    initial = group[0].initial_loss;
                    let mean_loss = if ok.is_empty() {
                        f64::NAN
                    } else {
                        ok.iter().map(|r| r.final_loss).sum::<f64>() / ok.len() as f64
                    };
                    let diverged = group.len() - ok.len();
                    if diverged == 0 {
                        largest_stable = Some(lr);
                    }
                    finals.push(mean_loss);
                    cells.push(SweepCell {
                        placement: *placement,
                        depth,
                        warmup,
                        learning_rate: lr,
                        diverged,
                        runs: group.len(),
                        mean_final_loss: mean_loss,
                        mean_exact_accuracy: group
                            .iter()
                            .map(|r| {
                                if r.diverged {
                                    0.0
                                } else {
                                    r.final_exact_accuracy
                                }
                            })
                            .sum::<f64>()
                            / n,
                        mean_token_accuracy: group
                            .iter()
                            .map(|r| {
                                if r.diverged {
                                    0.0
                                } else {
                                    r.final_token_accuracy
                                }
                            })
                            .sum::<f64>()
                            / n,
                        median_steps_to_99: median(
                            group.iter().filter_map(|r| r.steps_to_99_exact).collect(),
                        ),
                    });
                }
                if finals.is_empty() {
                    continue;
                }
                // A diverged LR scores the initial loss: min(ℓ(η), ℓ₀) with ℓ(η) = ∞.
                let capped: Vec<f64> = finals
                    .iter()
                    .map(|&l| {
                        if l.is_finite() {
                            l.min(initial)
                        } else {
                            initial
                        }
                    })
                    .collect();
                let best = capped.iter().copied().fold(f64::INFINITY, f64::min);
                configurations.push(SweepConfiguration {
                    placement: *placement,
                    depth,
                    warmup,
                    largest_stable_lr: largest_stable,
                    lr_sensitivity: capped.iter().map(|l| l - best).sum::<f64>()
                        / capped.len() as f64,
                });
            }
        }
    }
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
