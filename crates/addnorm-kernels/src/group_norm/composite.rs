//! The composite GroupNorm, built from Burn ops and addnorm's row norm: the `[N, C, S]`
//! input viewed as `[N·G, c_g·S]` rows (each (sample, group) block is contiguous), each row
//! normalized by [`RowNormBackend::norm_rows`] (LayerNorm's statistics, no affine), then the
//! per-channel `γ_c`, `β_c` broadcast over the samples and positions.
//!
//! The row norm is itself fused where the backend has a kernel (the CubeCL backends, in
//! particular), so on a GPU this path runs the normalization and its analytic backward in
//! addnorm's kernels and leaves only the affine map to Burn's element-wise ops (which
//! Burn's fusion fuses).
//!
//! # Formula
//! `y = LayerNorm_rows(x.reshape([N·G, c_g·S])).reshape([N, C, S]) · γ[1, C, 1] + β[1, C, 1]`
//!
//! # Shapes
//! `x`, output: `[N, C, …]` (any rank ≥ 2); γ, β: `[C]`.

use burn::tensor::{Shape, Tensor, TensorPrimitive};

use super::spec::{GroupDims, GroupNormSpec};
use crate::norm::{RowNormBackend, RowNormSpec};

/// The composite GroupNorm of the [module docs](self), on `x: [N, C, …]` of any rank ≥ 2.
pub fn group_norm<B: RowNormBackend, const D: usize>(
    x: Tensor<B, D>,
    affine: Option<(Tensor<B, 1>, Tensor<B, 1>)>,
    spec: &GroupNormSpec,
) -> Tensor<B, D> {
    let shape = x.shape();
    let dims = GroupDims::new(shape.as_slice(), spec);
    let rows = B::reshape_rows(
        x.into_primitive().tensor(),
        Shape::new([dims.rows(), dims.row_len()]),
    );
    let normalized = B::norm_rows(rows, None, None, RowNormSpec::layer_norm(spec.epsilon));
    let grouped = Shape::new([dims.samples, dims.channels, dims.spatial]);
    let normalized = Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(B::reshape_rows(
        normalized, grouped,
    )));
    let y = match affine {
        Some((gamma, beta)) => {
            let per_channel = [1, dims.channels, 1];
            normalized * gamma.reshape(per_channel) + beta.reshape(per_channel)
        }
        None => normalized,
    };
    Tensor::from_primitive(TensorPrimitive::Float(B::reshape_rows(
        y.into_primitive().tensor(),
        shape,
    )))
}
