//! [`RowNormBackend`] for `Fusion<CubeBackend<..>>`, Burn's default wgpu type: the fused
//! kernels as custom operations of the fusion stream.
//!
//! Each call registers (through [`crate::cube::stream`]) one [`CustomOpIr`] naming its
//! input and output tensors, and an
//! [`Operation`] that, when the stream reaches it, takes the inputs' buffers, runs the
//! [`launch`] function on them and registers the outputs. Burn's fusion optimizer treats a
//! custom operation as a boundary: element-wise work before and after it is still fused.
//!
//! # Formula
//! As in [`super::kernels`].
//!
//! # Shapes
//! - forward: inputs `x: [rows, n]`, then γ and β when present (`[n]` or `[1]`); outputs
//!   `y: [rows, n]`, `shift: [rows]`, `rstd: [rows]` (f32)
//! - backward: inputs `x`, γ when present, `shift`, `rstd`, `grad_output: [rows, n]`; outputs
//!   `dx: [rows, n]`, then dγ and dβ when present, shaped as their parameters

use core::marker::PhantomData;

use burn::tensor::{DType, Shape, ops::FloatTensor};
use burn_cubecl::{BoolElement, CubeRuntime, FloatElement, IntElement};
use burn_fusion::{Fusion, stream::Operation};
use burn_ir::CustomOpIr;

use super::launch;
use crate::cube::stream::{Handles, Inner, Runtime, register, register_outputs, take_inputs};
use crate::norm::backend::RowNormBackend;
use crate::norm::fused::{FusedNormForward, FusedNormGrads, RowStatistics};
use crate::norm::spec::RowNormSpec;

/// The fused forward, queued in the fusion stream.
#[derive(Debug)]
struct NormRowsForwardOp<R, F, I, BT> {
    desc: CustomOpIr,
    has_gamma: bool,
    has_beta: bool,
    spec: RowNormSpec,
    backend: PhantomData<(R, F, I, BT)>,
}

impl<R, F, I, BT> Operation<Runtime<R, F, I, BT>> for NormRowsForwardOp<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn execute(&self, handles: &mut Handles<R, F, I, BT>) {
        let [x, gamma, beta] = take_inputs::<R, F, I, BT, 3>(
            &self.desc,
            handles,
            [true, self.has_gamma, self.has_beta],
        );
        let x = x.expect("norm_rows forward: x is always an input");
        let (output, shift, rstd) = launch::forward(&x, gamma.as_ref(), beta.as_ref(), &self.spec)
            .expect("the dtype and shape were checked when the operation was registered");
        register_outputs::<R, F, I, BT>(&self.desc, handles, [output, shift, rstd]);
    }
}

/// The fused backward, queued in the fusion stream.
#[derive(Debug)]
struct NormRowsBackwardOp<R, F, I, BT> {
    desc: CustomOpIr,
    has_gamma: bool,
    beta_features: Option<usize>,
    spec: RowNormSpec,
    backend: PhantomData<(R, F, I, BT)>,
}

impl<R, F, I, BT> Operation<Runtime<R, F, I, BT>> for NormRowsBackwardOp<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn execute(&self, handles: &mut Handles<R, F, I, BT>) {
        let [x, gamma, shift, rstd, grad_output] = take_inputs::<R, F, I, BT, 5>(
            &self.desc,
            handles,
            [true, self.has_gamma, true, true, true],
        );
        let always = "norm_rows backward: x, shift, rstd and grad_output are always inputs";
        let (x, shift, rstd) = (x.expect(always), shift.expect(always), rstd.expect(always));
        let grad_output = grad_output.expect(always);
        let (dx, dgamma, dbeta) = launch::backward::<R, F, I, BT>(
            &x,
            gamma.as_ref(),
            self.beta_features,
            (&shift, &rstd),
            grad_output,
            &self.spec,
        );
        let results = [Some(dx), dgamma, dbeta].into_iter().flatten();
        register_outputs::<R, F, I, BT>(&self.desc, handles, results);
    }
}

impl<R, F, I, BT> RowNormBackend for Fusion<Inner<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_norm_rows(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
        spec: &RowNormSpec,
    ) -> Option<FusedNormForward<Self>> {
        let dtype_of = |p: Option<&FloatTensor<Self>>| p.map(|p| p.dtype);
        if !launch::takes(&x.shape, x.dtype, dtype_of(gamma), dtype_of(beta)) {
            return None;
        }
        let rows = x.shape.dims::<2>()[0];
        let inputs: Vec<_> = [Some(x), gamma, beta].into_iter().flatten().collect();
        let outputs = [
            (x.shape.clone(), x.dtype),
            (Shape::new([rows]), DType::F32),
            (Shape::new([rows]), DType::F32),
        ];
        let registered =
            register::<R, F, I, BT, _>("addnorm_norm_rows_forward", &inputs, &outputs, |desc| {
                NormRowsForwardOp::<R, F, I, BT> {
                    desc,
                    has_gamma: gamma.is_some(),
                    has_beta: beta.is_some(),
                    spec: *spec,
                    backend: PhantomData,
                }
            });
        let [output, shift, rstd]: [_; 3] = registered
            .try_into()
            .unwrap_or_else(|_| unreachable!("norm_rows forward registers three outputs"));
        Some(FusedNormForward {
            output,
            statistics: RowStatistics { shift, rstd },
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
        let inputs: Vec<_> = [
            Some(x),
            gamma,
            Some(&statistics.shift),
            Some(&statistics.rstd),
            Some(&grad_output),
        ]
        .into_iter()
        .flatten()
        .collect();
        let mut outputs = vec![(x.shape.clone(), x.dtype)];
        if let Some(gamma) = gamma {
            outputs.push((gamma.shape.clone(), DType::F32));
        }
        if let Some(features) = beta_features {
            outputs.push((Shape::new([features]), DType::F32));
        }
        let registered =
            register::<R, F, I, BT, _>("addnorm_norm_rows_backward", &inputs, &outputs, |desc| {
                NormRowsBackwardOp::<R, F, I, BT> {
                    desc,
                    has_gamma: gamma.is_some(),
                    beta_features,
                    spec: *spec,
                    backend: PhantomData,
                }
            });
        let mut grads = registered.into_iter();
        let x = grads
            .next()
            .expect("norm_rows backward: dx is always an output");
        let gamma = gamma.map(|_| grads.next().expect("norm_rows backward: dγ output"));
        let beta = beta_features.map(|_| grads.next().expect("norm_rows backward: dβ output"));
        FusedNormGrads { x, gamma, beta }
    }
}
