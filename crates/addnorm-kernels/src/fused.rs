//! The fused path every op shares: the dispatch from an op's default method to a backend's
//! fused kernel ([`try_fused_forward`](crate::fused)), and the per-thread counters of the
//! fused calls ([`fused_calls`]).
//!
//! Each op (`crate::norm`, `crate::attention`, `crate::linear`, `crate::gelu`,
//! `crate::cross_entropy`, `crate::group_norm`, `crate::embedding`, `crate::adamw`) has a
//! `fused_*` method per backend that returns `Option` or hands its inputs back (`None` or
//! `Err`: no kernel for these inputs, take the composite). The dispatch and the counters
//! below are the same for all of them.
//!
//! # Formula
//! ```text
//! op(x) = fused(x)        when the backend has a kernel for x and no ForceComposite is alive
//!       = composite(x)    otherwise
//! ```
//!
//! # Counters
//! [`fused_calls`] says how many fused forward and backward passes the *calling thread* has
//! started, whichever backend ran them (the CPU kernels, the CubeCL kernels directly, or
//! queued in a fusion stream, counted when queued). The count is taken where the fused path
//! is chosen, not in the kernels: forwards in the ops' default methods and `Autodiff`'s,
//! backwards in the autodiff nodes. A backend outside this crate is counted the same way.
//! Tests use it to check that a backend really takes the fused path; it is a thread-local
//! increment per call (not per row), which costs nothing measurable, so it is always on.
//!
//! ```
//! use addnorm_kernels::fused::fused_calls;
//!
//! let before = fused_calls();
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::Tensor;
//! let x = Tensor::<NdArray, 2>::from_floats([[1.0, 2.0, 3.0]], &Default::default());
//! let _ = <NdArray as addnorm_kernels::RowNormBackend>::norm_rows(
//!     x.into_primitive().tensor(),
//!     None,
//!     None,
//!     addnorm_kernels::RowNormSpec::layer_norm(1e-5),
//! );
//! assert_eq!(fused_calls().forward, before.forward + 1);
//! # }
//! ```
//!
//! # Shapes
//! None: counters and a dispatch, whatever the op's tensors.

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

/// The fused kernel calls the calling thread has made so far (see the
/// [module docs](self)).
pub fn fused_calls() -> FusedCalls {
    CALLS.with(Cell::get)
}

/// Records one call on this thread.
fn count(update: impl FnOnce(&mut FusedCalls)) {
    CALLS.with(|calls| {
        let mut now = calls.get();
        update(&mut now);
        calls.set(now);
    });
}

/// The dispatch to a fused forward: `None` while a
/// [`ForceComposite`](crate::composite::ForceComposite) guard is alive on this thread,
/// else what `kernel` returns (a backend's `fused_*` method); a `Some` is counted as one
/// fused forward. Every forward dispatch (the ops' defaults and `Autodiff`'s) goes
/// through here, so the counter works for any backend.
pub(crate) fn try_fused_forward<T>(kernel: impl FnOnce() -> Option<T>) -> Option<T> {
    try_fused_by_value((), |()| kernel().ok_or(())).ok()
}

/// [`try_fused_forward`] for a kernel that takes its inputs by value (to write over their
/// buffers): `Err(inputs)`, untouched, while a
/// [`ForceComposite`](crate::composite::ForceComposite) guard is alive or when `kernel`
/// hands them back; an `Ok` is counted as one fused forward.
pub(crate) fn try_fused_by_value<I, T>(
    inputs: I,
    kernel: impl FnOnce(I) -> Result<T, I>,
) -> Result<T, I> {
    if crate::composite::is_forced() {
        return Err(inputs);
    }
    let fused = kernel(inputs);
    if fused.is_ok() {
        count(|calls| calls.forward += 1);
    }
    fused
}

/// Counts one fused backward; the autodiff nodes call it when they run one.
pub(crate) fn count_fused_backward() {
    count(|calls| calls.backward += 1);
}
