//! A sweep's grid ([`SweepConfig`], saved in `sweep.json`): placement × depth × warm-up ×
//! LR × seed, each point's run directory name and training configuration.
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use crate::experiments::model::stack_config;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::task::Task;
use crate::experiments::train::TrainConfig;

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
