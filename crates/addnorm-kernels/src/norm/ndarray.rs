//! The fused norm and DyT kernels on `NdArray`: [`RowNormBackend`]'s overrides for every
//! `NdArray<E, I, Q>`, which run the kernels on its tensors: picks the element type from
//! the tensor's runtime dtype (f32 or f64; anything else goes back to the composite path),
//! reads the data without a copy when it is contiguous (a transposed or sliced view is
//! gathered into row-major order first, [`crate::cpu::ndarray`]), and expands a scalar or
//! absent γ/β to `[n]`.
//!
//! # Shapes
//! - `x`, `dy`: `[rows, n]`; `gamma`, `beta`: `[n]` or `[1]`; `shift`, `rstd`: `[rows]`

use std::borrow::Cow;

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Shape, TensorMetadata};

use super::backend::RowNormBackend;
use super::cpu::backward::{backward, backward_in_place};
use super::cpu::dyt;
use super::cpu::forward::forward;
use super::cpu::plan::RowPlan;
use super::fused::{FusedDynamicTanhGrads, FusedNormForward, FusedNormGrads, RowStatistics};
use super::spec::RowNormSpec;
use crate::cpu::memory::overwritten_output;
use crate::cpu::ndarray::{NdArrayBackend, NdArrayReal, with_gradient_buffer};
use crate::cpu::real::sum_map;

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
    let mut y = overwritten_output(rows * n);
    let mut shift = vec![E::ZERO; rows];
    let mut rstd = vec![E::ZERO; rows];
    forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
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
    grad_output: NdArrayTensor,
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
    grad_output: NdArrayTensor,
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
    let shift = E::elements(shift).unwrap_or_else(|| panic!("{}", dtype_error("shift", shift)));
    let rstd = E::elements(rstd).unwrap_or_else(|| panic!("{}", dtype_error("rstd", rstd)));
    let gamma_features = gamma.map(|g| g.shape().num_elements());
    let gamma_values = expanded(gamma, n, E::ONE).expect("the forward accepted γ");
    let plan = RowPlan::new(spec, n);
    let (dx, sums) = with_gradient_buffer::<E, _>(
        grad_output,
        vec![rows, n],
        |dy| dtype_error("dy", dy),
        |grad| backward_in_place(&plan, &x_values, grad, &gamma_values, &shift, &rstd),
        |dy, dx| backward(&plan, &x_values, dy, &gamma_values, &shift, &rstd, dx),
    );
    // A scalar parameter's gradient is the sum over every feature as well.
    (
        dx,
        gamma_features.map(|features| per_parameter(sums.gamma, features, n)),
        beta_features.map(|features| per_parameter(sums.beta, features, n)),
    )
}

/// The fused DyT forward `γ·tanh(α·x) + β`, or `None` when these inputs are not for it
/// (not a non-empty f32/f64 matrix, or α, γ, β of another dtype or length).
pub(crate) fn fused_dynamic_tanh(
    x: &NdArrayTensor,
    alpha: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta: Option<&NdArrayTensor>,
) -> Option<NdArrayTensor> {
    match x {
        NdArrayTensor::F32(_) => dynamic_tanh_in::<f32>(x, alpha, gamma, beta),
        NdArrayTensor::F64(_) => dynamic_tanh_in::<f64>(x, alpha, gamma, beta),
        _ => None,
    }
}

/// α as a scalar: `None` unless it holds exactly one value of `E`.
fn scalar<E: NdArrayReal>(alpha: &NdArrayTensor) -> Option<E> {
    match *E::elements(alpha)? {
        [value] => Some(value),
        _ => None,
    }
}

fn dynamic_tanh_in<E: NdArrayReal>(
    x: &NdArrayTensor,
    alpha: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta: Option<&NdArrayTensor>,
) -> Option<NdArrayTensor> {
    let (rows, n) = matrix_dims(x)?;
    let alpha = scalar::<E>(alpha)?;
    let gamma = expanded(gamma, n, E::ONE)?;
    let beta = expanded(beta, n, E::ZERO)?;
    let x = E::elements(x)?;
    let mut y = overwritten_output(rows * n);
    dyt::forward(n, &x, alpha, &gamma, &beta, &mut y);
    Some(E::tensor(y, vec![rows, n]))
}

