//! GELU in its exact (erf) form with an analytic backward: the [`GeluBackend`] extension,
//! its fused CPU kernels and the `Autodiff` node.
//!
//! - [`backend`]: the [`GeluBackend`] trait (default: [`composite`]) and its `NdArray`
//!   impl.
//! - [`composite`]: the reference in Burn's ops.
//! - [`cpu`]: the fused CPU kernels (f32, f64) on slices.
//! - [`autodiff`]: `GeluBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! # Why
//! The composite `((x/√2).erf() + 1)·x·½` is five element-wise passes forward, each with
//! its own output, and Burn's autodiff differentiates them one by one backward (`erf`'s
//! derivative needs an `exp`); burn-ndarray runs each on one thread, with the scalar C
//! library `erf`. In a transformer's feed-forward the activation is `[rows, d_ff]`, the
//! widest tensor of the block: the fused kernels make it one vectorized pass each way, in
//! parallel chunks.
//!
//! # Formula
//! ```text
//! GELU(x) = x·Φ(x) = x·½·(1 + erf(x/√2))        GELU'(x) = Φ(x) + x·φ(x)
//! ```
//! with φ the standard normal density (the same function as PyTorch's
//! `torch.nn.functional.gelu` with its default `approximate='none'`).
//!
//! # Shapes
//! `x` and the output: any shape, the same.
//!
//! # Example
//! ```
//! use addnorm_kernels::gelu::gelu;
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let x = Tensor::<NdArray, 2>::from_floats([[-1.0, 0.0], [1.0, 3.0]], &Default::default());
//! gelu(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[-0.158_655_25, 0.0], [0.841_344_7, 2.995_950_2]]),
//!     Tolerance::absolute(1e-6),
//! );
//! # }
//! ```

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

use burn::tensor::{Tensor, TensorPrimitive};

pub use backend::GeluBackend;

/// Exact GELU of `x`, element-wise (see the [module docs](self)); fused where the backend
/// has a kernel, differentiable on every backend.
pub fn gelu<B: GeluBackend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(B::gelu_values(
        x.into_primitive().tensor(),
    )))
}
