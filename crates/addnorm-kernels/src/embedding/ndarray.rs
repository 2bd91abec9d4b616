//! Runs the embedding kernels on `NdArray` tensors: an f32 or f64 table `[n, d]` and ids
//! `[batch, seq]` of any int type, all in `0..n` (anything else goes back to the composite,
//! where Burn reports what is wrong).
//!
//! # Shapes
//! `weights`: `[n, d]`; `ids`: `[batch, seq]`; output, `grad_output`: `[batch, seq, d]`;
//! `dW`: `[n, d]`.

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{backward, forward, in_range};
use crate::cpu::memory::written_output;
use crate::cpu::ndarray::{NdArrayReal, int_ids};

/// The fused forward, or `None` for other dtypes, ranks or ids out of range.
pub(crate) fn fused_forward(weights: &NdArrayTensor, ids: &NdArrayTensor) -> Option<NdArrayTensor> {
    match weights {
        NdArrayTensor::F32(_) => forward_in::<f32>(weights, ids),
        NdArrayTensor::F64(_) => forward_in::<f64>(weights, ids),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal>(
    weights: &NdArrayTensor,
    ids: &NdArrayTensor,
) -> Option<NdArrayTensor> {
    let (table_shape, id_shape) = (weights.shape(), ids.shape());
    let (&[n, d], &[batch, seq]) = (table_shape.as_slice(), id_shape.as_slice()) else {
        return None;
    };
    let ids = int_ids(ids)?;
    if !in_range(&ids, n) {
        return None;
    }
    let table = E::elements(weights)?;
    let len = batch * seq * d;
    // SAFETY: `forward` writes all `len` elements (one row of d per id) and reads none.
    let y = unsafe {
        written_output(len, |ptr: *mut E| {
            forward(&table, d, &ids, std::slice::from_raw_parts_mut(ptr, len))
        })
    };
    Some(E::tensor(y, vec![batch, seq, d]))
}

/// The fused backward `dW`, `[table_rows, d]`.
///
/// # Panics
/// If the inputs are not what [`fused_forward`] accepted.
pub(crate) fn fused_backward(
    table_rows: usize,
    ids: &NdArrayTensor,
    grad_output: &NdArrayTensor,
) -> NdArrayTensor {
    match grad_output {
        NdArrayTensor::F32(_) => backward_in::<f32>(table_rows, ids, grad_output),
        NdArrayTensor::F64(_) => backward_in::<f64>(table_rows, ids, grad_output),
        other => panic!(
            "the fused embedding backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal>(
    table_rows: usize,
    ids: &NdArrayTensor,
    grad_output: &NdArrayTensor,
) -> NdArrayTensor {
    let d = *grad_output
        .shape()
        .as_slice()
        .last()
        .expect("dy is [batch, seq, d]");
    let ids = int_ids(ids).expect("the forward read these ids");
    let dy = E::elements(grad_output).expect("dy has the table's dtype");
    E::tensor(backward(table_rows, d, &ids, &dy), vec![table_rows, d])
}
