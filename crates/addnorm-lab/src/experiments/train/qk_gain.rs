//! The gain the QK norms put on the attention logits. Wortsman et al. 2023 (§3.1.1) keep
//! the logits bounded by normalizing queries and keys; what can still grow is the norms'
//! learnable γ, so runs record it beside the logits.
//!
//! ```text
//! logit   = (γ_Q ⊙ q̂) · (γ_K ⊙ k̂) / √d_head      q̂, k̂ normalized per head
//! gain_l  = rms(γ_Q^(l)) · rms(γ_K^(l))          γ_K = γ_Q when one norm is shared;
//!                                                a norm without γ counts 1
//! ```
//!
//! # Shapes
//! γ_Q and γ_K are `[d_head]` (or `[1]` for a scalar gain); one gain per layer, none for a
//! model without QK norms.

use addnorm::nn::{Norm, TransformerStack};
use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Tensor};

/// rms(γ) of `norm`: 1 without a learnable scale.
fn gamma_rms<B: Backend>(norm: &Norm<B>) -> f64 {
    let gamma: Option<Tensor<B, 1>> = match norm {
        Norm::Layer(n) => n.gamma.as_ref().map(|p| p.val()),
        Norm::Rms(n) => n.gamma.as_ref().map(|p| p.val()),
        Norm::DynamicTanh(n) => n.gamma.as_ref().map(|p| p.val()),
        Norm::BurnLayer(n) => Some(n.gamma.val()),
        Norm::BurnRms(n) => Some(n.gamma.val()),
        _ => None,
    };
    gamma.map_or(1.0, |g| g.square().mean().sqrt().into_scalar().elem())
}

/// gain_l for every layer of `model`; empty if its blocks have no QK norm.
pub fn qk_gains<B: Backend>(model: &TransformerStack<B>) -> Vec<f64> {
    model
        .blocks
        .iter()
        .filter_map(|block| {
            let attention = &block.attention;
            let query = attention.qk_norm.as_ref()?;
            let key = attention.key_norm.as_ref().unwrap_or(query);
            Some(gamma_rms(query) * gamma_rms(key))
        })
        .collect()
}
