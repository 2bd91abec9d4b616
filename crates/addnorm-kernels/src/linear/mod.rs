//! Linear layers with one GEMM per call: the [`LinearBackend`] extension, its fused CPU
//! kernels and the `Autodiff` node.
//!
//! - [`backend`]: the [`LinearBackend`] trait (default: Burn's `linear`) and its `NdArray`
//!   impl.
//! - [`fused`]: which gradients a fused backward is asked for, and what it returns.
//! - [`cpu`]: the fused CPU kernels (f32, f64) on slices; `ndarray` (feature `ndarray`)
//!   runs them on `NdArray` tensors.
//! - [`autodiff`]: `LinearBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! # Why
//! Burn 0.21 computes `linear` on a `[batch, T, d_in]` input as `batch` separate GEMMs (and
//! its weight gradient as `batch` GEMMs summed over a `[batch, d_in, d_out]`
//! intermediate), and burn-ndarray runs them on one thread. The fused kernels treat the
//! leading dimensions as the rows of one matrix and split the rows over rayon's threads.
//!
//! # Formula
//! `y = x·W + b` on the last dimension; `dx = dy·Wᵀ`, `dW = Σ_rows xᵀ·dy`,
//! `db = Σ_rows dy`. [`linear_onto`] adds a residual in the same pass: `y = r + (x·W + b)`,
//! `dr = dy`.
//!
//! # Shapes
//! - `x`: `[..., d_in]`; `weight`: `[d_in, d_out]` (Burn's `Linear` layout); `bias`:
//!   `[d_out]`; output and the residual `r`: `[..., d_out]`
//!
//! # Example
//! ```
//! use addnorm_kernels::linear::linear;
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! let x = Tensor::<NdArray, 3>::from_floats([[[1.0, 2.0], [3.0, 4.0]]], &device);
//! let w = Tensor::<NdArray, 2>::from_floats([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], &device);
//! let b = Tensor::<NdArray, 1>::from_floats([0.5, 0.5, 0.5], &device);
//! let y = linear(x, w, Some(b));
//! y.into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[[1.5, 2.5, 3.5], [3.5, 4.5, 7.5]]]),
//!     Tolerance::absolute(1e-6),
//! );
//! # }
//! ```

pub mod autodiff;
pub mod backend;
pub mod cpu;
pub mod fused;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

use burn::tensor::{Tensor, TensorPrimitive};

pub use backend::LinearBackend;
pub use fused::{LinearGrads, LinearWants};

/// `x·W + b` on the last dimension of `x` (see the [module docs](self)); fused where the
/// backend has a kernel, differentiable on every backend. A rank-1 `x` is one row.
///
/// # Panics
/// If `weight` is not `[d_in, d_out]` with `d_in` the last dimension of `x`, or `bias` is
/// not `[d_out]` (in Burn's own `linear`, which checks the shapes).
pub fn linear<B: LinearBackend, const D: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, 2>,
    bias: Option<Tensor<B, 1>>,
) -> Tensor<B, D> {
    if D == 1 {
        return linear(x.unsqueeze::<2>(), weight, bias).squeeze_dim(0);
    }
    Tensor::from_primitive(TensorPrimitive::Float(B::linear_rows(
        x.into_primitive().tensor(),
        weight.into_primitive().tensor(),
        bias.map(|b| b.into_primitive().tensor()),
    )))
}

/// `r + (x·W + b)`: a linear layer's output added to the residual `r` (shaped as the
/// output) in the same pass over it, with the bits of `r + linear(x, weight, bias)`. On
/// `NdArray` that saves a `[..., d_out]` tensor and a pass over it; under `Autodiff` the one
/// node gives `∂L/∂r = ∂L/∂y` with the others. A rank-1 `x` is one row.
///
/// # Panics
/// As [`linear`], or if `r` is not shaped as the output.
pub fn linear_onto<B: LinearBackend, const D: usize>(
    x: Tensor<B, D>,
    weight: Tensor<B, 2>,
    bias: Option<Tensor<B, 1>>,
    residual: Tensor<B, D>,
) -> Tensor<B, D> {
    if D == 1 {
        return linear_onto(x.unsqueeze::<2>(), weight, bias, residual.unsqueeze::<2>())
            .squeeze_dim(0);
    }
    let mut out_dims = x.dims();
    out_dims[D - 1] = weight.dims()[1];
    assert_eq!(
        residual.dims(),
        out_dims,
        "linear_onto: the residual must be shaped as the output x·W"
    );
    Tensor::from_primitive(TensorPrimitive::Float(B::linear_rows_onto(
        x.into_primitive().tensor(),
        weight.into_primitive().tensor(),
        bias.map(|b| b.into_primitive().tensor()),
        residual.into_primitive().tensor(),
    )))
}

/// A Burn [`Linear`](burn::nn::Linear) module applied through [`linear_onto`]: `r` plus
/// the layer's output.
pub fn forward_onto<B: LinearBackend, const D: usize>(
    layer: &burn::nn::Linear<B>,
    x: Tensor<B, D>,
    residual: Tensor<B, D>,
) -> Tensor<B, D> {
    linear_onto(
        x,
        layer.weight.val(),
        layer.bias.as_ref().map(|b| b.val()),
        residual,
    )
}

/// A Burn [`Linear`](burn::nn::Linear) module applied through [`linear`]: the same
/// parameters and records, the fused path where the backend has one.
pub fn forward<B: LinearBackend, const D: usize>(
    layer: &burn::nn::Linear<B>,
    x: Tensor<B, D>,
) -> Tensor<B, D> {
    linear(x, layer.weight.val(), layer.bias.as_ref().map(|b| b.val()))
}
