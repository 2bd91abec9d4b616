//! The composite reference of attention: Burn tensor ops (head split by reshape and
//! `swap_dims`, two matmuls, a mask and a softmax), so it runs, and differentiates under
//! `Autodiff<B>`, on every backend. It keeps the `[batch, heads, T, T]` scores and
//! probabilities alive for the backward, which the fused kernels do not.
//!
//! # Formula
//! As in [`super::spec`]: `O_h = softmax(cap(scale·Q_h·K_hᵀ) + mask)·V_h`, heads
//! concatenated, `cap(S) = c·tanh(S/c)` with a soft cap and the identity without.
//! [`attention_with_weights`] applies a map to the probabilities before `·V` (attention
//! dropout), which no fused kernel supports.
//!
//! # Shapes
//! - `q`, `k`, `v`, output: `[batch, T, d_model]`; scores `[batch, heads, T, T]`;
//!   max logit `[1]`

use burn::tensor::{Bool, Tensor, activation::softmax, backend::Backend};

use super::spec::AttentionSpec;

/// `softmax(scale·Q·Kᵀ + mask)·V` per head, and the largest logit when `spec.max_logit`.
pub fn attention<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    spec: &AttentionSpec,
) -> (Tensor<B, 3>, Option<Tensor<B, 1>>) {
    attention_with_weights(q, k, v, spec, |weights| weights)
}

/// As [`attention`], with `weights` applied to the `[batch, heads, T, T]` probabilities
/// before they multiply V (a dropout, for instance).
///
/// # Panics
/// If `spec.heads` does not divide `d_model`, or `k`/`v` are not shaped as `q`.
pub fn attention_with_weights<B: Backend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    spec: &AttentionSpec,
    weights: impl FnOnce(Tensor<B, 4>) -> Tensor<B, 4>,
) -> (Tensor<B, 3>, Option<Tensor<B, 1>>) {
    let dims = q.dims();
    super::check_shapes(dims, k.dims(), v.dims());
    let layout = spec.layout(dims);
    let [batch, seq, d_model] = dims;
    let split = |x: Tensor<B, 3>| {
        x.reshape([batch, seq, layout.heads, layout.d_head])
            .swap_dims(1, 2)
    };
    let mut scores = split(q).matmul(split(k).swap_dims(2, 3)) * spec.scale;
    if let Some(cap) = spec.softcap {
        scores = (scores / cap).tanh() * cap;
    }
    if spec.causal {
        let future = Tensor::<B, 2, Bool>::tril_mask([seq, seq], 0, &scores.device());
        let shape = [batch, layout.heads, seq, seq];
        scores = scores.mask_fill(future.expand(shape), f32::NEG_INFINITY);
    }
    let max_logit = spec.max_logit.then(|| scores.clone().detach().max());
    let context = weights(softmax(scores, 3))
        .matmul(split(v))
        .swap_dims(1, 2)
        .reshape([batch, seq, d_model]);
    (context, max_logit)
}
