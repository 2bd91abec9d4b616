//! `GeluBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel, one
//! forward call and one backward node ([`GeluBackward`]); otherwise the composite, with
//! Burn's nodes op by op.
//!
//! # Formula
//! `dx = dy·(Φ(x) + x·φ(x))`.
//!
//! # Memory
//! The node keeps `x` (checkpointed); the composite keeps `x`, `x/√2` and `erf(x/√2) + 1`.
//!
//! # Shapes
//! - parent: `x`, any shape; output and gradients shaped as `x`

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::ops::FloatTensor;

use super::backend::GeluBackend;
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused GELU; its one parent is `x`.
#[derive(Debug)]
pub struct GeluBackward;

impl<B: GeluBackend> Backward<B, 1> for GeluBackward {
    type State = NodeId;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let grad_output = grads.consume::<B>(&ops.node);
        let x: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state);
        let [parent] = ops.parents;
        if let Some(parent) = parent {
            let dx = B::fused_gelu_backward(&x, grad_output);
            count_fused_backward();
            grads.register::<B>(parent.id, dx);
        }
    }
}

impl<B: GeluBackend, C: CheckpointStrategy> GeluBackend for Autodiff<B, C> {
    fn gelu_values(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let Some(output) = try_fused_forward(|| B::fused_gelu(&x.primitive)) else {
            return super::composite::gelu::<Self>(x);
        };
        // Compute bound, as the other fused nodes: a checkpointing strategy keeps the
        // output rather than recomputing it.
        match GeluBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let state = prep.checkpoint(&x);
                prep.finish(state, output)
            }
            OpsKind::UnTracked(prep) => prep.finish(output),
        }
    }
}
