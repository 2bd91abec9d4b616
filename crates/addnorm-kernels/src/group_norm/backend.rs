//! [`GroupNormBackend`]: the backend extension through which addnorm's GroupNorm and
//! InstanceNorm compute, built as [`RowNormBackend`] is: a composite
//! default ([`super::composite`]: addnorm's row norm and Burn's ops), a `fused_*` override
//! per backend returning `Option` (`None` falls back to the composite), and one `Autodiff`
//! node with the analytic backward ([`super::autodiff`]).
//!
//! # Formula
//! `y[n, c, s] = (x[n, c, s] − μ_{n,g})·r_{n,g}·γ_c + β_c` over the (sample, group) blocks
//! of [`super::spec`].
//!
//! # Shapes
//! - `x`, output: `[N, C, …]`, any rank ≥ 2 (read as `[N, C, S]`); γ, β: `[C]`
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64): the CPU kernels of [`super::cpu`], the affine map folded in.
//! - `CubeBackend` and `Fusion<CubeBackend>`: the composite, whose normalization is
//!   addnorm's fused CubeCL row-norm kernel (with its own analytic backward node) and whose
//!   per-channel affine map is Burn's element-wise ops.
//! - `Autodiff<B>`: one backward node when `B` is fused, else the composite's nodes.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorMetadata, TensorPrimitive};

use super::composite;
use super::fused::{FusedGroupNorm, FusedGroupNormGrads, GroupStatistics};
use super::spec::{GroupDims, GroupNormSpec};
use crate::fused::try_fused_forward;
use crate::norm::RowNormBackend;

/// The backend operations of GroupNorm. See the [module docs](self).
pub trait GroupNormBackend: RowNormBackend {
    /// GroupNorm of `x: [N, C, …]` (any rank ≥ 2) with the per-channel `affine = [γ, β]` (each `[C]`) when
    /// given: takes [`fused_group_norm`](Self::fused_group_norm) when the backend has a
    /// kernel for these inputs and no [`ForceComposite`](crate::composite::ForceComposite)
    /// guard is alive on this thread; otherwise [`composite::group_norm`].
    ///
    /// # Panics
    /// If `x` has rank < 2, `C` does not split into `spec.groups` equal groups, ε is
    /// not positive and finite, or γ or β is not `[C]`.
    fn group_norm(
        x: FloatTensor<Self>,
        affine: Option<[FloatTensor<Self>; 2]>,
        spec: GroupNormSpec,
    ) -> FloatTensor<Self> {
        check_inputs(
            &x.shape(),
            affine.as_ref().map(|a| [a[0].shape(), a[1].shape()]),
            &spec,
        );
        if let Some(fused) =
            try_fused_forward(|| Self::fused_group_norm(&x, affine.as_ref(), &spec))
        {
            return fused.output;
        }
        composite_group_norm::<Self>(x, affine, &spec)
    }

    /// The fused forward of [`group_norm`](Self::group_norm), with the statistics its
    /// backward needs; `None` when this backend has no kernel for these inputs (the
    /// default). The shapes have been checked.
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_group_norm_backward`](Self::fused_group_norm_backward).
    fn fused_group_norm(
        x: &FloatTensor<Self>,
        affine: Option<&[FloatTensor<Self>; 2]>,
        spec: &GroupNormSpec,
    ) -> Option<FusedGroupNorm<Self>> {
        let _ = (x, affine, spec);
        None
    }

    /// The fused backward: `∂L/∂x` and, when `gamma` is given (the call had an affine
    /// map), `∂L/∂γ` and `∂L/∂β`, from `x`, γ, the saved statistics and
    /// `grad_output = ∂L/∂y`.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_group_norm`](Self::fused_group_norm) returns `Some` is asked for it.
    fn fused_group_norm_backward(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        statistics: &GroupStatistics<Self>,
        grad_output: FloatTensor<Self>,
        spec: &GroupNormSpec,
    ) -> FusedGroupNormGrads<Self> {
        let _ = (x, gamma, statistics, grad_output, spec);
        panic!(
            "{} returned a fused group norm forward but has no fused backward: override \
             GroupNormBackend::fused_group_norm_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// Asserts the shapes of a call (see [`GroupNormBackend::group_norm`]).
pub(crate) fn check_inputs(x: &Shape, affine: Option<[Shape; 2]>, spec: &GroupNormSpec) {
    let dims = GroupDims::new(x.as_slice(), spec);
    if let Some([gamma, beta]) = affine {
        assert!(
            gamma.as_slice() == [dims.channels] && beta.as_slice() == [dims.channels],
            "group norm: γ {:?} and β {:?} must both be [{}], one value per channel",
            gamma.as_slice(),
            beta.as_slice(),
            dims.channels
        );
    }
}

/// [`composite::group_norm`] on primitives.
pub(crate) fn composite_group_norm<B: RowNormBackend>(
    x: FloatTensor<B>,
    affine: Option<[FloatTensor<B>; 2]>,
    spec: &GroupNormSpec,
) -> FloatTensor<B> {
    // Read as [N, C, S] (the row norm's reshape, no copy where the backend can avoid it),
    // and given back in x's shape.
    let shape = x.shape();
    let dims = GroupDims::new(shape.as_slice(), spec);
    let x3 = B::reshape_rows(x, Shape::new([dims.samples, dims.channels, dims.spatial]));
    let wrap = |p| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(p));
    let y = composite::group_norm::<B, 3>(
        Tensor::from_primitive(TensorPrimitive::Float(x3)),
        affine.map(|[g, b]| (wrap(g), wrap(b))),
        spec,
    );
    B::reshape_rows(y.into_primitive().tensor(), shape)
}

/// The fused CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B: crate::cpu::ndarray::NdArrayBackend> GroupNormBackend for B {
    fn fused_group_norm(
        x: &FloatTensor<Self>,
        affine: Option<&[FloatTensor<Self>; 2]>,
        spec: &GroupNormSpec,
    ) -> Option<FusedGroupNorm<Self>> {
        super::ndarray::fused_forward(x, affine, spec)
    }

    fn fused_group_norm_backward(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        statistics: &GroupStatistics<Self>,
        grad_output: FloatTensor<Self>,
        spec: &GroupNormSpec,
    ) -> FusedGroupNormGrads<Self> {
        super::ndarray::fused_backward(x, gamma, statistics, grad_output, spec)
    }
}

// The composite on every CubeCL backend: addnorm's fused CubeCL row norm for the
// statistics, Burn's ops for the per-channel affine map.
// The composite under fusion, which fuses the affine map's element-wise ops.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(GroupNormBackend);
