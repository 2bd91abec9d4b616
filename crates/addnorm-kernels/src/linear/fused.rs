//! What a fused linear backward is asked for ([`LinearWants`]) and what it returns
//! ([`LinearGrads`]). The forward returns the output alone: the backward needs nothing but
//! `x` and `W`.
//!
//! # Formula
//! `dx = dy·Wᵀ`, `dW = Σ_rows xᵀ·dy`, `db = Σ_rows dy`, each computed only when wanted.
//!
//! # Shapes
//! - `dx`: shaped as `x`, `[..., d_in]`; `dW`: `[d_in, d_out]`; `db`: `[d_out]`

use burn::tensor::{backend::Backend, ops::FloatTensor};

/// Which gradients a fused linear backward is asked for (those of its parents that track
/// gradients).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearWants {
    /// `∂L/∂x`.
    pub x: bool,
    /// `∂L/∂W`.
    pub weight: bool,
    /// `∂L/∂b` (only when there is a bias).
    pub bias: bool,
}

/// The gradients a fused linear backward returns, each present when it was asked for.
pub struct LinearGrads<B: Backend> {
    /// `∂L/∂x`, shaped as `x`.
    pub x: Option<FloatTensor<B>>,
    /// `∂L/∂W`, `[d_in, d_out]`.
    pub weight: Option<FloatTensor<B>>,
    /// `∂L/∂b`, `[d_out]`.
    pub bias: Option<FloatTensor<B>>,
}
