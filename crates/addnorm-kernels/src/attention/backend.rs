//! [`AttentionBackend`]: the backend extension through which attention computes, built as
//! [`RowNormBackend`](crate::RowNormBackend) is: a composite default from Burn's ops, a
//! `fused_*` override per backend returning `Option` (`None` falls back to the
//! composite), and one `Autodiff` node with the analytic backward
//! ([`super::autodiff`]).
//!
//! # One bound for all ops
//! [`KernelBackend`](crate::KernelBackend) (old name `NormBackend`) requires
//! `AttentionBackend`, so every `B: KernelBackend` bound (the modules, the lab, users'
//! models) can call attention with no new bound in any signature. A backend of your own
//! needs `impl AttentionBackend for MyBackend {}` next to the other ops' impls (all empty
//! for the composite paths; see [`crate::kernel_backend`]).
//!
//! # Formula
//! `O = softmax(scale·Q·Kᵀ + causal mask)·V` per head, heads read in place (see
//! [`super::spec`]).
//!
//! # Shapes
//! - `q`, `k`, `v`, output: `[batch, T, d_model]`; max logit `[1]`
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64): the CPU kernels of [`super::cpu`].
//! - `CubeBackend` and `Fusion<CubeBackend>` (features `wgpu`, `cuda`): the CubeCL kernels
//!   of `super::cube` (f32, f16, bf16, flex32; `d_head ≤ 256`).
//! - `Autodiff<B>`: one backward node when `B` is fused, else the composite graph.

use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorPrimitive, backend::Backend};

use super::composite;
use super::fused::{Attended, AttentionGrads, FusedAttentionForward};
use super::spec::AttentionSpec;
use crate::fused::try_fused_forward;

/// The backend operations attention is made of. See the [module docs](self).
pub trait AttentionBackend: Backend {
    /// `softmax(scale·Q·Kᵀ + mask)·V` per head, on `[batch, T, d_model]` primitives.
    ///
    /// Takes [`fused_attention`](Self::fused_attention) when the backend has a fused
    /// kernel for these inputs and no
    /// [`ForceComposite`](crate::composite::ForceComposite) guard is alive on this
    /// thread; otherwise the [composite](composite::attention) path.
    fn multi_head_attention(
        q: FloatTensor<Self>,
        k: FloatTensor<Self>,
        v: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Attended<Self> {
        if let Some(fused) = try_fused_forward(|| Self::fused_attention(&q, &k, &v, spec)) {
            return Attended {
                output: fused.output,
                max_logit: spec.max_logit.then_some(fused.max_logit),
            };
        }
        composite_attention::<Self>(q, k, v, spec)
    }

    /// The fused forward of [`multi_head_attention`](Self::multi_head_attention): the output, the per-row
    /// log-sum-exp and the max logit; `None` when this backend has no fused kernel for
    /// these inputs (the default), which sends the caller down the composite path.
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_attention_backward`](Self::fused_attention_backward).
    fn fused_attention(
        q: &FloatTensor<Self>,
        k: &FloatTensor<Self>,
        v: &FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Option<FusedAttentionForward<Self>> {
        let _ = (q, k, v, spec);
        None
    }

    /// The fused backward: dQ, dK, dV from Q, K, V, the forward's `output` and `lse`, and
    /// `grad_output = ∂L/∂O`.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_attention`](Self::fused_attention) returns `Some` is asked for it.
    fn fused_attention_backward(
        qkv: [&FloatTensor<Self>; 3],
        output: &FloatTensor<Self>,
        lse: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> AttentionGrads<Self> {
        let _ = (qkv, output, lse, grad_output, spec);
        panic!(
            "{} returned a fused attention forward but has no fused backward: override \
             AttentionBackend::fused_attention_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// The composite path on primitives (differentiated op by op under `Autodiff`).
pub(crate) fn composite_attention<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    spec: &AttentionSpec,
) -> Attended<B> {
    let wrap = |p| Tensor::<B, 3>::from_primitive(TensorPrimitive::Float(p));
    let (output, max_logit) = composite::attention(wrap(q), wrap(k), wrap(v), spec);
    Attended {
        output: output.into_primitive().tensor(),
        max_logit: max_logit.map(|m| m.into_primitive().tensor()),
    }
}

/// The fused CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B: crate::cpu::ndarray::NdArrayBackend> AttentionBackend for B {
    fn fused_attention(
        q: &FloatTensor<Self>,
        k: &FloatTensor<Self>,
        v: &FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Option<FusedAttentionForward<Self>> {
        super::ndarray::fused_forward(q, k, v, spec).map(|(output, lse, max_logit)| {
            FusedAttentionForward {
                output,
                lse,
                max_logit,
            }
        })
    }

    fn fused_attention_backward(
        qkv: [&FloatTensor<Self>; 3],
        output: &FloatTensor<Self>,
        lse: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> AttentionGrads<Self> {
        let [q, k, v] = super::ndarray::fused_backward(qkv, output, lse, &grad_output, spec);
        AttentionGrads { q, k, v }
    }
}
