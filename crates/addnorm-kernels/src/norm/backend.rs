//! [`RowNormBackend`]: the backend extension through which addnorm's norms compute.
//!
//! It follows Burn's backend-extension pattern: a trait over `Backend` whose methods take
//! and return float primitives. Its default methods are the [`composite`]
//! reference, so a backend opts in with an empty impl and gets correct forward and
//! backward passes from Burn's own ops. A backend with a fused kernel overrides the method.
//! Model code does not name it: it bounds its backend by
//! [`KernelBackend`](crate::KernelBackend) (or its old name `NormBackend`), which requires
//! this trait and the other ops'.
//!
//! # Formulas
//! - [`RowNormBackend::norm_rows`]: `y = (x − μ) / √(σ² + ε) · γ + β` and the other
//!   variants of [`RowNormSpec`].
//! - [`RowNormBackend::dynamic_tanh`]: `y = γ · tanh(α·x) + β` (fused on NdArray; on the
//!   GPU backends Burn's fusion already fuses its element-wise composite).
//!
//! # Shapes
//! - `x`: `[rows, n]`; `gamma`, `beta`: `[n]` or `[1]`; `alpha`: `[1]`; output `[rows, n]`.
//!
//! # Example
//! ```
//! use addnorm_kernels::KernelBackend;
//! use burn::prelude::*;
//!
//! fn double_then_normalize<B: KernelBackend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
//!     let spec = addnorm_kernels::RowNormSpec::layer_norm(1e-5);
//!     let y = B::norm_rows((x * 2.0).into_primitive().tensor(), None, None, spec);
//!     Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(y))
//! }
//! # #[cfg(feature = "ndarray")]
//! # {
//! let device = Default::default();
//! let x = Tensor::<burn::backend::NdArray, 2>::from_floats([[1.0, 2.0, 3.0]], &device);
//! let y = double_then_normalize(x);
//! y.into_data().assert_approx_eq::<f32>(
//!     &burn::tensor::TensorData::from([[-1.2247, 0.0, 1.2247]]),
//!     burn::tensor::Tolerance::absolute(1e-4),
//! );
//! # }
//! ```
//!
//! addnorm implements it for `NdArray` (with the fused [CPU kernels](super::cpu)), for
//! every CubeCL backend with feature `wgpu` or `cuda` (`CubeBackend<R, ..>` and
//! `Fusion<CubeBackend<R, ..>>`, so `burn::backend::Wgpu` with or without Burn's `fusion`
//! feature, with the fused CubeCL kernels of `super::cube`) and `Autodiff<B>` for any
//! `B: RowNormBackend` (which records one [fused backward node](super::autodiff) when `B`
//! has fused kernels). For a backend of your own, see [`crate::kernel_backend`].
//!
//! # Fused kernels
//! A backend with fused kernels overrides [`RowNormBackend::fused_norm_rows`] and
//! [`RowNormBackend::fused_norm_rows_backward`] (see [`super::fused`]); the default
//! [`RowNormBackend::norm_rows`] and the `Autodiff` impl pick them up.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, Tensor, TensorPrimitive, backend::Backend};

use super::composite;
use super::fused::{FusedDynamicTanhGrads, FusedNormForward, FusedNormGrads, RowStatistics};
use super::spec::RowNormSpec;
use crate::fused::try_fused_forward;

/// Wraps a float primitive into a tensor of rank `D`.
fn tensor<B: Backend, const D: usize>(primitive: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(primitive))
}

/// The backend operations addnorm's norms are made of: LayerNorm and RMSNorm
/// ([`norm_rows`](Self::norm_rows)), DyT ([`dynamic_tanh`](Self::dynamic_tanh)) and the
/// flattening to `[rows, n]` ([`reshape_rows`](Self::reshape_rows)). See the
/// [module docs](self).
pub trait RowNormBackend: Backend {
    /// Normalizes each row of `x: [rows, n]` as `spec` describes, then applies `y·γ + β`
    /// with `gamma`, `beta` of shape `[n]` or `[1]`.
    ///
    /// Takes [`fused_norm_rows`](Self::fused_norm_rows) when the backend has a fused
    /// kernel for these inputs and no [`ForceComposite`](crate::composite::ForceComposite) guard
    /// is alive on this thread; otherwise the [composite](composite::norm_rows) path.
    fn norm_rows(
        x: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
        spec: RowNormSpec,
    ) -> FloatTensor<Self> {
        if let Some(fused) =
            try_fused_forward(|| Self::fused_norm_rows(&x, gamma.as_ref(), beta.as_ref(), &spec))
        {
            return fused.output;
        }
        composite::norm_rows::<Self>(tensor(x), gamma.map(tensor), beta.map(tensor), &spec)
            .into_primitive()
            .tensor()
    }

