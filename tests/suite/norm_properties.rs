//! Properties every norm must have, whatever the data: invariances, constant rows, half
//! precision, empty inputs, display.

use addnorm::nn::{
    Affine, DynamicTanhConfig, EpsilonPlacement, LayerNormConfig, NormConfig, RmsNormConfig,
    Variance,
};
use burn::tensor::{DType, Distribution, Tensor};

use crate::common::{assert_close, tensor, values};
use crate::on_every_backend;

on_every_backend! {
    /// LayerNorm(a·x + b) = LayerNorm(x) for any per-row scale a > 0 and shift b, for
    /// every variance and ε placement (ε made negligible against the rows' spread).
    fn layer_norm_is_invariant_to_row_shift_and_scale<B>(device) {
        for variance in [Variance::Biased, Variance::Unbiased] {
            for placement in [EpsilonPlacement::InsideSqrt, EpsilonPlacement::AddedToStd] {
                let norm = LayerNormConfig::new(vec![3, 11])
                    .with_variance(variance)
                    .with_epsilon_placement(placement)
                    .with_epsilon(1e-9)
                    .init::<B>(device);
                let x = Tensor::<B, 3>::random([4, 3, 11], Distribution::Normal(0.0, 1.0), device);
                let scale = tensor::<B, 3>(&[0.5, 3.0, 40.0, 0.01], [4, 1, 1], device);
                let shift = tensor::<B, 3>(&[7.0, -100.0, 0.25, 3.0], [4, 1, 1], device);
                let y = values(norm.forward(x.clone()));
                let y_moved = values(norm.forward(x * scale + shift));
                assert_close("LayerNorm(a·x + b)", &y_moved, &y, 1e-4);
            }
        }
    }

    /// RMSNorm(a·x) = RMSNorm(x) for a > 0, and RMSNorm(−x) = −RMSNorm(x).
    fn rms_norm_is_invariant_to_scale<B>(device) {
        for partial in [None, Some(0.5)] {
            let norm = RmsNormConfig::new(vec![16])
                .with_partial(partial)
                .with_epsilon(1e-12)
                .init::<B>(device);
            let x = Tensor::<B, 2>::random([5, 16], Distribution::Normal(1.0, 2.0), device);
            let y = values(norm.forward(x.clone()));
            let scaled = tensor::<B, 2>(&[0.001, 0.5, 2.0, 30.0, 1e3], [5, 1], device);
            assert_close("RMSNorm(a·x)", &values(norm.forward(x.clone() * scaled)), &y, 1e-4);
            let negated: Vec<f64> = y.iter().map(|v| -v).collect();
            assert_close("RMSNorm(−x)", &values(norm.forward(x.neg())), &negated, 1e-5);
        }
    }

    /// pRMSNorm reads only the first ⌈p·n⌉ features: changing the others does not change
    /// the scale applied to the first ones.
    fn partial_rms_reads_only_its_prefix<B>(device) {
        let norm = RmsNormConfig::new(vec![10]).with_partial(Some(0.3)).init::<B>(device);
        let a = tensor::<B, 2>(&[1.0, 2.0, 2.0, 9.0, -9.0, 0.0, 5.0, 5.0, 5.0, 5.0], [1, 10], device);
        let b = tensor::<B, 2>(&[1.0, 2.0, 2.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0], [1, 10], device);
        let (ya, yb) = (values(norm.forward(a)), values(norm.forward(b)));
        // k = 3, rms = √((1 + 4 + 4)/3) = √3.
        assert_close("prefix", &ya[..3], &[1.0 / 3f64.sqrt(), 2.0 / 3f64.sqrt(), 2.0 / 3f64.sqrt()], 1e-5);
        assert_close("same prefix, other tail", &ya[..3], &yb[..3], 1e-6);
        assert_close("tail uses the prefix's rms", &[ya[3]], &[9.0 / 3f64.sqrt()], 1e-5);
    }

    /// A constant row maps to β exactly, and every gradient stays finite, for every
    /// centring variant and both ε placements (where √σ² has an infinite slope at 0).
    fn constant_rows_give_beta_and_finite_gradients<B>(device) {
        for variance in [Variance::Biased, Variance::Unbiased] {
            for placement in [EpsilonPlacement::InsideSqrt, EpsilonPlacement::AddedToStd] {
                let mut norm = LayerNormConfig::new(vec![6])
                    .with_variance(variance)
                    .with_epsilon_placement(placement)
                    .init::<B>(device);
                let beta: Vec<f64> = (0..6).map(|i| 0.1 * i as f64 - 0.2).collect();
                norm.beta = Some(burn::module::Param::from_tensor(tensor::<B, 1>(&beta, [6], device)));
                let x = tensor::<B, 2>(&[3.5; 12], [2, 6], device).require_grad();
                let y = norm.forward(x.clone());
                assert_close("constant row", &values(y.clone()), &beta.repeat(2), 1e-6);
                let dy = Tensor::<B, 2>::random([2, 6], Distribution::Normal(0.0, 1.0), device);
                let grads = (y * dy).sum().backward();
                let dx = values(x.grad(&grads).unwrap());
                let dgamma = values(norm.gamma.as_ref().unwrap().grad(&grads).unwrap());
                assert!(dx.iter().chain(&dgamma).all(|v| v.is_finite()), "{variance:?} {placement:?}: {dx:?}");
            }
        }
        // RMSNorm of an all-zero row: y = 0 with finite gradients.
        let rms = RmsNormConfig::new(vec![4]).init::<B>(device);
        let x = Tensor::<B, 2>::zeros([1, 4], device).require_grad();
        let grads = rms.forward(x.clone()).sum().backward();
        assert!(values(x.grad(&grads).unwrap()).iter().all(|v| v.is_finite()));
    }

    /// An input with zero rows gives an empty output of the same shape, for every norm.
    fn zero_rows_give_an_empty_output<B>(device) {
        for config in [NormConfig::layer(8), NormConfig::rms(8), NormConfig::dynamic_tanh(8), NormConfig::Identity] {
            let norm = config.init::<B>(device);
            let y = norm.forward(Tensor::<B, 3>::zeros([0, 5, 8], device));
            assert_eq!(y.dims(), [0, 5, 8], "{config:?}");
        }
    }

    /// Half-precision inputs come back in their own dtype, with statistics computed in
    /// f32: the result agrees with the f32 computation to f16's resolution.
    /// (NdArray has no f16 tensors, so this runs where the backend has them: wgpu.)
    fn half_precision_inputs_use_f32_statistics<B>(device) {
        if !<B as burn::tensor::backend::Backend>::supports_dtype(device, DType::F16) {
            return;
        }
        let norm = LayerNormConfig::new(vec![64]).init::<B>(device);
        // A large common offset: an f16 reduction would lose every digit of the spread.
        let x = Tensor::<B, 2>::random([4, 64], Distribution::Normal(0.0, 1.0), device) + 300.0;
        let x16 = x.clone().cast(DType::F16);
        // The reference reads the f16 values back through the host: under Burn's fusion on
        // an NVIDIA Vulkan driver, `cast(F16).cast(F32)` inside one fused kernel kept the
        // unrounded f32 values (seen on an H200, 2026-11-26), which made this test compare
        // against inputs the f16 norm never saw.
        let rounded = x16.to_data().convert::<f32>();
        let reference = values(norm.forward(Tensor::<B, 2>::from_data(rounded, device)));
        let y16 = norm.forward(x16);
        assert_eq!(y16.dtype(), DType::F16);
        assert_close("f16 LayerNorm", &values(y16), &reference, 2e-3);
    }

    /// x-transformers' ScaleNorm (Nguyen & Salazar 2019: `g·x / max(‖x‖/√d, ε)`, one scalar
    /// g) and SimpleRMSNorm (`x / max(‖x‖, 1e-12)·√d`, no parameters) are RMSNorm with
    /// `Affine::Scalar` and `Affine::Off`: equal, on rows of norm far above ε, to those
    /// formulas evaluated in f64 (ours adds ε under the root; theirs clamps), with g = 1.7.
    fn scale_norm_and_simple_rms_norm_are_rms_norm_configurations<B>(device) {
        let d = 24;
        let x = Tensor::<B, 2>::random([5, d], Distribution::Normal(0.3, 2.0), device);
        let rows: Vec<Vec<f64>> = values(x.clone()).chunks(d).map(<[f64]>::to_vec).collect();
        let reference = |g: f64, eps: f64| -> Vec<f64> {
            rows.iter()
                .flat_map(|r| {
                    let rms = (r.iter().map(|v| v * v).sum::<f64>() / d as f64).sqrt();
                    r.iter().map(move |v| g * v / rms.max(eps)).collect::<Vec<_>>()
                })
                .collect()
        };
        let mut scale_norm = RmsNormConfig::new(vec![d]).with_affine(Affine::Scalar).with_epsilon(1e-10).init::<B>(device);
        assert_eq!(scale_norm.gamma.as_ref().map(|g| g.dims()), Some([1]));
        assert!(scale_norm.beta.is_none(), "ScaleNorm has no bias");
        scale_norm.gamma = Some(burn::module::Param::from_tensor(Tensor::from_floats([1.7], device)));
        assert_close("ScaleNorm", &values(scale_norm.forward(x.clone())), &reference(1.7, 1e-5), 1e-5);
        let simple = RmsNormConfig::new(vec![d]).with_affine(Affine::Off).with_epsilon(1e-12).init::<B>(device);
        assert!(simple.gamma.is_none() && simple.beta.is_none(), "SimpleRMSNorm has no parameters");
        assert_close("SimpleRMSNorm", &values(simple.forward(x)), &reference(1.0, 1e-12 / (d as f64).sqrt()), 1e-5);
    }

    /// `println!("{norm}")` shows the configuration.
    fn display_shows_the_configuration<B>(device) {
        let norm = LayerNormConfig::new(vec![2, 8])
            .with_variance(Variance::Unbiased)
            .with_affine(Affine::Scalar)
            .init::<B>(device);
        let shown = format!("{norm}");
        for needle in ["normalized_shape: [2, 8]", "Unbiased", "Scalar", "epsilon: 0.00001"] {
            assert!(shown.contains(needle), "{needle:?} missing from {shown}");
        }
        let dyt = format!("{}", DynamicTanhConfig::new(vec![4]).init::<B>(device));
        assert!(dyt.contains("normalized_shape: [4]"), "{dyt}");
    }

    /// Our defaults give the numbers of Burn's built-in norms, configured alike.
    fn defaults_match_burns_builtin_norms<B>(device) {
        let x = Tensor::<B, 3>::random([2, 3, 10], Distribution::Normal(1.0, 2.0), device);
        let ours = LayerNormConfig::new(vec![10]).init::<B>(device);
        let burns = burn::nn::LayerNormConfig::new(10).init::<B>(device);
        assert_close("LayerNorm vs burn::nn", &values(ours.forward(x.clone())), &values(burns.forward(x.clone())), 1e-5);
        let ours = RmsNormConfig::new(vec![10]).with_epsilon(1e-5).init::<B>(device);
        let burns = burn::nn::RmsNormConfig::new(10).init::<B>(device);
        assert_close("RmsNorm vs burn::nn", &values(ours.forward(x.clone())), &values(burns.forward(x.clone())), 1e-5);
        // Burn's modules are also selectable from a NormConfig, as baselines.
        let baseline = NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(0)).with_d_model(10).init::<B>(device);
        let ours = NormConfig::layer(10).init::<B>(device);
        assert_close("NormConfig::BurnLayer", &values(baseline.forward(x.clone())), &values(ours.forward(x)), 1e-5);
    }
}
