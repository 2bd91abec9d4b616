//! `GroupNormBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel,
//! one forward call and one backward node ([`GroupNormBackward`]); otherwise the composite,
//! differentiated op by op (whose row norm records its own fused node where `B` has one).
//!
//! # Formula
//! The node's backward is the analytic one of [`super::cpu`]:
//! `dx = r·(dy·γ_c − A − x̂·B)` per (sample, group) block, `dγ_c = Σ dy·x̂`, `dβ_c = Σ dy`.
//!
//! # Memory
//! The node keeps `x` and γ (checkpointed) and the two `[N·G]` statistics.
//!
//! # Shapes
//! - parents: `x` `[N, C, …]`, then γ and β (`[C]`) when the call has an affine map

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::ops::FloatTensor;

use super::backend::{GroupNormBackend, composite_group_norm};
use super::fused::{FusedGroupNorm, GroupStatistics};
use super::spec::GroupNormSpec;
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused GroupNorm. Its parents are `x`, then γ and β when the call
/// has an affine map; the const `N` is how many (1 or 3).
#[derive(Debug)]
pub struct GroupNormBackward;

/// What [`GroupNormBackward`] keeps from the forward.
#[derive(Debug)]
pub struct GroupNormState<B: GroupNormBackend> {
    x: NodeId,
    gamma: Option<NodeId>,
    statistics: GroupStatistics<B>,
    spec: GroupNormSpec,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: GroupNormBackend> Clone for GroupNormState<B> {
    fn clone(&self) -> Self {
        Self {
            x: self.x,
            gamma: self.gamma,
            statistics: self.statistics.clone(),
            spec: self.spec,
        }
    }
}

impl<B: GroupNormBackend, const N: usize> Backward<B, N> for GroupNormBackward {
    type State = GroupNormState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, N>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let state = ops.state;
        let grad_output = grads.consume::<B>(&ops.node);
        let x: FloatTensor<B> = checkpointer.retrieve_node_output(state.x);
        let gamma: Option<FloatTensor<B>> =
            state.gamma.map(|id| checkpointer.retrieve_node_output(id));
        let computed = B::fused_group_norm_backward(
            &x,
            gamma.as_ref(),
            &state.statistics,
            grad_output,
            &state.spec,
        );
        count_fused_backward();
        let gradients = std::iter::once(computed.x).chain(computed.affine.into_iter().flatten());
        for (parent, grad) in ops.parents.iter().zip(gradients) {
            if let Some(parent) = parent {
                grads.register::<B>(parent.id, grad);
            }
        }
    }
}

impl<B: GroupNormBackend, C: CheckpointStrategy> GroupNormBackend for Autodiff<B, C> {
    fn group_norm(
        x: FloatTensor<Self>,
        affine: Option<[FloatTensor<Self>; 2]>,
        spec: GroupNormSpec,
    ) -> FloatTensor<Self> {
        use burn::tensor::TensorMetadata;
        super::backend::check_inputs(
            &x.primitive.shape(),
            affine
                .as_ref()
                .map(|[g, b]| [g.primitive.shape(), b.primitive.shape()]),
            &spec,
        );
        let fused = try_fused_forward(|| {
            let inner = affine
                .as_ref()
                .map(|[g, b]| [g.primitive.clone(), b.primitive.clone()]);
            B::fused_group_norm(&x.primitive, inner.as_ref(), &spec)
        });
        let Some(fused) = fused else {
            return composite_group_norm::<Self>(x, affine, &spec);
        };
        match affine {
            Some([gamma, beta]) => record::<B, C, 3>([&x, &gamma, &beta], fused, spec),
            None => record::<B, C, 1>([&x], fused, spec),
        }
    }
}

/// Registers the fused forward's output with a [`GroupNormBackward`] node whose parents are
/// `parents` (`x`, then γ and β when present).
fn record<B: GroupNormBackend, C: CheckpointStrategy, const N: usize>(
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    fused: FusedGroupNorm<B>,
    spec: GroupNormSpec,
) -> FloatTensor<Autodiff<B, C>> {
    let nodes = parents.map(|p| p.node.clone());
    match <GroupNormBackward as Backward<B, N>>::prepare::<C>(GroupNormBackward, nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let x = prep.checkpoint(parents[0]);
            let gamma = (N == 3).then(|| prep.checkpoint(parents[1]));
            let state = GroupNormState {
                x,
                gamma,
                statistics: fused.statistics,
                spec,
            };
            prep.finish(state, fused.output)
        }
        OpsKind::UnTracked(prep) => prep.finish(fused.output),
    }
}