    /// The fused forward of [`norm_rows`](Self::norm_rows), returning the output and the
    /// per-row statistics its backward needs; `None` when this backend has no fused kernel
    /// for these inputs (the default), which sends the caller down the composite path.
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_norm_rows_backward`](Self::fused_norm_rows_backward).
    fn fused_norm_rows(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
        spec: &RowNormSpec,
    ) -> Option<FusedNormForward<Self>> {
        let _ = (x, gamma, beta, spec);
        None
    }

    /// The fused backward: dx, dγ and dβ from `x`, γ, the saved statistics and
    /// `grad_output = ∂L/∂y`. `beta_features` is β's length (`n` or 1), `None` without β.
    /// dγ and dβ may come back in another float dtype than the parameters' (the CubeCL
    /// kernels return f32): the autodiff node casts them.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_norm_rows`](Self::fused_norm_rows) returns `Some` is asked for it.
    fn fused_norm_rows_backward(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta_features: Option<usize>,
        statistics: &RowStatistics<Self>,
        grad_output: FloatTensor<Self>,
        spec: &RowNormSpec,
    ) -> FusedNormGrads<Self> {
        let _ = (x, gamma, beta_features, statistics, grad_output, spec);
        panic!(
            "{} returned a fused norm_rows forward but has no fused backward: override \
             RowNormBackend::fused_norm_rows_backward too",
            core::any::type_name::<Self>()
        )
    }

    /// Reshapes `x` to `shape` (the same number of elements), the way the norms flatten their
    /// input to `[rows, n]` and restore it. The default is Burn's `float_reshape`; a backend
    /// whose reshape copies a contiguous tensor overrides it (burn-ndarray 0.21 copies on
    /// every reshape: 16 MiB twice per norm and per direction at 4096×1024), and `Autodiff`
    /// records a backward that takes the same route.
    fn reshape_rows(x: FloatTensor<Self>, shape: Shape) -> FloatTensor<Self> {
        Self::float_reshape(x, shape)
    }

    /// Dynamic Tanh on `x: [rows, n]`: `γ·tanh(α·x) + β` with `alpha: [1]`.
    ///
    /// Takes [`fused_dynamic_tanh`](Self::fused_dynamic_tanh) when the backend has a fused
    /// kernel for these inputs and no [`ForceComposite`](crate::composite::ForceComposite) guard
    /// is alive on this thread; otherwise the [composite](composite::dynamic_tanh) path.
    fn dynamic_tanh(
        x: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        if let Some(y) = try_fused_forward(|| {
            Self::fused_dynamic_tanh(&x, &alpha, gamma.as_ref(), beta.as_ref())
        }) {
            return y;
        }
        composite::dynamic_tanh::<Self>(
            tensor(x),
            tensor(alpha),
            gamma.map(tensor),
            beta.map(tensor),
        )
        .into_primitive()
        .tensor()
    }

    /// The fused forward of [`dynamic_tanh`](Self::dynamic_tanh); `None` when this backend
    /// has no fused kernel for these inputs (the default). The backward needs nothing but
    /// the inputs, so nothing else is returned. A backend that returns `Some` must also
    /// override [`fused_dynamic_tanh_backward`](Self::fused_dynamic_tanh_backward).
    fn fused_dynamic_tanh(
        x: &FloatTensor<Self>,
        alpha: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
    ) -> Option<FloatTensor<Self>> {
        let _ = (x, alpha, gamma, beta);
        None
    }

    /// The fused DyT backward: dx, dα, dγ and dβ from `x`, α, γ and
    /// `grad_output = ∂L/∂y`. `beta_features` is β's length (`n` or 1), `None` without β.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_dynamic_tanh`](Self::fused_dynamic_tanh) returns `Some` is asked for it.
    fn fused_dynamic_tanh_backward(
        x: &FloatTensor<Self>,
        alpha: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta_features: Option<usize>,
        grad_output: FloatTensor<Self>,
    ) -> FusedDynamicTanhGrads<Self> {
        let _ = (x, alpha, gamma, beta_features, grad_output);
        panic!(
            "{} returned a fused dynamic_tanh forward but has no fused backward: override \
             RowNormBackend::fused_dynamic_tanh_backward too",
            core::any::type_name::<Self>()
        )
    }
}
