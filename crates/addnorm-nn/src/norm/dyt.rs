//! Dynamic Tanh, DyT (Zhu et al., 2025, "Transformers without Normalization"): an
//! element-wise, statistics-free replacement for LayerNorm.
//!
//! ```text
//! y = γ · tanh(α·x) + β        α: one learnable scalar, initialized to alpha_init
//! ```
//!
//! # Shapes
//! - input: `[..., S₀, …, S_m]` where `normalized_shape = [S₀, …, S_m]`
//! - α: `[1]`; γ, β: `[S₀·…·S_m]` (elementwise) or `[1]` (scalar)
//! - output: same as the input
//!
//! # Example
//! ```
//! use addnorm_nn::{DynamicTanh, DynamicTanhConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! let dyt: DynamicTanh<NdArray> = DynamicTanhConfig::new(vec![3]).init(&device);
//! let x = Tensor::<NdArray, 2>::from_floats([[0.0, 1.0, -2.0]], &device);
//! dyt.forward(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[0.0, 0.4621, -0.7616]]), // tanh(0.5·x)
//!     Tolerance::absolute(1e-4),
//! );
//! ```

use burn::config::Config;
use burn::module::{Content, DisplaySettings, Initializer, Module, ModuleDisplay, Param};
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::affine::{Affine, init_affine};
use super::rows::{display_settings, normalize_trailing, primitive, validate_normalized_shape};
use crate::config_error::{ConfigError, ensure, or_panic};

/// Configuration of a [`DynamicTanh`], built with [`DynamicTanhConfig::init`].
#[derive(Config, Debug)]
pub struct DynamicTanhConfig {
    /// The trailing dimensions γ and β span: `vec![d]` for the last dimension.
    pub normalized_shape: Vec<usize>,
    /// The initial value of the learnable scalar α. Default: 0.5
    #[config(default = 0.5)]
    pub alpha_init: f64,
    /// How many learnable γ / β values there are. Default: `Affine::Elementwise`
    #[config(default = "Affine::Elementwise")]
    pub affine: Affine,
    /// Whether β is learned (ignored with `Affine::Off`). Default: true
    #[config(default = true)]
    pub bias: bool,
}

impl DynamicTanhConfig {
    /// Checks the options without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If `normalized_shape` is empty or contains a zero, or `alpha_init` is not finite.
    pub fn check(&self) -> Result<(), ConfigError> {
        validate_normalized_shape("DynamicTanhConfig", &self.normalized_shape)?;
        let alpha_init = self.alpha_init;
        ensure(alpha_init.is_finite(), || {
            ConfigError::of_field(
                "DynamicTanhConfig.alpha_init",
                format_args!("must be finite, got {alpha_init}"),
            )
        })
    }

    /// Builds the module on `device`, with α = `alpha_init`, γ = 1 and β = 0.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> DynamicTanh<B> {
        or_panic(self.check());
        let n = self.normalized_shape.iter().product();
        let (gamma, beta) = init_affine(self.affine, self.bias, n, device);
        DynamicTanh {
            alpha: Initializer::Constant {
                value: self.alpha_init,
            }
            .init([1], device),
            gamma,
            beta,
            normalized_shape: self.normalized_shape.clone(),
            affine: self.affine,
        }
    }
}

/// Dynamic Tanh: `y = γ · tanh(α·x) + β` (see the [module docs](self)).
///
/// Built with [`DynamicTanhConfig`].
#[derive(Module, Debug)]
#[module(custom_display)]
pub struct DynamicTanh<B: Backend> {
    /// The learnable input scale α, `[1]`.
    pub alpha: Param<Tensor<B, 1>>,
    /// The learnable scale γ, or `None` with `Affine::Off`.
    pub gamma: Option<Param<Tensor<B, 1>>>,
    /// The learnable shift β, or `None` without bias.
    pub beta: Option<Param<Tensor<B, 1>>>,
    #[module(skip)]
    normalized_shape: Vec<usize>,
    #[module(skip)]
    affine: Affine,
}

impl<B: Backend> DynamicTanh<B> {
    /// The trailing dimensions γ and β span.
    pub fn normalized_shape(&self) -> &[usize] {
        &self.normalized_shape
    }
}

impl<B: NormBackend> DynamicTanh<B> {
    /// Applies `γ · tanh(α·x) + β` element-wise.
    ///
    /// # Shapes
    /// - input: `[..., S₀, …, S_m]`
    /// - output: same as the input
    ///
    /// # Panics
    /// If the input's trailing dimensions are not `normalized_shape`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        normalize_trailing("DynamicTanh", &self.normalized_shape, x, |rows| {
            B::dynamic_tanh(
                rows,
                self.alpha.val().into_primitive().tensor(),
                self.affine.gain(&self.gamma),
                primitive(&self.beta),
            )
        })
    }
}

