//! CaiT's depth claim at toy scale (Touvron et al. 2021, LayerScale): Pre-LN with and
//! without LayerScale over depths, at one LR without warm-up.
//!
//! ```text
//! grid        depth L ∈ depths × {Pre-LN, Pre-LN + LayerScale(ε)} × seeds
//! run         experiment B's Pre-LN run (the reverse task, B's width, LR η, no warm-up,
//!             B's steps) with L blocks
//! LayerScale  x ← x + diag(λ)·F(Norm(x)) in each sublayer, every λ_i = ε at init
//!             (TransformerBlockConfig::layer_scale)
//! ```
//!
//! A cell at B's depth without LayerScale is B's own run, trained once (its name is B's,
//! `crate::study::config::DemoConfig::depth_grid_run_name`).
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` tokens of the reverse task.

use addnorm::nn::Placement;
use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::experiments::sweep::SweepRun;
use crate::experiments::train::TrainConfig;

/// The depth grid of CaiT's claim, a Burn [`Config`]. Part of the demo's `config.json`.
#[derive(Config, Debug)]
pub struct DepthGridConfig {
    /// Depths L. Default: none, not run (`--full`: 6, 12, 24, 48)
    #[config(default = "Vec::new()")]
    pub depths: Vec<usize>,
    /// LayerScale's initial ε (CaiT's value at depth 24; the registry's). Default: 1e-5
    #[config(default = 1e-5)]
    pub layer_scale_init: f64,
}

/// One cell of the grid: a depth, with or without LayerScale.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct DepthCell {
    /// L.
    pub depth: usize,
    /// Whether the blocks carry LayerScale.
    pub layer_scale: bool,
}

/// One finished run of the grid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct DepthGridRun {
    /// Its cell.
    pub cell: DepthCell,
    /// Its summary.
    pub run: SweepRun,
}

impl DepthGridConfig {
    /// Whether the grid runs (any depth given).
    pub fn is_run(&self) -> bool {
        !self.depths.is_empty()
    }

    /// Every cell: by depth, then without and with LayerScale.
    pub fn cells(&self) -> Vec<DepthCell> {
        self.depths
            .iter()
            .flat_map(|&depth| [false, true].map(|layer_scale| DepthCell { depth, layer_scale }))
            .collect()
    }

    /// `pre_ln` (B's Pre-LN run without warm-up for one seed) with the cell's depth and,
    /// with LayerScale, every block's gains starting at [`Self::layer_scale_init`].
    pub fn train_config(&self, pre_ln: TrainConfig, cell: DepthCell) -> TrainConfig {
        let model = pre_ln.model.placed(Placement::Pre, cell.depth);
        let scale = cell.layer_scale.then_some(self.layer_scale_init);
        let block = model.block().clone().with_layer_scale(scale);
        TrainConfig {
            model: model.with_block(block),
            ..pre_ln
        }
    }
}

/// The run directory name of one grid run of its own (not B's):
/// `cait-pre-layer-l<L>[-layerscale]-s<seed>`.
pub fn run_name(cell: DepthCell, seed: u64) -> String {
    let scale = if cell.layer_scale { "-layerscale" } else { "" };
    format!("cait-pre-layer-l{}{scale}-s{seed}", cell.depth)
}
