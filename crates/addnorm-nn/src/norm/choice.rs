//! [`Norm`] and [`NormConfig`]: one normalization chosen from a config, so a model (the
//! transformer block, or yours) can switch between LayerNorm, RMSNorm, DyT and no norm
//! without changing its type.
//!
//! Each variant computes its module's formula (see [the table](super) of the norms);
//! `Norm::Identity` is `y = x`, and `Norm::BurnLayer` / `Norm::BurnRms` are Burn's own
//! modules, the baselines, over the last dimension only.
//!
//! # Shapes
//! - input: `[..., S₀, …, S_m]`; output: same as the input
//!
//! # Example
//! ```
//! use addnorm_nn::{Norm, NormConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! // The kind comes from the config; the width is set where the norm is used.
//! let config = NormConfig::rms(0).with_d_model(2);
//! let norm: Norm<NdArray> = config.init(&device);
//! let x = Tensor::<NdArray, 2>::from_floats([[3.0, 4.0]], &device);
//! norm.forward(x).into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[0.8485, 1.1314]]), // x / √12.5
//!     Tolerance::absolute(1e-4),
//! );
//! ```

use burn::config::Config;
use burn::module::Module;
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::dyt::{DynamicTanh, DynamicTanhConfig};
use super::layer::{LayerNorm, LayerNormConfig};
use super::rms::{RmsNorm, RmsNormConfig};
use crate::config_error::ConfigError;

/// Which normalization to build, with its options. See [`Norm`].
///
/// Each variant's config converts into it with `From`:
/// `NormConfig::from(LayerNormConfig::new(vec![d]))`, or `.into()` where a `NormConfig` is
/// expected. New kinds of norm may be added, so matches need a wildcard arm.
#[derive(Config, Debug)]
#[non_exhaustive]
pub enum NormConfig {
    /// A [`LayerNorm`].
    Layer(LayerNormConfig),
    /// An [`RmsNorm`].
    Rms(RmsNormConfig),
    /// A [`DynamicTanh`].
    DynamicTanh(DynamicTanhConfig),
    /// No normalization: `y = x`.
    Identity,
    /// Burn's own `burn::nn::LayerNorm`, as a baseline to compare against.
    BurnLayer(burn::nn::LayerNormConfig),
    /// Burn's own `burn::nn::RmsNorm`, as a baseline to compare against.
    BurnRms(burn::nn::RmsNormConfig),
}

impl NormConfig {
    /// A default [`LayerNormConfig`] over the last dimension of width `d_model`.
    pub fn layer(d_model: usize) -> Self {
        Self::Layer(LayerNormConfig::new(vec![d_model]))
    }

    /// A default [`RmsNormConfig`] over the last dimension of width `d_model`.
    pub fn rms(d_model: usize) -> Self {
        Self::Rms(RmsNormConfig::new(vec![d_model]))
    }

    /// A default [`DynamicTanhConfig`] over the last dimension of width `d_model`.
    pub fn dynamic_tanh(d_model: usize) -> Self {
        Self::DynamicTanh(DynamicTanhConfig::new(vec![d_model]))
    }

    /// The same kind and options, normalizing over `normalized_shape` instead. Burn's
    /// baselines normalize over the last dimension only: they take its last entry.
    pub fn with_normalized_shape(&self, normalized_shape: Vec<usize>) -> Self {
        let last = normalized_shape.last().copied().unwrap_or(0);
        match self {
            Self::Layer(c) => Self::Layer(LayerNormConfig {
                normalized_shape,
                ..c.clone()
            }),
            Self::Rms(c) => Self::Rms(RmsNormConfig {
                normalized_shape,
                ..c.clone()
            }),
            Self::DynamicTanh(c) => Self::DynamicTanh(DynamicTanhConfig {
                normalized_shape,
                ..c.clone()
            }),
            Self::Identity => Self::Identity,
            Self::BurnLayer(c) => Self::BurnLayer(burn::nn::LayerNormConfig {
                d_model: last,
                ..c.clone()
            }),
            Self::BurnRms(c) => Self::BurnRms(burn::nn::RmsNormConfig {
                d_model: last,
                ..c.clone()
            }),
        }
    }

    /// The same kind and options, normalizing over the last dimension of width `d_model`.
    /// This is how a model fits a user's choice of norm to each of its layers.
    pub fn with_d_model(&self, d_model: usize) -> Self {
        self.with_normalized_shape(vec![d_model])
    }

