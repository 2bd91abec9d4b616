//! [`LinearBackend`]: the backend extension through which addnorm's linear layers compute,
//! built as [`RowNormBackend`](crate::RowNormBackend) is: a composite default (Burn's own
//! `linear`), a `fused_*` override per backend returning `Option` (`None` falls back to
//! the composite), and one `Autodiff` node with the analytic backward
//! ([`super::autodiff`]).
//!
//! # Formula
//! `y = x·W + b` on the last dimension of `x`, or `y = r + (x·W + b)` onto a residual `r`;
//! backward `dx = dy·Wᵀ`, `dW = Σ_rows xᵀ·dy`, `db = Σ_rows dy` (and `dr = dy`).
//!
//! # Shapes
//! - `x`: `[..., d_in]` (any rank ≥ 2); `weight`: `[d_in, d_out]`; `bias`: `[d_out]`
//! - output and `r`: `[..., d_out]`
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64, contiguous or not): the CPU kernels of [`super::cpu`].
//! - `CubeBackend` and `Fusion<CubeBackend>`: Burn's own `linear` (its matmul is already a
//!   tiled GPU kernel).
//! - `Autodiff<B>`: one backward node when `B` is fused, else Burn's linear node.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, ModuleOps};

use super::fused::{LinearGrads, LinearWants};
use crate::fused::try_fused_forward;

/// The backend operations a linear layer is made of. See the [module docs](self).
pub trait LinearBackend: Backend {
    /// `x·W + b` on primitives: takes [`fused_linear`](Self::fused_linear) when the backend
    /// has a kernel for these inputs and no
    /// [`ForceComposite`](crate::composite::ForceComposite) guard is alive on this thread;
    /// otherwise Burn's `linear`.
    fn linear_rows(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        if let Some(y) = try_fused_forward(|| Self::fused_linear(&x, &weight, bias.as_ref())) {
            return y;
        }
        <Self as ModuleOps<Self>>::linear(x, weight, bias)
    }

    /// The fused forward of [`linear_rows`](Self::linear_rows); `None` when this backend
    /// has no kernel for these inputs (the default).
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_linear_backward`](Self::fused_linear_backward).
    fn fused_linear(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        bias: Option<&FloatTensor<Self>>,
    ) -> Option<FloatTensor<Self>> {
        let _ = (x, weight, bias);
        None
    }

    /// `r + (x·W + b)` on primitives, `r` shaped as the output: takes
    /// [`fused_linear_onto`](Self::fused_linear_onto) when the backend has a kernel for
    /// these inputs and no [`ForceComposite`](crate::composite::ForceComposite) guard is
    /// alive on this thread; otherwise [`linear_rows`](Self::linear_rows) and Burn's
    /// `float_add(r, y)`, which the fused kernel matches bit for bit.
    fn linear_rows_onto(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let fused =
            try_fused_forward(|| Self::fused_linear_onto(&x, &weight, bias.as_ref(), &residual));
        if let Some(y) = fused {
            return y;
        }
        Self::float_add(residual, Self::linear_rows(x, weight, bias))
    }

    /// The fused forward of [`linear_rows_onto`](Self::linear_rows_onto); `None` when this
    /// backend has no kernel for these inputs (the default). Its backward is
    /// [`fused_linear_backward`](Self::fused_linear_backward)'s, with `∂L/∂r = ∂L/∂y`.
    fn fused_linear_onto(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        bias: Option<&FloatTensor<Self>>,
        residual: &FloatTensor<Self>,
    ) -> Option<FloatTensor<Self>> {
        let _ = (x, weight, bias, residual);
        None
    }

    /// The fused backward: the gradients in `wants`, from `x`, `weight` and
    /// `grad_output = ∂L/∂y`.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_linear`](Self::fused_linear) returns `Some` is asked for it.
    fn fused_linear_backward(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        wants: LinearWants,
    ) -> LinearGrads<Self> {
        let _ = (x, weight, grad_output, wants);
        panic!(
            "{} returned a fused linear forward but has no fused backward: override \
             LinearBackend::fused_linear_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// The fused CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B: crate::cpu::ndarray::NdArrayBackend> LinearBackend for B {
    fn fused_linear(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        bias: Option<&FloatTensor<Self>>,
    ) -> Option<FloatTensor<Self>> {
        super::ndarray::fused_forward(x, weight, bias, None)
    }

    fn fused_linear_onto(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        bias: Option<&FloatTensor<Self>>,
        residual: &FloatTensor<Self>,
    ) -> Option<FloatTensor<Self>> {
        super::ndarray::fused_forward(x, weight, bias, Some(residual))
    }

    fn fused_linear_backward(
        x: &FloatTensor<Self>,
        weight: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        wants: LinearWants,
    ) -> LinearGrads<Self> {
        super::ndarray::fused_backward(x, weight, &grad_output, wants)
    }
}

// Burn's `linear` on every CubeCL backend.
// Burn's `linear` under fusion.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(LinearBackend);
