//! Runs the fused CPU attention kernels on `NdArray` tensors: picks the element type from
//! the tensors' runtime dtype (f32 or f64; anything else goes back to the composite path)
//! and reads them without a copy when they are contiguous (a strided view is gathered
//! into row-major order first).
//!
//! # Shapes
//! - `q`, `k`, `v`, output, gradients: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`;
//!   max logit: `[1]`

use burn::backend::ndarray::NdArrayTensor;
use burn::tensor::TensorMetadata;

use super::cpu::{Gemm, backward, forward};
use super::spec::{AttentionSpec, HeadLayout};
use crate::cpu::memory::overwritten_output;
use crate::cpu::ndarray::NdArrayReal;

/// `(output, lse, max_logit)`.
pub(crate) type ForwardTensors = (NdArrayTensor, NdArrayTensor, NdArrayTensor);

/// The layout of `q`, `k`, `v` when the fused kernel takes them: equal, non-empty
/// `[batch, T, d_model]` shapes with `d_model` a multiple of the heads.
fn layout_for(spec: &AttentionSpec, tensors: [&NdArrayTensor; 3]) -> Option<HeadLayout> {
    let shape = tensors[0].shape();
    let &[batch, seq, d_model] = shape.as_slice() else {
        return None;
    };
    let same = tensors.iter().all(|t| t.shape() == shape);
    let fits = spec.heads > 0 && d_model % spec.heads == 0;
    (same && fits && batch * seq * d_model > 0).then(|| spec.layout([batch, seq, d_model]))
}

/// The fused forward, or `None` when these inputs are not for it.
pub(crate) fn fused_forward(
    q: &NdArrayTensor,
    k: &NdArrayTensor,
    v: &NdArrayTensor,
    spec: &AttentionSpec,
) -> Option<ForwardTensors> {
    match q {
        NdArrayTensor::F32(_) => forward_in::<f32>([q, k, v], spec),
        NdArrayTensor::F64(_) => forward_in::<f64>([q, k, v], spec),
        _ => None,
    }
}

fn forward_in<E: NdArrayReal + Gemm>(
    tensors: [&NdArrayTensor; 3],
    spec: &AttentionSpec,
) -> Option<ForwardTensors> {
    let layout = layout_for(spec, tensors)?;
    let [q, k, v] = [
        E::elements(tensors[0])?,
        E::elements(tensors[1])?,
        E::elements(tensors[2])?,
    ];
    let mut output = overwritten_output(layout.len());
    let rows = layout.batch * layout.heads * layout.seq;
    let mut lse = vec![E::ZERO; rows];
    let max_logit = forward::forward(layout, spec, [&q, &k, &v], &mut output, &mut lse);
    let dims = |d: &[usize]| d.to_vec();
    Some((
        E::tensor(output, dims(&[layout.batch, layout.seq, layout.d_model()])),
        E::tensor(lse, dims(&[layout.batch, layout.heads, layout.seq])),
        E::tensor(vec![max_logit], vec![1]),
    ))
}

/// The fused backward: `[dq, dk, dv]`.
///
/// # Panics
/// If the tensors are not what [`fused_forward`] accepted and returned.
pub(crate) fn fused_backward(
    [q, k, v]: [&NdArrayTensor; 3],
    output: &NdArrayTensor,
    lse: &NdArrayTensor,
    grad_output: &NdArrayTensor,
    spec: &AttentionSpec,
) -> [NdArrayTensor; 3] {
    match q {
        NdArrayTensor::F32(_) => backward_in::<f32>([q, k, v, output, lse, grad_output], spec),
        NdArrayTensor::F64(_) => backward_in::<f64>([q, k, v, output, lse, grad_output], spec),
        other => panic!(
            "the fused attention backward runs in f32 or f64, got {:?}",
            other.dtype()
        ),
    }
}

fn backward_in<E: NdArrayReal + Gemm>(
    tensors: [&NdArrayTensor; 6],
    spec: &AttentionSpec,
) -> [NdArrayTensor; 3] {
    let layout = layout_for(spec, [tensors[0], tensors[1], tensors[2]])
        .expect("the forward accepted these shapes");
    let values = tensors.map(|t| {
        E::elements(t).unwrap_or_else(|| {
            panic!(
                "fused attention backward: every tensor must be {:?} like q, got {:?}",
                tensors[0].dtype(),
                t.dtype()
            )
        })
    });
    let [q, k, v, output, lse, grad_output] = &values;
    let saved = backward::Saved {
        q,
        k,
        v,
        output,
        lse,
    };
    let mut grads = [(); 3].map(|()| overwritten_output::<E>(layout.len()));
    let [dq, dk, dv] = &mut grads;
    backward::backward(layout, spec, saved, grad_output, [dq, dk, dv]);
    let shape = vec![layout.batch, layout.seq, layout.d_model()];
    grads.map(|g| E::tensor(g, shape.clone()))
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::{Tensor, TensorData};

    use super::*;
    use crate::cpu::test_values::{data_pointer, poison_output_pool};

    /// The forward output is written whole: from a pooled buffer full of NaNs (the output
    /// pool hands out reused buffers as their last output left them), the attention gives
    /// the bits it gives from a fresh one, causal or not.
    #[test]
    fn the_output_is_written_whole_over_a_stale_buffer() {
        // [1, 263, 254] with 2 heads: a length of its own, so that no other test takes the
        // poisoned buffer.
        let shape = [1, 263, 254];
        let len: usize = shape.iter().product();
        let device = Default::default();
        let tensor = |seed: usize| {
            let v: Vec<f32> = (0..len)
                .map(|i| ((i * 7919 + seed) % 211) as f32 * 0.01 - 1.0)
                .collect();
            Tensor::<NdArray, 3>::from_data(TensorData::new(v, shape), &device)
                .into_primitive()
                .tensor()
        };
        let (q, k, v) = (tensor(1), tensor(2), tensor(3));
        let f32s = |t: &NdArrayTensor| f32::elements(t).unwrap().into_owned();
        // Every output is kept to the end, so that the poisoned buffer is the only free one
        // of its length.
        let mut keep = vec![];
        for causal in [true, false] {
            let spec = AttentionSpec {
                causal,
                ..AttentionSpec::causal(2, 127)
            };
            let poisoned = poison_output_pool(len);
            let stale = fused_forward(&q, &k, &v, &spec).expect("f32 inputs").0;
            assert_eq!(
                data_pointer(&stale),
                poisoned,
                "the stale buffer was not taken"
            );
            let fresh = fused_forward(&q, &k, &v, &spec).expect("f32 inputs").0;
            assert!(f32s(&stale).iter().all(|v| v.is_finite()));
            assert_eq!(f32s(&stale), f32s(&fresh));
            keep.extend([stale, fresh]);
        }
    }
}
