//! `RowNormBackend` for `Autodiff<B, C>`: when the inner backend `B` has a fused kernel, one
//! forward call and one custom backward node ([`NormRowsBackward`] for the LayerNorm and
//! RMSNorm variants, [`DynamicTanhBackward`] for DyT); otherwise the composite path,
//! differentiated op by op. [`ReshapeRowsBackward`] is the backward of the norms'
//! flattening reshape.
//!
//! # Formula
//! The node's backward is the analytic one of [`super::cpu::backward`]:
//! `dx = r·g − [centred]·r·A/k + B·dr/dσ²·2c/d` (first `k` features), `dγ = Σ dy·ĉ`,
//! `dβ = Σ dy`, with `g = dy·γ`, `A = Σ g`, `B = Σ g·c` per row.
//!
//! # Memory
//! The node keeps `x` and γ (checkpointed, so a checkpointing strategy may drop and
//! recompute them) and the two `[rows]` statistics: nothing of the size of `x` beyond `x`
//! itself, where the composite graph keeps several `[rows, n]` intermediates.
//!
//! # Shapes
//! - parents: `x` `[rows, n]`, then γ and β (`[n]` or `[1]`) when present
//! - saved: `shift`, `rstd` `[rows]`

use burn::backend::Autodiff;
use burn::backend::autodiff::{
    NodeId,
    checkpoint::{base::Checkpointer, strategy::CheckpointStrategy},
    grads::Gradients,
    ops::{Backward, Ops, OpsKind},
};
use burn::tensor::{DType, Shape, TensorMetadata, ops::FloatTensor};

use super::backend::RowNormBackend;
use super::composite;
use super::fused::{FusedNormForward, RowStatistics};
use super::spec::RowNormSpec;
use crate::fused::{count_fused_backward, try_fused_forward};
use crate::gradient_sum::{TrackedParent, register_sum};

/// The backward node of a fused `norm_rows`. Its parents are `x`, then γ and β when they
/// exist; the const `N` is how many.
#[derive(Debug)]
pub struct NormRowsBackward;

/// What [`NormRowsBackward`] keeps from the forward.
#[derive(Debug)]
pub struct NormRowsState<B: RowNormBackend> {
    x: NodeId,
    gamma: Option<NodeId>,
    beta_features: Option<usize>,
    /// The dtypes of γ and β: the backward's dγ/dβ are cast to them when the kernel
    /// returns another (the CubeCL kernels return f32 for half-precision parameters).
    parameter_dtypes: [Option<DType>; 2],
    statistics: RowStatistics<B>,
    spec: RowNormSpec,
}

// Written out: a derive would ask `B: Clone`, which a backend type need not be.
impl<B: RowNormBackend> Clone for NormRowsState<B> {
    fn clone(&self) -> Self {
        Self {
            x: self.x,
            gamma: self.gamma,
            beta_features: self.beta_features,
            parameter_dtypes: self.parameter_dtypes,
            statistics: self.statistics.clone(),
            spec: self.spec,
        }
    }
}

impl<B: RowNormBackend, const N: usize> Backward<B, N> for NormRowsBackward {
    type State = NormRowsState<B>;

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
        let computed = B::fused_norm_rows_backward(
            &x,
            gamma.as_ref(),
            state.beta_features,
            &state.statistics,
            grad_output,
            &state.spec,
        );
        count_fused_backward();
        register_gradients::<B, N>(
            ops.parents.map(|p| p.map(|p| p.id)),
            [computed.x],
            [computed.gamma, computed.beta],
            state.parameter_dtypes,
            grads,
        );
    }
}

/// The backward node of [`RowNormBackend::reshape_rows`]: the gradient takes the inner
/// backend's `reshape_rows` back to the input's shape, so it does not copy either, and is
/// summed in place into the input's gradient when it has one ([`register_sum`]: a
/// residual stream feeds a norm and a residual sum).
#[derive(Debug)]
pub struct ReshapeRowsBackward;

impl<B: RowNormBackend> Backward<B, 1> for ReshapeRowsBackward {
    /// The input's shape, and the input as a tracked parent.
    type State = (Shape, TrackedParent<B>);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _checkpointer: &mut Checkpointer,
    ) {
        let grad = grads.consume::<B>(&ops.node);
        let (shape, parent) = ops.state;
        if let [Some(_)] = ops.parents {
            register_sum::<B>(grads, &parent, B::reshape_rows(grad, shape));
        }
    }
}

/// The backward node of a fused `dynamic_tanh`. Its parents are `x`, α, then γ and β when
/// they exist; the const `N` is how many. It keeps `x`, α and γ (checkpointed) and
/// recomputes `tanh(α·x)`.
#[derive(Debug)]
pub struct DynamicTanhBackward;

/// What [`DynamicTanhBackward`] keeps from the forward.
#[derive(Clone, Debug)]
pub struct DynamicTanhState {
    x: NodeId,
    alpha: NodeId,
    gamma: Option<NodeId>,
    beta_features: Option<usize>,
    /// The dtypes of γ and β, to which dγ/dβ are cast when the kernel returns another.
    parameter_dtypes: [Option<DType>; 2],
}

