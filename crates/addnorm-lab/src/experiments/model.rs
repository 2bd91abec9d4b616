//! The model an experiment builds and the backend it runs on ([`ModelConfig`]): the one
//! place where the lab's configurations hold the width, heads, feed-forward width, depth,
//! placement, norm and backend.
//!
//! ```text
//! stack       TransformerStackConfig: vocabulary, length, and one block config
//!             (d_model, n_heads, d_ff, depth N, placement, norm, activation, QK options)
//! grid cell   the same model with the cell's placement, norm and depth (ModelConfig::cell)
//! task        vocabulary and length are fitted to the task (Task::fit) by whoever runs it
//! ```
//!
//! # Example
//! ```
//! use addnorm::nn::{Placement, TransformerStackConfig};
//! use addnorm_lab::experiments::model::ModelConfig;
//! use addnorm_lab::experiments::norm_kind::NormKind;
//!
//! let base = ModelConfig::new().with_stack(TransformerStackConfig::small());
//! let cell = base.cell(Placement::Post, NormKind::Rms, 12);
//! assert_eq!((cell.block().d_model, cell.block().n_layers), (64, 12));
//! assert_eq!(cell.block().placement, Placement::Post);
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::{Placement, TransformerBlockConfig, TransformerStackConfig};
use burn::config::Config;

use super::norm_kind::NormKind;

/// The model and the backend of a run or of every run of an experiment, a Burn [`Config`].
#[derive(Config, Debug)]
pub struct ModelConfig {
    /// The stack: its block holds the widths, the depth, the placement and the norm.
    /// Default: `TransformerStackConfig::tiny()`
    #[config(default = "TransformerStackConfig::tiny()")]
    pub stack: TransformerStackConfig,
    /// The backend the runs go on. Default: the build's preferred backend
    #[config(default = "addnorm::backend::PREFERRED")]
    pub backend: Kind,
}

impl ModelConfig {
    /// The configuration every block is built from.
    pub fn block(&self) -> &TransformerBlockConfig {
        &self.stack.block
    }

    /// The same model with `block` for every block.
    pub fn with_block(mut self, block: TransformerBlockConfig) -> Self {
        self.stack.block = block;
        self
    }

    /// This model with `placement` and `depth` blocks, its norm kept.
    pub fn placed(&self, placement: Placement, depth: usize) -> Self {
        let block = self.block().clone();
        self.clone()
            .with_block(block.with_placement(placement).with_n_layers(depth))
    }

    /// One cell of a grid: this model with `placement`, `norm` and `depth` blocks.
    pub fn cell(&self, placement: Placement, norm: NormKind, depth: usize) -> Self {
        let placed = self.placed(placement, depth);
        let block = placed.block().clone().with_norm(norm.config());
        placed.with_block(block)
    }
}
