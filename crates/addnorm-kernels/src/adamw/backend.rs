//! [`AdamWBackend`]: the backend extension through which [`FusedAdamW`](super::FusedAdamW)
//! takes its steps, built as [`RowNormBackend`](crate::RowNormBackend) is: a composite
//! default ([`super::composite`]) and a `fused_*` override per backend that hands its
//! inputs back where it has no kernel. An optimizer step is not differentiated, so there
//! is no `Autodiff` node: the optimizer runs on the autodiff backend's inner backend.
//!
//! # Formula
//! One AdamW step on one parameter tensor, `[θ, m, v] → [θ', m', v']` (see [`super`]).
//!
//! # Shapes
//! `param`, `grad`, the moments and the outputs: any shape, all the same.
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64): [`super::cpu::step`], one pass over the four tensors that
//!   updates `θ`, `m` and `v` in their own buffers, in parallel chunks.
//! - `CubeBackend`, `Fusion<CubeBackend>` and `Autodiff<B>`: the composite (under `Fusion`,
//!   Burn fuses its element-wise chain).

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

use super::spec::AdamWUpdate;
use crate::fused::try_fused_by_value;

/// A step's tensors, by value: `(param, grad, moments)`, `moments` (`[m, v]`) `None` on
/// the first step.
pub type AdamWInputs<B> = (FloatTensor<B>, FloatTensor<B>, Option<[FloatTensor<B>; 2]>);

/// The backend operation of addnorm's AdamW. See the [module docs](self).
pub trait AdamWBackend: Backend {
    /// One AdamW step: `[θ, m, v]` after it. Takes
    /// [`fused_adamw_update`](Self::fused_adamw_update) when the backend has a kernel for
    /// these inputs and no [`ForceComposite`](crate::composite::ForceComposite) guard is
    /// alive on this thread (counted as a fused forward in
    /// [`fused_calls`](crate::fused::fused_calls)); otherwise
    /// [`super::composite::adamw_update`]. Both compute Burn's bits.
    fn adamw_update(inputs: AdamWInputs<Self>, update: AdamWUpdate) -> [FloatTensor<Self>; 3] {
        match try_fused_by_value(inputs, |inputs| Self::fused_adamw_update(inputs, update)) {
            Ok(outputs) => outputs,
            Err((param, grad, moments)) => {
                super::composite::adamw_update::<Self>(param, grad, moments, update)
            }
        }
    }

    /// The fused step of [`adamw_update`](Self::adamw_update), or `Err(inputs)`, untouched,
    /// where this backend has no kernel for them (the default). It takes the tensors by
    /// value so that a kernel may update them in their own buffers.
    fn fused_adamw_update(
        inputs: AdamWInputs<Self>,
        update: AdamWUpdate,
    ) -> Result<[FloatTensor<Self>; 3], AdamWInputs<Self>> {
        let _ = update;
        Err(inputs)
    }
}

/// The fused CPU step on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B: crate::cpu::ndarray::NdArrayBackend> AdamWBackend for B {
    fn fused_adamw_update(
        inputs: AdamWInputs<Self>,
        update: AdamWUpdate,
    ) -> Result<[FloatTensor<Self>; 3], AdamWInputs<Self>> {
        super::ndarray::fused_update(inputs, update)
    }
}

/// The composite on `Autodiff<B>` (an optimizer runs on the inner backend; this is for
/// code that calls the step on autodiff tensors directly).
impl<B: Backend, C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy> AdamWBackend
    for burn::backend::Autodiff<B, C>
{
}

// The composite on every CubeCL backend.
// The composite under fusion, which fuses its element-wise chain.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(AdamWBackend);
