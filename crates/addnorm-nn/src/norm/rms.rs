//! Root-mean-square normalization (Zhang & Sennrich, 2019), with its partial variant
//! pRMSNorm.
//!
//! ```text
//! k   = n, or ⌈p·n⌉ for pRMSNorm        (the statistics read the first k elements)
//! rms = √(Σ_{j<k} x_j² / k + ε)
//! y   = x / rms · γ (+ β)
//! ```
//!
//! It is LayerNorm's row-norm core (`norm/row_norm.rs`) with another [`RowNormSpec`]:
//! [`Centering::RootMeanSquare`](addnorm_kernels::Centering::RootMeanSquare) instead of the
//! mean removed; the same flattening, the same kernels.
//!
//! # Shapes
//! - input: `[..., S₀, …, S_m]` where `normalized_shape = [S₀, …, S_m]`
//! - γ, β: `[S₀·…·S_m]` (elementwise) or `[1]` (scalar)
//! - output: same as the input
//!
//! # Example
//! ```
//! use addnorm_nn::{RmsNorm, RmsNormConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! let norm: RmsNorm<NdArray> = RmsNormConfig::new(vec![3]).init(&device);
//! let x = Tensor::<NdArray, 2>::from_floats([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]], &device);
//! norm.forward(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[0.0, 0.7746, 1.5492], [0.7348, 0.9798, 1.2247]]),
//!     Tolerance::absolute(1e-4),
//! );
//! ```

use burn::config::Config;
use burn::module::Content;
use burn::tensor::backend::Backend;

use addnorm_kernels::RowNormSpec;

use super::affine::Affine;
use super::row_norm::row_norm_module;
use super::rows::{validate_epsilon, validate_normalized_shape};
use crate::config_error::{ConfigError, ensure, or_panic};

/// Configuration of an [`RmsNorm`], built with [`RmsNormConfig::init`].
#[derive(Config, Debug)]
pub struct RmsNormConfig {
    /// The trailing dimensions to normalize over: `vec![d]` for the last dimension.
    pub normalized_shape: Vec<usize>,
    /// ε, added to the mean square under the root. Default: 1e-6
    #[config(default = 1e-6)]
    pub epsilon: f64,
    /// How many learnable γ / β values there are. Default: `Affine::Elementwise`
    #[config(default = "Affine::Elementwise")]
    pub affine: Affine,
    /// Whether β is learned (ignored with `Affine::Off`). Default: false
    #[config(default = false)]
    pub bias: bool,
    /// pRMSNorm: estimate the RMS from the first `⌈p·n⌉` elements, `p ∈ (0, 1]`. `None`
    /// reads every element. Default: None
    #[config(default = "None")]
    pub partial: Option<f64>,
}

impl RmsNormConfig {
    /// Checks the options without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If `normalized_shape` is empty or contains a zero, `epsilon` is not positive and
    /// finite, or `partial` is outside (0, 1]. The message names the field and its value.
    pub fn check(&self) -> Result<(), ConfigError> {
        validate_normalized_shape("RmsNormConfig", &self.normalized_shape)?;
        validate_epsilon("RmsNormConfig", self.epsilon)?;
        let n = self.normalized_shape.iter().product();
        self.partial
            .map_or(Ok(()), |p| partial_features(p, n).map(|_| ()))
    }

    /// Builds the module on `device`, with γ = 1 (and β = 0 with bias).
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> RmsNorm<B> {
        or_panic(self.check());
        let n: usize = self.normalized_shape.iter().product();
        let spec = RowNormSpec {
            statistics_features: self.partial.map(|p| or_panic(partial_features(p, n))),
            ..RowNormSpec::rms_norm(self.epsilon)
        };
        RmsNorm::new(&self.normalized_shape, self.affine, self.bias, spec, device)
    }
}

/// pRMSNorm's `k = ⌈p·n⌉`, at least 1; refuses a `p` outside (0, 1].
fn partial_features(p: f64, n: usize) -> Result<usize, ConfigError> {
    ensure(p > 0.0 && p <= 1.0, || {
        ConfigError::of_field(
            "RmsNormConfig.partial",
            format_args!("must lie in (0, 1], got {p}"),
        )
    })?;
    Ok(((p * n as f64).ceil() as usize).clamp(1, n))
}

row_norm_module! {
    /// RMS normalization over the trailing `normalized_shape` dimensions:
    /// `y = x / √(mean(x²) + ε) · γ (+ β)` (see the [module docs](self)).
    ///
    /// Built with [`RmsNormConfig`]. It shares its fields and methods with
    /// [`LayerNorm`](super::LayerNorm) (the row-norm core, `norm/row_norm.rs`).
    pub struct RmsNorm;
    /// Divides `x` by its root mean square over the trailing `normalized_shape` dimensions,
    /// then scales by γ (and shifts by β).
    fn forward;
    display = display_variant;
}

