//! GroupNorm (Wu & He, 2018) and InstanceNorm (Ulyanov et al., 2016) over channels-first
//! inputs `[N, C, …]`, with Burn's API (`GroupNormConfig::new(num_groups, num_channels)`,
//! `InstanceNormConfig::new(num_channels)`) and addnorm's fused kernels
//! ([`addnorm_kernels::group_norm`]).
//!
//! ```text
//! the C channels in G contiguous groups of C/G; per sample n and group g, over the group's
//! channels and every spatial position:
//!     μ = mean(x)      σ² = mean((x − μ)²)          (biased, as PyTorch and Burn)
//!     y[n, c, …] = (x[n, c, …] − μ) / √(σ² + ε) · γ_c + β_c
//! InstanceNorm: G = C (each channel of each sample on its own)
//! ```
//!
//! # Shapes
//! - input: `[N, C, …]`, any rank ≥ 2 (`[N, C]`, `[N, C, L]`, `[N, C, H, W]`, …)
//! - γ, β: `[C]`
//! - output: same as the input
//!
//! # Example
//! ```
//! use addnorm_nn::{GroupNorm, GroupNormConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Tensor, TensorData, Tolerance};
//!
//! let device = Default::default();
//! // 4 channels in 2 groups, on [N = 1, C = 4, H = 1, W = 2].
//! let norm: GroupNorm<NdArray> = GroupNormConfig::new(2, 4).init(&device);
//! let x = Tensor::<NdArray, 4>::from_floats([[[[1.0, 2.0]], [[3.0, 4.0]], [[5.0, 5.0]], [[7.0, 7.0]]]], &device);
//! let y = norm.forward(x);
//! // Group 0 reads 1, 2, 3, 4 (μ = 2.5, σ² = 1.25); group 1 reads 5, 5, 7, 7 (μ = 6, σ² = 1).
//! let s = 1.25f32.sqrt();
//! y.into_data().assert_approx_eq::<f32>(
//!     &TensorData::from([[[[-1.5 / s, -0.5 / s]], [[0.5 / s, 1.5 / s]], [[-1.0, -1.0]], [[1.0, 1.0]]]]),
//!     Tolerance::absolute(1e-4),
//! );
//! ```

use addnorm_kernels::GroupNormBackend;
use addnorm_kernels::group_norm::{GroupNormSpec, group_norm};
use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::{Tensor, backend::Backend};

use super::rows::validate_epsilon;
use crate::config_error::{ConfigError, ensure, or_panic};

/// Configuration of a [`GroupNorm`], built with [`GroupNormConfig::init`]; Burn's
/// `burn::nn::GroupNormConfig`, field for field.
#[derive(Config, Debug)]
pub struct GroupNormConfig {
    /// Groups `G` the channels are split into (contiguous, of `C / G` channels each).
    pub num_groups: usize,
    /// Channels `C`, the input's dimension 1.
    pub num_channels: usize,
    /// ε, added to the variance under the root. Default: 1e-5
    #[config(default = 1e-5)]
    pub epsilon: f64,
    /// Whether γ and β (one per channel) are learned. Default: true
    #[config(default = true)]
    pub affine: bool,
}

impl GroupNormConfig {
    /// Checks the options without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If `num_groups` or `num_channels` is 0, `num_channels` is not a multiple of
    /// `num_groups`, or `epsilon` is not positive and finite. The message names the field.
    pub fn check(&self) -> Result<(), ConfigError> {
        let (groups, channels) = (self.num_groups, self.num_channels);
        ensure(groups > 0 && channels > 0, || {
            ConfigError::new(
                "GroupNormConfig",
                format!(
                    "GroupNormConfig.num_groups and num_channels must be positive, got \
                     {groups} and {channels}"
                ),
            )
        })?;
        ensure(channels.is_multiple_of(groups), || {
            ConfigError::of_field(
                "GroupNormConfig.num_channels",
                format_args!("({channels}) must be a multiple of num_groups ({groups})"),
            )
        })?;
        validate_epsilon("GroupNormConfig", self.epsilon)
    }

    /// Builds the module on `device`, with γ = 1 and β = 0 when affine.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> GroupNorm<B> {
        or_panic(self.check());
        let (gamma, beta) = affine_parameters(self.affine, self.num_channels, device);
        GroupNorm {
            gamma,
            beta,
            num_groups: self.num_groups,
            num_channels: self.num_channels,
            epsilon: self.epsilon,
        }
    }
}

