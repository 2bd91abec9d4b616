//! Runs the fused CPU linear kernels on `NdArray` tensors: f32 or f64 (anything else, or
//! mismatched dtypes or shapes, goes back to Burn's `linear`), read without a copy when
//! contiguous.
//!
//! # Shapes
//! - `x`, `dx`: `[..., d_in]`; `weight`, `dW`: `[d_in, d_out]`; `bias`, `db`: `[d_out]`;
//!   output, `grad_output` and the residual: `[..., d_out]`

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{LinearDims, backward_input, backward_parameters, forward, forward_onto};
use super::fused::{LinearGrads, LinearWants};
use crate::cpu::gemm::Gemm;
use crate::cpu::ndarray::{NdArrayBackend, NdArrayReal};

/// The call's sizes when the kernels take these shapes: `x` of rank ≥ 2 ending in
/// `d_in`, `weight: [d_in, d_out]`, and a `[d_out]` bias.
fn dims_of(x: &[usize], weight: &[usize], bias: Option<&[usize]>) -> Option<LinearDims> {
    let (&d_in, lead) = x.split_last()?;
    let &[w_in, d_out] = weight else {
        return None;
    };
    let bias_fits = bias.is_none_or(|b| b == [d_out]);
    (!lead.is_empty() && w_in == d_in && bias_fits).then(|| LinearDims {
        rows: lead.iter().product(),
        d_in,
        d_out,
    })
}

/// The fused forward, `residual + (x·W + b)` when given a residual, or `None` when these
/// inputs are not for it.
pub(crate) fn fused_forward(
    x: &NdArrayTensor,
    weight: &NdArrayTensor,
    bias: Option<&NdArrayTensor>,
    residual: Option<&NdArrayTensor>,
) -> Option<NdArrayTensor> {
    match x {
        NdArrayTensor::F32(_) => forward_in::<f32>(x, weight, bias, residual),
        NdArrayTensor::F64(_) => forward_in::<f64>(x, weight, bias, residual),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal + Gemm>(
    x: &NdArrayTensor,
    weight: &NdArrayTensor,
    bias: Option<&NdArrayTensor>,
    residual: Option<&NdArrayTensor>,
) -> Option<NdArrayTensor> {
    let shape = x.shape();
    let bias_shape = bias.map(|b| b.shape());
    let dims = dims_of(
        shape.as_slice(),
        weight.shape().as_slice(),
        bias_shape.as_ref().map(|s| s.as_slice()),
    )?;
    let mut out_shape = shape.as_slice().to_vec();
    *out_shape.last_mut().expect("rank ≥ 2") = dims.d_out;
    let (xs, ws) = (E::elements(x)?, E::elements(weight)?);
    let bs = match bias {
        Some(b) => Some(E::elements(b)?),
        None => None,
    };
    let y = match residual {
        Some(r) if r.shape().as_slice() != out_shape.as_slice() => return None,
        Some(r) => forward_onto(dims, &xs, &ws, bs.as_deref(), &E::elements(r)?),
        None => forward(dims, &xs, &ws, bs.as_deref()),
    };
    Some(E::tensor(y, out_shape))
}

/// The fused backward.
///
/// # Panics
/// If the tensors are not what [`fused_forward`] accepted, or `grad_output` is not shaped
/// as its output.
pub(crate) fn fused_backward<B: NdArrayBackend>(
    x: &NdArrayTensor,
    weight: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    wants: LinearWants,
) -> LinearGrads<B> {
    match x {
        NdArrayTensor::F32(_) => backward_in::<f32, B>(x, weight, grad_output, wants),
        NdArrayTensor::F64(_) => backward_in::<f64, B>(x, weight, grad_output, wants),
        other => panic!(
            "the fused linear backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E, B>(
    x: &NdArrayTensor,
    weight: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    wants: LinearWants,
) -> LinearGrads<B>
where
    E: NdArrayReal + Gemm,
    B: NdArrayBackend,
{
    let x_shape = x.shape();
    let dims = dims_of(x_shape.as_slice(), weight.shape().as_slice(), None)
        .expect("the forward accepted these shapes");
    fn read<'a, E: NdArrayReal>(
        t: &'a NdArrayTensor,
        x: &NdArrayTensor,
    ) -> std::borrow::Cow<'a, [E]> {
        E::elements(t).unwrap_or_else(|| {
            panic!(
                "fused linear backward: every tensor must be {:?} like x, got {:?}",
                x.dtype(),
                t.dtype()
            )
        })
    }
    let dy = read::<E>(grad_output, x);
    assert_eq!(
        dy.len(),
        dims.rows * dims.d_out,
        "fused linear backward: grad_output {:?} does not match the output of x {:?}",
        grad_output.shape(),
        x_shape
    );
    let dx = wants.x.then(|| {
        E::tensor(
            backward_input(dims, &dy, &read::<E>(weight, x)),
            x_shape.as_slice().to_vec(),
        )
    });
    let (dw, db) = if wants.weight || wants.bias {
        let (dw, db) = backward_parameters(dims, &read::<E>(x, x), &dy, wants.bias);
        (
            wants
                .weight
                .then(|| E::tensor(dw, vec![dims.d_in, dims.d_out])),
            db.map(|db| E::tensor(db, vec![dims.d_out])),
        )
    } else {
        (None, None)
    };
    LinearGrads {
        x: dx,
        weight: dw,
        bias: db,
    }
}
