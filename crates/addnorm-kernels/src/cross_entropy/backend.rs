//! [`CrossEntropyBackend`]: the backend extension through which addnorm computes the masked
//! token cross-entropy with its optional z-loss, built as
//! [`RowNormBackend`](crate::RowNormBackend) is: a composite default
//! ([`super::composite`]), a `fused_*` override per backend returning `Option` (`None`
//! falls back to the composite), and one `Autodiff` node with the analytic backward
//! ([`super::autodiff`]).
//!
//! # Formula
//! With `lse_r = log Σ_v e^(z_rv)`, `M = Σ_r m_r` and `λ = z_loss`:
//!
//! ```text
//! loss  = ( Σ_r m_r·(lse_r − z_{r,y_r}) + λ·Σ_r m_r·lse_r² ) / M
//! dz_rv = g·m_r/M · ( softmax_rv − [v = y_r] + 2λ·lse_r·softmax_rv )
//! ```
//!
//! # Shapes
//! - `logits`: `[..., vocab]` (rank ≥ 2; its leading dimensions are the rows)
//! - `targets` (Int), `mask`: the leading dimensions of `logits`, `[...]`
//! - output: `[1]`; saved `log_partition`: `[rows]`
//!
//! # Which backends are fused
//! - `NdArray` (f32, f64; any int dtype for the targets): the CPU kernels of
//!   [`super::cpu`].
//! - `CubeBackend` and `Fusion<CubeBackend>`: the composite, for now (no CubeCL kernel yet;
//!   under `Fusion` Burn fuses its element-wise parts).
//! - `Autodiff<B>`: one backward node when `B` is fused and the mask needs no gradient,
//!   else Burn's nodes op by op.

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Shape, TensorMetadata};

use super::composite;
use super::fused::FusedCrossEntropy;
use crate::fused::try_fused_forward;

/// The backend operations of addnorm's masked cross-entropy. See the [module docs](self).
pub trait CrossEntropyBackend: Backend {
    /// The masked mean cross-entropy plus `z_loss` times the masked mean of `lse²`, on
    /// primitives: takes [`fused_cross_entropy`](Self::fused_cross_entropy) when the backend
    /// has a kernel for these inputs and no
    /// [`ForceComposite`](crate::composite::ForceComposite) guard is alive on this thread;
    /// otherwise [`super::composite::masked_cross_entropy`].
    ///
    /// # Panics
    /// If the shapes do not fit (see the [module docs](self)), or `z_loss` is negative or
    /// not finite; on the fused CPU path, if a target is outside `[0, vocab)` (the
    /// composite does what Burn's `gather` does: `NdArray` panics).
    fn cross_entropy_loss(
        logits: FloatTensor<Self>,
        targets: IntTensor<Self>,
        mask: FloatTensor<Self>,
        z_loss: f64,
    ) -> FloatTensor<Self> {
        check_inputs(&logits.shape(), &targets.shape(), &mask.shape(), z_loss);
        if let Some(fused) =
            try_fused_forward(|| Self::fused_cross_entropy(&logits, &targets, &mask, z_loss))
        {
            return fused.loss;
        }
        composite::masked_cross_entropy::<Self>(logits, targets, mask, z_loss)
    }

    /// The fused forward of [`cross_entropy_loss`](Self::cross_entropy_loss), with the
    /// per-row log-partition its backward needs; `None` when this backend has no kernel for
    /// these inputs (the default). The shapes and `z_loss` have been checked.
    ///
    /// A backend that returns `Some` must also override
    /// [`fused_cross_entropy_backward`](Self::fused_cross_entropy_backward).
    fn fused_cross_entropy(
        logits: &FloatTensor<Self>,
        targets: &IntTensor<Self>,
        mask: &FloatTensor<Self>,
        z_loss: f64,
    ) -> Option<FusedCrossEntropy<Self>> {
        let _ = (logits, targets, mask, z_loss);
        None
    }

    /// The fused backward: `∂L/∂logits`, shaped as `logits`, from the inputs, the saved
    /// `log_partition` and `grad_output = ∂L/∂loss` (`[1]`).
    ///
    /// # Panics
    /// In this default, always: only a backend whose
    /// [`fused_cross_entropy`](Self::fused_cross_entropy) returns `Some` is asked for it.
    fn fused_cross_entropy_backward(
        logits: &FloatTensor<Self>,
        targets: &IntTensor<Self>,
        mask: &FloatTensor<Self>,
        log_partition: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        z_loss: f64,
    ) -> FloatTensor<Self> {
        let _ = (logits, targets, mask, log_partition, grad_output, z_loss);
        panic!(
            "{} returned a fused cross-entropy forward but has no fused backward: override \
             CrossEntropyBackend::fused_cross_entropy_backward too",
            core::any::type_name::<Self>()
        )
    }
}

/// Asserts that `targets` and `mask` have the leading dimensions of `logits` (rank ≥ 2),
/// and that `z_loss` is finite and ≥ 0.
pub(crate) fn check_inputs(logits: &Shape, targets: &Shape, mask: &Shape, z_loss: f64) {
    let dims = logits.as_slice();
    assert!(
        dims.len() >= 2,
        "cross-entropy: logits must be [..., vocab] of rank ≥ 2, got {dims:?}"
    );
    let leading = &dims[..dims.len() - 1];
    assert!(
        targets.as_slice() == leading && mask.as_slice() == leading,
        "cross-entropy: targets {:?} and mask {:?} must both be {leading:?}, the leading \
         dimensions of logits {dims:?}",
        targets.as_slice(),
        mask.as_slice()
    );
    super::cpu::check_z_loss(z_loss);
}

/// The fused CPU kernels on every `NdArray<E, I, Q>`.
#[cfg(feature = "ndarray")]
impl<B> CrossEntropyBackend for B
where
    B: crate::cpu::ndarray::NdArrayBackend<
            IntTensorPrimitive = burn::backend::ndarray::NdArrayTensor,
        >,
{
    fn fused_cross_entropy(
        logits: &FloatTensor<Self>,
        targets: &IntTensor<Self>,
        mask: &FloatTensor<Self>,
        z_loss: f64,
    ) -> Option<FusedCrossEntropy<Self>> {
        let (loss, log_partition) = super::ndarray::fused_forward(logits, targets, mask, z_loss)?;
        Some(FusedCrossEntropy {
            loss,
            log_partition,
        })
    }

    fn fused_cross_entropy_backward(
        logits: &FloatTensor<Self>,
        targets: &IntTensor<Self>,
        mask: &FloatTensor<Self>,
        log_partition: &FloatTensor<Self>,
        grad_output: FloatTensor<Self>,
        z_loss: f64,
    ) -> FloatTensor<Self> {
        super::ndarray::fused_backward(logits, targets, mask, log_partition, &grad_output, z_loss)
    }
}

// The composite on every CubeCL backend, for now: no CubeCL kernel yet.
// The composite under fusion, for now, which fuses its element-wise parts.
#[cfg(feature = "cubecl")]
crate::cube::composite_on_cubecl!(CrossEntropyBackend);