/// An optional per-channel parameter, `[C]`.
type ChannelParam<B> = Option<Param<Tensor<B, 1>>>;

/// γ = 1 and β = 0, `[channels]`, when `affine`.
fn affine_parameters<B: Backend>(
    affine: bool,
    channels: usize,
    device: &B::Device,
) -> (ChannelParam<B>, ChannelParam<B>) {
    if !affine {
        return (None, None);
    }
    (
        Some(Param::from_tensor(Tensor::ones([channels], device))),
        Some(Param::from_tensor(Tensor::zeros([channels], device))),
    )
}

/// Group normalization over `[N, C, …]` (see the [module docs](self)). Built with
/// [`GroupNormConfig`]; its forward takes the fused kernel where the backend has one.
#[derive(Module, Debug)]
pub struct GroupNorm<B: Backend> {
    /// γ, `[C]`, when affine.
    pub gamma: Option<Param<Tensor<B, 1>>>,
    /// β, `[C]`, when affine.
    pub beta: Option<Param<Tensor<B, 1>>>,
    /// Groups `G`.
    pub num_groups: usize,
    /// Channels `C`.
    pub num_channels: usize,
    /// ε.
    pub epsilon: f64,
}

/// The forward both modules share: `x: [N, C, …]` normalized in `groups` groups.
fn normalize<B: GroupNormBackend, const D: usize>(
    module: &str,
    x: Tensor<B, D>,
    (gamma, beta): (&ChannelParam<B>, &ChannelParam<B>),
    (groups, channels, epsilon): (usize, usize, f64),
) -> Tensor<B, D> {
    let dims = x.dims();
    assert!(
        D >= 2 && dims[1] == channels,
        "{module} expected an input [N, {channels}, …] (its num_channels in dimension 1), got \
         shape {dims:?}"
    );
    let affine = match (gamma, beta) {
        (Some(g), Some(b)) => Some((g.val(), b.val())),
        _ => None,
    };
    group_norm(x, affine, GroupNormSpec { groups, epsilon })
}

impl<B: GroupNormBackend> GroupNorm<B> {
    /// Normalizes each group of channels of each sample of `x: [N, C, …]` (any rank ≥ 2),
    /// then scales and shifts each channel.
    ///
    /// # Panics
    /// If `x` has rank < 2 or its dimension 1 is not `num_channels`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        normalize(
            "GroupNorm",
            x,
            (&self.gamma, &self.beta),
            (self.num_groups, self.num_channels, self.epsilon),
        )
    }
}

/// Configuration of an [`InstanceNorm`], built with [`InstanceNormConfig::init`]; Burn's
/// `burn::nn::InstanceNormConfig`, field for field (note that its `affine` defaults to
/// true, PyTorch's `nn.InstanceNorm*d` to false).
#[derive(Config, Debug)]
pub struct InstanceNormConfig {
    /// Channels `C`, the input's dimension 1.
    pub num_channels: usize,
    /// ε, added to the variance under the root. Default: 1e-5
    #[config(default = 1e-5)]
    pub epsilon: f64,
    /// Whether γ and β (one per channel) are learned. Default: true
    #[config(default = true)]
    pub affine: bool,
}

impl InstanceNormConfig {
    /// Checks the options without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If `num_channels` is 0 or `epsilon` is not positive and finite.
    pub fn check(&self) -> Result<(), ConfigError> {
        ensure(self.num_channels > 0, || {
            ConfigError::of_field("InstanceNormConfig.num_channels", "must be positive, got 0")
        })?;
        validate_epsilon("InstanceNormConfig", self.epsilon)
    }

    /// Builds the module on `device`, with γ = 1 and β = 0 when affine.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> InstanceNorm<B> {
        or_panic(self.check());
        let (gamma, beta) = affine_parameters(self.affine, self.num_channels, device);
        InstanceNorm {
            gamma,
            beta,
            num_channels: self.num_channels,
            epsilon: self.epsilon,
        }
    }
}

