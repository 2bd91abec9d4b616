//! What a probe measures ([`ProbeConfig`]): its grid of placements × norms × depths ×
//! seeds, the model of each cell and its one batch.
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::nn::{Placement, TransformerStackConfig};
use burn::config::Config;

use crate::experiments::model::ModelConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::task::Task;
use crate::experiments::train::TrainConfig;

/// The grid and model of a probe, a Burn [`Config`]. Saved in `probe.json`.
#[derive(Config, Debug)]
pub struct ProbeConfig {
    /// The task whose first batch is used.
    pub task: Task,
    /// The model of every cell (each cell sets its placement, norm and depth) and the
    /// backend. The theory's setting starts W^Q and W^K at zero (`zero_init_query_key`);
    /// Lemma 2 assumes a ReLU feed-forward network (`activation`).
    pub model: ModelConfig,
    /// Placements to compare. Default: Post-LN and Pre-LN
    #[config(default = "vec![Placement::Post, Placement::Pre]")]
    pub placements: Vec<Placement>,
    /// Norms to compare. Default: LayerNorm
    #[config(default = "vec![NormKind::Layer]")]
    pub norms: Vec<NormKind>,
    /// Depths L. Default: 6, 12, 24, 48
    #[config(default = "vec![6, 12, 24, 48]")]
    pub depths: Vec<usize>,
    /// Seeds per cell. Default: 0, 1, 2
    #[config(default = "vec![0, 1, 2]")]
    pub seeds: Vec<u64>,
    /// Sequences in the batch. Default: 16
    #[config(default = 16)]
    pub batch_size: usize,
}

impl ProbeConfig {
    /// Every (placement, norm) pair of the grid.
    pub fn pairs(&self) -> Vec<(Placement, NormKind)> {
        self.placements
            .iter()
            .flat_map(|&p| self.norms.iter().map(move |&n| (p, n)))
            .collect()
    }

    /// The model of one grid cell, fitted to the task.
    pub fn cell_model(
        &self,
        placement: Placement,
        norm: NormKind,
        depth: usize,
    ) -> TransformerStackConfig {
        self.task.fit(self.model.cell(placement, norm, depth).stack)
    }

    /// The probe's deepest model as a one-step run of a probe batch, for the cost check.
    pub fn largest_run(&self) -> TrainConfig {
        let depth = self.depths.iter().copied().max().unwrap_or(1);
        let p = self.placements.first().copied().unwrap_or_default();
        let n = self.norms.first().copied().unwrap_or(NormKind::Layer);
        TrainConfig::for_task(self.task, self.model.cell(p, n, depth))
            .with_batch_size(self.batch_size)
            .with_steps(1)
            .with_validation_size(0)
    }
}
