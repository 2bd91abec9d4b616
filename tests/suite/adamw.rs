//! The fused AdamW (`addnorm_kernels::adamw`): every step of [`FusedAdamW`] against Burn's
//! own `AdamW` with the same settings, bit for bit, on a linear layer (a rank-2 weight and a
//! rank-1 bias) over several steps with changing learning rates; with weight decay and
//! without; through the in-place and the copy path; under `ForceComposite`; with AMSGrad
//! (Burn's code); in f64; and across Burn's record format both ways.
//!
//! [`FusedAdamW`]: addnorm_kernels::adamw::FusedAdamW

use std::ops::Range;

use addnorm_kernels::adamw::FusedAdamWConfig;
use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::fused::fused_calls;
use burn::module::{AutodiffModule, Param};
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::record::{BinBytesRecorder, FullPrecisionSettings, Recorder};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};

use crate::common::in_own_process;
use crate::on_every_backend;

/// The learning rates of the steps, changing as a schedule changes them.
const LRS: [f64; 4] = [3e-3, 1e-2, 2.5e-3, 7e-4];

/// Every step.
const ALL: Range<usize> = 0..LRS.len();

/// `len` values of a fixed pseudo-random sequence for `seed` (not Burn's RNG, which is
/// global to the process and shared by the tests running at once).
fn sequence(seed: u64, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((i as f32 + 1.0) * 0.7311 + seed as f32 * 1.37).sin() * 0.4)
        .collect()
}

/// A `[6, 5]` linear layer from `seed`, in buffers of its own.
fn layer<B: Backend>(seed: u64, device: &B::Device) -> Linear<B> {
    let mut layer = LinearConfig::new(6, 5).init(device);
    let weight = TensorData::new(sequence(seed, 30), [6, 5]);
    layer.weight = Param::from_tensor(Tensor::from_data(weight, device));
    let bias = TensorData::new(sequence(seed + 1, 5), [5]);
    layer.bias = Some(Param::from_tensor(Tensor::from_data(bias, device)));
    layer
}

/// Steps `steps` of `optimizer` (at the learning rates [`LRS`]) on `loss = Σ (x·W + b)²`
/// for a fixed `x` per step.
fn train<B, O>(mut model: Linear<B>, optimizer: &mut O, steps: Range<usize>) -> Linear<B>
where
    B: AutodiffBackend,
    O: Optimizer<Linear<B>, B>,
{
    let device = model.weight.device();
    for i in steps {
        let x = TensorData::new(sequence(100 + i as u64, 24), [4, 6]);
        let y = model.forward(Tensor::<B, 2>::from_data(x, &device));
        let loss = (y.clone() * y).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(LRS[i], model, grads);
    }
    model
}

/// The layer's weight and bias as bits.
fn bits<B: AutodiffBackend>(model: &Linear<B>) -> Vec<u64> {
    let model = model.valid();
    let mut out: Vec<u64> = model
        .weight
        .val()
        .into_data()
        .iter::<f64>()
        .map(f64::to_bits)
        .collect();
    let bias = model.bias.expect("a bias").val().into_data();
    out.extend(bias.iter::<f64>().map(f64::to_bits));
    out
}

/// Two steps with `first`, then its record through Burn's binary format into `second`,
/// and two more steps with `second`.
fn halves<B, O1, O2>(mut first: O1, second: O2, device: &B::Device) -> Linear<B>
where
    B: AutodiffBackend,
    O1: Optimizer<Linear<B>, B>,
    O2: Optimizer<Linear<B>, B>,
{
    let recorder = BinBytesRecorder::<FullPrecisionSettings>::default();
    let half = train(layer::<B>(11, device), &mut first, 0..2);
    let bytes = recorder.record(first.to_record(), ()).expect("record");
    let record = recorder.load(bytes, device).expect("the record loads");
    train(half, &mut second.load_record(record), 2..4)
}

/// Burn's config and ours with the same settings.
fn configs(weight_decay: f32) -> (AdamWConfig, FusedAdamWConfig) {
    let fused = FusedAdamWConfig::new()
        .with_beta_2(0.95)
        .with_epsilon(1e-8)
        .with_weight_decay(weight_decay);
    (fused.to_burn(), fused)
}

