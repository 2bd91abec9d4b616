//! What a fused attention kernel hands over: the forward's output with the per-row
//! log-sum-exp it saves ([`FusedAttentionForward`]), the backward's gradients
//! ([`AttentionGrads`]), and what every attention call returns ([`Attended`]).
//!
//! # Formula
//! With `S` the masked, scaled logits of one head (see [`super::spec`]):
//!
//! ```text
//! lse_i = log Σ_{j visible} exp(S_ij)     P_ij = exp(S_ij − lse_i)
//! max_logit = max_{b, h, i, j visible} S_ij
//! ```
//!
//! The backward recomputes `P` from `Q`, `K` and `lse`, so nothing of size `T²` outlives
//! the forward: the saved state is `O(T)` per row.
//!
//! # Shapes
//! - `output`, gradients: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`;
//!   `max_logit`: `[1]`

use burn::tensor::{backend::Backend, ops::FloatTensor};

/// The result of an attention call.
pub struct Attended<B: Backend> {
    /// `softmax(S)·V` with the heads in place, `[batch, T, d_model]`.
    pub output: FloatTensor<B>,
    /// The largest logit, `[1]`, when [`AttentionSpec::max_logit`](super::AttentionSpec)
    /// asked for it. It carries no gradient.
    pub max_logit: Option<FloatTensor<B>>,
}

/// The result of a fused attention forward.
pub struct FusedAttentionForward<B: Backend> {
    /// `softmax(S)·V`, `[batch, T, d_model]`.
    pub output: FloatTensor<B>,
    /// The per-row log-sum-exp of the logits, `[batch, heads, T]`: all the backward needs
    /// besides Q, K, V, the output and its gradient.
    pub lse: FloatTensor<B>,
    /// The largest logit, `[1]`, a by-product of the row maxima.
    pub max_logit: FloatTensor<B>,
}

/// The gradients a fused attention backward returns, each `[batch, T, d_model]`.
pub struct AttentionGrads<B: Backend> {
    /// `∂L/∂Q`.
    pub q: FloatTensor<B>,
    /// `∂L/∂K`.
    pub k: FloatTensor<B>,
    /// `∂L/∂V`.
    pub v: FloatTensor<B>,
}
