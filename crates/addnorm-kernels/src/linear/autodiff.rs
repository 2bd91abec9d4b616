//! `LinearBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel, one
//! forward call and one backward node ([`LinearBackward`]); otherwise Burn's `linear`,
//! with Burn's own backward.
//!
//! # Formula
//! `dx = dy·Wᵀ`, `dW = Σ_rows xᵀ·dy`, `db = Σ_rows dy`, and `dr = dy` for the residual of
//! `y = r + (x·W + b)` (each only when its parent tracks gradients).
//!
//! # Memory
//! The node keeps `x` and `W` (checkpointed); Burn's node keeps the same.
//!
//! # Shapes
//! - parents: `x` `[..., d_in]`, `W` `[d_in, d_out]`, then `b` `[d_out]` and the residual
//!   `r` `[..., d_out]` when present

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::ops::{FloatTensor, FloatTensorOps, ModuleOps};

use burn::tensor::backend::Backend;

use super::backend::LinearBackend;
use super::fused::LinearWants;
use crate::fused::{count_fused_backward, try_fused_forward};
use crate::gradient_sum::{TrackedParent, register_sum};

/// The backward node of a fused linear. Its parents are `x`, `W`, then `b` when there is
/// one, then the residual `r` of [`linear_rows_onto`](LinearBackend::linear_rows_onto)
/// when there is one; the const `N` is how many.
#[derive(Debug)]
pub struct LinearBackward;

/// What [`LinearBackward`] keeps from the forward: the checkpointed `x` and `W`, `x` as a
/// tracked parent (its gradient is summed in place, [`register_sum`]), and which of the
/// optional parents it has.
#[derive(Debug)]
pub struct LinearState<B: Backend> {
    x: NodeId,
    x_parent: TrackedParent<B>,
    weight: NodeId,
    bias: bool,
    residual: bool,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: Backend> Clone for LinearState<B> {
    fn clone(&self) -> Self {
        Self {
            x: self.x,
            x_parent: self.x_parent.clone(),
            weight: self.weight,
            bias: self.bias,
            residual: self.residual,
        }
    }
}

impl<B: LinearBackend, const N: usize> Backward<B, N> for LinearBackward {
    type State = LinearState<B>;

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
        let bias = ops.state.bias.then(|| parents[2]).flatten();
        let residual = ops.state.residual.then(|| parents[N - 1]).flatten();
        // ∂L/∂r = ∂L/∂y: the same tensor, shared.
        if let Some(residual) = residual {
            grads.register::<B>(residual, grad_output.clone());
        }
        let wants = LinearWants {
            x: parents[0].is_some(),
            weight: parents[1].is_some(),
            bias: bias.is_some(),
        };
        let computed = B::fused_linear_backward(&x, &weight, grad_output, wants);
        count_fused_backward();
        if let (Some(_), Some(dx)) = (parents[0], computed.x) {
            register_sum::<B>(grads, &ops.state.x_parent, dx);
        }
        for (parent, grad) in [parents[1], bias]
            .into_iter()
            .zip([computed.weight, computed.bias])
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
            Some(b) => record::<B, C, 3>([&x, &weight, &b], (true, false), output),
            None => record::<B, C, 2>([&x, &weight], (false, false), output),
        }
    }

    fn linear_rows_onto(
        x: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        bias: Option<FloatTensor<Self>>,
        residual: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let fused = try_fused_forward(|| {
            B::fused_linear_onto(
                &x.primitive,
                &weight.primitive,
                bias.as_ref().map(|b| &b.primitive),
                &residual.primitive,
            )
        });
        let Some(output) = fused else {
            return Self::float_add(residual, Self::linear_rows(x, weight, bias));
        };
        match bias {
            Some(b) => record::<B, C, 4>([&x, &weight, &b, &residual], (true, true), output),
            None => record::<B, C, 3>([&x, &weight, &residual], (false, true), output),
        }
    }
}

/// Registers the fused forward's output with a [`LinearBackward`] node whose parents are
/// `parents` (`x`, `W`, then `b` and `r` as `(bias, residual)` says).
fn record<B: LinearBackend, C: CheckpointStrategy, const N: usize>(
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    (bias, residual): (bool, bool),
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
                x_parent: parents[0].clone(),
                weight: prep.checkpoint(parents[1]),
                bias,
                residual,
            };
            prep.finish(state, output)
        }
        OpsKind::UnTracked(prep) => prep.finish(output),
    }
}
