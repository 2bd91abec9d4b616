//! The position-wise feed-forward sublayer.
//!
//! ```text
//! FFN(x) = act(x·W₁ + b₁)·W₂ + b₂                     act ∈ {GELU, GELU (tanh), ReLU, SiLU}
//! FFN(x) = (act(x·W_g + b_g) ⊙ (x·W₁ + b₁))·W₂ + b₂   gated (GLU variants: GeGLU, SwiGLU)
//! FFN(x) = Norm(h)·W₂ + b₂                             with NormFormer's FFN norm (over d_ff)
//! ```
//!
//! The gated form is Shazeer's (2020) GLU family: GeGLU with GELU (Gemma, tanh form),
//! SwiGLU with SiLU (Llama, OLMo 2). In Hugging Face's names W_g is `gate_proj`, W₁
//! `up_proj` and W₂ `down_proj`. Without biases (`bias = false`) every `b` is absent.
//!
//! The hidden norm is NormFormer's "FFN LN" (Shleifer et al. 2021, §2): a norm after the
//! activation, over the `d_ff` hidden features, before W₂ (fairseq's `ffn_layernorm`).
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; `W₁`, `W_g: [d_model, d_ff]`, `W₂: [d_ff, d_model]`;
//!   the hidden activations and their norm: `[batch, seq, d_ff]`
//! - output: `[batch, seq, d_model]`

use addnorm_kernels::NormBackend;
use addnorm_kernels::gelu::gelu;
use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Dropout, DropoutConfig, Linear, Relu};
use burn::tensor::activation::{gelu_approximate, silu};
use burn::tensor::{Tensor, backend::Backend};
use serde::{Deserialize, Serialize};

use super::linear::{self, projection, xavier_normal};
use crate::config_error::{ConfigError, ensure, or_panic};
use crate::norm::{Norm, NormConfig};

/// The feed-forward nonlinearity. New ones may be added, so matches need a wildcard arm.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Activation {
    /// GELU, the exact form `x·Φ(x) = ½x(1 + erf(x/√2))`, as PyTorch's `"gelu"`, through
    /// [`addnorm_kernels::gelu`] (one fused pass each way where the backend has the
    /// kernel), with the exact gradient `Φ(x) + x·φ(x)`: Burn 0.21's `gelu` pairs the exact
    /// forward with the tanh approximation's derivative (off by up to ~1e-3).
    #[default]
    Gelu,
    /// ReLU, as the original Transformer and PyTorch's default `"relu"`.
    Relu,
    /// GELU's tanh approximation `½x(1 + tanh(√(2/π)(x + 0.044715x³)))`, PyTorch's
    /// `gelu(approximate="tanh")` and Hugging Face's `"gelu_pytorch_tanh"` (Gemma's
    /// GeGLU), through Burn's ops with autodiff's exact gradient of this formula.
    GeluTanh,
    /// SiLU (swish) `x·σ(x)`, PyTorch's `"silu"` (SwiGLU in Llama and OLMo 2), through
    /// Burn's ops.
    Silu,
}

impl Activation {
    /// The nonlinearity applied to `x`.
    pub fn forward<B: NormBackend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Activation::Gelu => gelu(x),
            Activation::Relu => Relu::new().forward(x),
            Activation::GeluTanh => gelu_approximate(x),
            Activation::Silu => silu(x),
        }
    }
}

/// Configuration of a [`FeedForward`].
#[derive(Config, Debug)]
pub struct FeedForwardConfig {
    /// The model width.
    pub d_model: usize,
    /// The hidden width.
    pub d_ff: usize,
    /// The nonlinearity. Default: `Activation::Gelu`
    #[config(default = "Activation::Gelu")]
    pub activation: Activation,
    /// Dropout on the hidden activations. Default: 0.0
    #[config(default = 0.0)]
    pub dropout: f64,
    /// The initializer of W₁ and W₂ (biases start at zero). Default: Xavier-normal, gain 1
    #[config(default = "xavier_normal(1.0)")]
    pub initializer: Initializer,
    /// NormFormer's FFN norm: this norm (fitted to `d_ff`) on the hidden activations, after
    /// the nonlinearity and before W₂. Default: None
    #[config(default = "None")]
    pub hidden_norm: Option<NormConfig>,
    /// The gated (GLU) form: `act(x·W_g) ⊙ (x·W₁)` as the hidden activations. Default: false
    #[config(default = false)]
    pub gated: bool,
    /// Biases on the projections. Default: true
    #[config(default = true)]
    pub bias: bool,
}