/// The fused DyT backward: `(dx, dα, dγ, dβ)`, dα shaped `[1]`, dγ/dβ as their parameters.
///
/// # Panics
/// If the tensors are not what [`fused_dynamic_tanh`] accepted.
pub(crate) fn fused_dynamic_tanh_backward(
    x: &NdArrayTensor,
    alpha: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta_features: Option<usize>,
    grad_output: NdArrayTensor,
) -> DynamicTanhGradTensors {
    match x {
        NdArrayTensor::F32(_) => {
            dynamic_tanh_backward_in::<f32>(x, alpha, gamma, beta_features, grad_output)
        }
        NdArrayTensor::F64(_) => {
            dynamic_tanh_backward_in::<f64>(x, alpha, gamma, beta_features, grad_output)
        }
        other => panic!(
            "the fused DyT backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

/// `(dx, dα, dγ, dβ)` as NdArray tensors.
pub(crate) type DynamicTanhGradTensors = (
    NdArrayTensor,
    NdArrayTensor,
    Option<NdArrayTensor>,
    Option<NdArrayTensor>,
);

fn dynamic_tanh_backward_in<E: NdArrayReal>(
    x: &NdArrayTensor,
    alpha: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    beta_features: Option<usize>,
    grad_output: NdArrayTensor,
) -> DynamicTanhGradTensors {
    let (rows, n) = matrix_dims(x).expect("the forward accepted a non-empty [rows, n]");
    let x_values = E::elements(x).expect("x's dtype was matched");
    let alpha = scalar::<E>(alpha).expect("the forward accepted α");
    let gamma_features = gamma.map(|g| g.shape().num_elements());
    let gamma_values = expanded(gamma, n, E::ONE).expect("the forward accepted γ");
    let (dx, sums) = with_gradient_buffer::<E, _>(
        grad_output,
        vec![rows, n],
        |dy| {
            format!(
                "fused DyT backward: dy must be {:?} like x, got {:?}",
                x.dtype(),
                dy.dtype()
            )
        },
        |grad| dyt::backward_in_place(n, &x_values, grad, alpha, &gamma_values),
        |dy, dx| dyt::backward(n, &x_values, dy, alpha, &gamma_values, dx),
    );
    (
        dx,
        E::tensor(vec![sums.alpha], vec![1]),
        gamma_features.map(|features| per_parameter(sums.gamma, features, n)),
        beta_features.map(|features| per_parameter(sums.beta, features, n)),
    )
}

/// A per-feature gradient shaped as its parameter: summed to `[1]` for a scalar one.
fn per_parameter<E: NdArrayReal>(per_feature: Vec<E>, features: usize, n: usize) -> NdArrayTensor {
    if features == 1 && n != 1 {
        E::tensor(vec![sum_map(&per_feature, |v| v)], vec![1])
    } else {
        E::tensor(per_feature, vec![n])
    }
}

/// The fused [CPU kernels](super::cpu) on every `NdArray<E, I, Q>`: the overrides call the
/// functions above, which return `None` (composite path) for what they do not handle.
impl<B: NdArrayBackend> RowNormBackend for B {
    fn fused_norm_rows(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
        spec: &RowNormSpec,
    ) -> Option<FusedNormForward<Self>> {
        fused_forward(x, gamma, beta, spec).map(|(output, shift, rstd)| FusedNormForward {
            output,
            statistics: RowStatistics { shift, rstd },
        })
    }

    fn reshape_rows(x: FloatTensor<Self>, shape: Shape) -> FloatTensor<Self> {
        crate::cpu::ndarray::reshape_without_copy(x, &shape).unwrap_or_else(|x| {
            <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_reshape(x, shape)
        })
    }

    fn fused_norm_rows_backward(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta_features: Option<usize>,
        statistics: &RowStatistics<Self>,
        grad_output: FloatTensor<Self>,
        spec: &RowNormSpec,
    ) -> FusedNormGrads<Self> {
        let (x, gamma, beta) = fused_backward(
            x,
            gamma,
            beta_features,
            (&statistics.shift, &statistics.rstd),
            grad_output,
            spec,
        );
        FusedNormGrads { x, gamma, beta }
    }

    fn fused_dynamic_tanh(
        x: &FloatTensor<Self>,
        alpha: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
    ) -> Option<FloatTensor<Self>> {
        fused_dynamic_tanh(x, alpha, gamma, beta)
    }

    fn fused_dynamic_tanh_backward(
        x: &FloatTensor<Self>,
        alpha: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta_features: Option<usize>,
        grad_output: FloatTensor<Self>,
    ) -> FusedDynamicTanhGrads<Self> {
        let (x, alpha, gamma, beta) =
            fused_dynamic_tanh_backward(x, alpha, gamma, beta_features, grad_output);
        FusedDynamicTanhGrads {
            x,
            alpha,
            gamma,
            beta,
        }
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::{Tensor, TensorData};

    use super::*;
    use crate::cpu::test_values::data_pointer;

    /// The backward glue writes dx over a uniquely held dy (same buffer) and into a fresh
    /// buffer when dy is shared (dy left intact); both give the same gradients, for the
    /// norm and for DyT.
    #[test]
    fn backward_reuses_a_unique_gradient_and_spares_a_shared_one() {
        let device = Default::default();
        let (rows, n) = (5, 9);
        let values = |seed: usize| -> Vec<f32> {
            (0..rows * n)
                .map(|i| ((i * 7919 + seed) % 101) as f32 * 0.03 - 1.5)
                .collect()
        };
        let primitive = |v: Vec<f32>| {
            Tensor::<NdArray, 2>::from_data(TensorData::new(v, [rows, n]), &device)
                .into_primitive()
                .tensor()
        };
        let x = primitive(values(1));
        let dy_values = values(2);
        let spec = RowNormSpec::layer_norm(1e-5);
        let (_, shift, rstd) = fused_forward(&x, None, None, &spec).expect("f32 matrix");
        let alpha = Tensor::<NdArray, 1>::from_floats([0.7], &device)
            .into_primitive()
            .tensor();
        let f32s = |t: &NdArrayTensor| f32::elements(t).unwrap().into_owned();

        let unique = primitive(dy_values.clone());
        let unique_pointer = data_pointer(&unique);
        let (dx_unique, ..) = fused_backward(&x, None, Some(n), (&shift, &rstd), unique, &spec);
        assert_eq!(
            data_pointer(&dx_unique),
            unique_pointer,
            "dx did not reuse dy"
        );
        let shared = primitive(dy_values.clone());
        let holder = shared.clone();
        let (dx_shared, ..) = fused_backward(&x, None, Some(n), (&shift, &rstd), shared, &spec);
        assert_ne!(data_pointer(&dx_shared), data_pointer(&holder));
        assert_eq!(f32s(&holder), dy_values, "a shared dy was overwritten");
        assert_eq!(f32s(&dx_unique), f32s(&dx_shared));

        let (dyt_unique, ..) =
            fused_dynamic_tanh_backward(&x, &alpha, None, None, primitive(dy_values.clone()));
        let shared = primitive(dy_values.clone());
        let holder = shared.clone();
        let (dyt_shared, ..) = fused_dynamic_tanh_backward(&x, &alpha, None, None, shared);
        assert_eq!(f32s(&holder), dy_values, "a shared dy was overwritten");
        assert_eq!(f32s(&dyt_unique), f32s(&dyt_shared));
    }

    /// The forward outputs are written whole: from a pooled buffer full of NaNs (the
    /// output pool hands out reused buffers as their last output left them), the norm and
    /// DyT give the bits they give from a fresh one.
    #[test]
    fn forward_outputs_are_written_whole_over_a_stale_buffer() {
        // A length of its own, so that no other test takes the poisoned buffer.
        let (rows, n) = (263, 257);
        let device = Default::default();
        let x: Vec<f32> = (0..rows * n)
            .map(|i| ((i * 7919) % 211) as f32 * 0.01 - 1.0)
            .collect();
        let x = Tensor::<NdArray, 2>::from_data(TensorData::new(x, [rows, n]), &device)
            .into_primitive()
            .tensor();
        let alpha = Tensor::<NdArray, 1>::from_floats([0.7], &device)
            .into_primitive()
            .tensor();
        let f32s = |t: &NdArrayTensor| f32::elements(t).unwrap().into_owned();
        let poison = || crate::cpu::test_values::poison_output_pool(rows * n);
        // Every output is kept to the end, so that the poisoned buffer is the only free one
        // of its length.
        let mut keep = vec![];
        for spec in [RowNormSpec::layer_norm(1e-5), RowNormSpec::rms_norm(1e-6)] {
            let poisoned = poison();
            let (stale, ..) = fused_forward(&x, None, None, &spec).expect("f32 matrix");
            assert_eq!(
                data_pointer(&stale),
                poisoned,
                "the stale buffer was not taken"
            );
            let (fresh, ..) = fused_forward(&x, None, None, &spec).expect("f32 matrix");
            assert!(f32s(&stale).iter().all(|v| v.is_finite()));
            assert_eq!(f32s(&stale), f32s(&fresh));
            keep.extend([stale, fresh]);
        }
        let poisoned = poison();
        let stale = fused_dynamic_tanh(&x, &alpha, None, None).expect("f32 matrix");
        assert_eq!(
            data_pointer(&stale),
            poisoned,
            "the stale buffer was not taken"
        );
        let fresh = fused_dynamic_tanh(&x, &alpha, None, None).expect("f32 matrix");
        assert!(f32s(&stale).iter().all(|v| v.is_finite()));
        assert_eq!(f32s(&stale), f32s(&fresh));
    }
}
