//! Fused attention on every CubeCL backend (features `wgpu`, `cuda`): the
//! [`AttentionBackend`] impls of `CubeBackend` and `Fusion<CubeBackend>`.
//!
//! - [`tiles`]: what the kernels share: where a unit sits in the heads, staging a tile of
//!   rows in shared memory, the soft cap.
//! - [`kernels`]: the `#[cube]` kernels (forward; backward for the queries, then the keys),
//!   one or four units a row.
//! - [`launch`]: their host side on `CubeTensor`s.
//! - [`fusion`]: the same kernels as custom operations of Burn's fusion stream.
//!
//! The kernels take f32, f16, bf16 and flex32 tensors (arithmetic in f32) with
//! `d_head ≤` [`launch::MAX_D_HEAD`]; f64, empty tensors and wider heads stay on the
//! [composite](super::composite) path.
//!
//! # Formula
//! `O_h = softmax(scale·Q_h·K_hᵀ + causal mask)·V_h` per head, with the analytic backward
//! of [`kernels`]; only the per-row log-sum-exp is saved.
//!
//! # Shapes
//! - `q`, `k`, `v`, output, gradients: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`
//!   (f32); max logit: `[1]`

pub mod fusion;
pub mod kernels;
pub mod launch;
pub mod tiles;

use burn::tensor::ops::{FloatTensor, FloatTensorOps};
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use burn_fusion::Fusion;

use super::backend::AttentionBackend;
use super::fused::{AttentionGrads, FusedAttentionForward};
use super::spec::AttentionSpec;

impl<R, F, I, BT> AttentionBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_attention(
        q: &FloatTensor<Self>,
        k: &FloatTensor<Self>,
        v: &FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Option<FusedAttentionForward<Self>> {
        let (output, lse, max_logit) = launch::forward::<R, F, I, BT>(q, k, v, spec)?;
        Some(FusedAttentionForward {
            output,
            lse,
            max_logit,
        })
    }

    fn fused_attention_backward(
        qkv: [&FloatTensor<Self>; 3],
        output: &FloatTensor<Self>,
        lse: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> AttentionGrads<Self> {
        let [q, k, v] = launch::backward(qkv, output, lse, &grad_output, spec);
        AttentionGrads { q, k, v }
    }
}

impl<R, F, I, BT> AttentionBackend for Fusion<CubeBackend<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_attention(
        q: &FloatTensor<Self>,
        k: &FloatTensor<Self>,
        v: &FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> Option<FusedAttentionForward<Self>> {
        let [output, lse, row_max] = fusion::forward::<R, F, I, BT>([q, k, v], spec)?;
        Some(FusedAttentionForward {
            output,
            lse,
            max_logit: Self::float_max(row_max),
        })
    }

    fn fused_attention_backward(
        qkv: [&FloatTensor<Self>; 3],
        output: &FloatTensor<Self>,
        lse: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        spec: &AttentionSpec,
    ) -> AttentionGrads<Self> {
        let [q, k, v] = fusion::backward::<R, F, I, BT>(qkv, output, lse, &grad_output, spec);
        AttentionGrads { q, k, v }
    }
}
