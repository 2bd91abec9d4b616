//! The CPU infrastructure every op's fused CPU kernels build on, with no op of its own:
//! the kernels themselves live with their op (`crate::norm::cpu`, `crate::attention::cpu`,
//! `crate::linear::cpu`, `crate::gelu::cpu`).
//!
//! - [`dispatch`]: the hot loops compiled for AVX2 + FMA and AVX-512 too, the widest the
//!   CPU has picked at run time.
//! - [`real`]: the element types (f32, f64) and the lane-wise reductions.
//! - [`exp`], [`tanh`]: vectorizable f32 `exp` and `tanh` (the softmax, GELU, DyT);
//!   `polynomial`: the Horner scheme by fused multiply-adds they and GELU's Φ share.
//! - [`gemm`]: strided GEMMs on slices, for attention and linear layers: a direct AVX-512
//!   kernel for small and thin products, `matrixmultiply` for the rest, with the same bits;
//!   [`strided`]: the matrix view they take.
//! - [`aligned`]: buffers whose first element starts a cache line, inside a plain `Vec`.
//! - [`memory`]: output buffers, 64-byte aligned, on transparent huge pages.
//! - [`output_pool`] (with the `ndarray` feature): the kernels' large outputs reused once
//!   Burn drops them, so a step writes into pages the last step mapped.
//! - [`parallel`]: a kernel's tasks in parallel, the calling thread taking part when it is
//!   not a pool worker (a user's `main`), and the buffers they share.
//! - [`scratch`]: work buffers kept from one call to the next.
//! - [`peak`]: the machine's f32 FMA peak, measured, for the benchmarks' share of it.
//! - [`allocator`]: [`allocator::keep_freed_memory`], glibc `malloc` settings a training
//!   binary may apply so each step reuses the last step's memory.
//! - [`ndarray`] (with the `ndarray` feature): the glue that runs the kernels on `NdArray`
//!   tensors, and [`ndarray::NdArrayBackend`], the bound of the ops' `NdArray` impls.
//!
//! # Formula
//! Each kernel's formula is in its op's module. Here: `Σ x` and `Σ f(x)` in
//! [`real::LANES`] independent lanes (so they vectorize, with the same bits on every
//! instruction set), `C = α·A·B + β·C` for the GEMMs.
//!
//! # Shapes
//! Slices: row-major `[rows, n]` matrices, or strided views for the GEMMs.
//!
//! # Counters
//! [`fused_calls`] is [`crate::fused::fused_calls`], re-exported here at its old path.

pub mod aligned;
pub mod allocator;
pub mod dispatch;
pub mod exp;
pub mod gemm;
pub mod memory;
#[cfg(feature = "ndarray")]
pub mod ndarray;
#[cfg(feature = "ndarray")]
pub mod output_pool;
pub mod parallel;
pub mod peak;
pub(crate) mod polynomial;
pub mod real;
pub mod reused;
pub mod scratch;
pub mod strided;
pub mod tanh;

#[cfg(test)]
pub(crate) mod test_values;

/// Old path of [`crate::fused::fused_calls`] and [`crate::fused::FusedCalls`], kept for
/// code written against it.
pub use crate::fused::{FusedCalls, fused_calls};