    /// A short lower-case name of the kind: `layer`, `rms`, `dyt`, `identity`, `burn-layer`
    /// or `burn-rms`.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::Layer(_) => "layer",
            Self::Rms(_) => "rms",
            Self::DynamicTanh(_) => "dyt",
            Self::Identity => "identity",
            Self::BurnLayer(_) => "burn-layer",
            Self::BurnRms(_) => "burn-rms",
        }
    }

    /// Checks the chosen config (see [`LayerNormConfig::check`], [`RmsNormConfig::check`],
    /// [`DynamicTanhConfig::check`]) without building anything. `Identity` and Burn's
    /// baselines have nothing to check: `Ok`.
    ///
    /// # Errors
    /// As the chosen config's `check`.
    pub fn check(&self) -> Result<(), ConfigError> {
        match self {
            Self::Layer(c) => c.check(),
            Self::Rms(c) => c.check(),
            Self::DynamicTanh(c) => c.check(),
            Self::Identity | Self::BurnLayer(_) | Self::BurnRms(_) => Ok(()),
        }
    }

    /// Builds the chosen module on `device`.
    ///
    /// # Panics
    /// As the chosen config's `init`: where [`check`](Self::check) refuses the config, with
    /// its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> Norm<B> {
        match self {
            Self::Layer(c) => Norm::Layer(c.init(device)),
            Self::Rms(c) => Norm::Rms(c.init(device)),
            Self::DynamicTanh(c) => Norm::DynamicTanh(c.init(device)),
            Self::Identity => Norm::Identity(Identity),
            Self::BurnLayer(c) => Norm::BurnLayer(c.init(device)),
            Self::BurnRms(c) => Norm::BurnRms(c.init(device)),
        }
    }
}

/// The identity map, as a module: the "no norm" choice of [`Norm`].
#[derive(Module, Clone, Debug, Default)]
pub struct Identity;

/// A normalization chosen at run time from a [`NormConfig`]. Each module converts into it
/// with `From`. New kinds of norm may be added, so matches need a wildcard arm.
#[derive(Module, Debug)]
#[non_exhaustive]
pub enum Norm<B: Backend> {
    /// Layer normalization.
    Layer(LayerNorm<B>),
    /// RMS normalization.
    Rms(RmsNorm<B>),
    /// Dynamic Tanh.
    DynamicTanh(DynamicTanh<B>),
    /// No normalization.
    Identity(Identity),
    /// Burn's `burn::nn::LayerNorm` (baseline).
    BurnLayer(burn::nn::LayerNorm<B>),
    /// Burn's `burn::nn::RmsNorm` (baseline).
    BurnRms(burn::nn::RmsNorm<B>),
}

impl<B: NormBackend> Norm<B> {
    /// Applies the chosen normalization.
    ///
    /// # Shapes
    /// - input: `[..., S₀, …, S_m]`
    /// - output: same as the input
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Self::Layer(m) => m.forward(x),
            Self::Rms(m) => m.forward(x),
            Self::DynamicTanh(m) => m.forward(x),
            Self::Identity(_) => x,
            Self::BurnLayer(m) => m.forward(x),
            Self::BurnRms(m) => m.forward(x),
        }
    }
}

/// `From` impls: each config is a [`NormConfig`], each module a [`Norm`].
macro_rules! into_variant {
    ($($from:ty => $to:ident :: $variant:ident),* $(,)?) => {$(
        impl From<$from> for $to {
            fn from(value: $from) -> Self {
                Self::$variant(value)
            }
        }
    )*};
}

into_variant! {
    LayerNormConfig => NormConfig::Layer,
    RmsNormConfig => NormConfig::Rms,
    DynamicTanhConfig => NormConfig::DynamicTanh,
    burn::nn::LayerNormConfig => NormConfig::BurnLayer,
    burn::nn::RmsNormConfig => NormConfig::BurnRms,
}

impl<B: Backend> From<LayerNorm<B>> for Norm<B> {
    fn from(value: LayerNorm<B>) -> Self {
        Self::Layer(value)
    }
}

impl<B: Backend> From<RmsNorm<B>> for Norm<B> {
    fn from(value: RmsNorm<B>) -> Self {
        Self::Rms(value)
    }
}

impl<B: Backend> From<DynamicTanh<B>> for Norm<B> {
    fn from(value: DynamicTanh<B>) -> Self {
        Self::DynamicTanh(value)
    }
}

