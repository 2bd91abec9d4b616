//! Embedding lookup with an analytic backward: the [`EmbeddingBackend`] extension, its CPU
//! kernels and the `Autodiff` node.
//!
//! - [`backend`]: the [`EmbeddingBackend`] trait (default: [`composite`]) and its `NdArray`
//!   impl.
//! - [`composite`]: the reference, Burn's own `embedding` op.
//! - [`cpu`]: the CPU kernels on slices.
//! - [`autodiff`]: `EmbeddingBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! # Why
//! burn-ndarray runs Burn's `embedding` as `select` on the table, which ndarray builds by
//! concatenating one row view at a time (an allocation and shape checks per row), and its
//! backward as `select_add`, one row view at a time. On the demo's model the two lookups of
//! 544 rows (token and position) took about 4% of a training run's instructions. Here the
//! forward copies each row once and the backward adds each row of `dy` to its table row in
//! the order `select_add` does, so every bit is Burn's.
//!
//! # Formula
//! ```text
//! y[b, t, :] = W[ids[b, t], :]
//! dW[v, :]   = 0 + Σ dy[b, t, :] over the (b, t) with ids[b, t] = v, in row-major order
//! ```
//!
//! # Shapes
//! `W`, `dW`: `[n, d]`; `ids`: `[batch, seq]` (int); `y`, `dy`: `[batch, seq, d]`.
//!
//! # Example
//! ```
//! use addnorm_kernels::embedding::embedding;
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Int, Tensor, TensorData};
//!
//! let device = Default::default();
//! let table = Tensor::<NdArray, 2>::from_floats([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]], &device);
//! let ids = Tensor::<NdArray, 2, Int>::from_ints([[2, 0]], &device);
//! embedding(table, ids)
//!     .into_data()
//!     .assert_eq(&TensorData::from([[[4.0f32, 5.0], [0.0, 1.0]]]), false);
//! # }
//! ```

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

use burn::tensor::{Int, Tensor, TensorPrimitive};

pub use backend::EmbeddingBackend;

/// The rows of `weights` (`[n, d]`) that `ids` (`[batch, seq]`) name, `[batch, seq, d]`
/// (see the [module docs](self)); fused where the backend has a kernel, differentiable in
/// `weights` on every backend. Burn's `Embedding::forward` is this on its weight.
pub fn embedding<B: EmbeddingBackend>(
    weights: Tensor<B, 2>,
    ids: Tensor<B, 2, Int>,
) -> Tensor<B, 3> {
    Tensor::from_primitive(TensorPrimitive::Float(B::embedding_rows(
        weights.into_primitive().tensor(),
        ids.into_primitive(),
    )))
}
