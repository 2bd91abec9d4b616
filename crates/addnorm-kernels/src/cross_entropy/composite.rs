//! The composite reference of the masked cross-entropy: Burn tensor ops on primitives, so
//! it runs, and differentiates under `Autodiff<B>`, on every backend.
//!
//! # Formula
//! ```text
//! lse   = max_v z + log Σ_v e^(z − max_v z)      (the maximum detached: lse's gradient is
//!                                                 the softmax either way)
//! loss  = ( Σ_r m_r·(lse_r − z_{r,y_r}) + λ·Σ_r m_r·lse_r² ) / Σ_r m_r
//! ```
//! The z-loss term is left out when `λ = 0`.
//!
//! # Shapes
//! - `logits`: `[..., vocab]`, read as `[rows, vocab]`; `targets` (Int), `mask`: `[...]`
//! - output: `[1]`

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Int, Shape, Tensor, TensorMetadata, TensorPrimitive};

/// The masked cross-entropy of `logits` in Burn's ops (see the [module docs](self)).
///
/// # Panics
/// Where Burn's ops do: on `NdArray`, `gather` panics on a target outside `[0, vocab)`.
pub fn masked_cross_entropy<B: Backend>(
    logits: FloatTensor<B>,
    targets: IntTensor<B>,
    mask: FloatTensor<B>,
    z_loss: f64,
) -> FloatTensor<B> {
    let shape = logits.shape();
    let vocab = shape.as_slice().last().copied().unwrap_or(1);
    let rows: usize = shape.as_slice()[..shape.num_dims().saturating_sub(1)]
        .iter()
        .product();
    let logits = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(B::float_reshape(
        logits,
        Shape::new([rows, vocab]),
    )));
    let targets =
        Tensor::<B, 2, Int>::from_primitive(B::int_reshape(targets, Shape::new([rows, 1])));
    let mask = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(B::float_reshape(
        mask,
        Shape::new([rows]),
    )));

    let max = logits.clone().max_dim(1).detach();
    let lse = (logits.clone() - max.clone()).exp().sum_dim(1).log() + max;
    let picked = logits.gather(1, targets);
    let cross_entropy = (lse.clone() - picked).reshape([rows]);
    let mut total = (cross_entropy * mask.clone()).sum();
    if z_loss > 0.0 {
        total = total + (lse.square().reshape([rows]) * mask.clone()).sum() * z_loss;
    }
    (total / mask.sum()).into_primitive().tensor()
}
