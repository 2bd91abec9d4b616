//! Runs the fused kernels on `NdArray` tensors: picks the element type from the tensor's
//! runtime dtype (f32 or f64; anything else goes back to the composite path), reads the
//! data without a copy when it is contiguous (a transposed or sliced view is gathered into
//! row-major order first), and expands a scalar or absent γ/β to `[n]`.
//!
//! # Shapes
//! - `x`, `dy`: `[rows, n]`; `gamma`, `beta`: `[n]` or `[1]`; `shift`, `rstd`: `[rows]`

use std::borrow::Cow;

use burn::backend::ndarray::{NdArrayTensor, SharedArray};
use burn::tensor::TensorMetadata;

use super::backward::backward;
use super::forward::forward;
use super::memory::zeroed_output;
use super::plan::RowPlan;
use super::real::{Real, sum_map};
use crate::spec::RowNormSpec;

/// The element types with an `NdArrayTensor` variant.
trait NdArrayReal: Real {
    /// The tensor's elements in row-major order, borrowed when they already are, or `None`
    /// when the tensor holds another dtype.
    fn elements(tensor: &NdArrayTensor) -> Option<Cow<'_, [Self]>>;
    /// A new tensor of `shape` from row-major `values`.
    fn tensor(values: Vec<Self>, shape: Vec<usize>) -> NdArrayTensor;
}

macro_rules! ndarray_real {
    ($ty:ty, $variant:ident) => {
        impl NdArrayReal for $ty {
            fn elements(tensor: &NdArrayTensor) -> Option<Cow<'_, [Self]>> {
                let NdArrayTensor::$variant(storage) = tensor else {
                    return None;
                };
                let view = storage.view();
                Some(match view.to_slice() {
                    Some(contiguous) => Cow::Borrowed(contiguous),
                    None => Cow::Owned(view.iter().copied().collect()),
                })
            }

            fn tensor(values: Vec<Self>, shape: Vec<usize>) -> NdArrayTensor {
                SharedArray::<$ty>::from_shape_vec(shape, values)
                    .expect("the kernel writes exactly rows × n values")
                    .into()
            }
        }
    };
}

ndarray_real!(f32, F32);
ndarray_real!(f64, F64);

/// `[rows, n]` when the tensor is a non-empty matrix.
fn matrix_dims(x: &NdArrayTensor) -> Option<(usize, usize)> {
    match x.shape().as_slice() {
        &[rows, n] if rows > 0 && n > 0 => Some((rows, n)),
        _ => None,
    }
}

/// A parameter expanded to `[n]`: `absent` when there is none, its value repeated when it
/// is a scalar. `None` when its dtype or length does not fit.
fn expanded<E: NdArrayReal>(
    param: Option<&NdArrayTensor>,
    n: usize,
    absent: E,
) -> Option<Cow<'_, [E]>> {
    let Some(param) = param else {
        return Some(Cow::Owned(vec![absent; n]));
    };
    let values = E::elements(param)?;
    match values.len() {
        len if len == n => Some(values),
        1 => Some(Cow::Owned(vec![values[0]; n])),
        _ => None,
    }
}

/// The fused forward: `(y, shift, rstd)`, or `None` when these inputs are not for it.
pub(crate) fn fused_forward(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta: Option<&NdArrayTensor>,
    spec: &RowNormSpec,
) -> Option<(NdArrayTensor, NdArrayTensor, NdArrayTensor)> {
    match x {
        NdArrayTensor::F32(_) => forward_in::<f32>(x, gamma, beta, spec),
        NdArrayTensor::F64(_) => forward_in::<f64>(x, gamma, beta, spec),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal>(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta: Option<&NdArrayTensor>,
    spec: &RowNormSpec,
) -> Option<(NdArrayTensor, NdArrayTensor, NdArrayTensor)> {
    let (rows, n) = matrix_dims(x)?;
    let x = E::elements(x)?;
    let gamma = expanded(gamma, n, E::ONE)?;
    let beta = expanded(beta, n, E::ZERO)?;
    let plan = RowPlan::new(spec, n);
    let mut y = zeroed_output(rows * n);
    let mut shift = vec![E::ZERO; rows];
    let mut rstd = vec![E::ZERO; rows];
    forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
    crate::fused::count(|calls| calls.forward += 1);
    Some((
        E::tensor(y, vec![rows, n]),
        E::tensor(shift, vec![rows]),
        E::tensor(rstd, vec![rows]),
    ))
}

/// The fused backward: `(dx, dγ, dβ)`, dγ/dβ shaped as their parameters.
///
/// # Panics
/// If the tensors are not what [`fused_forward`] accepted and returned.
pub(crate) fn fused_backward(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta_features: Option<usize>,
    (shift, rstd): (&NdArrayTensor, &NdArrayTensor),
    grad_output: &NdArrayTensor,
    spec: &RowNormSpec,
) -> (NdArrayTensor, Option<NdArrayTensor>, Option<NdArrayTensor>) {
    match x {
        NdArrayTensor::F32(_) => {
            backward_in::<f32>(x, gamma, beta_features, shift, rstd, grad_output, spec)
        }
        NdArrayTensor::F64(_) => {
            backward_in::<f64>(x, gamma, beta_features, shift, rstd, grad_output, spec)
        }
        other => panic!(
            "the fused norm backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal>(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta_features: Option<usize>,
    shift: &NdArrayTensor,
    rstd: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    spec: &RowNormSpec,
) -> (NdArrayTensor, Option<NdArrayTensor>, Option<NdArrayTensor>) {
    let dtype_error = |what: &str, t: &NdArrayTensor| {
        format!(
            "fused norm backward: {what} must be {:?} like x, got {:?}",
            x.dtype(),
            t.dtype()
        )
    };
    let (rows, n) = matrix_dims(x).expect("the forward accepted a non-empty [rows, n]");
    let x_values = E::elements(x).expect("x's dtype was matched");
    let dy =
        E::elements(grad_output).unwrap_or_else(|| panic!("{}", dtype_error("dy", grad_output)));
    let shift = E::elements(shift).unwrap_or_else(|| panic!("{}", dtype_error("shift", shift)));
    let rstd = E::elements(rstd).unwrap_or_else(|| panic!("{}", dtype_error("rstd", rstd)));
    let gamma_features = gamma.map(|g| g.shape().num_elements());
    let gamma_values = expanded(gamma, n, E::ONE).expect("the forward accepted γ");
    let plan = RowPlan::new(spec, n);
    let mut dx = zeroed_output(rows * n);
    let sums = backward(&plan, &x_values, &dy, &gamma_values, &shift, &rstd, &mut dx);
    crate::fused::count(|calls| calls.backward += 1);
    // A scalar parameter's gradient is the sum over every feature as well.
    let shaped = |per_feature: Vec<E>, features: usize| {
        if features == 1 && n != 1 {
            E::tensor(vec![sum_map(&per_feature, |v| v)], vec![1])
        } else {
            E::tensor(per_feature, vec![n])
        }
    };
    (
        E::tensor(dx, vec![rows, n]),
        gamma_features.map(|features| shaped(sums.gamma, features)),
        beta_features.map(|features| shaped(sums.beta, features)),
    )
}
