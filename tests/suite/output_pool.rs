//! The output pool on ndarray (`addnorm::kernels::cpu::output_pool`): a training loop's
//! steps write into the buffers of the last step's outputs, the pool stops growing once a
//! step has run, and reusing buffers changes no result.
//!
//! Runs in a process of its own: the pool is process-wide, and other tests' outputs would
//! change what it holds.

#![cfg(feature = "ndarray")]

use addnorm::kernels::adamw::FusedAdamWConfig;
use addnorm::kernels::cpu::output_pool::{cached_output_bytes, release_cached_outputs};
use addnorm::nn::TransformerStackConfig;
use burn::backend::{Autodiff, NdArray};
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

use crate::common::{in_own_process, values};

type B = Autodiff<NdArray<f32>>;

/// The losses of `steps` AdamW steps of the tiny stack on `[8, 64]` tokens (512 rows, so
/// its `[512, 128]` feed-forward tensors are pooled), from the same seed every call, and
/// the pool's `(free, in use)` bytes after each step.
fn train(steps: usize) -> (Vec<f64>, Vec<(usize, usize)>) {
    let device = Default::default();
    <B as Backend>::seed(&device, 11);
    let mut model = TransformerStackConfig::tiny().init::<B>(&device);
    let mut optimizer = FusedAdamWConfig::new().init();
    let ids: Vec<i64> = (0..8 * 64).map(|i| (i * 7 + i / 5) % 16).collect();
    let (mut losses, mut held) = (vec![], vec![]);
    for _ in 0..steps {
        let tokens = Tensor::<B, 2, Int>::from_data(TensorData::new(ids.clone(), [8, 64]), &device);
        let loss = model.forward(tokens).square().mean();
        losses.push(values(loss.clone())[0]);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(1e-2, model, grads);
        held.push(cached_output_bytes());
    }
    (losses, held)
}

#[test]
fn training_steps_reuse_their_outputs_with_the_same_results() {
    in_own_process(
        "output_pool::training_steps_reuse_their_outputs_with_the_same_results",
        || {
            let (first, held) = train(4);
            let (free, _) = held[0];
            assert!(
                free >= 512 * 128 * 4,
                "the step's outputs were not kept: {held:?}"
            );
            let total = |(free, used): (usize, usize)| free + used;
            assert!(
                held[1..].iter().all(|&h| total(h) == total(held[1])),
                "the pool kept growing after a step had run: {held:?}"
            );

            // Again, from buffers the first run left in the pool: the same losses, and no
            // more memory.
            let (again, held_again) = train(4);
            assert_eq!(first, again, "reused buffers changed the results");
            assert!(
                held_again.iter().all(|&h| total(h) <= total(held[3])),
                "{held_again:?} against {held:?}"
            );

            // And from fresh buffers: the same losses once more.
            let freed = release_cached_outputs();
            assert!(freed >= free, "released {freed} of {free} free bytes");
            assert_eq!(cached_output_bytes().0, 0);
            assert_eq!(train(4).0, first, "fresh buffers changed the results");
        },
    );
}
