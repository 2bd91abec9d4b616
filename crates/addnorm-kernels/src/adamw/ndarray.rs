//! Runs the fused CPU AdamW step on `NdArray` tensors: f32 or f64, every tensor of one
//! dtype and shape (anything else goes back to the composite), with `θ`, `m` and `v`
//! updated in their own buffers when nothing else holds them (else in copies).
//!
//! # Shapes
//! `param`, `grad`, the moments and the outputs: any shape, all the same.

use burn::backend::ndarray::{NdArrayTensor, SharedArray};
use burn::tensor::{DType, TensorMetadata};

use super::cpu::step;
use super::spec::AdamWUpdate;
use crate::cpu::ndarray::{NdArrayReal, elements_mut, unique_or_copy};

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
    if !uniform(&inputs) {
        return Err(inputs);
    }
    match inputs.0.dtype() {
        DType::F32 => Ok(update_in::<f32>(inputs, &update)),
        DType::F64 => Ok(update_in::<f64>(inputs, &update)),
        _ => Err(inputs),
    }
}

/// Whether the gradient and the moments (if any) have the parameter's dtype and shape.
fn uniform((param, grad, moments): &Inputs) -> bool {
    let (dtype, shape) = (param.dtype(), param.shape());
    let like_param = |t: &NdArrayTensor| t.dtype() == dtype && t.shape() == shape;
    like_param(grad) && moments.iter().flatten().all(like_param)
}

fn update_in<E: NdArrayReal>(
    (param, grad, moments): Inputs,
    update: &AdamWUpdate,
) -> [NdArrayTensor; 3] {
    let shape = param.shape().as_slice().to_vec();
    let mut theta = unique_or_copy::<E>(param);
    let [mut m, mut v] = match moments {
        Some(moments) => moments.map(unique_or_copy::<E>),
        // The first step writes the moments without reading them.
        None => [(); 2].map(|()| zeros::<E>(&shape)),
    };
    let g = E::elements(&grad).expect("the dtype was matched");
    step(
        elements_mut(&mut theta),
        &g,
        elements_mut(&mut m),
        elements_mut(&mut v),
        update,
    );
    [E::from_array(theta), E::from_array(m), E::from_array(v)]
}

/// A new array of zeros shaped `shape` (standard layout).
fn zeros<E: NdArrayReal>(shape: &[usize]) -> SharedArray<E> {
    SharedArray::from_elem(shape.to_vec(), E::ZERO)
}