/// RMSNorm's display adds how many features the statistics read (pRMSNorm), if not all.
fn display_variant(spec: RowNormSpec, content: Content) -> Content {
    content.add(
        "partial_features",
        &format!("{:?}", spec.statistics_features),
    )
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::{Tensor, TensorData, Tolerance};

    use super::*;

    type B = NdArray;

    fn init(config: RmsNormConfig) -> RmsNorm<B> {
        config.init(&Default::default())
    }

    fn input<const R: usize, const N: usize>(rows: [[f32; N]; R]) -> Tensor<B, 2> {
        Tensor::from_floats(rows, &Default::default())
    }

    #[test]
    fn forward_divides_by_the_root_mean_square() {
        let norm = init(RmsNormConfig::new(vec![2]).with_epsilon(0.5));
        assert!(norm.beta.is_none(), "no β by default");
        // mean(x²) = (9 + 16) / 2 = 12.5, √(12.5 + 0.5) = √13; the mean is not removed.
        let (r13, r15) = (13f32.sqrt(), 1.5f32.sqrt());
        let y = norm.forward(input([[3.0, 4.0], [-1.0, -1.0]]));
        y.into_data().assert_approx_eq::<f32>(
            &TensorData::from([[3.0 / r13, 4.0 / r13], [-1.0 / r15, -1.0 / r15]]),
            Tolerance::absolute(1e-6),
        );
    }

    /// Gemma's unit-offset gain: γ starts at 0, so the module is the plain RMSNorm at
    /// initialization, and the gain is `1 + γ` after.
    #[test]
    fn unit_offset_multiplies_by_one_plus_gamma() {
        let mut norm = init(RmsNormConfig::new(vec![2]).with_affine(Affine::UnitOffset));
        let device = Default::default();
        let gamma: Vec<f32> = norm
            .gamma
            .as_ref()
            .unwrap()
            .val()
            .into_data()
            .to_vec()
            .unwrap();
        assert_eq!(gamma, [0.0, 0.0], "γ = 0 at init");
        let r = (12.5f32 + 1e-6).sqrt();
        let plain = [[3.0 / r, 4.0 / r]];
        norm.forward(input([[3.0, 4.0]]))
            .into_data()
            .assert_approx_eq::<f32>(&TensorData::from(plain), Tolerance::absolute(1e-6));
        norm.gamma = Some(burn::module::Param::from_data([0.5, -1.0], &device));
        norm.forward(input([[3.0, 4.0]]))
            .into_data()
            .assert_approx_eq::<f32>(
                &TensorData::from([[1.5 * 3.0 / r, 0.0]]),
                Tolerance::absolute(1e-6),
            );
    }

    #[test]
    fn partial_reads_the_first_elements_only() {
        let norm = init(
            RmsNormConfig::new(vec![4])
                .with_partial(Some(0.5))
                .with_epsilon(1.5),
        );
        assert_eq!(norm.spec().statistics_features, Some(2), "⌈0.5·4⌉");
        // The statistics see [3, 4] only: √(12.5 + 1.5) = √14; every element is divided.
        let r = 14f32.sqrt();
        let y = norm.forward(input([[3.0, 4.0, 100.0, -7.0]]));
        y.into_data().assert_approx_eq::<f32>(
            &TensorData::from([[3.0 / r, 4.0 / r, 100.0 / r, -7.0 / r]]),
            Tolerance::absolute(1e-5),
        );
    }

    #[test]
    fn display_lists_the_options() {
        let norm = init(
            RmsNormConfig::new(vec![8])
                .with_bias(true)
                .with_partial(Some(0.25)),
        );
        assert_eq!(
            format!("{norm}"),
            "RmsNorm {normalized_shape: [8], epsilon: 0.000001, affine: Elementwise, bias: true, \
             partial_features: Some(2), params: 16}"
        );
    }

    #[test]
    #[should_panic(
        expected = "RmsNorm expected the input's trailing dimensions to be [8] (its \
                    normalized_shape), got [7] (input shape [1, 7])"
    )]
    fn wrong_input_width_is_rejected() {
        init(RmsNormConfig::new(vec![8])).forward(input([[0.0; 7]]));
    }

    #[test]
    #[should_panic(expected = "RmsNormConfig.partial must lie in (0, 1], got 1.5")]
    fn partial_above_one_is_rejected() {
        init(RmsNormConfig::new(vec![4]).with_partial(Some(1.5)));
    }

    #[test]
    #[should_panic(expected = "RmsNormConfig.epsilon must be positive and finite, got inf")]
    fn infinite_epsilon_is_rejected() {
        init(RmsNormConfig::new(vec![4]).with_epsilon(f64::INFINITY));
    }

    #[test]
    #[should_panic(
        expected = "RmsNormConfig.normalized_shape must name at least one dimension, got []"
    )]
    fn empty_shape_is_rejected() {
        init(RmsNormConfig::new(vec![]));
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        let refusal = |config: RmsNormConfig| config.check().unwrap_err().to_string();
        let partial = |p| RmsNormConfig::new(vec![4]).with_partial(Some(p));
        assert_eq!(
            refusal(partial(0.0)),
            "RmsNormConfig.partial must lie in (0, 1], got 0"
        );
        assert_eq!(
            refusal(partial(1.5)),
            "RmsNormConfig.partial must lie in (0, 1], got 1.5"
        );
        assert_eq!(
            refusal(partial(f64::NAN)),
            "RmsNormConfig.partial must lie in (0, 1], got NaN"
        );
        assert_eq!(
            partial(0.0).check().unwrap_err().field(),
            "RmsNormConfig.partial"
        );
        assert_eq!(
            refusal(RmsNormConfig::new(vec![4]).with_epsilon(f64::INFINITY)),
            "RmsNormConfig.epsilon must be positive and finite, got inf"
        );
        assert_eq!(
            refusal(RmsNormConfig::new(vec![])),
            "RmsNormConfig.normalized_shape must name at least one dimension, got []"
        );
        assert_eq!(
            refusal(RmsNormConfig::new(vec![0])),
            "RmsNormConfig.normalized_shape must not contain 0, got [0]"
        );
    }

    #[test]
    fn check_accepts_the_defaults_and_a_partial_norm() {
        assert_eq!(RmsNormConfig::new(vec![4]).check(), Ok(()));
        let partial = RmsNormConfig::new(vec![4]).with_partial(Some(1.0));
        assert_eq!(partial.with_affine(Affine::UnitOffset).check(), Ok(()));
    }
}
