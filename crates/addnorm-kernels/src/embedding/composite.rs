//! The composite reference of the embedding lookup: Burn's own `embedding` op on
//! primitives, so it runs, and differentiates under `Autodiff<B>` (Burn's node, whose
//! backward is `embedding_backward`), on every backend.
//!
//! # Formula
//! `y[b, t, :] = W[ids[b, t], :]`
//!
//! # Shapes
//! `W`: `[n, d]`; `ids`: `[batch, seq]`; `y`: `[batch, seq, d]`.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};

/// Burn's `embedding` (see the [module docs](self)).
pub fn embedding<B: Backend>(weights: FloatTensor<B>, ids: IntTensor<B>) -> FloatTensor<B> {
    B::embedding(weights, ids)
}
