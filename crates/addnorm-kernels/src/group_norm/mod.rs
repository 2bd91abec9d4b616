//! GroupNorm and InstanceNorm over `[N, C, …]` (Wu & He 2018; Ulyanov et al. 2016): the
//! [`GroupNormBackend`] extension, its composite, the fused CPU kernels and the `Autodiff`
//! node.
//!
//! - [`spec`]: [`GroupNormSpec`] (groups, ε) and the sizes of a call.
//! - [`backend`]: the [`GroupNormBackend`] trait (default: [`composite`]) and its `NdArray`
//!   and CubeCL impls.
//! - [`composite`]: addnorm's row norm on the `[N·G, c_g·S]` view, then the per-channel
//!   affine map in Burn's ops.
//! - [`fused`]: what the fused kernels return.
//! - [`cpu`]: the fused CPU kernels on slices; `ndarray` (feature `ndarray`) runs them on
//!   `NdArray` tensors.
//! - [`autodiff`]: `GroupNormBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! This op builds on [`crate::norm`] (its composite is the row norm; its CPU kernels share
//! the row norm's task sizes), never the other way.
//!
//! # Formula
//! With the `C` channels in `G` contiguous groups of `c_g = C / G`, per sample `n` and group
//! `g` (the block of `c_g·S` values):
//!
//! ```text
//! μ = mean of the block      σ² = mean of (x − μ)² over the block (biased, as PyTorch)
//! y[n, c, s…] = (x[n, c, s…] − μ)/√(σ² + ε) · γ_c + β_c
//! ```
//!
//! InstanceNorm is `G = C`. The backward is in [`cpu`].
//!
//! # Shapes
//! - [`group_norm`]: `x` `[N, C, …]` of any rank ≥ 2 (the trailing dimensions are the
//!   spatial ones, flattened to `S`; none for `[N, C]`), output the same; γ, β `[C]`
//! - the backend methods: the same, `x` `[N, C, …]` (read as `[N, C, S]`)
//!
//! # Example
//! ```
//! use addnorm_kernels::group_norm::{GroupNormSpec, group_norm};
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! // [N = 1, C = 2, S = 2], one group per channel (InstanceNorm).
//! let x = Tensor::<NdArray, 3>::from_floats([[[1.0, 3.0], [10.0, 20.0]]], &device);
//! let spec = GroupNormSpec { groups: 2, epsilon: 1e-5 };
//! let y = group_norm(x, None, spec);
//! y.into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[[-1.0, 1.0], [-1.0, 1.0]]]),
//!     Tolerance::absolute(1e-4),
//! );
//! # }
//! ```

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
pub mod fused;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;
pub mod spec;

use burn::tensor::{Tensor, TensorPrimitive};

pub use backend::GroupNormBackend;
pub use spec::{GroupDims, GroupNormSpec};

/// GroupNorm of `x: [N, C, …]` (see the [module docs](self)) with the per-channel
/// `affine = (γ, β)` when given; fused where the backend has a kernel, differentiable on
/// every backend.
///
/// # Panics
/// If `x` has rank < 2, `C` does not split into `spec.groups` equal groups, ε is not
/// positive and finite, or γ or β is not `[C]`.
pub fn group_norm<B: GroupNormBackend, const D: usize>(
    x: Tensor<B, D>,
    affine: Option<(Tensor<B, 1>, Tensor<B, 1>)>,
    spec: GroupNormSpec,
) -> Tensor<B, D> {
    // The backend takes any rank ≥ 2 as it is: a reshape may copy (burn-ndarray copies a
    // tensor made from data on every reshape, 8 MiB at [32, 64, 32, 32]).
    let affine = affine.map(|(g, b)| [g, b].map(|p| p.into_primitive().tensor()));
    let y = B::group_norm(x.into_primitive().tensor(), affine, spec);
    Tensor::from_primitive(TensorPrimitive::Float(y))
}

#[cfg(all(test, feature = "ndarray"))]
mod tests;
