//! Runs the fused CPU GELU kernels on `NdArray` tensors: f32 or f64 (anything else goes
//! back to the composite), read without a copy when contiguous, with dx written over dy
//! when the incoming gradient is the only reference to its buffer. The forward comes alone
//! or with the slope `GELU'(x)` that the autodiff node keeps for its backward.
//!
//! # Shapes
//! `x`, output, `grad_output`, dx: any shape, all the same.

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{
    NormalCdf, backward, backward_from_slope, backward_from_slope_in_place, backward_in_place,
    forward_uninit, forward_with_slope_in_place,
};
use crate::cpu::memory::written_output;
use crate::cpu::ndarray::{NdArrayReal, elements_mut, unique_or_copy, with_gradient_buffer};

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

/// The fused forward and the slope `GELU'(x)`, the slope written over `x`'s buffer when
/// `x` holds the only reference to it (else over a copy of `x`); `Err(x)` when `x` is not
/// f32 or f64.
pub(crate) fn fused_forward_with_slope(
    x: NdArrayTensor,
) -> Result<[NdArrayTensor; 2], NdArrayTensor> {
    match x {
        NdArrayTensor::F32(_) => Ok(forward_with_slope_in::<f32>(x)),
        NdArrayTensor::F64(_) => Ok(forward_with_slope_in::<f64>(x)),
        other => Err(other),
    }
}

fn forward_with_slope_in<E: NdArrayReal + NormalCdf>(x: NdArrayTensor) -> [NdArrayTensor; 2] {
    let shape = x.shape().as_slice().to_vec();
    let len = shape.iter().product();
    // The slope goes over x's own buffer, or over a copy of x when x is shared.
    let mut slope = unique_or_copy::<E>(x);
    let x_then_slope = elements_mut(&mut slope);
    // SAFETY: `forward_with_slope_in_place` writes all `len` elements of y.
    let y = unsafe {
        written_output(len, |y: *mut E| {
            forward_with_slope_in_place(x_then_slope, std::slice::from_raw_parts_mut(y.cast(), len))
        })
    };
    [E::tensor(y, shape), E::from_array(slope)]
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
    gradient_in(x, grad_output, "x", (backward_in_place::<E>, backward::<E>))
}

/// A backward kernel pair over `v` (`x` or the slope): `dx` over `dy`, and `dx` apart.
type Kernels<E> = (fn(&[E], &mut [E]), fn(&[E], &[E], &mut [E]));

/// `dx` from `v` and `grad_output` by `kernels`, shaped as `v` (`what` names `v` in the
/// panics), written over `grad_output` when it is the only reference to its buffer.
///
/// # Panics
/// If `grad_output` is not shaped as `v` or holds another dtype.
fn gradient_in<E: NdArrayReal>(
    v: &NdArrayTensor,
    grad_output: NdArrayTensor,
    what: &str,
    (in_place, separate): Kernels<E>,
) -> NdArrayTensor {
    let shape = v.shape();
    assert_eq!(
        grad_output.shape(),
        shape,
        "fused GELU backward: grad_output must be shaped as {what}"
    );
    let values = E::elements(v).expect("the dtype was matched");
    let (dx, ()) = with_gradient_buffer::<E, _>(
        grad_output,
        shape.as_slice().to_vec(),
        |dy| {
            format!(
                "fused GELU backward: dy must be {:?} like {what}, got {:?}",
                v.dtype(),
                dy.dtype()
            )
        },
        |grad| in_place(&values, grad),
        |dy, dx| separate(&values, dy, dx),
    );
    dx
}

/// The backward from the forward's slope: `dx = dy·slope`, shaped as `slope`.
///
/// # Panics
/// If `slope` is not what [`fused_forward_with_slope`] returned, or `grad_output` is not
/// shaped as it or holds another dtype.
pub(crate) fn fused_backward_from_slope(
    slope: &NdArrayTensor,
    grad_output: NdArrayTensor,
) -> NdArrayTensor {
    match slope {
        NdArrayTensor::F32(_) => from_slope_in::<f32>(slope, grad_output),
        NdArrayTensor::F64(_) => from_slope_in::<f64>(slope, grad_output),
        other => panic!(
            "the fused GELU backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn from_slope_in<E: NdArrayReal>(
    slope: &NdArrayTensor,
    grad_output: NdArrayTensor,
) -> NdArrayTensor {
    let kernels: Kernels<E> = (backward_from_slope_in_place::<E>, backward_from_slope::<E>);
    gradient_in(slope, grad_output, "the slope", kernels)
}
