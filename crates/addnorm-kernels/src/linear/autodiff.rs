//! `LinearBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel, one
//! forward call and one backward node ([`LinearBackward`]); otherwise Burn's `linear`,
//! with Burn's own backward.
//!
//! # Formula
//! `dx = dy·Wᵀ`, `dW = Σ_rows xᵀ·dy`, `db = Σ_rows dy` (each only when its parent tracks
//! gradients).
//!
//! # Memory
//! The node keeps `x` and `W` (checkpointed); Burn's node keeps the same.
//!
//! # Shapes
//! - parents: `x` `[..., d_in]`, `W` `[d_in, d_out]`, then `b` `[d_out]` when present

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::ops::{FloatTensor, ModuleOps};

use super::backend::LinearBackend;
use super::fused::LinearWants;
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused linear. Its parents are `x`, `W`, then `b` when there is
/// one; the const `N` is how many.
#[derive(Debug)]
pub struct LinearBackward;

/// What [`LinearBackward`] keeps from the forward: the checkpointed `x` and `W`.
#[derive(Clone, Copy, Debug)]
pub struct LinearState {
    x: NodeId,
    weight: NodeId,
}

impl<B: LinearBackend, const N: usize> Backward<B, N> for LinearBackward {
    type State = LinearState;

    fn backward(
        self,
        ops: Ops<Self::State, N>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let grad_output = grads.consume::<B>(&ops.node);
        let x: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state.x);
        let weight: FloatTensor<B> = checkpointer.retrieve_node_output(ops.state.weight);
        let parents = ops.parents.map(|p| p.map(|p| p.id));
        let wants = LinearWants {
            x: parents[0].is_some(),
            weight: parents[1].is_some(),
            bias: N == 3 && parents[N - 1].is_some(),
        };
        let computed = B::fused_linear_backward(&x, &weight, grad_output, wants);
        count_fused_backward();
        for (parent, grad) in parents
            .into_iter()
            .zip([computed.x, computed.weight, computed.bias])
        {
            if let (Some(parent), Some(grad)) = (parent, grad) {
                grads.register::<B>(parent, grad);
            }
        }
    }
}

impl<B: LinearBackend, C: CheckpointStrategy> LinearBackend for Autodiff<B, C> {
    fn linear_rows(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let fused = try_fused_forward(|| {
            B::fused_linear(
                &x.primitive,
                &weight.primitive,
                bias.as_ref().map(|b| &b.primitive),
            )
        });
        let Some(output) = fused else {
            return <Self as ModuleOps<Self>>::linear(x, weight, bias);
        };
        match bias {
            Some(b) => record::<B, C, 3>([&x, &weight, &b], output),
            None => record::<B, C, 2>([&x, &weight], output),
        }
    }
}

/// Registers the fused forward's output with a [`LinearBackward`] node whose parents are
/// `parents` (`x`, `W`, then `b` when present).
fn record<B: LinearBackend, C: CheckpointStrategy, const N: usize>(
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    output: FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let nodes = parents.map(|p| p.node.clone());
    // Compute bound: recomputing the GEMM would cost as much as keeping its output.
    match <LinearBackward as Backward<B, N>>::prepare::<C>(LinearBackward, nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let state = LinearState {
                x: prep.checkpoint(parents[0]),
                weight: prep.checkpoint(parents[1]),
            };
            prep.finish(state, output)
        }
        OpsKind::UnTracked(prep) => prep.finish(output),
    }
}
