//! Runs the fused CPU GroupNorm kernels on `NdArray` tensors: f32 or f64 (anything else,
//! or parameters of another dtype, goes back to the composite), read without a copy when
//! contiguous.
//!
//! # Shapes
//! - `x`, `dx`, output, `grad_output`: `[N, C, S]`; γ, β, dγ, dβ: `[C]`; statistics
//!   `[N·G]`

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{backward_in_place, forward};
use super::fused::{FusedGroupNorm, FusedGroupNormGrads, GroupStatistics};
use super::spec::{GroupDims, GroupNormSpec};
use crate::cpu::ndarray::{NdArrayBackend, NdArrayReal, with_gradient_buffer};

/// The fused forward, or `None` when these inputs are not for it.
pub(crate) fn fused_forward<B: NdArrayBackend>(
    x: &NdArrayTensor,
    affine: Option<&[NdArrayTensor; 2]>,
    spec: &GroupNormSpec,
) -> Option<FusedGroupNorm<B>> {
    match x {
        NdArrayTensor::F32(_) => forward_in::<f32, B>(x, affine, spec),
        NdArrayTensor::F64(_) => forward_in::<f64, B>(x, affine, spec),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal, B: NdArrayBackend>(
    x: &NdArrayTensor,
    affine: Option<&[NdArrayTensor; 2]>,
    spec: &GroupNormSpec,
) -> Option<FusedGroupNorm<B>> {
    let shape = x.shape();
    let dims = GroupDims::new(shape.as_slice(), spec);
    let xs = E::elements(x)?;
    let (gamma, beta) = match affine {
        Some([g, b]) => (E::elements(g)?.into_owned(), E::elements(b)?.into_owned()),
        None => (vec![E::ONE; dims.channels], vec![E::ZERO; dims.channels]),
    };
    let (y, (shift, rstd)) = forward(dims, &xs, &gamma, &beta, spec.epsilon);
    Some(FusedGroupNorm {
        output: E::tensor(y, shape.as_slice().to_vec()),
        statistics: GroupStatistics {
            shift: E::tensor(shift, vec![dims.rows()]),
            rstd: E::tensor(rstd, vec![dims.rows()]),
        },
    })
}

/// The fused backward.
///
/// # Panics
/// If the tensors are not what [`fused_forward`] accepted.
pub(crate) fn fused_backward<B: NdArrayBackend>(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    statistics: &GroupStatistics<B>,
    grad_output: NdArrayTensor,
    spec: &GroupNormSpec,
) -> FusedGroupNormGrads<B> {
    match x {
        NdArrayTensor::F32(_) => backward_in::<f32, B>(x, gamma, statistics, grad_output, spec),
        NdArrayTensor::F64(_) => backward_in::<f64, B>(x, gamma, statistics, grad_output, spec),
        other => panic!(
            "the fused group norm backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal, B: NdArrayBackend>(
    x: &NdArrayTensor,
    gamma: Option<&NdArrayTensor>,
    statistics: &GroupStatistics<B>,
    grad_output: NdArrayTensor,
    spec: &GroupNormSpec,
) -> FusedGroupNormGrads<B> {
    let shape = x.shape();
    let dims = GroupDims::new(shape.as_slice(), spec);
    let wrong = |what: &str, t: &NdArrayTensor| {
        format!(
            "fused group norm backward: {what} must be {:?} like x, got {:?}",
            x.dtype(),
            t.dtype()
        )
    };
    let read = |what: &str, t: &NdArrayTensor| {
        E::elements(t)
            .unwrap_or_else(|| panic!("{}", wrong(what, t)))
            .into_owned()
    };
    let gammas = gamma.map_or_else(|| vec![E::ONE; dims.channels], |g| read("γ", g));
    let (shift, rstd) = (
        read("shift", &statistics.shift),
        read("rstd", &statistics.rstd),
    );
    let x_values = E::elements(x).expect("x's dtype was matched");
    let (dx, (dgamma, dbeta)) = with_gradient_buffer::<E, _>(
        grad_output,
        shape.as_slice().to_vec(),
        |dy| wrong("dy", dy),
        |grad| backward_in_place(dims, &x_values, &gammas, (&shift, &rstd), grad),
        |dy, dx| {
            dx.copy_from_slice(dy);
            backward_in_place(dims, &x_values, &gammas, (&shift, &rstd), dx)
        },
    );
    FusedGroupNormGrads {
        x: dx,
        affine: gamma.map(|_| {
            [
                E::tensor(dgamma, vec![dims.channels]),
                E::tensor(dbeta, vec![dims.channels]),
            ]
        }),
    }
}
