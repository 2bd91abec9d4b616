#![warn(missing_docs)]
//! **addnorm**: normalization layers for [Burn](https://burn.dev), with every variant the
//! usual references disagree on, PyTorch parity, and a stable reduction.
//!
//! - [`nn`]: the modules ([`nn::LayerNorm`], [`nn::RmsNorm`], [`nn::DynamicTanh`],
//!   [`nn::Norm`]) and their configs.
//! - [`NormBackend`]: the backend bound the modules need; implemented for `NdArray`, every
//!   CubeCL backend (`Wgpu`, `Cuda`, with or without fusion) and `Autodiff<B>`.
//! - [`NormAutodiffBackend`]: the one bound generic training code needs.
//! - [`KernelBackend`] and [`KernelAutodiffBackend`]: the same two traits under the names
//!   the kernels crate gives them (every fused op, not only the norms, hangs from them).
//! - [`backend`]: the backends enabled by this crate's features (`ndarray`, `wgpu`, `cuda`).
//! - [`kernels`]: the fused kernels behind [`NormBackend`] (norms, attention, linear
//!   layers, GELU, and the masked cross-entropy with its z-loss,
//!   [`kernels::cross_entropy`]), with [`kernels::composite::ForceComposite`] and the
//!   fused-call counters.
//!
//! # Formula
//! `y = (x − μ) / √(σ² + ε) · γ + β` over the trailing `normalized_shape` dimensions; see
//! [`nn::norm`] for the table of every norm and [`nn::Placement`] for the residual
//! placements.
//!
//! # Shapes
//! Every norm maps `[..., S₀, …, S_m]` to the same shape.
//!
//! # Example
//! ```
//! # #[cfg(feature = "ndarray")] {
//! use addnorm::backend::ndarray::{Backend, device};
//! use addnorm::nn::{LayerNormConfig, Variance, EpsilonPlacement, Affine};
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! // The step-by-step seed notebook: unbiased std, ε added to it, one scalar α and bias.
//! let norm = LayerNormConfig::new(vec![4])
//!     .with_variance(Variance::Unbiased)
//!     .with_epsilon_placement(EpsilonPlacement::AddedToStd)
//!     .with_affine(Affine::Scalar)
//!     .init::<Backend>(&device());
//! let x = Tensor::<Backend, 2>::from_floats([[1.0, 2.0, 3.0, 4.0]], &device());
//! norm.forward(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[-1.1619, -0.3873, 0.3873, 1.1619]]),
//!     Tolerance::absolute(1e-4),
//! );
//! # }
//! ```

pub mod backend;

/// The modules and configs: norms and their options.
pub mod nn {
    pub use addnorm_nn::*;
}

pub use addnorm_kernels::{KernelAutodiffBackend, KernelBackend, NormAutodiffBackend, NormBackend};

/// The compute layer: [`NormBackend`], the composite reference and the fused kernels.
pub use addnorm_kernels as kernels;

/// The README's Rust snippets, compiled as doc tests so that they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
