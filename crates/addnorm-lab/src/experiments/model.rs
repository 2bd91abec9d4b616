//! The study's model: a [`TransformerStackConfig`] of the lab's grids.
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::nn::{Placement, TransformerStackConfig};

use super::norm_kind::NormKind;

/// The study's model: a stack of `depth` blocks of width `d_model`, `n_heads` heads and
/// feed-forward width `d_ff`, with `norm` placed as `placement` says. Its vocabulary and
/// length are fitted to the task by whoever trains it ([`crate::experiments::train::TrainConfig::for_task`]).
pub fn stack_config(
    d_model: usize,
    n_heads: usize,
    d_ff: usize,
    depth: usize,
    placement: Placement,
    norm: NormKind,
) -> TransformerStackConfig {
    TransformerStackConfig::new()
        .with_d_model(d_model)
        .with_n_heads(n_heads)
        .with_d_ff(d_ff)
        .with_n_layers(depth)
        .with_placement(placement)
        .with_norm(norm.config())
}
