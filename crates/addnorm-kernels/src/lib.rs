#![warn(missing_docs)]
//! The compute layer of addnorm: the [`NormBackend`] extension trait, the description of a
//! row-wise normalization ([`RowNormSpec`]), the composite reference implementation that
//! every backend can run, and the fused kernels that replace it where a backend has them.
//!
//! - [`spec`]: what a row normalization computes.
//! - [`backend`]: the [`NormBackend`] trait and its `NdArray` impl.
//! - [`composite`]: the reference path in Burn tensor ops, and [`composite::ForceComposite`].
//! - [`fused`]: what a fused kernel returns (output, saved statistics, gradients).
//! - [`cpu`]: the fused CPU kernels (f32, f64) used by `NdArray`.
//! - `cube` (features `wgpu` or `cuda`): the fused CubeCL kernels used by `CubeBackend`
//!   (wgpu, CUDA, HIP) and by `Fusion<CubeBackend>`, the type Burn's GPU backends have
//!   with Burn's default features.
//! - [`autodiff`]: `NormBackend` for `Autodiff<B>`, with the fused kernels' backward node.
//! - [`training`]: [`NormAutodiffBackend`], the one bound generic training code needs.
//! - [`attention`]: fused (causal) multi-head attention with an analytic backward, the
//!   [`AttentionBackend`] extension that `NormBackend` requires.
//! - [`linear`]: linear layers as one GEMM per call (rows split over threads), the
//!   [`LinearBackend`] extension that `NormBackend` requires too.
//! - [`gelu`]: exact GELU in one pass each way, the [`GeluBackend`] extension that
//!   `NormBackend` requires as well.
//!
//! # Formula
//! Every LayerNorm / RMSNorm variant is `y = (x − μ) / D(σ², ε) · γ + β` on the rows of a
//! `[rows, n]` matrix, with the centring, divisor and ε placement given by [`RowNormSpec`];
//! DyT is `y = γ·tanh(α·x) + β`. Attention is `O_h = softmax(scale·Q_h·K_hᵀ + causal
//! mask)·V_h` per head ([`attention`]). GELU is `x·Φ(x)` ([`gelu`]).
//!
//! # Shapes
//! - `x`: `[rows, n]` (modules flatten their leading and normalized dimensions into these)
//! - `gamma`, `beta`: `[n]` or `[1]`
//! - output: `[rows, n]`
//! - attention: `q`, `k`, `v`, output `[batch, T, d_model]`, heads read in place

pub mod attention;
pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "cubecl")]
pub mod cube;
pub mod fused;
pub mod gelu;
pub mod linear;
pub mod spec;
pub mod training;

pub use attention::AttentionBackend;
pub use backend::NormBackend;
pub use gelu::GeluBackend;
pub use linear::LinearBackend;
pub use spec::{Centering, EpsilonPlacement, RowNormSpec, Variance};
pub use training::NormAutodiffBackend;
