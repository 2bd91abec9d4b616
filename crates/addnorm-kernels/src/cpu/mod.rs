//! The fused CPU kernels of [`NormBackend::norm_rows`](crate::NormBackend::norm_rows): one
//! forward and one backward pass over `[rows, n]`, rows in parallel (rayon) when the call
//! is large enough to pay for the hand-off ([`plan::rows_per_task`]), inner loops written
//! so the compiler vectorizes them ([`dispatch`] picks the widest instruction set at run
//! time). They run in f32 and f64.
//!
//! - [`real`]: the element types and the lane-wise reductions.
//! - [`plan`]: the per-call constants and the split of rows into tasks.
//! - [`forward`]: `y`, and the per-row shift and `r` it saves.
//! - [`backward`]: dx, dγ, dβ from `x`, `dy` and the saved statistics.
//! - [`memory`]: output buffers on transparent huge pages.
//! - [`allocator`]: [`allocator::keep_freed_memory`], glibc `malloc` settings a training
//!   binary may apply so each step reuses the last step's memory.
//! - [`dispatch`]: the hot loops compiled for AVX2 + FMA and AVX-512 too, picked at run
//!   time.
//! - [`dyt`]: the fused Dynamic Tanh forward and backward.
//! - [`tanh`]: the vectorizable f32 `tanh` they use.
//! - [`exp`]: the vectorizable f32 `exp` behind it and behind the attention softmax.
//! - [`gemm`]: strided GEMMs on slices, for the attention and linear kernels.
//! - `ndarray` (with the `ndarray` feature): the glue that runs them on `NdArray` tensors.
//!
//! The kernels work on plain slices, so they can be tested and reused without a backend.
//!
//! # Counters
//! [`fused_calls`] (re-exported from [`crate::fused`]) says how many fused forward and
//! backward passes the *calling thread* has run, on this backend or any other. Tests use it
//! to check that a backend really takes the fused path.
//!
//! # Example
//! ```
//! use addnorm_kernels::cpu::fused_calls;
//!
//! let before = fused_calls();
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::Tensor;
//! let x = Tensor::<NdArray, 2>::from_floats([[1.0, 2.0, 3.0]], &Default::default());
//! let _ = <NdArray as addnorm_kernels::NormBackend>::norm_rows(
//!     x.into_primitive().tensor(),
//!     None,
//!     None,
//!     addnorm_kernels::RowNormSpec::layer_norm(1e-5),
//! );
//! assert_eq!(fused_calls().forward, before.forward + 1);
//! # }
//! ```

pub mod allocator;
pub mod backward;
pub mod dispatch;
pub mod dyt;
pub mod exp;
pub mod forward;
pub mod gemm;
pub mod memory;
pub mod plan;
pub mod real;
pub mod tanh;

#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

#[cfg(test)]
pub(crate) mod test_values;

pub use crate::fused::{FusedCalls, fused_calls};
