//! `AttentionBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel,
//! one forward call and one backward node ([`AttentionBackward`]); otherwise the composite
//! path, differentiated op by op.
//!
//! # Formula
//! The node's backward is the analytic one of [`super::cpu::backward`]:
//! `P = exp(S − lse)`, `Δ = rowsum(O ∘ dO)`, `dV = Pᵀ·dO`, `dS = P ∘ (dO·Vᵀ − Δ)`,
//! `dQ = scale·dS·K`, `dK = scale·dSᵀ·Q`.
//!
//! # Memory
//! The node keeps Q, K, V (checkpointed), the output O and the `[batch, heads, T]`
//! log-sum-exp: `O(T)` per row. The composite graph keeps the `[batch, heads, T, T]`
//! scores and probabilities, and the head-split copies of Q, K, V.
//!
//! # Shapes
//! - parents: `q`, `k`, `v` `[batch, T, d_model]`
//! - saved: `output` `[batch, T, d_model]`, `lse` `[batch, heads, T]`

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::FloatTensor;

use super::backend::{AttentionBackend, composite_attention};
use super::fused::{Attended, FusedAttentionForward};
use super::spec::AttentionSpec;
use crate::fused::{count_fused_backward, try_fused_forward};

/// The backward node of a fused attention. Its parents are `q`, `k` and `v`.
#[derive(Debug)]
pub struct AttentionBackward;

/// What [`AttentionBackward`] keeps from the forward.
#[derive(Debug)]
pub struct AttentionState<B: AttentionBackend> {
    qkv: [NodeId; 3],
    output: FloatTensor<B>,
    lse: FloatTensor<B>,
    spec: AttentionSpec,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: AttentionBackend> Clone for AttentionState<B> {
    fn clone(&self) -> Self {
        Self {
            qkv: self.qkv,
            output: self.output.clone(),
            lse: self.lse.clone(),
            spec: self.spec,
        }
    }
}

impl<B: AttentionBackend> Backward<B, 3> for AttentionBackward {
    type State = AttentionState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let state = ops.state;
        let grad_output = grads.consume::<B>(&ops.node);
        let [q, k, v]: [FloatTensor<B>; 3] =
            state.qkv.map(|id| checkpointer.retrieve_node_output(id));
        let computed = B::fused_attention_backward(
            [&q, &k, &v],
            &state.output,
            &state.lse,
            grad_output,
            &state.spec,
        );
        count_fused_backward();
        let [pq, pk, pv] = ops.parents;
        // Registering adds to what is there: q, k, v may be one and the same tensor.
        for (parent, grad) in [(pq, computed.q), (pk, computed.k), (pv, computed.v)] {
            if let Some(parent) = parent {
                grads.register::<B>(parent.id, grad);
            }
        }
    }
}

impl<B: AttentionBackend, C: CheckpointStrategy> AttentionBackend for Autodiff<B, C> {
    fn multi_head_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Attended<Self> {
        let fused = try_fused_forward(|| {
            B::fused_attention(&q.primitive, &k.primitive, &v.primitive, spec)
        });
        let Some(fused) = fused else {
            return composite_attention::<Self>(q, k, v, spec);
        };
        let max_logit = spec
            .max_logit
            .then(|| Self::from_inner(fused.max_logit.clone()));
        Attended {
            output: record::<B, C>([&q, &k, &v], fused, *spec),
            max_logit,
        }
    }
}

/// Registers the fused forward's output with an [`AttentionBackward`] node.
fn record<B: AttentionBackend, C: CheckpointStrategy>(
    parents: [&FloatTensor<Autodiff<B, C>>; 3],
    fused: FusedAttentionForward<B>,
    spec: AttentionSpec,
) -> FloatTensor<Autodiff<B, C>> {
    let nodes = parents.map(|p| p.node.clone());
    // Compute bound: recomputing the forward would cost as much as keeping its output.
    match AttentionBackward
        .prepare::<C>(nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let qkv = parents.map(|p| prep.checkpoint(p));
            let state = AttentionState {
                qkv,
                output: fused.output.clone(),
                lse: fused.lse,
                spec,
            };
            prep.finish(state, fused.output)
        }
        OpsKind::UnTracked(prep) => prep.finish(fused.output),
    }
}
