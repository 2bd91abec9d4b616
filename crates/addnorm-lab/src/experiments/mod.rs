//! The experiments: the toy tasks ([`task`]), training one configuration ([`train`]),
//! gradients at initialization ([`probe`], experiment A), the warm-up and learning-rate
//! sweep ([`sweep`], B), the small-scale proxies ([`proxies`], C), the model update
//! ([`model_update`], D), the same after one SGD step ([`sgd_update`]), Fig. 3's expected
//! gradient ([`expected_gradient`]), Fig. 2's warm-up × LR grid ([`warmup_grid`]) and C's
//! grids over model size, weight decay and z-loss ([`proxy_grid`]), NormFormer's early
//! gradient profiles ([`early_gradients`]) and CaiT's depth grid with and without
//! LayerScale ([`depth_grid`]).
//!
//! # Shapes
//! Tasks produce token batches `[batch, 2n + 1]`; the models map them to logits
//! `[batch, 2n + 1, vocab]`.

pub mod depth_grid;
pub mod early_gradients;
pub mod expected_gradient;
pub mod model;
pub mod model_update;
pub mod norm_kind;
pub mod probe;
pub mod proxies;
pub mod proxy_grid;
pub mod sgd_update;
pub mod sweep;
pub mod task;
pub mod train;
pub mod warmup_grid;
