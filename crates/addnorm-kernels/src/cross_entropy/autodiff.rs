//! `CrossEntropyBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused
//! kernel, one forward call and one backward node ([`CrossEntropyBackward`]); otherwise the
//! composite, with Burn's nodes op by op.
//!
//! # Formula
//! `dz_rv = g·m_r/M · ( softmax_rv − [v = y_r] + 2λ·lse_r·softmax_rv )`, with
//! `softmax_rv = e^(z_rv − lse_r)` recomputed from the logits.
//!
//! The node's one parent is the logits: the targets are integers, and a mask that tracks
//! gradients (a learned weighting) sends the call down the composite path, which
//! differentiates it too.
//!
//! # Memory
//! The node keeps the logits (checkpointed), the targets, the mask and `lse` (`[rows]`);
//! the composite keeps several `[rows, vocab]` intermediates (the shifted logits, their
//! exponentials).
//!
//! # Shapes
//! - parent: `logits` `[..., vocab]`; gradient shaped as it
//! - saved: `targets`, `mask` `[...]`, `log_partition` `[rows]`

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::TensorMetadata;
use burn::tensor::ops::{FloatTensor, IntTensor};

use super::backend::{CrossEntropyBackend, check_inputs};
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused cross-entropy; its one parent is the logits.
#[derive(Debug)]
pub struct CrossEntropyBackward;

/// What [`CrossEntropyBackward`] keeps from the forward.
#[derive(Debug)]
pub struct CrossEntropyState<B: CrossEntropyBackend> {
    logits: NodeId,
    targets: IntTensor<B>,
    mask: FloatTensor<B>,
    log_partition: FloatTensor<B>,
    z_loss: f64,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: CrossEntropyBackend> Clone for CrossEntropyState<B> {
    fn clone(&self) -> Self {
        Self {
            logits: self.logits,
            targets: self.targets.clone(),
            mask: self.mask.clone(),
            log_partition: self.log_partition.clone(),
            z_loss: self.z_loss,
        }
    }
}

impl<B: CrossEntropyBackend> Backward<B, 1> for CrossEntropyBackward {
    type State = CrossEntropyState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let state = ops.state;
        let grad_output = grads.consume::<B>(&ops.node);
        let logits: FloatTensor<B> = checkpointer.retrieve_node_output(state.logits);
        let [parent] = ops.parents;
        if let Some(parent) = parent {
            let dz = B::fused_cross_entropy_backward(
                &logits,
                &state.targets,
                &state.mask,
                &state.log_partition,
                grad_output,
                state.z_loss,
            );
            count_fused_backward();
            grads.register::<B>(parent.id, dz);
        }
    }
}

impl<B: CrossEntropyBackend, C: CheckpointStrategy> CrossEntropyBackend for Autodiff<B, C> {
    fn cross_entropy_loss(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        mask: FloatTensor<Self>,
        z_loss: f64,
    ) -> FloatTensor<Self> {
        check_inputs(&logits.shape(), &targets.shape(), &mask.shape(), z_loss);
        let fused = if mask.is_tracked() {
            None
        } else {
            try_fused_forward(|| {
                B::fused_cross_entropy(&logits.primitive, &targets, &mask.primitive, z_loss)
            })
        };
        let Some(fused) = fused else {
            return super::composite::masked_cross_entropy::<Self>(logits, targets, mask, z_loss);
        };
        // Compute bound, as the other fused nodes: a checkpointing strategy keeps the
        // output rather than recomputing it.
        match CrossEntropyBackward
            .prepare::<C>([logits.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let state = CrossEntropyState {
                    logits: prep.checkpoint(&logits),
                    targets,
                    mask: mask.primitive,
                    log_partition: fused.log_partition,
                    z_loss,
                };
                prep.finish(state, fused.loss)
            }
            OpsKind::UnTracked(prep) => prep.finish(fused.loss),
        }
    }
}
