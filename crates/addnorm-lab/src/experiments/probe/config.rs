//! What a probe measures ([`ProbeConfig`]): its grid of placements × norms × depths ×
//! seeds, the model of each cell and its one batch.
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::{Activation, Placement, TransformerStackConfig};
use serde::{Deserialize, Serialize};

use crate::experiments::model::stack_config;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::task::Task;

/// The grid and model of a probe. Saved in `probe.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProbeConfig {
    /// The task whose first batch is used.
    pub task: Task,
    /// Placements to compare.
    pub placements: Vec<Placement>,
    /// Norms to compare.
    pub norms: Vec<NormKind>,
    /// Depths L.
    pub depths: Vec<usize>,
    /// Seeds per cell.
    pub seeds: Vec<u64>,
    /// Model width d.
    pub d_model: usize,
    /// Attention heads.
    pub n_heads: usize,
    /// Feed-forward width.
    pub d_ff: usize,
    /// Sequences in the batch.
    pub batch_size: usize,
    /// Start W^Q and W^K at zero (the theory's setting).
    pub zero_init_query_key: bool,
    /// The feed-forward nonlinearity (Lemma 2 assumes ReLU). Default: GELU.
    #[serde(default)]
    pub activation: Activation,
    /// The backend it ran on (informative).
    pub backend: Kind,
}

impl ProbeConfig {
    /// Every (placement, norm) pair of the grid.
    pub fn pairs(&self) -> Vec<(Placement, NormKind)> {
        self.placements
            .iter()
            .flat_map(|&p| self.norms.iter().map(move |&n| (p, n)))
            .collect()
    }

    /// The model of one grid cell.
    pub fn model(
        &self,
        placement: Placement,
        norm: NormKind,
        depth: usize,
    ) -> TransformerStackConfig {
        self.task
            .fit(stack_config(
                self.d_model,
                self.n_heads,
                self.d_ff,
                depth,
                placement,
                norm,
            ))
            .with_zero_init_query_key(self.zero_init_query_key)
            .with_activation(self.activation)
    }
}
