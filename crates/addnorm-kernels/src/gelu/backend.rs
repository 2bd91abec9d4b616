//! [`GeluBackend`]: the backend extension through which addnorm's feed-forward computes
//! its exact GELU, built as [`RowNormBackend`](crate::RowNormBackend) is: a composite
//! default ([`super::composite`]), a `fused_*` override per backend returning `Option`
//! (`None` falls back to the composite), and one `Autodiff` node with the analytic
//! backward ([`super::autodiff`]).
//!
//! # Formula
//! `y = x·Φ(x)`, backward `dx = dy·(Φ(x) + x·φ(x))` (Φ, φ: the standard normal CDF and
//! density).
//!
//! # Shapes
//! `x`, output, `grad_output`, dx: any shape, all the same.
//!
//! # The slope
//! Under `Autodiff` the forward can also return `GELU'(x) = Φ(x) + x·φ(x)`
//! ([`fused_gelu_with_slope`](GeluBackend::fused_gelu_with_slope)), computed in the same
//! pass from the same Φ and φ. The node then keeps the slope instead of `x`, a tensor of the
//! same size, and its backward is `dx = dy·slope`
//! ([`fused_gelu_backward_from_slope`](GeluBackend::fused_gelu_backward_from_slope)): one
//! multiplication per element, with the bits of the backward from `x`.
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64): the CPU kernels of [`super::cpu`], one pass forward (with the
//!   slope under `Autodiff`) and one backward, in parallel chunks.
//! - `CubeBackend` and `Fusion<CubeBackend>`: the composite. Under `Fusion` (Burn's GPU
//!   backends with default features) Burn already fuses its element-wise chain into one
//!   kernel; a bare `CubeBackend` runs it op by op.
//! - `Autodiff<B>`: one backward node when `B` is fused, else Burn's nodes op by op.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

use crate::fused::try_fused_forward;

/// The backend operations of addnorm's GELU. See the [module docs](self).
pub trait GeluBackend: Backend {
    /// `x·Φ(x)` on primitives: takes [`fused_gelu`](Self::fused_gelu) when the backend has
    /// a kernel for this input and no [`ForceComposite`](crate::composite::ForceComposite)
    /// guard is alive on this thread; otherwise [`super::composite::gelu`].
    fn gelu_values(x: FloatTensor<Self>) -> FloatTensor<Self> {
        if let Some(y) = try_fused_forward(|| Self::fused_gelu(&x)) {
            return y;
        }
        super::composite::gelu::<Self>(x)
    }

    /// The fused forward of [`gelu_values`](Self::gelu_values); `None` when this backend
    /// has no kernel for this input (the default).
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_gelu_backward`](Self::fused_gelu_backward).
    fn fused_gelu(x: &FloatTensor<Self>) -> Option<FloatTensor<Self>> {
        let _ = x;
        None
    }

    /// The fused forward with the slope `GELU'(x)`: `[x·Φ(x), Φ(x) + x·φ(x)]`, both shaped
    /// as `x`, or `Err(x)` (`x` handed back untouched) when this backend has no such
    /// kernel for this input (the default). It takes `x` so that a kernel may write the
    /// slope over `x`'s buffer when nothing else holds it: the training step then
    /// allocates no more than the forward alone.
    ///
    /// The `Autodiff` node calls it when it tracks the gradient, and keeps the slope for
    /// [`fused_gelu_backward_from_slope`](Self::fused_gelu_backward_from_slope); on `Err`
    /// it falls back to [`fused_gelu`](Self::fused_gelu) and
    /// [`fused_gelu_backward`](Self::fused_gelu_backward).
    fn fused_gelu_with_slope(
        x: FloatTensor<Self>,
    ) -> Result<[FloatTensor<Self>; 2], FloatTensor<Self>> {
        Err(x)
    }

    /// `∂L/∂x = grad_output·slope`, the slope from
    /// [`fused_gelu_with_slope`](Self::fused_gelu_with_slope). The default is Burn's
    /// element-wise product, which computes the same bits.
    fn fused_gelu_backward_from_slope(
        slope: FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::float_mul(grad_output, slope)
    }

    /// The fused backward: `∂L/∂x` from `x` and `grad_output = ∂L/∂y`.
    ///
    /// # Panics
    /// In this default, always: only a backend whose [`fused_gelu`](Self::fused_gelu)
    /// returns `Some` is asked for it.
    fn fused_gelu_backward(
        x: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let _ = (x, grad_output);
        panic!(
            "{} returned a fused GELU forward but has no fused backward: override \
             GeluBackend::fused_gelu_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// The fused CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B: crate::cpu::ndarray::NdArrayBackend> GeluBackend for B {
    fn fused_gelu(x: &FloatTensor<Self>) -> Option<FloatTensor<Self>> {
        super::ndarray::fused_forward(x)
    }

    fn fused_gelu_with_slope(
        x: FloatTensor<Self>,
    ) -> Result<[FloatTensor<Self>; 2], FloatTensor<Self>> {
        super::ndarray::fused_forward_with_slope(x)
    }

    fn fused_gelu_backward(
        x: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        super::ndarray::fused_backward(x, grad_output)
    }

    fn fused_gelu_backward_from_slope(
        slope: FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        super::ndarray::fused_backward_from_slope(&slope, grad_output)
    }
}

// The composite on every CubeCL backend.
// The composite under fusion, which fuses it into one element-wise kernel.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(GeluBackend);
