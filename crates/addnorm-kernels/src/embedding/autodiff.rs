//! `EmbeddingBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel,
//! one forward call and one backward node ([`EmbeddingBackward`]); otherwise the
//! composite, Burn's own `embedding` node.
//!
//! # Formula
//! `dW[v, :] = Σ_{ids[b, t] = v} dy[b, t, :]`, in row-major order of `(b, t)`, from zero.
//!
//! # Memory
//! The node keeps the ids (`[batch, seq]` ints) and the table's row count, not the table.
//!
//! # Shapes
//! - parent: `W`, `[n, d]`; output and `dy`: `[batch, seq, d]`

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::backend::EmbeddingBackend;
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused embedding lookup; its one parent is the table.
#[derive(Debug)]
pub struct EmbeddingBackward;

/// What [`EmbeddingBackward`] keeps from the forward: the ids and the table's rows.
#[derive(Debug)]
pub struct EmbeddingState<B: EmbeddingBackend> {
    ids: IntTensor<B>,
    table_rows: usize,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: EmbeddingBackend> Clone for EmbeddingState<B> {
    fn clone(&self) -> Self {
        Self {
            ids: self.ids.clone(),
            table_rows: self.table_rows,
        }
    }
}

impl<B: EmbeddingBackend> Backward<B, 1> for EmbeddingBackward {
    type State = EmbeddingState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let grad_output = grads.consume::<B>(&ops.node);
        let [parent] = ops.parents;
        let Some(parent) = parent else { return };
        let state = ops.state;
        let dw = B::fused_embedding_backward(state.table_rows, &state.ids, grad_output);
        count_fused_backward();
        grads.register::<B>(parent.id, dw);
    }
}

impl<B: EmbeddingBackend, C: CheckpointStrategy> EmbeddingBackend for Autodiff<B, C> {
    fn embedding_rows(weights: FloatTensor<Self>, ids: IntTensor<Self>) -> FloatTensor<Self> {
        let Some(output) = try_fused_forward(|| B::fused_embedding(&weights.primitive, &ids))
        else {
            return super::composite::embedding::<Self>(weights, ids);
        };
        // Compute bound, as the other fused nodes; the state holds no float tensor.
        match EmbeddingBackward
            .prepare::<C>([weights.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let table_rows = weights.shape().as_slice()[0];
                prep.finish(EmbeddingState { ids, table_rows }, output)
            }
            OpsKind::UnTracked(prep) => prep.finish(output),
        }
    }
}
