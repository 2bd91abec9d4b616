//! The embedding lookup (`addnorm_kernels::embedding`): its output and the table's gradient
//! against Burn's own `embedding` op bit for bit (repeated ids, ids broadcast over the batch
//! as the stack's positions are, values whose sums depend on their order), the fused-call
//! counters and `ForceComposite`, and the composite fallback for ids out of range.

use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::embedding::embedding;
use addnorm_kernels::fused::fused_calls;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};

use crate::on_every_backend;

/// A `[7, 5]` table of values far apart in scale, so a sum's bits depend on its order.
fn table<B: AutodiffBackend>(device: &B::Device) -> Tensor<B, 2> {
    let values: Vec<f32> = (0..35)
        .map(|i| (i as f32 * 0.61).sin() * 10f32.powi(i % 7 - 3))
        .collect();
    Tensor::<B, 2>::from_data(TensorData::new(values, [7, 5]), device).require_grad()
}

/// The upstream gradient `[batch, seq, 5]`, of mixed scales too.
fn upstream<B: AutodiffBackend>(batch: usize, seq: usize, device: &B::Device) -> Tensor<B, 3> {
    let values: Vec<f32> = (0..batch * seq * 5)
        .map(|i| (i as f32 * 1.37).cos() * 10f32.powi(i as i32 % 9 - 4))
        .collect();
    Tensor::from_data(TensorData::new(values, [batch, seq, 5]), device)
}

/// `(y, ∂(Σ y·u)/∂W)` by `lookup` on a fresh table.
fn pass<B: AutodiffBackend>(
    lookup: impl Fn(Tensor<B, 2>, Tensor<B, 2, Int>) -> Tensor<B, 3>,
    ids: Tensor<B, 2, Int>,
    device: &B::Device,
) -> (TensorData, TensorData) {
    let [batch, seq] = ids.dims();
    let w = table::<B>(device);
    let y = lookup(w.clone(), ids);
    let loss = (y.clone() * upstream::<B>(batch, seq, device)).sum();
    let grads = loss.backward();
    let dw = w.grad(&grads).expect("the table is tracked");
    (y.into_data(), dw.into_data())
}

/// Token ids with repeats, and the stack's positions (`arange` broadcast over the batch).
fn id_sets<B: AutodiffBackend>(device: &B::Device) -> Vec<Tensor<B, 2, Int>> {
    let tokens = Tensor::<B, 2, Int>::from_ints([[3, 1, 3, 6], [0, 3, 3, 1], [6, 6, 2, 3]], device);
    let positions = Tensor::<B, 1, Int>::arange(0..5, device)
        .unsqueeze::<2>()
        .expand([4, 5]);
    vec![tokens, positions]
}

on_every_backend! {
    /// The lookup's output and the table's gradient equal Burn's `embedding` (its node and
    /// `embedding_backward`) bit for bit: on NdArray the fused kernels, elsewhere the
    /// composite, which is Burn's op.
    fn equals_burns_embedding_bit_for_bit<B>(device) {
        for ids in id_sets::<B>(device) {
            let (y, dw) = pass::<B>(embedding, ids.clone(), device);
            let (y_ref, dw_ref) =
                pass::<B>(burn::tensor::module::embedding, ids.clone(), device);
            y.assert_eq(&y_ref, true);
            dw.assert_eq(&dw_ref, true);
        }
    }
}

/// On `Autodiff<NdArray>` one lookup is one fused forward and one fused backward, and
/// `ForceComposite` turns both off with the same results.
#[cfg(feature = "ndarray")]
#[test]
fn the_fused_path_is_counted_and_force_composite_turns_it_off() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let ids = id_sets::<B>(&device).remove(0);
    let before = fused_calls();
    let fused = pass::<B>(embedding, ids.clone(), &device);
    let after = fused_calls();
    let counted = (
        after.forward - before.forward,
        after.backward - before.backward,
    );
    assert_eq!(counted, (1, 1));
    let composite = {
        let _composite = ForceComposite::new();
        pass::<B>(embedding, ids, &device)
    };
    assert_eq!(fused_calls(), after, "ForceComposite ran a fused kernel");
    fused.0.assert_eq(&composite.0, true);
    fused.1.assert_eq(&composite.1, true);
}

/// An id outside the table leaves the fused path (nothing counted), so Burn's own op
/// reports it, as it does without addnorm.
#[cfg(feature = "ndarray")]
#[test]
fn an_id_out_of_range_falls_back_to_burns_op() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let before = fused_calls();
    let outcome = std::panic::catch_unwind(|| {
        let ids = Tensor::<B, 2, Int>::from_ints([[0, 7]], &device);
        embedding(table::<B>(&device), ids).into_data()
    });
    assert!(outcome.is_err(), "Burn's select accepted row 7 of 7");
    assert_eq!(fused_calls(), before);
}