impl<B: Backend> From<Identity> for Norm<B> {
    fn from(value: Identity) -> Self {
        Self::Identity(value)
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::{TensorData, Tolerance};

    use super::*;

    type B = NdArray;

    fn x() -> Tensor<B, 2> {
        Tensor::from_floats([[3.0, 4.0]], &Default::default())
    }

    #[test]
    fn each_kind_computes_its_own_formula() {
        let device = Default::default();
        let cases = [
            (NormConfig::layer(2), [-0.99998, 0.99998]), // (x − 3.5) / √(0.25 + 1e-5)
            (NormConfig::rms(2), [0.848528, 1.131371]),  // x / √(12.5 + 1e-6)
            (NormConfig::dynamic_tanh(2), [0.905148, 0.964028]), // tanh(0.5·x)
            (NormConfig::Identity, [3.0, 4.0]),
        ];
        for (config, expected) in cases {
            let norm: Norm<B> = config.init(&device);
            norm.forward(x())
                .into_data()
                .assert_approx_eq::<f32>(&TensorData::from([expected]), Tolerance::absolute(1e-5));
        }
    }

    #[test]
    fn with_normalized_shape_keeps_the_options() {
        let config = NormConfig::from(RmsNormConfig::new(vec![4]).with_bias(true))
            .with_normalized_shape(vec![2, 6]);
        let NormConfig::Rms(rms) = &config else {
            panic!("expected Rms, got {}", config.kind_name());
        };
        assert_eq!(rms.normalized_shape, [2, 6]);
        assert!(rms.bias);
        // Burn's baselines span the last dimension only.
        let burn = NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(4))
            .with_normalized_shape(vec![2, 6]);
        let NormConfig::BurnLayer(ln) = &burn else {
            panic!("expected BurnLayer, got {}", burn.kind_name());
        };
        assert_eq!(ln.d_model, 6);
    }

    #[test]
    fn kind_names() {
        let names: Vec<_> = [
            NormConfig::layer(1),
            NormConfig::rms(1),
            NormConfig::dynamic_tanh(1),
            NormConfig::Identity,
            NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(1)),
            NormConfig::BurnRms(burn::nn::RmsNormConfig::new(1)),
        ]
        .iter()
        .map(NormConfig::kind_name)
        .collect();
        assert_eq!(
            names,
            ["layer", "rms", "dyt", "identity", "burn-layer", "burn-rms"]
        );
    }

    #[test]
    fn display_shows_the_chosen_module() {
        let device = Default::default();
        let layer: Norm<B> = NormConfig::layer(4).init(&device);
        assert_eq!(
            format!("{layer}"),
            "Layer {\n  _0: LayerNorm {normalized_shape: [4], epsilon: 0.00001, affine: \
             Elementwise, bias: true, variance: Biased, epsilon_placement: InsideSqrt, \
             params: 8}\n  params: 8\n}"
        );
        let identity: Norm<B> = NormConfig::Identity.init(&device);
        assert_eq!(format!("{identity}"), "Identity {\n  _0: Identity\n}");
    }

    #[test]
    #[should_panic(expected = "RmsNormConfig.normalized_shape must not contain 0, got [0]")]
    fn init_panics_as_the_chosen_config() {
        NormConfig::rms(0).init::<B>(&Default::default());
    }

    #[test]
    #[should_panic(expected = "LayerNorm expected the input's trailing dimensions to be [3]")]
    fn forward_panics_as_the_chosen_module() {
        NormConfig::layer(3)
            .init::<B>(&Default::default())
            .forward(x());
    }

    #[test]
    fn check_refuses_as_the_chosen_config() {
        let refusal = |config: NormConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            refusal(NormConfig::rms(0)),
            "RmsNormConfig.normalized_shape must not contain 0, got [0]"
        );
        let layer = LayerNormConfig::new(vec![4]).with_epsilon(0.0);
        assert_eq!(
            refusal(layer.into()),
            "LayerNormConfig.epsilon must be positive and finite, got 0"
        );
        assert_eq!(
            refusal(NormConfig::dynamic_tanh(4).with_normalized_shape(vec![])),
            "DynamicTanhConfig.normalized_shape must name at least one dimension, got []"
        );
    }

    #[test]
    fn check_accepts_the_defaults_and_the_baselines() {
        for config in [
            NormConfig::layer(4),
            NormConfig::rms(4),
            NormConfig::dynamic_tanh(4),
            NormConfig::Identity,
            NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(4)),
            NormConfig::BurnRms(burn::nn::RmsNormConfig::new(4)),
        ] {
            assert_eq!(config.check(), Ok(()), "{}", config.kind_name());
        }
    }
}
