//! What the demo runs: experiment A's probe grid and experiment B's training runs, and
//! the names of both.
//!
//! ```text
//! runs of B   pairs × warm-ups × seeds, named  <placement>-<norm>-w<warm-up>-s<seed>
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use crate::grid::{NormKind, stack_config};
use crate::jobs::JobPlan;
use crate::probe::ProbeConfig;
use crate::task::{Task, TaskKind};
use crate::train::TrainConfig;

/// What the demo runs. Saved as `config.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoConfig {
    /// Experiment A's model and depths (its placements/norms list every pair probed).
    pub probe: ProbeConfig,
    /// The (placement, norm) pairs of both experiments.
    pub pairs: Vec<(Placement, NormKind)>,
    /// Experiment B's training runs, one per pair × warm-up × seed.
    pub train_depth: usize,
    /// Experiment B's model width.
    pub train_d_model: usize,
    /// The one high learning rate of experiment B.
    pub learning_rate: f64,
    /// Warm-up lengths compared.
    pub warmups: Vec<usize>,
    /// Steps per training run.
    pub steps: usize,
    /// Seeds of both experiments.
    pub seeds: Vec<u64>,
    /// The backend.
    pub backend: Kind,
}

impl DemoConfig {
    /// The quick default: about 3 minutes on 2 CPU cores with ndarray.
    pub fn quick(backend: Kind, seed: u64) -> Self {
        let task = Task::new(TaskKind::Reverse, 8, 10);
        let pairs = vec![
            (Placement::Post, NormKind::Layer),
            (Placement::Pre, NormKind::Layer),
            (Placement::Pre, NormKind::Rms),
            (Placement::Pre, NormKind::Dyt),
            (Placement::None, NormKind::Identity),
        ];
        let seeds: Vec<u64> = (seed..seed + 3).collect();
        Self {
            probe: ProbeConfig {
                task,
                placements: vec![Placement::Post, Placement::Pre, Placement::None],
                norms: vec![
                    NormKind::Layer,
                    NormKind::Rms,
                    NormKind::Dyt,
                    NormKind::Identity,
                ],
                depths: vec![6, 12, 24, 48],
                seeds: seeds.clone(),
                d_model: 64,
                n_heads: 4,
                d_ff: 256,
                batch_size: 16,
                zero_init_query_key: true,
                backend,
            },
            pairs,
            train_depth: 6,
            train_d_model: 32,
            learning_rate: 1e-2,
            warmups: vec![0, 100],
            steps: 250,
            seeds,
            backend,
        }
    }

    /// The same demo with `n` seeds (from the first seed on) in both experiments.
    pub fn with_seeds(mut self, n: usize) -> Self {
        let first = self.seeds.first().copied().unwrap_or(0);
        self.seeds = (first..first + n as u64).collect();
        self.probe.seeds = self.seeds.clone();
        self
    }

    /// The training configuration of one experiment-B run.
    pub fn train_config(
        &self,
        placement: Placement,
        norm: NormKind,
        warmup: usize,
        seed: u64,
    ) -> TrainConfig {
        let model = stack_config(
            self.train_d_model,
            2,
            4 * self.train_d_model,
            self.train_depth,
            placement,
            norm,
        );
        TrainConfig::for_task(self.probe.task, model)
            .with_learning_rate(self.learning_rate)
            .with_warmup_steps(warmup)
            .with_steps(self.steps)
            .with_seed(seed)
            .with_eval_every(25)
            .with_stats_every(self.steps)
            .with_checkpoint_every(self.steps)
            .with_validation_size(128)
            .with_backend(self.backend)
    }
}

/// The demo's default seed count for `plan`: 3 seeds per job at 80% efficiency,
/// `⌊12·jobs/5⌋`, kept between 3 and 10 (3 at one job, 4 at two, 9 at four).
///
/// Both experiments run `plan.jobs` cells at once, and the time saved goes to more seeds,
/// with a margin: on 2 cores, 5 seeds took 309 s against the 300 s budget
/// (`cargo bench --bench demo_time`; PERFORMANCE.md of the lab).
pub fn default_seeds(plan: JobPlan) -> usize {
    (12 * plan.jobs / 5).clamp(3, 10)
}

/// `<placement>-<norm>`, as plots, tables and run names spell a pair.
pub(super) fn label(p: Placement, n: NormKind) -> String {
    format!("{p}-{}", n.name())
}

/// Experiment B's runs: (placement, norm, warm-up, seed), in report order.
pub(super) fn training_runs(config: &DemoConfig) -> Vec<(Placement, NormKind, usize, u64)> {
    config
        .pairs
        .iter()
        .flat_map(|&(p, n)| {
            config
                .warmups
                .iter()
                .flat_map(move |&w| config.seeds.iter().map(move |&s| (p, n, w, s)))
        })
        .collect()
}

/// The run directory name of one experiment-B run.
pub(super) fn run_name(p: Placement, n: NormKind, w: usize, s: u64) -> String {
    format!("{}-w{w}-s{s}", label(p, n))
}
