//! The CubeCL attention kernels as custom operations of Burn's fusion stream, for
//! `Fusion<CubeBackend<..>>` (Burn's default wgpu type), queued as the norms are
//! ([`crate::cube::stream`]).
//!
//! # Formula
//! As in [`super::kernels`]; the max logit is one fused `max` over the forward's `row_max`.
//!
//! # Shapes
//! - forward: inputs `q`, `k`, `v` `[batch, T, d_model]`; outputs the output
//!   `[batch, T, d_model]`, `lse` `[batch, heads, T]` (f32), `row_max` `[batch·heads·T]`
//! - backward: inputs `q`, `k`, `v`, the output, `lse`, `grad_output`; outputs dQ, dK, dV
//!   `[batch, T, d_model]`

use core::marker::PhantomData;

use burn::tensor::{DType, Shape};
use burn_cubecl::{BoolElement, CubeRuntime, FloatElement, IntElement};
use burn_fusion::stream::Operation;
use burn_ir::CustomOpIr;

use super::launch;
use crate::attention::spec::AttentionSpec;
use crate::cube::stream::{FusionFloat, Handles, Runtime, register, register_outputs, take_inputs};

/// The inputs an operation registered with all of them present.
fn inputs<R, F, I, BT, const N: usize>(
    desc: &CustomOpIr,
    handles: &mut Handles<R, F, I, BT>,
) -> [burn_cubecl::tensor::CubeTensor<R>; N]
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    take_inputs::<R, F, I, BT, N>(desc, handles, [true; N])
        .map(|t| t.expect("every attention input is present"))
}

/// The fused forward, queued in the fusion stream.
#[derive(Debug)]
struct AttentionForwardOp<R, F, I, BT> {
    desc: CustomOpIr,
    spec: AttentionSpec,
    backend: PhantomData<(R, F, I, BT)>,
}

impl<R, F, I, BT> Operation<Runtime<R, F, I, BT>> for AttentionForwardOp<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn execute(&self, handles: &mut Handles<R, F, I, BT>) {
        let [q, k, v] = inputs::<R, F, I, BT, 3>(&self.desc, handles);
        let (output, lse, row_max) = launch::forward_rows(&q, &k, &v, &self.spec)
            .expect("the inputs were checked when the operation was registered");
        register_outputs::<R, F, I, BT>(&self.desc, handles, [output, lse, row_max]);
    }
}

/// The fused backward, queued in the fusion stream.
#[derive(Debug)]
struct AttentionBackwardOp<R, F, I, BT> {
    desc: CustomOpIr,
    spec: AttentionSpec,
    backend: PhantomData<(R, F, I, BT)>,
}

impl<R, F, I, BT> Operation<Runtime<R, F, I, BT>> for AttentionBackwardOp<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn execute(&self, handles: &mut Handles<R, F, I, BT>) {
        let [q, k, v, output, lse, grad_output] = inputs::<R, F, I, BT, 6>(&self.desc, handles);
        let grads = launch::backward([&q, &k, &v], &output, &lse, &grad_output, &self.spec);
        register_outputs::<R, F, I, BT>(&self.desc, handles, grads);
    }
}

/// Queues the forward: `(output, lse, row_max)`, or `None` when the kernels do not take
/// these inputs.
pub(crate) fn forward<R, F, I, BT>(
    [q, k, v]: [&FusionFloat<R, F, I, BT>; 3],
    spec: &AttentionSpec,
) -> Option<[FusionFloat<R, F, I, BT>; 3]>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let layout = launch::takes(
        [&q.shape, &k.shape, &v.shape],
        [q.dtype, k.dtype, v.dtype],
        spec,
    )?;
    let rows = layout.batch * layout.heads * layout.seq;
    let outputs = [
        (q.shape.clone(), q.dtype),
        (
            Shape::new([layout.batch, layout.heads, layout.seq]),
            DType::F32,
        ),
        (Shape::new([rows]), q.dtype),
    ];
    let registered =
        register::<R, F, I, BT, _>("addnorm_attention_forward", &[q, k, v], &outputs, |desc| {
            AttentionForwardOp::<R, F, I, BT> {
                desc,
                spec: *spec,
                backend: PhantomData,
            }
        });
    Some(
        registered
            .try_into()
            .unwrap_or_else(|_| unreachable!("attention forward registers three outputs")),
    )
}

/// Queues the backward: `[dq, dk, dv]`.
pub(crate) fn backward<R, F, I, BT>(
    qkv: [&FusionFloat<R, F, I, BT>; 3],
    output: &FusionFloat<R, F, I, BT>,
    lse: &FusionFloat<R, F, I, BT>,
    grad_output: &FusionFloat<R, F, I, BT>,
    spec: &AttentionSpec,
) -> [FusionFloat<R, F, I, BT>; 3]
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let [q, k, v] = qkv;
    let outputs = [(); 3].map(|()| (q.shape.clone(), q.dtype));
    let inputs = [q, k, v, output, lse, grad_output];
    let registered =
        register::<R, F, I, BT, _>("addnorm_attention_backward", &inputs, &outputs, |desc| {
            AttentionBackwardOp::<R, F, I, BT> {
                desc,
                spec: *spec,
                backend: PhantomData,
            }
        });
    registered
        .try_into()
        .unwrap_or_else(|_| unreachable!("attention backward registers three outputs"))
}
