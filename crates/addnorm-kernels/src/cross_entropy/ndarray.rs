//! Runs the fused CPU cross-entropy kernels on `NdArray` tensors: f32 or f64 logits with a
//! mask of the same dtype (anything else goes back to the composite), targets of any int
//! dtype (widened to i64), all read without a copy when contiguous.
//!
//! # Shapes
//! - `logits`, dz: `[..., vocab]`; `targets`, `mask`: `[...]`; loss `[1]`;
//!   `log_partition` `[rows]`

use std::borrow::Cow;

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{CrossEntropyDims, LossReal, backward, forward};
use crate::cpu::memory::zeroed_output;
use crate::cpu::ndarray::{NdArrayReal, int_ids};

/// `[rows, vocab]` of non-empty `logits` of rank ≥ 2 (the shapes of the targets and mask
/// were checked against it by the caller).
fn dims_of(logits: &NdArrayTensor) -> Option<CrossEntropyDims> {
    let shape = logits.shape();
    let (&vocab, lead) = shape.as_slice().split_last()?;
    let rows: usize = lead.iter().product();
    (!lead.is_empty() && rows > 0 && vocab > 0).then_some(CrossEntropyDims { rows, vocab })
}

/// The fused forward: `(loss [1], log_partition [rows])`, or `None` when these inputs are
/// not for it.
pub(crate) fn fused_forward(
    logits: &NdArrayTensor,
    targets: &NdArrayTensor,
    mask: &NdArrayTensor,
    z_loss: f64,
) -> Option<(NdArrayTensor, NdArrayTensor)> {
    match logits {
        NdArrayTensor::F32(_) => forward_in::<f32>(logits, targets, mask, z_loss),
        NdArrayTensor::F64(_) => forward_in::<f64>(logits, targets, mask, z_loss),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal + LossReal>(
    logits: &NdArrayTensor,
    targets: &NdArrayTensor,
    mask: &NdArrayTensor,
    z_loss: f64,
) -> Option<(NdArrayTensor, NdArrayTensor)> {
    let dims = dims_of(logits)?;
    let (values, mask) = (E::elements(logits)?, E::elements(mask)?);
    let targets = int_ids(targets)?;
    let mut lse = vec![E::ZERO; dims.rows];
    let loss = forward(dims, &values, &targets, &mask, z_loss, &mut lse);
    Some((
        E::tensor(vec![loss], vec![1]),
        E::tensor(lse, vec![dims.rows]),
    ))
}

/// The fused backward: dz, shaped as `logits`.
///
/// # Panics
/// If the tensors are not what [`fused_forward`] accepted and returned, or `grad_output`
/// is not one value of the logits' dtype.
pub(crate) fn fused_backward(
    logits: &NdArrayTensor,
    targets: &NdArrayTensor,
    mask: &NdArrayTensor,
    log_partition: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    z_loss: f64,
) -> NdArrayTensor {
    match logits {
        NdArrayTensor::F32(_) => {
            backward_in::<f32>(logits, targets, mask, log_partition, grad_output, z_loss)
        }
        NdArrayTensor::F64(_) => {
            backward_in::<f64>(logits, targets, mask, log_partition, grad_output, z_loss)
        }
        other => panic!(
            "the fused cross-entropy backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal + LossReal>(
    logits: &NdArrayTensor,
    targets: &NdArrayTensor,
    mask: &NdArrayTensor,
    log_partition: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    z_loss: f64,
) -> NdArrayTensor {
    let dims = dims_of(logits).expect("the forward accepted these logits");
    fn read<'a, E: NdArrayReal>(t: &'a NdArrayTensor, logits: &NdArrayTensor) -> Cow<'a, [E]> {
        E::elements(t).unwrap_or_else(|| {
            panic!(
                "fused cross-entropy backward: every float tensor must be {:?} like the \
                 logits, got {:?}",
                logits.dtype(),
                t.dtype()
            )
        })
    }
    let grad = read::<E>(grad_output, logits);
    assert_eq!(
        grad.len(),
        1,
        "fused cross-entropy backward: grad_output must be one value, got {:?}",
        grad_output.shape()
    );
    let targets = int_ids(targets).expect("the forward accepted these targets");
    let mut dz = zeroed_output(dims.rows * dims.vocab);
    backward(
        dims,
        &read::<E>(logits, logits),
        &targets,
        &read::<E>(mask, logits),
        &read::<E>(log_partition, logits),
        z_loss,
        grad[0],
        &mut dz,
    );
    E::tensor(dz, logits.shape().as_slice().to_vec())
}
