//! Runs the fused CPU GELU kernels on `NdArray` tensors: f32 or f64 (anything else goes
//! back to the composite), read without a copy when contiguous, with dx written over dy
//! when the incoming gradient is the only reference to its buffer.
//!
//! # Shapes
//! `x`, output, `grad_output`, dx: any shape, all the same.

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{NormalCdf, backward, backward_in_place, forward_uninit};
use crate::cpu::memory::written_output;
use crate::cpu::ndarray::{NdArrayReal, with_gradient_buffer};

/// The fused forward, or `None` when `x` is not f32 or f64.
pub(crate) fn fused_forward(x: &NdArrayTensor) -> Option<NdArrayTensor> {
    match x {
        NdArrayTensor::F32(_) => forward_in::<f32>(x),
        NdArrayTensor::F64(_) => forward_in::<f64>(x),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal + NormalCdf>(x: &NdArrayTensor) -> Option<NdArrayTensor> {
    let values = E::elements(x)?;
    let len = values.len();
    // SAFETY: `forward_uninit` writes all `len` elements and reads none of them.
    let y = unsafe {
        written_output(len, |ptr: *mut E| {
            forward_uninit(&values, std::slice::from_raw_parts_mut(ptr.cast(), len))
        })
    };
    Some(E::tensor(y, x.shape().as_slice().to_vec()))
}

/// The fused backward `dx`, shaped as `x`.
///
/// # Panics
/// If `x` is not what [`fused_forward`] accepted, or `grad_output` is not shaped as `x` or
/// holds another dtype.
pub(crate) fn fused_backward(x: &NdArrayTensor, grad_output: NdArrayTensor) -> NdArrayTensor {
    match x {
        NdArrayTensor::F32(_) => backward_in::<f32>(x, grad_output),
        NdArrayTensor::F64(_) => backward_in::<f64>(x, grad_output),
        other => panic!(
            "the fused GELU backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal + NormalCdf>(
    x: &NdArrayTensor,
    grad_output: NdArrayTensor,
) -> NdArrayTensor {
    let shape = x.shape();
    assert_eq!(
        grad_output.shape(),
        shape,
        "fused GELU backward: grad_output must be shaped as x"
    );
    let values = E::elements(x).expect("x's dtype was matched");
    let (dx, ()) = with_gradient_buffer::<E, _>(
        grad_output,
        shape.as_slice().to_vec(),
        |dy| {
            format!(
                "fused GELU backward: dy must be {:?} like x, got {:?}",
                x.dtype(),
                dy.dtype()
            )
        },
        |grad| backward_in_place(&values, grad),
        |dy, dx| backward(&values, dy, dx),
    );
    dx
}
