//! [`NormBackend`] for `Fusion<CubeBackend<..>>`, Burn's default wgpu type: the fused
//! kernels as custom operations of the fusion stream.
//!
//! Each call registers one [`CustomOpIr`] naming its input and output tensors, and an
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
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use burn_fusion::{
    Fusion, FusionBackend, FusionRuntime,
    stream::{Operation, OperationStreams},
};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};

use super::launch;
use crate::backend::NormBackend;
use crate::fused::{FusedNormForward, FusedNormGrads, RowStatistics};
use crate::spec::RowNormSpec;

/// The inner backend of the fusion wrapper.
type Inner<R, F, I, BT> = CubeBackend<R, F, I, BT>;

/// The fusion runtime's handle type for a CubeCL runtime.
type Handles<R, F, I, BT> = HandleContainer<
    <<Inner<R, F, I, BT> as FusionBackend>::FusionRuntime as FusionRuntime>::FusionHandle,
>;

/// The operation's inputs in order: slot `i` takes the next input of `desc` when
/// `present[i]`, and is `None` otherwise (an absent γ or β).
fn take_inputs<R, F, I, BT, const N: usize>(
    desc: &CustomOpIr,
    handles: &mut Handles<R, F, I, BT>,
    present: [bool; N],
) -> [Option<CubeTensor<R>>; N]
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let mut inputs = desc.inputs.iter();
    present.map(|present| {
        present.then(|| {
            let ir = inputs
                .next()
                .expect("a custom norm operation lost an input");
            handles.get_float_tensor::<Inner<R, F, I, BT>>(ir)
        })
    })
}

/// The fused forward, queued in the fusion stream.
#[derive(Debug)]
struct NormRowsForwardOp<R, F, I, BT> {
    desc: CustomOpIr,
    has_gamma: bool,
    has_beta: bool,
    spec: RowNormSpec,
    backend: PhantomData<(R, F, I, BT)>,
}

impl<R, F, I, BT> Operation<<Inner<R, F, I, BT> as FusionBackend>::FusionRuntime>
    for NormRowsForwardOp<R, F, I, BT>
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
        let [out_ir, shift_ir, rstd_ir] = self.desc.outputs.as_slice() else {
            unreachable!("norm_rows forward registers three outputs")
        };
        handles.register_float_tensor::<Inner<R, F, I, BT>>(&out_ir.id, output);
        handles.register_float_tensor::<Inner<R, F, I, BT>>(&shift_ir.id, shift);
        handles.register_float_tensor::<Inner<R, F, I, BT>>(&rstd_ir.id, rstd);
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

impl<R, F, I, BT> Operation<<Inner<R, F, I, BT> as FusionBackend>::FusionRuntime>
    for NormRowsBackwardOp<R, F, I, BT>
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
        let mut outputs = self.desc.outputs.iter();
        for tensor in [Some(dx), dgamma, dbeta].into_iter().flatten() {
            let ir = outputs
                .next()
                .expect("norm_rows backward: one output per gradient");
            handles.register_float_tensor::<Inner<R, F, I, BT>>(&ir.id, tensor);
        }
    }
}

/// A fresh output description of `shape` and `dtype` on `client`.
fn output_ir<R: FusionRuntime>(
    client: &burn_fusion::client::GlobalFusionClient<R>,
    shape: Shape,
    dtype: DType,
) -> TensorIr {
    TensorIr::uninit(client.create_empty_handle(), shape, dtype)
}

/// Attention takes the composite path under fusion (no CubeCL attention kernel yet).
impl<R, F, I, BT> crate::attention::AttentionBackend for Fusion<Inner<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
}

impl<R, F, I, BT> NormBackend for Fusion<Inner<R, F, I, BT>>
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
        let client = x.client.clone();
        let inputs: Vec<_> = [Some(x), gamma, beta].into_iter().flatten().collect();
        let streams = OperationStreams::with_inputs(inputs.iter().copied());
        let input_irs: Vec<TensorIr> = inputs.iter().map(|t| (*t).clone().into_ir()).collect();
        let outputs = [
            output_ir(&client, x.shape.clone(), x.dtype),
            output_ir(&client, Shape::new([rows]), DType::F32),
            output_ir(&client, Shape::new([rows]), DType::F32),
        ];
        let desc = CustomOpIr::new("addnorm_norm_rows_forward", &input_irs, &outputs);
        let operation = NormRowsForwardOp::<R, F, I, BT> {
            desc: desc.clone(),
            has_gamma: gamma.is_some(),
            has_beta: beta.is_some(),
            spec: *spec,
            backend: PhantomData,
        };
        let [output, shift, rstd]: [_; 3] = client
            .register(streams, OperationIr::Custom(desc), operation)
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
        let client = x.client.clone();
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
        let streams = OperationStreams::with_inputs(inputs.iter().copied());
        let input_irs: Vec<TensorIr> = inputs.iter().map(|t| (*t).clone().into_ir()).collect();
        let mut outputs = vec![output_ir(&client, x.shape.clone(), x.dtype)];
        if let Some(gamma) = gamma {
            outputs.push(output_ir(&client, gamma.shape.clone(), DType::F32));
        }
        if let Some(features) = beta_features {
            outputs.push(output_ir(&client, Shape::new([features]), DType::F32));
        }
        let desc = CustomOpIr::new("addnorm_norm_rows_backward", &input_irs, &outputs);
        let operation = NormRowsBackwardOp::<R, F, I, BT> {
            desc: desc.clone(),
            has_gamma: gamma.is_some(),
            beta_features,
            spec: *spec,
            backend: PhantomData,
        };
        let mut grads = client
            .register(streams, OperationIr::Custom(desc), operation)
            .into_iter();
        let x = grads
            .next()
            .expect("norm_rows backward: dx is always an output");
        let gamma = gamma.map(|_| grads.next().expect("norm_rows backward: dγ output"));
        let beta = beta_features.map(|_| grads.next().expect("norm_rows backward: dβ output"));
        FusedNormGrads { x, gamma, beta }
    }
}
