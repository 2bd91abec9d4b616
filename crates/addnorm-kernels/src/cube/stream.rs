//! The plumbing every custom operation of Burn's fusion stream shares: the handle types,
//! how an operation takes its inputs when the stream reaches it, and how a call registers
//! one (`register`). The norm kernels (`crate::norm::cube::fusion`) and the attention
//! kernels (`crate::attention::cube::fusion`) are both queued through it.
//!
//! # Shapes
//! Whatever the operation declares: `inputs` in order, then its `outputs`.

use burn::tensor::{DType, Shape, ops::FloatTensor};
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use burn_fusion::{
    Fusion, FusionBackend, FusionRuntime,
    stream::{Operation, OperationStreams},
};
use burn_ir::{CustomOpIr, HandleContainer, OperationIr, TensorIr};

/// The inner backend of the fusion wrapper.
pub(crate) type Inner<R, F, I, BT> = CubeBackend<R, F, I, BT>;

/// A float tensor of the fusion wrapper.
pub(crate) type FusionFloat<R, F, I, BT> = FloatTensor<Fusion<Inner<R, F, I, BT>>>;

/// The fusion runtime of a CubeCL backend.
pub(crate) type Runtime<R, F, I, BT> = <Inner<R, F, I, BT> as FusionBackend>::FusionRuntime;

/// The fusion runtime's handle type for a CubeCL runtime.
pub(crate) type Handles<R, F, I, BT> =
    HandleContainer<<Runtime<R, F, I, BT> as FusionRuntime>::FusionHandle>;

/// The operation's inputs in order: slot `i` takes the next input of `desc` when
/// `present[i]`, and is `None` otherwise (an absent γ or β).
pub(crate) fn take_inputs<R, F, I, BT, const N: usize>(
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
            let ir = inputs.next().expect("a custom operation lost an input");
            handles.get_float_tensor::<Inner<R, F, I, BT>>(ir)
        })
    })
}

/// Registers the operation's results under the ids of `desc`'s outputs, in order.
///
/// # Panics
/// If `desc` declares fewer outputs than there are results.
pub(crate) fn register_outputs<R, F, I, BT>(
    desc: &CustomOpIr,
    handles: &mut Handles<R, F, I, BT>,
    results: impl IntoIterator<Item = CubeTensor<R>>,
) where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let mut outputs = desc.outputs.iter();
    for tensor in results {
        let ir = outputs
            .next()
            .expect("a custom operation returned more results than it declared");
        handles.register_float_tensor::<Inner<R, F, I, BT>>(&ir.id, tensor);
    }
}

/// Queues a custom operation named `name` on `inputs`, with outputs of the given shapes and
/// dtypes; `operation` builds what runs when the stream reaches it from the operation's
/// description. Returns the outputs' tensors, in order.
pub(crate) fn register<R, F, I, BT, O>(
    name: &'static str,
    inputs: &[&FusionFloat<R, F, I, BT>],
    outputs: &[(Shape, DType)],
    operation: impl FnOnce(CustomOpIr) -> O,
) -> Vec<FusionFloat<R, F, I, BT>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
    O: Operation<Runtime<R, F, I, BT>> + 'static,
{
    let client = inputs
        .first()
        .expect("a custom operation has at least one input")
        .client
        .clone();
    let streams = OperationStreams::with_inputs(inputs.iter().copied());
    let input_irs: Vec<TensorIr> = inputs.iter().map(|t| (*t).clone().into_ir()).collect();
    let output_irs: Vec<TensorIr> = outputs
        .iter()
        .map(|(shape, dtype)| TensorIr::uninit(client.create_empty_handle(), shape.clone(), *dtype))
        .collect();
    let desc = CustomOpIr::new(name, &input_irs, &output_irs);
    let operation = operation(desc.clone());
    client.register(streams, OperationIr::Custom(desc), operation)
}
