//! The fused CPU kernels of [`NormBackend::norm_rows`](crate::NormBackend::norm_rows): one
//! forward and one backward pass over `[rows, n]`, rows in parallel (rayon), inner loops
//! written so the compiler vectorizes them. They run in f32 and f64.
//!
//! - [`real`]: the element types and the lane-wise reductions.
//! - [`plan`]: the per-call constants and the split of rows into tasks.
//! - [`forward`]: `y`, and the per-row shift and `r` it saves.
//! - [`backward`]: dx, dγ, dβ from `x`, `dy` and the saved statistics.
//! - `ndarray` (with the `ndarray` feature): the glue that runs them on `NdArray` tensors.
//!
//! The kernels work on plain slices, so they can be tested and reused without a backend.
//!
//! # Counters
//! [`fused_calls`] says how many fused forward and backward passes the *calling thread* has
//! run. Tests use it to check that a backend really takes the fused path; it is a
//! thread-local increment per call (not per row), which costs nothing measurable, so it is
//! always on.
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

pub mod backward;
pub mod forward;
pub mod plan;
pub mod real;

#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;

use std::cell::Cell;

/// How many fused kernel calls a thread has made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FusedCalls {
    /// Fused forward passes.
    pub forward: usize,
    /// Fused backward passes.
    pub backward: usize,
}

thread_local! {
    static CALLS: Cell<FusedCalls> = const { Cell::new(FusedCalls { forward: 0, backward: 0 }) };
}

/// The fused CPU kernel calls the calling thread has made so far (see the
/// [module docs](self)).
pub fn fused_calls() -> FusedCalls {
    CALLS.with(Cell::get)
}

/// Records one call on this thread.
#[cfg_attr(not(feature = "ndarray"), allow(dead_code))]
pub(crate) fn count(update: impl FnOnce(&mut FusedCalls)) {
    CALLS.with(|calls| {
        let mut now = calls.get();
        update(&mut now);
        calls.set(now);
    });
}
