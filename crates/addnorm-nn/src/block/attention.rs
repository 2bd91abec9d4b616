//! Multi-head self-attention, with an optional causal mask, QK-norm, and zero-initialized
//! W^Q / W^K.
//!
//! ```text
//! Q = x·W^Q + b^Q,  K = x·W^K + b^K,  V = x·W^V + b^V     split into h heads of d_head
//! Q, K ← Norm(Q), Norm(K)                                  per head, with QK-norm
//! S = Q·Kᵀ / √d_head        (future positions set to −∞ when causal)
//! A = softmax(S)·V          heads concatenated back to d_model
//! MHSA(x) = A·W^O + b^O
//! ```
//!
//! With W^Q = W^K = 0 every score is 0 and attention averages the (visible) values: the
//! setting of Xiong et al.'s (2020) gradient analysis.
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; scores `S: [batch, heads, seq, seq]`
//! - output: `[batch, seq, d_model]`

use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::{Bool, Tensor, activation::softmax};

use addnorm_kernels::NormBackend;

use super::linear::{projection, xavier_normal, zero_weight};
use crate::norm::{Norm, NormConfig};

/// Configuration of a [`MultiHeadSelfAttention`].
#[derive(Config, Debug)]
pub struct MultiHeadSelfAttentionConfig {
    /// The model width; must be divisible by `n_heads`.
    pub d_model: usize,
    /// The number of heads.
    pub n_heads: usize,
    /// Whether position t may attend only to positions ≤ t. Default: true
    #[config(default = true)]
    pub causal: bool,
    /// Dropout on the attention weights. Default: 0.0
    #[config(default = 0.0)]
    pub dropout: f64,
    /// QK-norm: this norm (fitted to `d_head`) is applied to each head's queries and keys
    /// before the dot product. Default: None
    #[config(default = "None")]
    pub qk_norm: Option<NormConfig>,
    /// Start W^Q and W^K at zero (Xiong et al.'s setting). Default: false
    #[config(default = false)]
    pub zero_init_query_key: bool,
    /// The initializer of the four projections' weights (biases start at zero).
    /// Default: Xavier-normal, gain 1
    #[config(default = "xavier_normal(1.0)")]
    pub initializer: Initializer,
}

impl MultiHeadSelfAttentionConfig {
    /// Builds the sublayer on `device`.
    ///
    /// # Panics
    /// If `d_model` is not a positive multiple of `n_heads`, or `dropout` is outside [0, 1).
    pub fn init<B: burn::tensor::backend::Backend>(
        &self,
        device: &B::Device,
    ) -> MultiHeadSelfAttention<B> {
        super::validate_heads("MultiHeadSelfAttentionConfig", self.d_model, self.n_heads);
        super::validate_dropout("MultiHeadSelfAttentionConfig", self.dropout);
        let d_head = self.d_model / self.n_heads;
        let p = |device| projection(self.d_model, self.d_model, &self.initializer, device);
        let (mut query, mut key) = (p(device), p(device));
        if self.zero_init_query_key {
            zero_weight(&mut query, device);
            zero_weight(&mut key, device);
        }
        MultiHeadSelfAttention {
            query,
            key,
            value: p(device),
            output: p(device),
            qk_norm: self
                .qk_norm
                .as_ref()
                .map(|n| n.with_d_model(d_head).init(device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            n_heads: self.n_heads,
            causal: self.causal,
        }
    }
}

/// Multi-head self-attention (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct MultiHeadSelfAttention<B: burn::tensor::backend::Backend> {
    /// W^Q, `[d_model, d_model]`.
    pub query: Linear<B>,
    /// W^K, `[d_model, d_model]`.
    pub key: Linear<B>,
    /// W^V, `[d_model, d_model]`.
    pub value: Linear<B>,
    /// W^O, `[d_model, d_model]`.
    pub output: Linear<B>,
    /// The QK-norm over `d_head`, if any.
    pub qk_norm: Option<Norm<B>>,
    dropout: Dropout,
    #[module(skip)]
    n_heads: usize,
    #[module(skip)]
    causal: bool,
}

impl<B: NormBackend> MultiHeadSelfAttention<B> {
    /// Applies self-attention.
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.attend(x, false).0
    }

    /// Applies self-attention and also returns the largest attention logit `max S` over the
    /// positions attended to (a detached `[1]` tensor).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `([batch, seq, d_model], [1])`
    pub fn forward_with_max_logit(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Tensor<B, 1>) {
        let (y, max_logit) = self.attend(x, true);
        (y, max_logit.expect("recorded"))
    }

    fn attend(&self, x: Tensor<B, 3>, record: bool) -> (Tensor<B, 3>, Option<Tensor<B, 1>>) {
        let [batch, seq, d_model] = x.dims();
        let heads = self.n_heads;
        let d_head = d_model / heads;
        let split = |linear: &Linear<B>| {
            linear
                .forward(x.clone())
                .reshape([batch, seq, heads, d_head])
                .swap_dims(1, 2)
        };
        let (mut q, mut k, v) = (split(&self.query), split(&self.key), split(&self.value));
        if let Some(norm) = &self.qk_norm {
            q = norm.forward(q);
            k = norm.forward(k);
        }
        let mut scores = q.matmul(k.swap_dims(2, 3)) / (d_head as f64).sqrt();
        if self.causal {
            let future = Tensor::<B, 2, Bool>::tril_mask([seq, seq], 0, &scores.device());
            scores = scores.mask_fill(future.expand([batch, heads, seq, seq]), f32::NEG_INFINITY);
        }
        let max_logit = record.then(|| scores.clone().detach().max());
        let weights = self.dropout.forward(softmax(scores, 3));
        let context = weights
            .matmul(v)
            .swap_dims(1, 2)
            .reshape([batch, seq, d_model]);
        (self.output.forward(context), max_logit)
    }
}