impl<B: RowNormBackend, const N: usize> Backward<B, N> for DynamicTanhBackward {
    type State = DynamicTanhState;

    fn backward(
        self,
        ops: Ops<Self::State, N>,
        grads: &mut Gradients,
        checkpointer: &mut Checkpointer,
    ) {
        let state = ops.state;
        let grad_output = grads.consume::<B>(&ops.node);
        let x: FloatTensor<B> = checkpointer.retrieve_node_output(state.x);
        let alpha: FloatTensor<B> = checkpointer.retrieve_node_output(state.alpha);
        let gamma: Option<FloatTensor<B>> =
            state.gamma.map(|id| checkpointer.retrieve_node_output(id));
        let computed = B::fused_dynamic_tanh_backward(
            &x,
            &alpha,
            gamma.as_ref(),
            state.beta_features,
            grad_output,
        );
        count_fused_backward();
        register_gradients::<B, N>(
            ops.parents.map(|p| p.map(|p| p.id)),
            [computed.x, computed.alpha],
            [computed.gamma, computed.beta],
            state.parameter_dtypes,
            grads,
        );
    }
}

impl<B: RowNormBackend, C: CheckpointStrategy> RowNormBackend for Autodiff<B, C> {
    fn dynamic_tanh(
        x: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        let fused = try_fused_forward(|| {
            B::fused_dynamic_tanh(
                &x.primitive,
                &alpha.primitive,
                gamma.as_ref().map(|g| &g.primitive),
                beta.as_ref().map(|b| &b.primitive),
            )
        });
        let Some(output) = fused else {
            return composite_dynamic_tanh::<Self>(x, alpha, gamma, beta);
        };
        let beta_features = beta.as_ref().map(|b| b.primitive.shape().num_elements());
        match (gamma, beta) {
            (None, None) => {
                record_dynamic_tanh::<B, C, 2>([&x, &alpha], None, beta_features, output)
            }
            (Some(g), None) => {
                record_dynamic_tanh::<B, C, 3>([&x, &alpha, &g], Some(&g), beta_features, output)
            }
            (None, Some(b)) => {
                record_dynamic_tanh::<B, C, 3>([&x, &alpha, &b], None, beta_features, output)
            }
            (Some(g), Some(b)) => record_dynamic_tanh::<B, C, 4>(
                [&x, &alpha, &g, &b],
                Some(&g),
                beta_features,
                output,
            ),
        }
    }

    fn reshape_rows(x: FloatTensor<Self>, shape: Shape) -> FloatTensor<Self> {
        // Compute bound only in the checkpointing sense: the state is a shape, and keeping
        // the output costs nothing (it shares x's buffer).
        match ReshapeRowsBackward
            .prepare::<C>([x.node.clone()])
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let state = (x.primitive.shape(), x.clone());
                prep.finish(state, B::reshape_rows(x.primitive, shape))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::reshape_rows(x.primitive, shape)),
        }
    }

    fn norm_rows(
        x: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
        spec: RowNormSpec,
    ) -> FloatTensor<Self> {
        let fused = try_fused_forward(|| {
            B::fused_norm_rows(
                &x.primitive,
                gamma.as_ref().map(|g| &g.primitive),
                beta.as_ref().map(|b| &b.primitive),
                &spec,
            )
        });
        let Some(fused) = fused else {
            return composite_norm_rows::<Self>(x, gamma, beta, &spec);
        };
        let beta_features = beta.as_ref().map(|b| b.primitive.shape().num_elements());
        match (gamma, beta) {
            (None, None) => record::<B, C, 1>([&x], None, beta_features, fused, spec),
            (Some(g), None) => record::<B, C, 2>([&x, &g], Some(&g), beta_features, fused, spec),
            (None, Some(b)) => record::<B, C, 2>([&x, &b], None, beta_features, fused, spec),
            (Some(g), Some(b)) => {
                record::<B, C, 3>([&x, &g, &b], Some(&g), beta_features, fused, spec)
            }
        }
    }
}

/// Registers a fused node's gradients with its parents. Both list the inputs in the same
/// order: the `leading` ones (x, and α for DyT), then γ and β when present; `parents` has
/// `None` for an input that needs no gradient. dγ and dβ are cast to `parameter_dtypes`.
fn register_gradients<B: RowNormBackend, const N: usize>(
    parents: [Option<NodeId>; N],
    leading: impl IntoIterator<Item = FloatTensor<B>>,
    [dgamma, dbeta]: [Option<FloatTensor<B>>; 2],
    [gamma_dtype, beta_dtype]: [Option<DType>; 2],
    grads: &mut Gradients,
) {
    let parameters = [
        in_dtype::<B>(dgamma, gamma_dtype),
        in_dtype::<B>(dbeta, beta_dtype),
    ];
    let gradients = leading.into_iter().chain(parameters.into_iter().flatten());
    for (parent, grad) in parents.into_iter().zip(gradients) {
        if let Some(parent) = parent {
            grads.register::<B>(parent, grad);
        }
    }
}

