//! Fused multi-head (causal) self-attention with an analytic backward: the
//! [`AttentionBackend`] extension, its composite reference, the fused CPU kernels and the
//! `Autodiff` node.
//!
//! - [`spec`]: what one call computes ([`AttentionSpec`]) and where the heads live
//!   ([`HeadLayout`]).
//! - [`backend`]: the [`AttentionBackend`] trait and its `NdArray` impl.
//! - [`composite`]: the reference path in Burn tensor ops (also the attention-dropout path).
//! - [`fused`]: what a fused kernel returns (output, log-sum-exp, max logit, gradients).
//! - [`cpu`]: the fused CPU kernels (f32, f64) on slices.
//! - `cube` (features `wgpu`, `cuda`): the fused CubeCL kernels, for `CubeBackend` and
//!   `Fusion<CubeBackend>`.
//! - [`autodiff`]: `AttentionBackend` for `Autodiff<B>`, with the fused backward node.
//!
//! # Formula
//! For each batch element and head `h` (columns `h·d_head .. (h+1)·d_head` of the
//! inputs, read in place):
//!
//! ```text
//! O_h = softmax(cap(scale · Q_h·K_hᵀ) + M) · V_h   M_ij = −∞ for j > i when causal, else 0
//! ```
//!
//! `cap(S) = c·tanh(S/c)` with [`AttentionSpec::with_softcap`] (Gemma 2's soft-capping),
//! the identity otherwise.
//!
//! The fused forward keeps only the per-row log-sum-exp; the backward recomputes the
//! probabilities from it, with `Δ = rowsum(O ∘ dO)`, so memory is `O(T)` per row, not
//! `O(T²)`.
//!
//! # Shapes
//! - `q`, `k`, `v`, output: `[batch, T, d_model]`, `d_model = heads · d_head`
//!   (the layout of the Q, K, V projections: no head split, no merge)
//! - max logit: `[1]`
//!
//! # Example
//! Attention on your own tensors, on any `B: AttentionBackend` (every `KernelBackend` is
//! one):
//!
//! ```
//! use addnorm_kernels::attention::{AttentionSpec, attention};
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! // batch 1, T = 2, one head of 2 features.
//! let q = Tensor::<NdArray, 3>::from_floats([[[1.0, 0.0], [0.0, 1.0]]], &device);
//! let v = Tensor::<NdArray, 3>::from_floats([[[1.0, 2.0], [3.0, 4.0]]], &device);
//! let o = attention(q.clone(), q, v, AttentionSpec::causal(1, 2).with_scale(1.0));
//! // Row 0 sees only key 0; row 1 weighs keys 0 and 1 by softmax([0, 1]).
//! let w = 1.0 / (1.0 + 1f32.exp());
//! o.into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[[1.0, 2.0], [w * 1.0 + (1.0 - w) * 3.0, w * 2.0 + (1.0 - w) * 4.0]]]),
//!     Tolerance::absolute(1e-5),
//! );
//! # }
//! ```
//!
//! # Fallbacks
//! The composite path runs whenever the fused one does not apply: backends without a
//! fused kernel, dtypes the kernels do not take (f64 on CubeCL; f16 on the CPU),
//! heads wider than 256 features on CubeCL, an empty tensor, a
//! [`ForceComposite`](crate::composite::ForceComposite) guard, or attention dropout
//! (which only [`composite::attention_with_weights`] supports). Shapes that are wrong on
//! either path (unequal q/k/v, `d_model` not a multiple of the heads) panic in
//! [`attention`] with both shapes named.

pub mod autodiff;
pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "cubecl")]
pub mod cube;
pub mod fused;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;
pub mod spec;

use burn::tensor::{Tensor, TensorPrimitive};

pub use backend::AttentionBackend;
pub use fused::{Attended, AttentionGrads, FusedAttentionForward};
pub use spec::{AttentionSpec, HeadLayout};

/// Attention on `[batch, T, d_model]` tensors (see the [module docs](self)); fused where
/// the backend has a kernel, differentiable on every backend.
///
/// # Panics
/// If `k` or `v` is not shaped as `q`, or `spec.heads` does not divide `d_model`.
pub fn attention<B: AttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    spec: AttentionSpec,
) -> Tensor<B, 3> {
    let spec = AttentionSpec {
        max_logit: false,
        ..spec
    };
    call(q, k, v, &spec).0
}

/// As [`attention`], also returning the largest logit over the attended positions
/// (a `[1]` tensor that carries no gradient).
///
/// # Panics
/// As [`attention`].
pub fn attention_with_max_logit<B: AttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    spec: AttentionSpec,
) -> (Tensor<B, 3>, Tensor<B, 1>) {
    let (output, max_logit) = call(q, k, v, &spec.with_max_logit());
    (output, max_logit.expect("the spec asked for the max logit"))
}

fn call<B: AttentionBackend>(
    q: Tensor<B, 3>,
    k: Tensor<B, 3>,
    v: Tensor<B, 3>,
    spec: &AttentionSpec,
) -> (Tensor<B, 3>, Option<Tensor<B, 1>>) {
    check_shapes(q.dims(), k.dims(), v.dims());
    spec.layout(q.dims());
    let attended = B::multi_head_attention(
        q.into_primitive().tensor(),
        k.into_primitive().tensor(),
        v.into_primitive().tensor(),
        spec,
    );
    (
        Tensor::from_primitive(TensorPrimitive::Float(attended.output)),
        attended
            .max_logit
            .map(|m| Tensor::from_primitive(TensorPrimitive::Float(m))),
    )
}

/// Panics unless `k` and `v` have the shape of `q`.
pub(crate) fn check_shapes(q: [usize; 3], k: [usize; 3], v: [usize; 3]) {
    assert!(
        k == q && v == q,
        "attention: q, k and v must have one shape [batch, T, d_model], got q {q:?}, \
         k {k:?}, v {v:?}"
    );
}