on_every_backend! {
    /// Four steps with and without decay: the same bits as Burn's `AdamW`, one fused call
    /// per parameter and step where the backend has the kernel.
    fn fused_adamw_has_the_bits_of_burns_adamw<B>(device) {
        for weight_decay in [0.0, 0.1] {
            let (burn, fused) = configs(weight_decay);
            let expected = train(layer::<B>(7, device), &mut burn.init(), ALL);
            let before = fused_calls();
            let got = train(layer::<B>(7, device), &mut fused.init(), ALL);
            let calls = fused_calls().forward - before.forward;
            // One fused call per parameter and step; none is allowed only off NdArray.
            let on_ndarray = std::any::type_name::<B>().contains("NdArray");
            assert!(calls == 2 * LRS.len() || (!on_ndarray && calls == 0), "{calls} fused calls");
            assert_eq!(bits(&got), bits(&expected), "weight decay {weight_decay}");
        }
    }

    /// A step on a clone of the model (its parameters shared with the original) takes the
    /// copy path: the original keeps its values, and the clone gets Burn's bits.
    fn shared_parameters_are_not_overwritten<B>(device) {
        let (burn, fused) = configs(0.1);
        let original = layer::<B>(3, device);
        let before = bits(&original);
        let expected = train(original.clone(), &mut burn.init(), 0..2);
        let got = train(original.clone(), &mut fused.init(), 0..2);
        assert_eq!(bits(&original), before, "the original changed");
        assert_eq!(bits(&got), bits(&expected));
    }

    /// Under `ForceComposite` no fused call runs and the bits are the same.
    fn the_composite_has_the_same_bits<B>(device) {
        let (burn, fused) = configs(0.1);
        let expected = train(layer::<B>(5, device), &mut burn.init(), ALL);
        let before = fused_calls();
        let got = {
            let _composite = ForceComposite::new();
            train(layer::<B>(5, device), &mut fused.init(), ALL)
        };
        assert_eq!(fused_calls().forward, before.forward);
        assert_eq!(bits(&got), bits(&expected));
    }

    /// AMSGrad is Burn's own step: no fused call, Burn's bits.
    fn amsgrad_takes_burns_step<B>(device) {
        let (_, fused) = configs(0.1);
        let fused = fused.with_amsgrad(true);
        let expected = train(layer::<B>(9, device), &mut fused.to_burn().init(), ALL);
        let before = fused_calls();
        let got = train(layer::<B>(9, device), &mut fused.init(), ALL);
        assert_eq!(fused_calls().forward, before.forward);
        assert_eq!(bits(&got), bits(&expected));
    }

    /// Records go both ways through Burn's binary format: two steps with one optimizer,
    /// two more with the other after loading its record, give the bits of four steps
    /// with either.
    fn records_load_into_either_optimizer<B>(device) {
        let (burn, fused) = configs(0.1);
        let expected = train(layer::<B>(11, device), &mut burn.init(), ALL);

        let got = halves::<B, _, _>(burn.init(), fused.init(), device);
        assert_eq!(bits(&got), bits(&expected), "Burn, then fused");
        let got = halves::<B, _, _>(fused.init(), burn.init(), device);
        assert_eq!(bits(&got), bits(&expected), "fused, then Burn");
    }
}

/// In f64 (`NdArray<f64>`): the f32 constants widen as Burn widens them. In a process of
/// its own ([`in_own_process`]): `NdArray<f64>` shares its device, and so the device's
/// default float dtype, with the f32 tests, whose optimizer records would then load as f64.
#[cfg(feature = "ndarray")]
#[test]
fn f64_steps_have_the_bits_of_burns_adamw() {
    in_own_process("adamw::f64_steps_have_the_bits_of_burns_adamw", || {
        type B = burn::backend::Autodiff<burn::backend::NdArray<f64>>;
        let device = Default::default();
        let (burn, fused) = configs(0.1);
        let expected = train(layer::<B>(13, &device), &mut burn.init(), ALL);
        let before = fused_calls();
        let got = train(layer::<B>(13, &device), &mut fused.init(), ALL);
        assert_eq!(fused_calls().forward - before.forward, 2 * LRS.len());
        assert_eq!(bits(&got), bits(&expected));
    });
}
