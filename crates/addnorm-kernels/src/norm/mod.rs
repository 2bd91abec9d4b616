//! Row normalization (LayerNorm, RMSNorm and their variants) and Dynamic Tanh, with an
//! analytic backward: the [`RowNormBackend`] extension, its composite reference, the fused
//! CPU and CubeCL kernels and the `Autodiff` node.
//!
//! - [`spec`]: what one row normalization computes ([`RowNormSpec`]).
//! - [`backend`]: the [`RowNormBackend`] trait and its `NdArray` impl.
//! - [`composite`]: the reference path in Burn tensor ops.
//! - [`fused`]: what a fused kernel returns (output, saved statistics, gradients).
//! - [`cpu`]: the fused CPU kernels (f32, f64) on slices; `ndarray` (feature `ndarray`)
//!   runs them on `NdArray` tensors.
//! - `cube` (features `wgpu`, `cuda`): the fused CubeCL kernels, for `CubeBackend` and
//!   `Fusion<CubeBackend>`.
//! - [`autodiff`]: `RowNormBackend` for `Autodiff<B>`, with the fused backward nodes.
//!
//! # Formula
//! On the rows of a `[rows, n]` matrix, with the centring, divisor and ε placement given
//! by [`RowNormSpec`] (see [`spec`]):
//!
//! ```text
//! LayerNorm / RMSNorm:   y = (x − μ) / D(σ², ε) · γ + β      (μ = 0 for RMSNorm)
//! DyT:                   y = γ·tanh(α·x) + β
//! ```
//!
//! # Shapes
//! - `x`, output: `[rows, n]` (modules flatten their leading and normalized dimensions
//!   into these)
//! - `gamma`, `beta`: `[n]` or `[1]`; `alpha` (DyT): `[1]`
//! - saved statistics `shift`, `rstd`: `[rows]`

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "cubecl")]
pub mod cube;
pub mod fused;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;
pub mod spec;

pub use backend::RowNormBackend;
pub use fused::{FusedDynamicTanhGrads, FusedNormForward, FusedNormGrads, RowStatistics};
pub use spec::{Centering, EpsilonPlacement, RowNormSpec, Variance};
