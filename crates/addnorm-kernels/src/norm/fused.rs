//! What a fused row-norm kernel hands over: the forward's output with the per-row
//! statistics it saves ([`FusedNormForward`], [`RowStatistics`]), and the backward's
//! gradients ([`FusedNormGrads`]).
//!
//! A backend provides fused kernels by overriding
//! [`RowNormBackend::fused_norm_rows`](super::RowNormBackend::fused_norm_rows) and
//! [`RowNormBackend::fused_norm_rows_backward`](super::RowNormBackend::fused_norm_rows_backward);
//! `Autodiff<B>` then records one backward node that keeps `x`, γ and the two `[rows]`
//! statistics, nothing bigger (see [`super::autodiff`]). The dispatch and the counters
//! every op shares are in [`crate::fused`].
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
//! # Shapes
//! - `output`: `[rows, n]`; `shift`, `rstd`: `[rows]`
//! - gradients: `x` `[rows, n]`, γ and β their parameter's shape (`[n]` or `[1]`)

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
