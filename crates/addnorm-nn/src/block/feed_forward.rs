//! The position-wise feed-forward sublayer.
//!
//! ```text
//! FFN(x) = act(x·W₁ + b₁)·W₂ + b₂        act ∈ {GELU, ReLU}
//! FFN(x) = Norm(act(x·W₁ + b₁))·W₂ + b₂  with NormFormer's FFN norm (over d_ff)
//! ```
//!
//! The hidden norm is NormFormer's "FFN LN" (Shleifer et al. 2021, §2): a norm after the
//! activation, over the `d_ff` hidden features, before W₂ (fairseq's `ffn_layernorm`).
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; `W₁: [d_model, d_ff]`, `W₂: [d_ff, d_model]`; the
//!   hidden activations and their norm: `[batch, seq, d_ff]`
//! - output: `[batch, seq, d_model]`

use addnorm_kernels::NormBackend;
use addnorm_kernels::gelu::gelu;
use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Dropout, DropoutConfig, Linear, Relu};
use burn::tensor::{Tensor, backend::Backend};
use serde::{Deserialize, Serialize};

use super::linear::{self, projection, xavier_normal};
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
}

impl FeedForwardConfig {
    /// Builds the sublayer on `device`.
    ///
    /// # Panics
    /// If a width is zero or `dropout` is outside [0, 1).
    pub fn init<B: Backend>(&self, device: &B::Device) -> FeedForward<B> {
        assert!(
            self.d_model > 0 && self.d_ff > 0,
            "FeedForwardConfig widths must be positive, got d_model {} and d_ff {}",
            self.d_model,
            self.d_ff
        );
        super::validate_dropout("FeedForwardConfig", self.dropout);
        FeedForward {
            inner: projection(self.d_model, self.d_ff, &self.initializer, device),
            outer: projection(self.d_ff, self.d_model, &self.initializer, device),
            hidden_norm: self
                .hidden_norm
                .as_ref()
                .map(|norm| norm.with_d_model(self.d_ff).init(device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            activation: self.activation,
        }
    }
}

/// `FFN(x) = act(x·W₁ + b₁)·W₂ + b₂` (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct FeedForward<B: Backend> {
    /// The first projection, W₁: `[d_model, d_ff]`.
    pub inner: Linear<B>,
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
        let hidden = linear::forward(&self.inner, x);
        let hidden = match self.activation {
            Activation::Gelu => gelu(hidden),
            Activation::Relu => Relu::new().forward(hidden),
        };
        let hidden = self.dropout.forward(hidden);
        let hidden = match &self.hidden_norm {
            Some(norm) => norm.forward(hidden),
            None => hidden,
        };
        linear::forward(&self.outer, hidden)
    }
}
