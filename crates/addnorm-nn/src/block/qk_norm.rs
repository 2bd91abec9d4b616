//! Where a QK-norm normalizes the queries and keys: [`QkNormScope`], and
//! `normalize`, which applies a norm at that scope.
//!
//! ```text
//! PerHead     Q_h ← Norm(Q_h) for each head h, over its d_head features
//!             (Wortsman et al. 2023's QK-layernorm; Gemma 3)
//! FullWidth   Q ← Norm(Q) over all d_model features, before the heads split (OLMo 2,
//!             Team OLMo 2024, §3: q_norm, k_norm over the projection's width)
//! ```
//! and the same for K.
//!
//! # Shapes
//! - `x`: `[batch, seq, d_model]` (the projection's output, heads in place); output: the same
//! - the norm's width: `d_head` (PerHead) or `d_model` (FullWidth)

use burn::tensor::{Shape, Tensor, TensorPrimitive, ops::FloatTensor};
use serde::{Deserialize, Serialize};

use addnorm_kernels::NormBackend;

use crate::norm::Norm;

/// Where a QK-norm normalizes (see the [module docs](self)). New scopes may be added, so
/// matches need a wildcard arm.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum QkNormScope {
    /// Each head's `d_head` features.
    #[default]
    PerHead,
    /// All `d_model` features, before the heads split (OLMo 2).
    FullWidth,
}

impl QkNormScope {
    /// The width the norm is fitted to.
    pub fn width(self, d_model: usize, heads: usize) -> usize {
        match self {
            QkNormScope::FullWidth => d_model,
            _ => d_model / heads,
        }
    }
}

/// `norm` applied to `x: [batch, T, d_model]` at `scope`. Per head it works in place: the
/// `[batch, T, heads, d_head]` view is a reshape, which `NormBackend::reshape_rows` does
/// without a copy.
pub(crate) fn normalize<B: NormBackend>(
    norm: &Norm<B>,
    x: Tensor<B, 3>,
    heads: usize,
    scope: QkNormScope,
) -> Tensor<B, 3> {
    if scope == QkNormScope::FullWidth {
        return norm.forward(x);
    }
    let [batch, seq, d_model] = x.dims();
    let reshape = |x: FloatTensor<B>, shape: [usize; 4]| B::reshape_rows(x, Shape::new(shape));
    let split = reshape(
        x.into_primitive().tensor(),
        [batch, seq, heads, d_model / heads],
    );
    let split = Tensor::<B, 4>::from_primitive(TensorPrimitive::Float(split));
    let normalized = norm.forward(split).into_primitive().tensor();
    let merged = B::reshape_rows(normalized, Shape::new([batch, seq, d_model]));
    Tensor::from_primitive(TensorPrimitive::Float(merged))
}
