//! Layer normalization (Ba et al., 2016) over one or several trailing dimensions, with every
//! variant the seed notebooks use.
//!
//! ```text
//! μ  = mean(x)                      over the normalized dimensions
//! σ² = Σ(x − μ)² / n                Variance::Biased   (default; PyTorch)
//! σ² = Σ(x − μ)² / (n − 1)          Variance::Unbiased (torch.std's default)
//! y  = (x − μ) / √(σ² + ε) · γ + β   EpsilonPlacement::InsideSqrt (default)
//! y  = (x − μ) / (σ + ε) · γ + β     EpsilonPlacement::AddedToStd
//! ```
//!
//! # Shapes
//! - input: `[..., S₀, …, S_m]` where `normalized_shape = [S₀, …, S_m]`
//! - γ, β: `[S₀·…·S_m]` (elementwise) or `[1]` (scalar)
//! - output: same as the input
//!
//! # Example
//! The two-dimensional example of the seed notes: normalize each `[1, 3]` slice.
//!
//! ```
//! use addnorm_nn::{LayerNorm, LayerNormConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! let norm: LayerNorm<NdArray> = LayerNormConfig::new(vec![1, 3]).init(&device);
//! let x = Tensor::<NdArray, 3>::from_floats([[[0.2, 0.1, 0.3]], [[0.5, 0.1, 0.1]]], &device);
//! norm.forward(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[[0.0, -1.2238, 1.2238]], [[1.4140, -0.7070, -0.7070]]]),
//!     Tolerance::absolute(1e-4),
//! );
//! ```

use burn::config::Config;
use burn::module::Content;
use burn::tensor::backend::Backend;

use addnorm_kernels::{EpsilonPlacement, RowNormSpec, Variance};

use super::affine::Affine;
use super::row_norm::row_norm_module;
use super::rows::{validate_epsilon, validate_normalized_shape};
use crate::config_error::{ConfigError, or_panic};

/// Configuration of a [`LayerNorm`], built with [`LayerNormConfig::init`].
#[derive(Config, Debug)]
pub struct LayerNormConfig {
    /// The trailing dimensions to normalize over, as PyTorch's `normalized_shape`: `vec![d]`
    /// for the last dimension, `vec![s, d]` for the last two.
    pub normalized_shape: Vec<usize>,
    /// ε, the stabilizer of the denominator. Default: 1e-5
    #[config(default = 1e-5)]
    pub epsilon: f64,
    /// How many learnable γ / β values there are. Default: `Affine::Elementwise`
    #[config(default = "Affine::Elementwise")]
    pub affine: Affine,
    /// Whether β is learned (ignored with `Affine::Off`). Default: true
    #[config(default = true)]
    pub bias: bool,
    /// The variance divisor, n or n − 1. Default: `Variance::Biased`
    #[config(default = "Variance::Biased")]
    pub variance: Variance,
    /// Whether ε goes under the square root or onto the standard deviation.
    /// Default: `EpsilonPlacement::InsideSqrt`
    #[config(default = "EpsilonPlacement::InsideSqrt")]
    pub epsilon_placement: EpsilonPlacement,
}

impl LayerNormConfig {
    /// Checks the options without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If `normalized_shape` is empty or contains a zero, or `epsilon` is not positive and
    /// finite. The message names the field and its value.
    pub fn check(&self) -> Result<(), ConfigError> {
        validate_normalized_shape("LayerNormConfig", &self.normalized_shape)?;
        validate_epsilon("LayerNormConfig", self.epsilon)
    }

    /// Builds the module on `device`, with γ = 1 and β = 0.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> LayerNorm<B> {
        or_panic(self.check());
        let spec = RowNormSpec {
            variance: self.variance,
            epsilon_placement: self.epsilon_placement,
            ..RowNormSpec::layer_norm(self.epsilon)
        };
        LayerNorm::new(&self.normalized_shape, self.affine, self.bias, spec, device)
    }
}

row_norm_module! {
    /// Layer normalization over the trailing `normalized_shape` dimensions:
    /// `y = (x − μ) / √(σ² + ε) · γ + β` and its variants (see the [module docs](self)).
    ///
    /// Built with [`LayerNormConfig`]. Its forward needs `B: NormBackend`, which takes the
    /// fused kernel where the backend has one. It shares its fields and methods with
    /// [`RmsNorm`](super::RmsNorm) (the row-norm core, `norm/row_norm.rs`).
    pub struct LayerNorm;
    /// Normalizes `x` over its trailing `normalized_shape` dimensions:
    /// `y = (x − μ) / √(σ² + ε) · γ + β` (or the configured variant).
    fn forward;
    display = display_variant;
}