impl FeedForwardConfig {
    /// Checks the widths, the dropout and the hidden norm without building anything: the
    /// error `init` would panic with, or `Ok`.
    ///
    /// # Errors
    /// If a width is zero, `dropout` is outside [0, 1), or the hidden norm is invalid at
    /// width `d_ff` (see [`NormConfig::check`]).
    pub fn check(&self) -> Result<(), ConfigError> {
        let (d_model, d_ff) = (self.d_model, self.d_ff);
        ensure(d_model > 0 && d_ff > 0, || {
            ConfigError::new(
                "FeedForwardConfig",
                format!(
                    "FeedForwardConfig widths must be positive, got d_model {d_model} and d_ff \
                     {d_ff}"
                ),
            )
        })?;
        super::validate_dropout("FeedForwardConfig", self.dropout)?;
        match &self.hidden_norm {
            Some(norm) => norm.with_d_model(d_ff).check(),
            None => Ok(()),
        }
    }

    /// Builds the sublayer on `device`.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> FeedForward<B> {
        or_panic(self.check());
        let p = |shape| projection(shape, &self.initializer, self.bias, device);
        FeedForward {
            inner: p([self.d_model, self.d_ff]),
            gate: self.gated.then(|| p([self.d_model, self.d_ff])),
            outer: p([self.d_ff, self.d_model]),
            hidden_norm: self
                .hidden_norm
                .as_ref()
                .map(|norm| norm.with_d_model(self.d_ff).init(device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            activation: self.activation,
        }
    }
}

/// `FFN(x) = act(x·W₁ + b₁)·W₂ + b₂`, or its gated form (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct FeedForward<B: Backend> {
    /// The first projection, W₁: `[d_model, d_ff]` (`up_proj` in the gated form).
    pub inner: Linear<B>,
    /// The gate's projection W_g, `[d_model, d_ff]`, in the gated form (`gate_proj`).
    pub gate: Option<Linear<B>>,
    /// The second projection, W₂: `[d_ff, d_model]`.
    pub outer: Linear<B>,
    /// NormFormer's norm over the `d_ff` hidden activations, when configured.
    pub hidden_norm: Option<Norm<B>>,
    dropout: Dropout,
    #[module(skip)]
    activation: Activation,
}

impl<B: NormBackend> FeedForward<B> {
    /// Applies the sublayer.
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.apply(x, None)
    }

    /// Applies the network and adds the result to `residual` inside W₂'s GEMM:
    /// `residual + FFN(x)`, with the bits of that sum and no tensor for `FFN(x)` of its own
    /// (see [`linear_onto`](addnorm_kernels::linear::linear_onto)).
    ///
    /// # Shapes
    /// - input, `residual` and output: `[batch, seq, d_model]`
    pub fn forward_onto(&self, x: Tensor<B, 3>, residual: Tensor<B, 3>) -> Tensor<B, 3> {
        self.apply(x, Some(residual))
    }

    /// The network on `x`, added to `residual` when given one.
    pub(crate) fn apply(&self, x: Tensor<B, 3>, residual: Option<Tensor<B, 3>>) -> Tensor<B, 3> {
        linear::forward_with_residual(&self.outer, self.hidden(x), residual)
    }

    /// The hidden activations W₂ reads: `act(x·W₁ + b₁)` (gated, dropped out and normed as
    /// configured), `[batch, seq, d_ff]`.
    fn hidden(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        let hidden = match &self.gate {
            Some(gate) => {
                let gate = self.activation.forward(linear::forward(gate, x.clone()));
                gate * linear::forward(&self.inner, x)
            }
            None => self.activation.forward(linear::forward(&self.inner, x)),
        };
        let hidden = self.dropout.forward(hidden);
        match &self.hidden_norm {
            Some(norm) => norm.forward(hidden),
            None => hidden,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::norm::LayerNormConfig;

    fn refusal(config: FeedForwardConfig) -> String {
        config.check().unwrap_err().to_string()
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        assert_eq!(
            refusal(FeedForwardConfig::new(0, 8)),
            "FeedForwardConfig widths must be positive, got d_model 0 and d_ff 8"
        );
        assert_eq!(
            refusal(FeedForwardConfig::new(4, 8).with_dropout(1.0)),
            "FeedForwardConfig.dropout must lie in [0, 1), got 1"
        );
        // The hidden norm, at the width d_ff it is fitted to.
        let bad_norm = LayerNormConfig::new(vec![1]).with_epsilon(0.0);
        assert_eq!(
            refusal(FeedForwardConfig::new(4, 8).with_hidden_norm(Some(bad_norm.into()))),
            "LayerNormConfig.epsilon must be positive and finite, got 0"
        );
    }

    #[test]
    fn check_accepts_the_defaults_and_the_gated_form() {
        assert_eq!(FeedForwardConfig::new(4, 8).check(), Ok(()));
        let gated = FeedForwardConfig::new(4, 8)
            .with_gated(true)
            .with_hidden_norm(Some(NormConfig::rms(0)));
        assert_eq!(
            gated.check(),
            Ok(()),
            "the hidden norm takes d_ff as its width"
        );
    }
}