/// The dtypes of γ and β among a fused node's `parents`, in which β, when present, comes
/// last.
fn parameter_dtypes<B: RowNormBackend, C: CheckpointStrategy, const N: usize>(
    parents: &[&FloatTensor<Autodiff<B, C>>; N],
    gamma: Option<&FloatTensor<Autodiff<B, C>>>,
    beta_features: Option<usize>,
) -> [Option<DType>; 2] {
    [
        gamma.map(|g| g.primitive.dtype()),
        beta_features.map(|_| parents[N - 1].primitive.dtype()),
    ]
}

/// `grad` cast to `dtype` when both are present and differ.
fn in_dtype<B: RowNormBackend>(
    grad: Option<FloatTensor<B>>,
    dtype: Option<DType>,
) -> Option<FloatTensor<B>> {
    match (grad, dtype) {
        (Some(grad), Some(dtype)) if grad.dtype() != dtype => {
            Some(B::float_cast(grad, dtype.into()))
        }
        (grad, _) => grad,
    }
}

/// The composite reference, differentiated by `Autodiff` op by op.
fn composite_norm_rows<B: burn::tensor::backend::Backend>(
    x: FloatTensor<B>,
    gamma: Option<FloatTensor<B>>,
    beta: Option<FloatTensor<B>>,
    spec: &RowNormSpec,
) -> FloatTensor<B> {
    use burn::tensor::{Tensor, TensorPrimitive};
    let wrap = |p| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(p));
    composite::norm_rows::<B>(
        Tensor::from_primitive(TensorPrimitive::Float(x)),
        gamma.map(wrap),
        beta.map(wrap),
        spec,
    )
    .into_primitive()
    .tensor()
}

/// The composite DyT, differentiated by `Autodiff` op by op.
fn composite_dynamic_tanh<B: burn::tensor::backend::Backend>(
    x: FloatTensor<B>,
    alpha: FloatTensor<B>,
    gamma: Option<FloatTensor<B>>,
    beta: Option<FloatTensor<B>>,
) -> FloatTensor<B> {
    use burn::tensor::{Tensor, TensorPrimitive};
    let wrap = |p| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(p));
    composite::dynamic_tanh::<B>(
        Tensor::from_primitive(TensorPrimitive::Float(x)),
        wrap(alpha),
        gamma.map(wrap),
        beta.map(wrap),
    )
    .into_primitive()
    .tensor()
}

/// Registers the fused DyT output with a [`DynamicTanhBackward`] node whose parents are
/// `parents` (x, α, then the parameters present).
fn record_dynamic_tanh<B: RowNormBackend, C: CheckpointStrategy, const N: usize>(
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    gamma: Option<&FloatTensor<Autodiff<B, C>>>,
    beta_features: Option<usize>,
    output: FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>> {
    let nodes = parents.map(|p| p.node.clone());
    let parameter_dtypes = parameter_dtypes::<B, C, N>(&parents, gamma, beta_features);
    match <DynamicTanhBackward as Backward<B, N>>::prepare::<C>(DynamicTanhBackward, nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let x = prep.checkpoint(parents[0]);
            let alpha = prep.checkpoint(parents[1]);
            let gamma = gamma.map(|g| prep.checkpoint(g));
            let state = DynamicTanhState {
                x,
                alpha,
                gamma,
                beta_features,
                parameter_dtypes,
            };
            prep.finish(state, output)
        }
        OpsKind::UnTracked(prep) => prep.finish(output),
    }
}

/// Registers the fused forward's output with a [`NormRowsBackward`] node whose parents are
/// `parents` (x first, then the parameters present).
fn record<B: RowNormBackend, C: CheckpointStrategy, const N: usize>(
    parents: [&FloatTensor<Autodiff<B, C>>; N],
    gamma: Option<&FloatTensor<Autodiff<B, C>>>,
    beta_features: Option<usize>,
    fused: FusedNormForward<B>,
    spec: RowNormSpec,
) -> FloatTensor<Autodiff<B, C>> {
    let nodes = parents.map(|p| p.node.clone());
    let parameter_dtypes = parameter_dtypes::<B, C, N>(&parents, gamma, beta_features);
    // Compute bound: recomputing the forward would cost as much as keeping its output.
    match <NormRowsBackward as Backward<B, N>>::prepare::<C>(NormRowsBackward, nodes)
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(mut prep) => {
            let x = prep.checkpoint(parents[0]);
            let gamma = gamma.map(|g| prep.checkpoint(g));
            let state = NormRowsState {
                x,
                gamma,
                beta_features,
                parameter_dtypes,
                statistics: fused.statistics,
                spec,
            };
            prep.finish(state, fused.output)
        }
        OpsKind::UnTracked(prep) => prep.finish(fused.output),
    }
}
