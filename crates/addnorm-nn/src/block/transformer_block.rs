//! One transformer layer: self-attention and a feed-forward network, each inside an
//! [`AddNorm`] residual connection placed as the [`Placement`] says.
//!
//! ```text
//! x = attention_residual(x, F = MHSA)
//! x = feed_forward_residual(x, F = FFN)
//! ```
//! each one the [`Placement`]'s formula with that F (see [`Placement`] for the table).
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; output: the same

use burn::config::Config;
use burn::module::{Initializer, Module, Param};
use burn::nn::Linear;
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::add_norm::AddNorm;
use super::attention::{MultiHeadSelfAttention, MultiHeadSelfAttentionConfig};
use super::feed_forward::{Activation, FeedForward, FeedForwardConfig};
use super::linear::xavier_normal;
use super::placement::Placement;
use crate::norm::NormConfig;

/// Configuration of a [`TransformerBlock`].
#[derive(Config, Debug)]
pub struct TransformerBlockConfig {
    /// The model width; must be a multiple of `n_heads`.
    pub d_model: usize,
    /// The number of attention heads.
    pub n_heads: usize,
    /// The feed-forward hidden width.
    pub d_ff: usize,
    /// Where the norms sit around the residual connections. Default: `Placement::Pre`
    #[config(default = "Placement::Pre")]
    pub placement: Placement,
    /// Which norm, with its options (its width is set to `d_model`).
    /// Default: `NormConfig::layer(0)` (a default LayerNorm)
    #[config(default = "NormConfig::layer(0)")]
    pub norm: NormConfig,
    /// The number of layers of the stack this block belongs to: DeepNorm's α and β depend
    /// on it. Default: 1
    #[config(default = 1)]
    pub n_layers: usize,
    /// Causal self-attention. Default: true
    #[config(default = true)]
    pub causal: bool,
    /// Dropout on attention weights, hidden activations and each residual branch.
    /// Default: 0.0
    #[config(default = 0.0)]
    pub dropout: f64,
    /// The feed-forward nonlinearity. Default: `Activation::Gelu`
    #[config(default = "Activation::Gelu")]
    pub activation: Activation,
    /// QK-norm inside attention. Default: None
    #[config(default = "None")]
    pub qk_norm: Option<NormConfig>,
    /// Separate query and key QK-norms (Wortsman et al. 2023's QK-layernorm). Default: false
    #[config(default = false)]
    pub separate_qk_norms: bool,
    /// Start W^Q and W^K at zero. Default: false
    #[config(default = false)]
    pub zero_init_query_key: bool,
    /// The initializer of every projection weight (biases start at zero).
    /// Default: Xavier-normal, gain 1
    #[config(default = "xavier_normal(1.0)")]
    pub initializer: Initializer,
    /// LayerScale (Touvron et al. 2021): a learnable per-channel gain λ on each sublayer's
    /// branch, every entry starting at this value (CaiT uses 0.1 up to depth 18, 1e-5 at 24,
    /// 1e-6 deeper); see [`AddNorm`]. Default: None
    #[config(default = "None")]
    pub layer_scale: Option<f64>,
}

/// Multiplies a projection's weight by `scale` (DeepNorm's β).
fn scale_weight<B: Backend>(linear: &mut Linear<B>, scale: f64) {
    if scale != 1.0 {
        linear.weight = Param::from_tensor((linear.weight.val() * scale).detach());
    }
}

impl TransformerBlockConfig {
    /// Builds the block on `device`.
    ///
    /// # Panics
    /// If `d_model` is not a positive multiple of `n_heads`, `d_ff` or `n_layers` is zero,
    /// or `dropout` is outside [0, 1).
    pub fn init<B: Backend>(&self, device: &B::Device) -> TransformerBlock<B> {
        assert!(
            self.n_layers > 0,
            "TransformerBlockConfig.n_layers must be at least 1, got 0"
        );
        super::validate_dropout("TransformerBlockConfig", self.dropout);
        let mut attention = MultiHeadSelfAttentionConfig::new(self.d_model, self.n_heads)
            .with_causal(self.causal)
            .with_dropout(self.dropout)
            .with_qk_norm(self.qk_norm.clone())
            .with_separate_qk_norms(self.separate_qk_norms)
            .with_zero_init_query_key(self.zero_init_query_key)
            .with_initializer(self.initializer.clone())
            .init(device);
        let mut feed_forward = FeedForwardConfig::new(self.d_model, self.d_ff)
            .with_activation(self.activation)
            .with_dropout(self.dropout)
            .with_initializer(self.initializer.clone())
            .init(device);
        let beta = self.placement.init_scale(self.n_layers);
        scale_weight(&mut attention.value, beta);
        scale_weight(&mut attention.output, beta);
        scale_weight(&mut feed_forward.inner, beta);
        scale_weight(&mut feed_forward.outer, beta);
        let add_norm = || {
            let residual = AddNorm::new(
                self.placement,
                &self.norm,
                self.d_model,
                self.n_layers,
                self.dropout,
                device,
            );
            match self.layer_scale {
                Some(init) => residual.with_layer_scale(self.d_model, init, device),
                None => residual,
            }
        };
        let mut feed_forward_residual = add_norm();
        if self.placement == Placement::Parallel {
            // Both sublayers read the attention connection's norm.
            feed_forward_residual.input_norm = None;
        }
        TransformerBlock {
            attention,
            attention_residual: add_norm(),
            feed_forward,
            feed_forward_residual,
        }
    }
}

/// A transformer layer (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct TransformerBlock<B: Backend> {
    /// The self-attention sublayer.
    pub attention: MultiHeadSelfAttention<B>,
    /// The residual connection around attention, with its norms.
    pub attention_residual: AddNorm<B>,
    /// The feed-forward sublayer.
    pub feed_forward: FeedForward<B>,
    /// The residual connection around the feed-forward network, with its norms.
    pub feed_forward_residual: AddNorm<B>,
}

impl<B: NormBackend> TransformerBlock<B> {
    /// Applies the layer.
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        if self.attention_residual.placement() == Placement::Parallel {
            return self.parallel(x, |h| self.attention.forward(h));
        }
        let x = self
            .attention_residual
            .forward(x, |h| self.attention.forward(h));
        self.feed_forward_residual
            .forward(x, |h| self.feed_forward.forward(h))
    }

    /// The `Parallel` placement: `x + branch(attention(Norm(x))) + branch(FFN(Norm(x)))`,
    /// one norm for both sublayers.
    fn parallel(
        &self,
        x: Tensor<B, 3>,
        attention: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let (r1, r2) = (&self.attention_residual, &self.feed_forward_residual);
        let h = r1.normalized_input(x.clone());
        let a = r1.branch(attention(h.clone()));
        x + a + r2.branch(self.feed_forward.forward(h))
    }

    /// Applies the layer and also returns its largest attention logit (a detached `[1]`
    /// tensor).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `([batch, seq, d_model], [1])`
    pub fn forward_with_max_logit(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Tensor<B, 1>) {
        let mut max_logit = None;
        let attention = |h| {
            let (y, m) = self.attention.forward_with_max_logit(h);
            max_logit = Some(m);
            y
        };
        if self.attention_residual.placement() == Placement::Parallel {
            let x = self.parallel(x, attention);
            return (x, max_logit.expect("attention ran"));
        }
        let x = self.attention_residual.forward(x, attention);
        let x = self
            .feed_forward_residual
            .forward(x, |h| self.feed_forward.forward(h));
        (x, max_logit.expect("attention ran"))
    }
}
