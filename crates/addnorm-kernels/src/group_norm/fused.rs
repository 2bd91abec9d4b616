//! What a fused GroupNorm kernel hands over: the forward's output with the per-(sample,
//! group) statistics it saves ([`FusedGroupNorm`], [`GroupStatistics`]), and the backward's
//! gradients ([`FusedGroupNormGrads`]).
//!
//! # Formula
//! With `p` the first value of the (sample, group) block: `shift = μ − p`,
//! `rstd = 1 / √(σ² + ε)` (see [`super::cpu`]).
//!
//! # Shapes
//! - `output`: shaped as `x`, `[N, C, …]`; `shift`, `rstd`: `[N·G]`
//! - gradients: `x` shaped as `x`; γ, β `[C]`

use burn::tensor::{backend::Backend, ops::FloatTensor};

/// The per-(sample, group) statistics a fused forward saves for its backward.
pub struct GroupStatistics<B: Backend> {
    /// The block mean relative to its first value, `[N·G]`.
    pub shift: FloatTensor<B>,
    /// `1 / √(σ² + ε)`, `[N·G]`.
    pub rstd: FloatTensor<B>,
}

// Written out: a derive would ask `B: Clone + Debug` instead of the primitives'.
impl<B: Backend> Clone for GroupStatistics<B> {
    fn clone(&self) -> Self {
        Self {
            shift: self.shift.clone(),
            rstd: self.rstd.clone(),
        }
    }
}

impl<B: Backend> core::fmt::Debug for GroupStatistics<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GroupStatistics")
            .field("shift", &self.shift)
            .field("rstd", &self.rstd)
            .finish()
    }
}

/// The result of a fused forward.
pub struct FusedGroupNorm<B: Backend> {
    /// `y`, shaped as `x` (`[N, C, …]`).
    pub output: FloatTensor<B>,
    /// What the backward needs besides `x` and γ.
    pub statistics: GroupStatistics<B>,
}

/// The gradients a fused backward returns.
pub struct FusedGroupNormGrads<B: Backend> {
    /// `∂L/∂x`, shaped as `x`.
    pub x: FloatTensor<B>,
    /// `(∂L/∂γ, ∂L/∂β)`, each `[C]`, when the call had an affine map.
    pub affine: Option<[FloatTensor<B>; 2]>,
}
