//! [`EmbeddingBackend`]: the backend extension through which addnorm's stack looks up its
//! token and position embeddings, built as [`GeluBackend`](crate::GeluBackend) is: a
//! composite default ([`super::composite`], Burn's `embedding`), a `fused_*` override per
//! backend returning `Option` (`None` falls back to the composite), and one `Autodiff` node
//! with the analytic backward ([`super::autodiff`]).
//!
//! # Formula
//! `y[b, t, :] = W[ids[b, t], :]`, backward `dW[v, :] = Σ_{ids[b, t] = v} dy[b, t, :]` in
//! row-major order of `(b, t)`, from zero.
//!
//! # Shapes
//! `W`, `dW`: `[n, d]`; `ids`: `[batch, seq]`; `y`, `dy`: `[batch, seq, d]`.
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64 tables; ids of any int type, all in range): [`super::cpu`].
//! - `CubeBackend` and `Fusion<CubeBackend>`: the composite, Burn's own kernels.
//! - `Autodiff<B>`: one backward node when `B` is fused, else Burn's node.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};

use crate::fused::try_fused_forward;

/// The backend operations of addnorm's embedding lookup. See the [module docs](self).
pub trait EmbeddingBackend: Backend {
    /// The rows of `weights` that `ids` name, on primitives: takes
    /// [`fused_embedding`](Self::fused_embedding) when the backend has a kernel for these
    /// inputs and no [`ForceComposite`](crate::composite::ForceComposite) guard is alive
    /// on this thread; otherwise [`super::composite::embedding`].
    fn embedding_rows(weights: FloatTensor<Self>, ids: IntTensor<Self>) -> FloatTensor<Self> {
        if let Some(y) = try_fused_forward(|| Self::fused_embedding(&weights, &ids)) {
            return y;
        }
        super::composite::embedding::<Self>(weights, ids)
    }

    /// The fused forward of [`embedding_rows`](Self::embedding_rows); `None` when this
    /// backend has no kernel for these inputs (the default).
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_embedding_backward`](Self::fused_embedding_backward).
    fn fused_embedding(
        weights: &FloatTensor<Self>,
        ids: &IntTensor<Self>,
    ) -> Option<FloatTensor<Self>> {
        let _ = (weights, ids);
        None
    }

    /// The fused backward: `dW` (`[table_rows, d]`) from the ids the forward read and
    /// `grad_output = ∂L/∂y`.
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_embedding`](Self::fused_embedding) returns `Some` is asked for it.
    fn fused_embedding_backward(
        table_rows: usize,
        ids: &IntTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let _ = (table_rows, ids, grad_output);
        panic!(
            "{} returned a fused embedding forward but has no fused backward: override \
             EmbeddingBackend::fused_embedding_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// The CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B> EmbeddingBackend for B
where
    B: crate::cpu::ndarray::NdArrayBackend<
            IntTensorPrimitive = burn::backend::ndarray::NdArrayTensor,
        >,
{
    fn fused_embedding(
        weights: &FloatTensor<Self>,
        ids: &IntTensor<Self>,
    ) -> Option<FloatTensor<Self>> {
        super::ndarray::fused_forward(weights, ids)
    }

    fn fused_embedding_backward(
        table_rows: usize,
        ids: &IntTensor<Self>,
        grad_output: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        super::ndarray::fused_backward(table_rows, ids, &grad_output)
    }
}

// The composite on every CubeCL backend.
// The composite under fusion.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(EmbeddingBackend);
