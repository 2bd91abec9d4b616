//! Masked token cross-entropy with an optional z-loss and an analytic backward: the
//! [`CrossEntropyBackend`] extension, its fused CPU kernels and the `Autodiff` node.
//!
//! - [`backend`]: the [`CrossEntropyBackend`] trait (default: [`composite`]) and its
//!   `NdArray` impl; the CubeCL backends take the composite, for now.
//! - [`composite`]: the reference in Burn's ops.
//! - [`fused`]: what a fused forward returns (the loss and each row's log-partition).
//! - [`cpu`]: the fused CPU kernels (f32, f64) on slices; `ndarray` (feature `ndarray`)
//!   runs them on `NdArray` tensors.
//! - [`autodiff`]: `CrossEntropyBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! # Why
//! In Burn's ops the loss is a chain over the whole `[batch, seq, vocab]` logits (the
//! shifted logits, their exponentials, the log-softmax, a gather, and the z-loss's own
//! log-partition), each with its own output kept for the backward, which then runs op by
//! op. The fused kernels read the logits once forward, keep one number per position, and
//! write the gradient in one pass backward, in parallel chunks of rows whose partial sums
//! are added in a fixed order (the result does not depend on the thread count).
//!
//! # Formula
//! Per position `r` (every `(b, t)`), with logits `z_r`, target `y_r`, mask weight `m_r`,
//! `M = Σ_r m_r`, z-loss weight `λ ≥ 0` and upstream gradient `g`:
//!
//! ```text
//! lse_r = log Σ_v exp(z_rv)
//! loss  = ( Σ_r m_r·(lse_r − z_{r,y_r}) + λ·Σ_r m_r·lse_r² ) / M
//! dz_rv = g·m_r/M · ( softmax_rv − [v = y_r] + 2λ·lse_r·softmax_rv )
//! ```
//!
//! `λ = 0` is the plain masked cross-entropy; `λ > 0` adds Wortsman et al.'s (2023) z-loss.
//! The mask may hold any weights (0/1 in the lab); `M = 0` gives NaN.
//!
//! # Special values
//! - A target outside `[0, vocab)`, masked or not, panics on the fused CPU path (naming the
//!   row and the value); on the composite path it does what Burn's `gather` does (on
//!   `NdArray` it panics).
//! - Non-finite logits are never hidden: a NaN or `+∞` logit makes the loss NaN, even in a
//!   masked-out row; a `−∞` target logit makes it `+∞`.
//!
//! # Shapes
//! - `logits`: `[..., vocab]`, typically `[batch, seq, vocab]` (rank ≥ 2)
//! - `targets` (Int) and `mask`: the leading dimensions, `[batch, seq]`
//! - output: `[1]`
//!
//! # Example
//! ```
//! use addnorm_kernels::cross_entropy::masked_cross_entropy;
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Int, Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! // Two positions; only the first is scored. Its two logits are equal: loss = ln 2.
//! let logits =
//!     Tensor::<NdArray, 3>::from_floats([[[0.0, 0.0], [3.0, -1.0]]], &device);
//! let targets = Tensor::<NdArray, 2, Int>::from_ints([[1, 0]], &device);
//! let mask = Tensor::<NdArray, 2>::from_floats([[1.0, 0.0]], &device);
//! let loss = masked_cross_entropy(logits.clone(), targets.clone(), mask.clone(), 0.0);
//! loss.into_data()
//!     .assert_approx_eq::<f32>(&TensorData::from([0.693_147_2]), Tolerance::absolute(1e-6));
//! // With the z-loss at λ = 0.5: ln 2 + 0.5·(ln 2)².
//! let loss = masked_cross_entropy(logits, targets, mask, 0.5);
//! loss.into_data()
//!     .assert_approx_eq::<f32>(&TensorData::from([0.933_373_7]), Tolerance::absolute(1e-6));
//! # }
//! ```

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
pub mod fused;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

#[cfg(all(test, feature = "ndarray"))]
mod tests;

use burn::tensor::{Int, Tensor, TensorPrimitive};

pub use backend::CrossEntropyBackend;
pub use fused::FusedCrossEntropy;

/// The masked mean token cross-entropy of `logits` against `targets`, plus `z_loss` times
/// the masked mean of the squared log-partition (see the [module docs](self) for the
/// formula); fused where the backend has a kernel, differentiable on every backend (with
/// respect to the logits, and to the mask on the composite path).
///
/// # Shapes
/// - `logits`: `[..., vocab]` (rank `D ≥ 2`), e.g. `[batch, seq, vocab]`
/// - `targets`, `mask`: `[...]` (rank `R = D − 1`), e.g. `[batch, seq]`
/// - output: `[1]`
///
/// # Panics
/// - If `targets` or `mask` is not shaped as the leading dimensions of `logits`.
/// - If `z_loss` is negative or not finite.
/// - On the fused CPU path, if a target is outside `[0, vocab)` (any row, masked or not);
///   the composite path does what Burn's `gather` does (`NdArray` panics too).
pub fn masked_cross_entropy<B: CrossEntropyBackend, const D: usize, const R: usize>(
    logits: Tensor<B, D>,
    targets: Tensor<B, R, Int>,
    mask: Tensor<B, R>,
    z_loss: f64,
) -> Tensor<B, 1> {
    Tensor::from_primitive(TensorPrimitive::Float(B::cross_entropy_loss(
        logits.into_primitive().tensor(),
        targets.into_primitive(),
        mask.into_primitive().tensor(),
        z_loss,
    )))
}
