//! What a fused cross-entropy forward hands over ([`FusedCrossEntropy`]): the loss and the
//! one `[rows]` statistic its backward needs, the log-partition of each row. The backward
//! returns `∂L/∂z` alone (the targets are integers and the mask a constant).
//!
//! # Formula
//! `lse_r = log Σ_v e^(z_rv)`; the backward recomputes `softmax_rv = e^(z_rv − lse_r)` from
//! the logits rather than keeping a `[rows, vocab]` softmax.
//!
//! # Shapes
//! - `loss`: `[1]`; `log_partition`: `[rows]`

use burn::tensor::{backend::Backend, ops::FloatTensor};

/// The result of a fused cross-entropy forward.
pub struct FusedCrossEntropy<B: Backend> {
    /// The masked mean loss, `[1]`.
    pub loss: FloatTensor<B>,
    /// `lse_r` of every row, `[rows]`: what the backward needs besides the inputs.
    pub log_partition: FloatTensor<B>,
}

// Written out: a derive would ask `B: Clone + Debug` instead of the primitives'.
impl<B: Backend> Clone for FusedCrossEntropy<B> {
    fn clone(&self) -> Self {
        Self {
            loss: self.loss.clone(),
            log_partition: self.log_partition.clone(),
        }
    }
}

impl<B: Backend> core::fmt::Debug for FusedCrossEntropy<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FusedCrossEntropy")
            .field("loss", &self.loss)
            .field("log_partition", &self.log_partition)
            .finish()
    }
}