/// Instance normalization over `[N, C, …]`: GroupNorm with one group per channel (see the
/// [module docs](self)). Built with [`InstanceNormConfig`].
#[derive(Module, Debug)]
pub struct InstanceNorm<B: Backend> {
    /// γ, `[C]`, when affine.
    pub gamma: Option<Param<Tensor<B, 1>>>,
    /// β, `[C]`, when affine.
    pub beta: Option<Param<Tensor<B, 1>>>,
    /// Channels `C`.
    pub num_channels: usize,
    /// ε.
    pub epsilon: f64,
}

impl<B: GroupNormBackend> InstanceNorm<B> {
    /// Normalizes each channel of each sample of `x: [N, C, …]` (any rank ≥ 2) over its
    /// spatial positions, then scales and shifts it.
    ///
    /// # Panics
    /// If `x` has rank < 2 or its dimension 1 is not `num_channels`.
    pub fn forward<const D: usize>(&self, x: Tensor<B, D>) -> Tensor<B, D> {
        normalize(
            "InstanceNorm",
            x,
            (&self.gamma, &self.beta),
            (self.num_channels, self.num_channels, self.epsilon),
        )
    }
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::tensor::{Tensor, TensorData, Tolerance};

    use super::*;

    type B = NdArray;

    #[test]
    fn instance_norm_is_group_norm_with_one_group_per_channel() {
        let device = Default::default();
        let x = Tensor::<B, 3>::from_floats(
            [
                [[1.0, 4.0, 2.0], [0.5, -3.0, 7.0]],
                [[2.0, 2.5, 9.0], [1.0, 1.0, 3.0]],
            ],
            &device,
        );
        let instance: InstanceNorm<B> = InstanceNormConfig::new(2).init(&device);
        let group: GroupNorm<B> = GroupNormConfig::new(2, 2).init(&device);
        instance
            .forward(x.clone())
            .into_data()
            .assert_approx_eq::<f32>(&group.forward(x).into_data(), Tolerance::absolute(1e-6));
    }

    #[test]
    fn rank_two_inputs_normalize_each_group_of_features() {
        let device = Default::default();
        let norm: GroupNorm<B> = GroupNormConfig::new(1, 4).with_affine(false).init(&device);
        assert!(norm.gamma.is_none() && norm.beta.is_none());
        // One group of [1, 2, 3, 4]: μ = 2.5, σ² = 1.25.
        let s = (1.25f32 + 1e-5).sqrt();
        norm.forward(Tensor::<B, 2>::from_floats([[1.0, 2.0, 3.0, 4.0]], &device))
            .into_data()
            .assert_approx_eq::<f32>(
                &TensorData::from([[-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s]]),
                Tolerance::absolute(1e-6),
            );
    }

    #[test]
    #[should_panic(
        expected = "GroupNormConfig.num_channels (6) must be a multiple of num_groups (4)"
    )]
    fn channels_that_do_not_split_are_rejected() {
        let _ = GroupNormConfig::new(4, 6).init::<B>(&Default::default());
    }

    #[test]
    #[should_panic(
        expected = "GroupNorm expected an input [N, 8, …] (its num_channels in dimension 1), got shape [2, 4, 3]"
    )]
    fn a_wrong_channel_count_is_rejected() {
        let device = Default::default();
        let norm: GroupNorm<B> = GroupNormConfig::new(2, 8).init(&device);
        let _ = norm.forward(Tensor::<B, 3>::zeros([2, 4, 3], &device));
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        let refusal = |config: GroupNormConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            refusal(GroupNormConfig::new(0, 4)),
            "GroupNormConfig.num_groups and num_channels must be positive, got 0 and 4"
        );
        assert_eq!(
            refusal(GroupNormConfig::new(4, 6)),
            "GroupNormConfig.num_channels (6) must be a multiple of num_groups (4)"
        );
        assert_eq!(
            refusal(GroupNormConfig::new(2, 4).with_epsilon(0.0)),
            "GroupNormConfig.epsilon must be positive and finite, got 0"
        );
        let instance = |config: InstanceNormConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            instance(InstanceNormConfig::new(0)),
            "InstanceNormConfig.num_channels must be positive, got 0"
        );
        assert_eq!(
            instance(InstanceNormConfig::new(3).with_epsilon(-1.0)),
            "InstanceNormConfig.epsilon must be positive and finite, got -1"
        );
    }

    #[test]
    fn check_accepts_the_defaults() {
        assert_eq!(GroupNormConfig::new(2, 4).check(), Ok(()));
        assert_eq!(InstanceNormConfig::new(3).check(), Ok(()));
    }
}
