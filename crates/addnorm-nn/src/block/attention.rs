//! Multi-head self-attention, with an optional causal mask, QK-norm, and zero-initialized
//! W^Q / W^K.
//!
//! ```text
//! Q = x·W^Q + b^Q,  K = x·W^K + b^K,  V = x·W^V + b^V     split into h heads of d_head
//! Q, K ← Norm(Q), Norm(K)                                  per head, with QK-norm
//! Q, K ← Norm_Q(Q), Norm_K(K)                              the same, separate_qk_norms
//! Q, K ← Norm(Q), Norm(K)        over all d_model, before the split: QkNormScope::FullWidth
//! S = Q·Kᵀ / √d_head        (future positions set to −∞ when causal)
//! S ← c·tanh(S/c)           with a logit soft cap c (Gemma 2), before the mask
//! A_h = softmax(S_h)·V_h    per head h
//! A_h ← γ_h·A_h             with NormFormer's head scale (γ learnable, 1 at init)
//! MHSA(x) = concat(A_1..A_h)·W^O + b^O
//! ```
//!
//! The head scale follows NormFormer's formula (Shleifer et al. 2021, §2,
//! `HeadScaleMHA = Concat(γ₁h₁, …, γₙhₙ)·W^O`), before W^O. (fairseq's `c_attn` scales the
//! output of W^O in `d_head`-wide slices instead, which is another function; its checkpoints'
//! `c_attn` is not read into this one.) The soft cap runs inside the fused kernels, CPU and
//! CubeCL.
//!
//! With W^Q = W^K = 0 every score is 0 and attention averages the (visible) values: the
//! setting of Xiong et al.'s (2020) gradient analysis.
//!
//! The heads are never split out of or merged back into `[batch, seq, d_model]`: the
//! projections' outputs go to [`addnorm_kernels::attention`] as they are, which reads head
//! `h` from columns `h·d_head..(h+1)·d_head` and writes the context the same way. On a
//! backend with fused attention (`NdArray`) that is one fused forward and one analytic
//! backward that keeps no `[batch, heads, seq, seq]` matrix; elsewhere the composite path.
//! With attention dropout above 0 the composite path is always taken (the fused kernels
//! have no dropout), on every backend.
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; scores `S: [batch, heads, seq, seq]` (materialized
//!   on the composite path only)
//! - output: `[batch, seq, d_model]`

use burn::config::Config;
use burn::module::{Initializer, Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::Tensor;

use addnorm_kernels::NormBackend;
use addnorm_kernels::attention::{AttentionSpec, attention, attention_with_max_logit, composite};

use super::linear::{self, projection, xavier_normal, zero_weight};
use super::qk_norm::{QkNormScope, normalize};
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
    /// Give queries and keys separate QK-norms (each with its own γ, β), as Wortsman et al.
    /// 2023's QK-layernorm does; otherwise one norm serves both. Default: false
    #[config(default = false)]
    pub separate_qk_norms: bool,
    /// Where the QK-norm normalizes: each head's features, or the whole projection's (OLMo
    /// 2). Default: `QkNormScope::PerHead`
    #[config(default = "QkNormScope::PerHead")]
    pub qk_norm_scope: QkNormScope,
    /// Start W^Q and W^K at zero (Xiong et al.'s setting). Default: false
    #[config(default = false)]
    pub zero_init_query_key: bool,
    /// The initializer of the four projections' weights (biases start at zero).
    /// Default: Xavier-normal, gain 1
    #[config(default = "xavier_normal(1.0)")]
    pub initializer: Initializer,
    /// NormFormer's head scale: a learnable gain per head on its output, before W^O, all
    /// starting at 1 (see the [module docs](self)). Default: false
    #[config(default = false)]
    pub head_scale: bool,
    /// Soft-cap the logits at c: `S ← c·tanh(S/c)` (Gemma 2 uses c = 50). Must be positive.
    /// Default: None
    #[config(default = "None")]
    pub logit_softcap: Option<f64>,
}

impl MultiHeadSelfAttentionConfig {
    /// Builds the sublayer on `device`.
    ///
    /// # Panics
    /// If `d_model` is not a positive multiple of `n_heads`, `dropout` is outside [0, 1), or
    /// `logit_softcap` is not positive and finite.
    pub fn init<B: burn::tensor::backend::Backend>(
        &self,
        device: &B::Device,
    ) -> MultiHeadSelfAttention<B> {
        super::validate_heads("MultiHeadSelfAttentionConfig", self.d_model, self.n_heads);
        super::validate_dropout("MultiHeadSelfAttentionConfig", self.dropout);
        super::validate_softcap(
            "MultiHeadSelfAttentionConfig.logit_softcap",
            self.logit_softcap,
        );
        let qk_width = self.qk_norm_scope.width(self.d_model, self.n_heads);
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
                .map(|n| n.with_d_model(qk_width).init(device)),
            key_norm: self
                .qk_norm
                .as_ref()
                .filter(|_| self.separate_qk_norms)
                .map(|n| n.with_d_model(qk_width).init(device)),
            head_scale: self
                .head_scale
                .then(|| Initializer::Ones.init([self.n_heads], device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            n_heads: self.n_heads,
            causal: self.causal,
            logit_softcap: self.logit_softcap,
            qk_norm_scope: self.qk_norm_scope,
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
    /// The QK-norm over `d_head` (or `d_model` at `QkNormScope::FullWidth`), if any (the
    /// queries' only, when `key_norm` is set).
    pub qk_norm: Option<Norm<B>>,
    /// The keys' own QK-norm, with `separate_qk_norms`.
    pub key_norm: Option<Norm<B>>,
    /// NormFormer's per-head gains γ, `[n_heads]`, with `head_scale`.
    pub head_scale: Option<Param<Tensor<B, 1>>>,
    dropout: Dropout,
    #[module(skip)]
    n_heads: usize,
    #[module(skip)]
    causal: bool,
    #[module(skip)]
    logit_softcap: Option<f64>,
    #[module(skip)]
    qk_norm_scope: QkNormScope,
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
        let [_, _, d_model] = x.dims();
        let d_head = d_model / self.n_heads;
        let mut spec = AttentionSpec::causal(self.n_heads, d_head);
        spec.causal = self.causal;
        spec.max_logit = record;
        spec.softcap = self.logit_softcap;
        let (mut q, mut k) = (
            linear::forward(&self.query, x.clone()),
            linear::forward(&self.key, x.clone()),
        );
        let v = linear::forward(&self.value, x);
        if let Some(norm) = &self.qk_norm {
            let (heads, scope) = (self.n_heads, self.qk_norm_scope);
            q = normalize(norm, q, heads, scope);
            k = normalize(self.key_norm.as_ref().unwrap_or(norm), k, heads, scope);
        }
        let (context, max_logit) = if self.dropout.prob > 0.0 {
            // The fused kernels have no dropout on the probabilities.
            composite::attention_with_weights(q, k, v, &spec, |w| self.dropout.forward(w))
        } else if record {
            let (context, max_logit) = attention_with_max_logit(q, k, v, spec);
            (context, Some(max_logit))
        } else {
            (attention(q, k, v, spec), None)
        };
        let context = match &self.head_scale {
            Some(gains) => context * per_column(gains.val(), d_head).unsqueeze::<3>(),
            None => context,
        };
        (linear::forward(&self.output, context), max_logit)
    }
}

/// Head `h`'s gain repeated over its `d_head` columns: `[heads]` → `[heads · d_head]`.
fn per_column<B: burn::tensor::backend::Backend>(
    gains: Tensor<B, 1>,
    d_head: usize,
) -> Tensor<B, 1> {
    let [heads] = gains.dims();
    gains
        .reshape([heads, 1])
        .expand([heads, d_head])
        .reshape([heads * d_head])
}