/// LayerNorm's display adds its variant: the variance divisor and where ε goes.
fn display_variant(spec: RowNormSpec, content: Content) -> Content {
    content
        .add("variance", &format!("{:?}", spec.variance))
        .add(
            "epsilon_placement",
            &format!("{:?}", spec.epsilon_placement),
        )
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, NdArray};
    use burn::module::Param;
    use burn::tensor::{Tensor, TensorData, Tolerance};

    use super::*;

    type B = NdArray;

    #[test]
    fn forward_centers_scales_and_shifts_each_row() {
        let device = Default::default();
        let mut norm: LayerNorm<B> = LayerNormConfig::new(vec![2]).init(&device);
        norm.gamma = Some(Param::from_data([2.0, 3.0], &device));
        norm.beta = Some(Param::from_data([0.5, -0.5], &device));
        // Row 1: μ = 1, σ² = 1, so y = ±1/√(1 + 1e-5)·γ + β. Row 2 is constant: y = β.
        let x = Tensor::<B, 2>::from_floats([[0.0, 2.0], [7.0, 7.0]], &device);
        norm.forward(x).into_data().assert_approx_eq::<f32>(
            &TensorData::from([[-1.49999, 2.499985], [0.5, -0.5]]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn unbiased_variance_with_epsilon_on_the_std() {
        let device = Default::default();
        let norm: LayerNorm<B> = LayerNormConfig::new(vec![2])
            .with_variance(Variance::Unbiased)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_epsilon(0.25)
            .init(&device);
        // μ = 2, σ² = (4 + 4) / (2 − 1) = 8, y = ±2 / (√8 + 0.25).
        let x = Tensor::<B, 2>::from_floats([[0.0, 4.0]], &device);
        let denominator = 8f32.sqrt() + 0.25;
        norm.forward(x).into_data().assert_approx_eq::<f32>(
            &TensorData::from([[-2.0 / denominator, 2.0 / denominator]]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn normalizes_over_the_two_trailing_dimensions() {
        let device = Default::default();
        let norm: LayerNorm<B> = LayerNormConfig::new(vec![2, 2])
            .with_affine(Affine::Off)
            .init(&device);
        assert!(norm.gamma.is_none() && norm.beta.is_none());
        // One slice [[1, 3], [1, 3]]: μ = 2, σ² = 1.
        let x = Tensor::<B, 3>::from_floats([[[1.0, 3.0], [1.0, 3.0]]], &device);
        norm.forward(x).into_data().assert_approx_eq::<f32>(
            &TensorData::from([[[-0.999995, 0.999995], [-0.999995, 0.999995]]]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn gradient_of_the_sum_reaches_beta_only() {
        let device = Default::default();
        let norm: LayerNorm<Autodiff<B>> = LayerNormConfig::new(vec![3]).init(&device);
        let x = Tensor::<Autodiff<B>, 2>::from_floats([[1.0, 2.0, 4.0], [0.0, -1.0, 3.0]], &device)
            .require_grad();
        // Σ y = Σ_rows (Σ_j n_j·γ_j + Σ_j β_j) with Σ_j n_j = 0 and γ = 1: only β matters.
        let grads = norm.forward(x.clone()).sum().backward();
        x.grad(&grads)
            .unwrap()
            .into_data()
            .assert_approx_eq::<f32>(&TensorData::from([[0.0; 3]; 2]), Tolerance::absolute(1e-6));
        let beta = norm.beta.as_ref().unwrap().grad(&grads).unwrap();
        beta.into_data()
            .assert_approx_eq::<f32>(&TensorData::from([2.0; 3]), Tolerance::absolute(1e-6));
    }

    #[test]
    #[should_panic(
        expected = "LayerNorm expected the input's trailing dimensions to be [3, 4] (its \
                    normalized_shape), got [3, 5] (input shape [2, 3, 5])"
    )]
    fn wrong_trailing_dimensions_are_rejected() {
        let device = Default::default();
        let norm: LayerNorm<B> = LayerNormConfig::new(vec![3, 4]).init(&device);
        norm.forward(Tensor::<B, 3>::zeros([2, 3, 5], &device));
    }

    #[test]
    fn display_lists_the_options() {
        let norm: LayerNorm<B> = LayerNormConfig::new(vec![2, 8])
            .with_affine(Affine::Scalar)
            .with_variance(Variance::Unbiased)
            .init(&Default::default());
        assert_eq!(
            format!("{norm}"),
            "LayerNorm {normalized_shape: [2, 8], epsilon: 0.00001, affine: Scalar, bias: true, \
             variance: Unbiased, epsilon_placement: InsideSqrt, params: 2}"
        );
    }

    #[test]
    #[should_panic(expected = "LayerNormConfig.epsilon must be positive and finite, got 0")]
    fn zero_epsilon_is_rejected() {
        LayerNormConfig::new(vec![4])
            .with_epsilon(0.0)
            .init::<B>(&Default::default());
    }

    #[test]
    #[should_panic(expected = "LayerNormConfig.normalized_shape must not contain 0, got [3, 0]")]
    fn zero_width_is_rejected() {
        LayerNormConfig::new(vec![3, 0]).init::<B>(&Default::default());
    }

    #[test]
    #[should_panic(expected = "but the input has rank 1 (shape [4])")]
    fn input_of_lower_rank_is_rejected() {
        let device = Default::default();
        let norm: LayerNorm<B> = LayerNormConfig::new(vec![2, 4]).init(&device);
        norm.forward(Tensor::<B, 1>::zeros([4], &device));
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        let refusal = |config: LayerNormConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            refusal(LayerNormConfig::new(vec![4]).with_epsilon(0.0)),
            "LayerNormConfig.epsilon must be positive and finite, got 0"
        );
        assert_eq!(
            refusal(LayerNormConfig::new(vec![4]).with_epsilon(f64::NAN)),
            "LayerNormConfig.epsilon must be positive and finite, got NaN"
        );
        assert_eq!(
            refusal(LayerNormConfig::new(vec![])),
            "LayerNormConfig.normalized_shape must name at least one dimension, got []"
        );
        assert_eq!(
            refusal(LayerNormConfig::new(vec![3, 0])),
            "LayerNormConfig.normalized_shape must not contain 0, got [3, 0]"
        );
        let error = LayerNormConfig::new(vec![3, 0]).check().unwrap_err();
        assert_eq!(error.field(), "LayerNormConfig.normalized_shape");
    }

    #[test]
    fn check_accepts_the_defaults_and_every_variant() {
        assert_eq!(LayerNormConfig::new(vec![4]).check(), Ok(()));
        let variant = LayerNormConfig::new(vec![2, 3])
            .with_variance(Variance::Unbiased)
            .with_epsilon_placement(EpsilonPlacement::AddedToStd)
            .with_affine(Affine::Off);
        assert_eq!(variant.check(), Ok(()));
    }
}
