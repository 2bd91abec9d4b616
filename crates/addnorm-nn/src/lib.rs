#![warn(missing_docs)]
//! addnorm's modules: normalization layers generic over any [`NormBackend`], and the small
//! transformer (attention, feed-forward, residual Add & Norm in every placement) built on them.
//!
//! # Formulas
//! See [`norm`] for the table of the norms (LayerNorm `y = (x − μ) / √(σ² + ε) · γ + β` and
//! the others) and [`Placement`] for the residual placements.
//!
//! # Shapes
//! Every norm maps `[..., S₀, …, S_m]` to the same shape, with `normalized_shape =
//! [S₀, …, S_m]`.
//!
//! # Example
//! A norm inside your own Burn model; the model's backend is bounded by [`NormBackend`]:
//!
//! ```
//! use addnorm_nn::{LayerNorm, LayerNormConfig, NormBackend};
//! use burn::nn::{Linear, LinearConfig};
//! use burn::prelude::*;
//!
//! #[derive(Module, Debug)]
//! struct Mlp<B: Backend> {
//!     linear: Linear<B>,
//!     norm: LayerNorm<B>,
//! }
//!
//! impl<B: NormBackend> Mlp<B> {
//!     fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
//!         self.norm.forward(self.linear.forward(x))
//!     }
//! }
//!
//! let device = Default::default();
//! let mlp = Mlp::<burn::backend::NdArray> {
//!     linear: LinearConfig::new(4, 8).init(&device),
//!     norm: LayerNormConfig::new(vec![8]).init(&device),
//! };
//! let y = mlp.forward(Tensor::ones([2, 5, 4], &device));
//! assert_eq!(y.dims(), [2, 5, 8]);
//! ```

pub mod block;
pub mod config_error;
pub mod norm;
#[cfg(feature = "pytorch")]
pub mod pytorch;

pub use config_error::ConfigError;

pub use addnorm_kernels::{Centering, EpsilonPlacement, NormBackend, RowNormSpec, Variance};
pub use block::{
    Activation, AdaLnZero, AdaLnZeroConfig, AddNorm, FeedForward, FeedForwardConfig, Modulation,
    MultiHeadSelfAttention, MultiHeadSelfAttentionConfig, Placement, QkNormScope, ResidualGate,
    RotaryConfig, StackStats, TransformerBlock, TransformerBlockConfig, TransformerStack,
    TransformerStackConfig, xavier_normal,
};
pub use norm::{
    Affine, DynamicTanh, DynamicTanhConfig, GroupNorm, GroupNormConfig, Identity, InstanceNorm,
    InstanceNormConfig, LayerNorm, LayerNormConfig, Norm, NormConfig, RmsNorm, RmsNormConfig,
};