impl<B: Backend> ModuleDisplay for DynamicTanh<B> {
    fn custom_settings(&self) -> Option<DisplaySettings> {
        display_settings()
    }

    fn custom_content(&self, content: Content) -> Option<Content> {
        content
            .add("normalized_shape", &format!("{:?}", self.normalized_shape))
            .add("affine", &format!("{:?}", self.affine))
            .add("bias", &self.beta.is_some())
            .optional()
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::module::Param;
    use burn::tensor::{Tensor, TensorData, Tolerance};

    use super::*;

    type B = NdArray;

    fn init(config: DynamicTanhConfig) -> DynamicTanh<B> {
        config.init(&Default::default())
    }

    #[test]
    fn forward_scales_squashes_and_shifts() {
        let mut dyt = init(DynamicTanhConfig::new(vec![2]).with_alpha_init(2.0));
        let device = Default::default();
        dyt.gamma = Some(Param::from_data([1.0, -3.0], &device));
        dyt.beta = Some(Param::from_data([0.0, 1.0], &device));
        // y = γ·tanh(2·x) + β, element by element: no statistics across the row.
        let x = Tensor::<B, 2>::from_floats([[0.5, 0.0], [-0.5, 1.0]], &device);
        let (t1, t2) = (1f32.tanh(), 2f32.tanh());
        dyt.forward(x).into_data().assert_approx_eq::<f32>(
            &TensorData::from([[t1, 1.0], [-t1, -3.0 * t2 + 1.0]]),
            Tolerance::absolute(1e-6),
        );
    }

    #[test]
    fn scalar_affine_has_one_gamma_and_one_beta() {
        let dyt = init(DynamicTanhConfig::new(vec![4, 3]).with_affine(Affine::Scalar));
        let dims = |p: &Option<Param<Tensor<B, 1>>>| p.as_ref().map(|p| p.dims());
        assert_eq!(dyt.alpha.dims(), [1]);
        assert_eq!((dims(&dyt.gamma), dims(&dyt.beta)), (Some([1]), Some([1])));
    }

    #[test]
    fn display_lists_the_options() {
        let dyt = init(DynamicTanhConfig::new(vec![16]).with_bias(false));
        assert_eq!(
            format!("{dyt}"),
            "DynamicTanh {normalized_shape: [16], affine: Elementwise, bias: false, params: 17}"
        );
    }

    #[test]
    #[should_panic(expected = "DynamicTanhConfig.alpha_init must be finite, got NaN")]
    fn non_finite_alpha_is_rejected() {
        init(DynamicTanhConfig::new(vec![4]).with_alpha_init(f64::NAN));
    }

    #[test]
    #[should_panic(expected = "DynamicTanhConfig.normalized_shape must not contain 0, got [0]")]
    fn zero_width_is_rejected() {
        init(DynamicTanhConfig::new(vec![0]));
    }

    #[test]
    #[should_panic(
        expected = "DynamicTanh expected the input's trailing dimensions to be [8] (its \
                    normalized_shape), got [9] (input shape [2, 9])"
    )]
    fn wrong_input_width_is_rejected() {
        let device = Default::default();
        init(DynamicTanhConfig::new(vec![8])).forward(Tensor::<B, 2>::zeros([2, 9], &device));
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        let refusal = |config: DynamicTanhConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            refusal(DynamicTanhConfig::new(vec![4]).with_alpha_init(f64::NAN)),
            "DynamicTanhConfig.alpha_init must be finite, got NaN"
        );
        assert_eq!(
            refusal(DynamicTanhConfig::new(vec![4]).with_alpha_init(f64::NEG_INFINITY)),
            "DynamicTanhConfig.alpha_init must be finite, got -inf"
        );
        assert_eq!(
            refusal(DynamicTanhConfig::new(vec![0])),
            "DynamicTanhConfig.normalized_shape must not contain 0, got [0]"
        );
        assert_eq!(
            refusal(DynamicTanhConfig::new(vec![])),
            "DynamicTanhConfig.normalized_shape must name at least one dimension, got []"
        );
    }

    #[test]
    fn check_accepts_the_defaults() {
        assert_eq!(DynamicTanhConfig::new(vec![4]).check(), Ok(()));
        let negative = DynamicTanhConfig::new(vec![4]).with_alpha_init(-2.0);
        assert_eq!(negative.check(), Ok(()), "any finite α");
    }
}
