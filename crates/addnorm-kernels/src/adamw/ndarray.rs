//! Runs the fused CPU AdamW step on `NdArray` tensors: f32 or f64, every tensor of one
//! dtype and shape (anything else goes back to the composite), with `θ`, `m` and `v`
//! updated in their own buffers when nothing else holds them (else in copies).
//!
//! # Shapes
//! `param`, `grad`, the moments and the outputs: any shape, all the same.

use burn::backend::ndarray::{NdArrayTensor, SharedArray};
use burn::tensor::TensorMetadata;

use super::cpu::step;
use super::spec::AdamWUpdate;
use crate::cpu::ndarray::{NdArrayReal, unique_or_copy};

/// A step's tensors: `(param, grad, moments)`, `moments` `None` on the first step.
pub(crate) type Inputs = (NdArrayTensor, NdArrayTensor, Option<[NdArrayTensor; 2]>);

/// The fused step, `[θ, m, v]`; `Err` with the inputs untouched when they are not all f32
/// or all f64 of one shape.
// The Err variant is the four tensors' handles (416 bytes, no elements) handed back for
// the composite; boxing them would allocate on that path for nothing.
#[allow(clippy::result_large_err)]
pub(crate) fn fused_update(
    inputs: Inputs,
    update: AdamWUpdate,
) -> Result<[NdArrayTensor; 3], Inputs> {
    if !same_shapes(&inputs) {
        return Err(inputs);
    }
    match (&inputs.0, &inputs.1, dtypes_of(&inputs.2)) {
        (NdArrayTensor::F32(_), NdArrayTensor::F32(_), Dtype::F32 | Dtype::None) => {
            Ok(update_in::<f32>(inputs, &update))
        }
        (NdArrayTensor::F64(_), NdArrayTensor::F64(_), Dtype::F64 | Dtype::None) => {
            Ok(update_in::<f64>(inputs, &update))
        }
        _ => Err(inputs),
    }
}

/// The moments' common dtype, as far as the fused kernels care.
enum Dtype {
    /// No moments yet (the first step).
    None,
    F32,
    F64,
    /// Another dtype, or two different ones.
    Other,
}

fn dtypes_of(moments: &Option<[NdArrayTensor; 2]>) -> Dtype {
    match moments {
        None => Dtype::None,
        Some([NdArrayTensor::F32(_), NdArrayTensor::F32(_)]) => Dtype::F32,
        Some([NdArrayTensor::F64(_), NdArrayTensor::F64(_)]) => Dtype::F64,
        Some(_) => Dtype::Other,
    }
}

fn same_shapes((param, grad, moments): &Inputs) -> bool {
    let shape = param.shape();
    grad.shape() == shape
        && moments
            .iter()
            .flatten()
            .all(|moment| moment.shape() == shape)
}

fn update_in<E: NdArrayReal>(
    (param, grad, moments): Inputs,
    update: &AdamWUpdate,
) -> [NdArrayTensor; 3] {
    let shape = param.shape().as_slice().to_vec();
    let len = shape.iter().product();
    let mut theta = unique_or_copy::<E>(param);
    let [mut m, mut v] = match moments {
        Some(moments) => moments.map(unique_or_copy::<E>),
        // The first step writes the moments without reading them.
        None => [(); 2].map(|()| zeros::<E>(len, &shape)),
    };
    let g = E::elements(&grad).expect("the dtype was matched");
    step(
        slice_of(&mut theta),
        &g,
        slice_of(&mut m),
        slice_of(&mut v),
        update,
    );
    [E::from_array(theta), E::from_array(m), E::from_array(v)]
}

/// A new array of `len` zeros shaped `shape`.
fn zeros<E: NdArrayReal>(len: usize, shape: &[usize]) -> SharedArray<E> {
    unique_or_copy::<E>(E::tensor(vec![E::ZERO; len], shape.to_vec()))
}

/// The elements of an array that [`unique_or_copy`] returned (standard layout).
fn slice_of<E: NdArrayReal>(array: &mut SharedArray<E>) -> &mut [E] {
    array
        .as_slice_mut()
        .expect("a standard-layout array is one slice")
}
