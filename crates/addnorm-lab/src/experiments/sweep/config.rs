//! A sweep's grid ([`SweepConfig`], saved in `sweep.json`): placement × depth × warm-up ×
//! LR × seed, each point's run directory name and training configuration.
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::nn::Placement;
use burn::config::Config;

use crate::experiments::model::ModelConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::task::Task;
use crate::experiments::train::TrainConfig;

/// The grid of a sweep, a Burn [`Config`]. Saved in `config.json` and `sweep.json`.
#[derive(Config, Debug)]
pub struct SweepConfig {
    /// The task.
    pub task: Task,
    /// The model of every run (each run sets its placement, norm and depth) and the
    /// backend.
    pub model: ModelConfig,
    /// Placements. Default: Post-LN and Pre-LN
    #[config(default = "vec![Placement::Post, Placement::Pre]")]
    pub placements: Vec<Placement>,
    /// The norm of every norm-bearing placement. Default: LayerNorm
    #[config(default = "NormKind::Layer")]
    pub norm: NormKind,
    /// Depths. Default: 4
    #[config(default = "vec![4]")]
    pub depths: Vec<usize>,
    /// Warm-up lengths. Default: 0, 100
    #[config(default = "vec![0, 100]")]
    pub warmups: Vec<usize>,
    /// Peak learning rates. Default: 3e-4, 1e-3, 3e-3, 1e-2, 3e-2
    #[config(default = "vec![3e-4, 1e-3, 3e-3, 1e-2, 3e-2]")]
    pub learning_rates: Vec<f64>,
    /// Seeds. Default: 0, 1
    #[config(default = "vec![0, 1]")]
    pub seeds: Vec<u64>,
    /// Steps per run. Default: 400
    #[config(default = 400)]
    pub steps: usize,
    /// Batch size. Default: 32
    #[config(default = 32)]
    pub batch_size: usize,
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
        let model = self.model.cell(placement, self.norm, depth);
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
