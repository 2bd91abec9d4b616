//! What a fused row-norm kernel hands over: the forward's output with the per-row
//! statistics it saves ([`FusedNormForward`], [`RowStatistics`]), and the backward's
//! gradients ([`FusedNormGrads`]).
//!
//! A backend provides fused kernels by overriding
//! [`NormBackend::fused_norm_rows`](crate::NormBackend::fused_norm_rows) and
//! [`NormBackend::fused_norm_rows_backward`](crate::NormBackend::fused_norm_rows_backward);
//! `Autodiff<B>` then records one backward node that keeps `x`, γ and the two `[rows]`
//! statistics, nothing bigger (see [`crate::autodiff`]).
//!
//! # Formula
//! With `p` the row's pivot (its first element when centring, else 0):
//!
//! ```text
//! shift = μ − p     (0 for RMSNorm)
//! rstd  = 1 / √(σ² + ε)  or  1 / (√(σ² + STD_FLOOR) + ε)
//! ```
//!
//! The mean is saved relative to the pivot because `μ` itself is not representable
//! accurately enough in f32 when the rows have a large offset (mean 1e4, std 1e-2):
//! `(x − p) − shift` is, `x − μ` is not.
//!
//! # Counters
//! [`fused_calls`] says how many fused forward and backward passes the *calling thread* has
//! started, whichever backend ran them (the CPU kernels, the CubeCL kernels directly, or
//! queued in a fusion stream, counted when queued). The count is taken where the fused path
//! is chosen, not in the kernels: forwards in `NormBackend::norm_rows` /
//! `dynamic_tanh` (the defaults and `Autodiff`'s), backwards in the autodiff nodes. A
//! backend outside this crate is counted the same way. Tests use it to check that a backend
//! really takes the fused path; it is a thread-local increment per call (not per row), which
//! costs nothing measurable, so it is always on.
//!
//! # Shapes
//! - `output`: `[rows, n]`; `shift`, `rstd`: `[rows]`
//! - gradients: `x` `[rows, n]`, γ and β their parameter's shape (`[n]` or `[1]`)

use std::cell::Cell;

use burn::tensor::{backend::Backend, ops::FloatTensor};

/// The per-row statistics a fused forward saves for its backward.
pub struct RowStatistics<B: Backend> {
    /// The row mean relative to the row's pivot, `[rows]` (zeros for RMSNorm).
    pub shift: FloatTensor<B>,
    /// The reciprocal denominator `r`, `[rows]`.
    pub rstd: FloatTensor<B>,
}

// Written out: a derive would ask `B: Clone + Debug` instead of the primitives'.
impl<B: Backend> Clone for RowStatistics<B> {
    fn clone(&self) -> Self {
        Self {
            shift: self.shift.clone(),
            rstd: self.rstd.clone(),
        }
    }
}

impl<B: Backend> core::fmt::Debug for RowStatistics<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RowStatistics")
            .field("shift", &self.shift)
            .field("rstd", &self.rstd)
            .finish()
    }
}

/// The result of a fused forward.
pub struct FusedNormForward<B: Backend> {
    /// `y = norm(x)·γ + β`, `[rows, n]`.
    pub output: FloatTensor<B>,
    /// What the backward needs besides `x` and γ.
    pub statistics: RowStatistics<B>,
}

/// The gradients a fused backward returns.
pub struct FusedNormGrads<B: Backend> {
    /// `∂L/∂x`, `[rows, n]`.
    pub x: FloatTensor<B>,
    /// `∂L/∂γ`, shaped as γ, when there is a γ.
    pub gamma: Option<FloatTensor<B>>,
    /// `∂L/∂β`, shaped as β, when there is a β.
    pub beta: Option<FloatTensor<B>>,
}

/// The gradients a fused Dynamic Tanh backward returns.
pub struct FusedDynamicTanhGrads<B: Backend> {
    /// `∂L/∂x`, `[rows, n]`.
    pub x: FloatTensor<B>,
    /// `∂L/∂α`, `[1]`.
    pub alpha: FloatTensor<B>,
    /// `∂L/∂γ`, shaped as γ, when there is a γ.
    pub gamma: Option<FloatTensor<B>>,
    /// `∂L/∂β`, shaped as β, when there is a β.
    pub beta: Option<FloatTensor<B>>,
}

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
/// fused forward. Every forward dispatch (`NormBackend`'s defaults and `Autodiff`'s) goes
/// through here, so the counter works for any backend.
pub(crate) fn try_fused_forward<T>(kernel: impl FnOnce() -> Option<T>) -> Option<T> {
    if crate::composite::is_forced() {
        return None;
    }
    let fused = kernel();
    if fused.is_some() {
        count(|calls| calls.forward += 1);
    }
    fused
}

/// Counts one fused backward; the autodiff nodes call it when they run one.
pub(crate) fn count_fused_backward() {
    count(|calls| calls.backward += 1);
}
