//! `GeluBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel, one
//! forward call and one backward node ([`GeluBackward`]); otherwise the composite, with
//! Burn's nodes op by op.
//!
//! # Formula
//! `dx = dy·(Φ(x) + x·φ(x))`: from the slope `Φ(x) + x·φ(x)` that the forward wrote beside
//! its output, where `B` has [`GeluBackend::fused_gelu_with_slope`]; else from `x`.
//!
//! # Memory
//! The node keeps the slope, or else `x` (checkpointed): one tensor of `x`'s size either
//! way. The composite keeps `x`, `x/√2` and `erf(x/√2) + 1`.
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
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

use super::backend::GeluBackend;
use crate::fused::{count_fused_backward, try_fused_by_value, try_fused_forward};

/// The backward node of a fused GELU; its one parent is `x`.
#[derive(Debug)]
pub struct GeluBackward;

/// What a [`GeluBackward`] node keeps for the backward.
#[derive(Clone, Debug)]
pub enum GeluState<B: Backend> {
    /// The slope `Φ(x) + x·φ(x)` from [`GeluBackend::fused_gelu_with_slope`].
    Slope(FloatTensor<B>),
    /// The checkpointed `x`, for [`GeluBackend::fused_gelu_backward`].
    Input(NodeId),
}

impl<B: GeluBackend> Backward<B, 1> for GeluBackward {
    type State = GeluState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let grad_output = grads.consume::<B>(&ops.node);
        let [parent] = ops.parents;
        let Some(parent) = parent else { return };
        let dx = match ops.state {
            GeluState::Slope(slope) => B::fused_gelu_backward_from_slope(slope, grad_output),
            GeluState::Input(x) => {
                let x: FloatTensor<B> = checkpointer.retrieve_node_output(x);
                B::fused_gelu_backward(&x, grad_output)
            }
        };
        count_fused_backward();
        grads.register::<B>(parent.id, dx);
    }
}

impl<B: GeluBackend, C: CheckpointStrategy> GeluBackend for Autodiff<B, C> {
    fn gelu_values(x: FloatTensor<Self>) -> FloatTensor<Self> {
        // Compute bound, as the other fused nodes: a checkpointing strategy keeps the
        // output rather than recomputing it.
        match GeluBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(mut prep) => {
                let x = match forward_with_slope::<B, C>(x) {
                    Ok([output, slope]) => return prep.finish(GeluState::Slope(slope), output),
                    Err(x) => x,
                };
                let Some(output) = try_fused_forward(|| B::fused_gelu(&x.primitive)) else {
                    return super::composite::gelu::<Self>(x);
                };
                let state = prep.checkpoint(&x);
                prep.finish(GeluState::Input(state), output)
            }
            OpsKind::UnTracked(prep) => match try_fused_forward(|| B::fused_gelu(&x.primitive)) {
                Some(output) => prep.finish(output),
                None => super::composite::gelu::<Self>(x),
            },
        }
    }
}

/// [`GeluBackend::fused_gelu_with_slope`] on `x`'s primitive, through
/// [`try_fused_by_value`] (so `ForceComposite` turns it off and the counter sees it); `x`
/// whole again when it did not run.
fn forward_with_slope<B: GeluBackend, C: CheckpointStrategy>(
    mut x: FloatTensor<Autodiff<B, C>>,
) -> Result<[FloatTensor<B>; 2], FloatTensor<Autodiff<B, C>>> {
    match try_fused_by_value(x.primitive, B::fused_gelu_with_slope) {
        Ok(outputs) => Ok(outputs),
        Err(primitive) => {
            x.primitive = primitive;
            Err(x)
        }
    }
}
