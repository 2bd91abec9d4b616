//! The numbers the seed notebooks print, reproduced with our modules' configurations.

use addnorm::nn::{Affine, EpsilonPlacement, LayerNormConfig, RmsNormConfig, Variance};
use burn::tensor::Tensor;

use crate::common::{assert_close, mean, sample_variance, tensor, values};
use crate::on_every_backend;

/// Rows of a tensor as vectors.
fn rows(v: &[f64], n: usize) -> Vec<Vec<f64>> {
    v.chunks(n).map(<[f64]>::to_vec).collect()
}

on_every_backend! {
    /// Step-by-step notebook: `α·(x − μ)/(std + ε) + bias` with torch's unbiased std and
    /// a scalar α / bias, on rows 1..4, 5..8, …: every row prints
    /// [-1.1619, -0.3873, 0.3873, 1.1619], with per-row mean 0 and std 1.
    fn step_by_step_unbiased_std_eps_outside<B>(device) {
        let norm = LayerNormConfig::new(vec![4])
            .with_variance(Variance::Unbiased)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_affine(Affine::Scalar)
            .init::<B>(device);
        let x: Vec<f64> = (1..=24).map(f64::from).collect();
        let y = values(norm.forward(tensor::<B, 3>(&x, [2, 3, 4], device)));
        let expected: Vec<f64> = [-1.1619, -0.3873, 0.3873, 1.1619].repeat(6);
        assert_close("step-by-step output", &y, &expected, 1e-4);
        for row in rows(&y, 4) {
            assert!(mean(&row).abs() < 1e-6, "row mean {}", mean(&row));
            assert!((sample_variance(&row).sqrt() - 1.0).abs() < 1e-4);
        }
        // The gain and bias are one learnable value each.
        assert_eq!(norm.gamma.as_ref().unwrap().dims(), [1]);
        assert_eq!(norm.beta.as_ref().unwrap().dims(), [1]);
    }

    /// Two-dimension notes: normalized_shape [1, 3] over inputs reshaped to [2, 1, 3]:
    /// mean [0.2000, 0.2333], std √(σ² + 1e-5) = [0.0817, 0.1886], and the outputs
    /// [[0.0000, -1.2238, 1.2238]] and [[1.4140, -0.7070, -0.7070]].
    fn two_dimension_normalized_shape<B>(device) {
        let norm = LayerNormConfig::new(vec![1, 3]).init::<B>(device);
        assert_eq!(norm.gamma.as_ref().unwrap().dims(), [3], "γ is flattened [1, 3]");
        let x = [0.2, 0.1, 0.3, 0.5, 0.1, 0.1];
        let y = values(norm.forward(tensor::<B, 3>(&x, [2, 1, 3], device)));
        assert_close(
            "two-dimension output",
            &y,
            &[0.0, -1.2238, 1.2238, 1.4140, -0.7070, -0.7070],
            1e-4,
        );
        // The printed intermediate statistics, from the definition the notes use.
        for (row, (mu, sd)) in rows(&x, 3).iter().zip([(0.2, 0.0817), (0.2333, 0.1886)]) {
            let m = mean(row);
            let var = row.iter().map(|v| (v - m).powi(2)).sum::<f64>() / 3.0;
            assert!((m - mu).abs() < 1e-4 && ((var + 1e-5).sqrt() - sd).abs() < 1e-4);
        }
    }

    /// First notebook: the Linear+ReLU batch it prints has per-row mean [0.1324, 0.2170]
    /// and (unbiased) variance [0.0231, 0.0398]; normalizing by the unbiased std with no ε
    /// gives mean 0 and variance 1.0000.
    fn linear_relu_batch_statistics<B>(device) {
        let out = [
            0.2260, 0.3470, 0.0000, 0.2216, 0.0000, 0.0000, //
            0.2133, 0.2394, 0.0000, 0.5198, 0.3297, 0.0000,
        ];
        let stats: Vec<(f64, f64)> =
            rows(&out, 6).iter().map(|r| (mean(r), sample_variance(r))).collect();
        for ((m, v), (pm, pv)) in stats.iter().zip([(0.1324, 0.0231), (0.2170, 0.0398)]) {
            assert!((m - pm).abs() < 1e-4 && (v - pv).abs() < 1e-4, "{m} {v}");
        }
        // ε is required to be positive, so "no ε" is the smallest one that is exact in f32.
        let norm = LayerNormConfig::new(vec![6])
            .with_variance(Variance::Unbiased)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_epsilon(1e-12)
            .with_affine(Affine::Off)
            .init::<B>(device);
        let y = values(norm.forward(tensor::<B, 2>(&out, [2, 6], device)));
        for row in rows(&y, 6) {
            assert!(mean(&row).abs() < 1e-6);
            assert!((sample_variance(&row) - 1.0).abs() < 1e-4);
        }
    }

    /// Second notebook: after `nn.LayerNorm(3)` (biased variance, ε = 1e-5) its printed
    /// batch has unbiased variance [1.4996, 1.4997], not 1: n/(n − 1) = 1.5, shrunk by ε.
    fn torch_layer_norm_unbiased_variance_is_one_and_a_half<B>(device) {
        let out = [0.4593, 0.0000, 0.2737, 0.5204, 0.0000, 0.3925];
        let norm = LayerNormConfig::new(vec![3]).init::<B>(device);
        let y = values(norm.forward(tensor::<B, 2>(&out, [2, 3], device)));
        let vars: Vec<f64> = rows(&y, 3).iter().map(|r| sample_variance(r)).collect();
        assert_close("unbiased variance after LayerNorm", &vars, &[1.4996, 1.4997], 1e-4);
    }

    /// Second notebook, the 1024×1500 batch: `LayerNormalization` (biased std, ε = 1e-6 on
    /// the std, scalar α) gives mean 0 and unbiased variance 1500/1499 = 1.0007.
    fn wide_batch_variance_is_n_over_n_minus_one<B>(device) {
        let norm = LayerNormConfig::new(vec![1500])
            .with_epsilon(1e-6)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_affine(Affine::Scalar)
            .init::<B>(device);
        let x = Tensor::<B, 2>::random(
            [8, 1500],
            burn::tensor::Distribution::Uniform(0.0, 1.0),
            device,
        )
        .exp();
        let y = values(norm.forward(x));
        let var = mean(&rows(&y, 1500).iter().map(|r| sample_variance(r)).collect::<Vec<_>>());
        assert!((var - 1.0007).abs() < 5e-5, "variance {var}");
    }

    /// Second notebook's RMSNorm with one scalar weight: the output's RMS is 1 per row, so
    /// mean² + biased variance = 1 (it prints mean 0.5532 and unbiased variance 0.6944,
    /// with 0.5532² + 0.6944·1499/1500 = 0.9999).
    fn rms_norm_rows_have_unit_root_mean_square<B>(device) {
        let norm = RmsNormConfig::new(vec![1500]).with_affine(Affine::Scalar).init::<B>(device);
        let x = Tensor::<B, 2>::random(
            [4, 1500],
            burn::tensor::Distribution::Uniform(0.0, 1.0),
            device,
        );
        let y = values(norm.forward(x));
        for row in rows(&y, 1500) {
            let ms = row.iter().map(|v| v * v).sum::<f64>() / 1500.0;
            assert!((ms - 1.0).abs() < 1e-4, "mean square {ms}");
        }
        assert!((0.5532f64.powi(2) + 0.6944 * 1499.0 / 1500.0 - 1.0).abs() < 2e-4);
    }

    /// The labml notes' test: LayerNorm over the last two dims of zeros([2, 3, 2, 4]) keeps
    /// the shape, has γ of shape [2·4], and (a constant row) returns β = 0.
    fn labml_zeros_example<B>(device) {
        let norm = LayerNormConfig::new(vec![2, 4]).init::<B>(device);
        let y = norm.forward(Tensor::<B, 4>::zeros([2, 3, 2, 4], device));
        assert_eq!(y.dims(), [2, 3, 2, 4]);
        assert_eq!(norm.gamma.as_ref().unwrap().dims(), [8]);
        assert!(values(y).iter().all(|v| *v == 0.0));
    }
}
