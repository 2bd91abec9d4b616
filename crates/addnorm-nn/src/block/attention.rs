//! Multi-head self-attention, with an optional causal mask, QK-norm, zero-initialized
//! W^Q / W^K, grouped-query attention and rotary position embeddings.
//!
//! ```text
//! Q = x·W^Q + b^Q,  K = x·W^K + b^K,  V = x·W^V + b^V     h query heads, g key/value
//!                                                          heads, each d_head wide
//! Q, K ← Norm(Q), Norm(K)                                  per head, with QK-norm
//! Q, K ← Norm_Q(Q), Norm_K(K)                              the same, separate_qk_norms
//! Q, K ← Norm(Q), Norm(K)        over all of Q's (K's) width, before the split:
//!                                QkNormScope::FullWidth
//! Q, K ← RoPE(Q), RoPE(K)        with rotary position embeddings (after the QK-norm)
//! K_j, V_j serve query heads j·h/g … (j+1)·h/g − 1         grouped-query attention (g < h)
//! S = s·Q·Kᵀ                (s = 1/√d_head unless set; future positions −∞ when causal)
//! S ← c·tanh(S/c)           with a logit soft cap c (Gemma 2), before the mask
//! A_h = softmax(S_h)·V_h    per head h
//! A_h ← γ_h·A_h             with NormFormer's head scale (γ learnable, 1 at init)
//! MHSA(x) = concat(A_1..A_h)·W^O + b^O
//! ```
//!
//! `d_head` is `d_model / h` unless set: Gemma 2's heads are wider than that (2B: 8 heads of
//! 256 in a 2304-wide model). Grouped-query attention (Ainslie et al. 2023; g = 1 is
//! multi-query attention) repeats each key/value head for its h/g query heads, in Hugging
//! Face's `repeat_kv` order; the gradients of the shared K and V are the sums over their
//! groups. Rotary position embeddings are [`rotary`](super::rotary)'s; the order QK-norm
//! then RoPE is OLMo 2's and Gemma 3's.
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
//! - input: `[batch, seq, d_model]`; `W^Q: [d_model, h·d_head]`, `W^K`, `W^V:
//!   [d_model, g·d_head]`, `W^O: [h·d_head, d_model]`; scores `S: [batch, h, seq, seq]`
//!   (materialized on the composite path only)
//! - output: `[batch, seq, d_model]`

use burn::config::Config;
use burn::module::{Initializer, Module, Param};
use burn::nn::{Dropout, DropoutConfig, Linear};
use burn::tensor::Tensor;

use addnorm_kernels::NormBackend;
use addnorm_kernels::attention::{AttentionSpec, attention, attention_with_max_logit, composite};

use super::linear::{self, projection, xavier_normal, zero_weight};
use super::qk_norm::{QkNormScope, normalize};
use super::rotary::RotaryConfig;
use crate::config_error::{ConfigError, ensure, or_panic};
use crate::norm::{Norm, NormConfig};

/// Configuration of a [`MultiHeadSelfAttention`].
#[derive(Config, Debug)]
pub struct MultiHeadSelfAttentionConfig {
    /// The model width; must be divisible by `n_heads` unless `d_head` is set.
    pub d_model: usize,
    /// The number of (query) heads.
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
    /// Grouped-query attention: the number of key/value heads, which must divide `n_heads`
    /// (1: multi-query attention). Default: None (`n_heads`, one per query head)
    #[config(default = "None")]
    pub n_kv_heads: Option<usize>,
    /// Each head's width. Default: None (`d_model / n_heads`)
    #[config(default = "None")]
    pub d_head: Option<usize>,
    /// Biases on the four projections (Llama, Gemma and OLMo have none). Default: true
    #[config(default = true)]
    pub bias: bool,
    /// Rotary position embeddings on the queries and keys. Default: None
    #[config(default = "None")]
    pub rotary: Option<RotaryConfig>,
    /// The factor s on the logits. Gemma 2 uses `1/√query_pre_attn_scalar`. Must be
    /// positive. Default: None (`1/√d_head`)
    #[config(default = "None")]
    pub scale: Option<f64>,
}

impl MultiHeadSelfAttentionConfig {
    /// Checks every option without building anything: the error `init` would panic
    /// with, or `Ok`.
    ///
    /// # Errors
    /// If `d_model` is not a positive multiple of `n_heads` (with `d_head` unset), `d_head`
    /// is zero, `n_kv_heads` does not divide `n_heads`, `dropout` is outside [0, 1),
    /// `logit_softcap` or `scale` is not positive and finite, the rotary embedding's base or
    /// `d_head` is invalid, one full-width QK-norm would serve queries and keys of different
    /// widths (grouped-query attention needs `separate_qk_norms` there), or the QK-norm is
    /// invalid at the width it is fitted to (see [`NormConfig::check`]).
    pub fn check(&self) -> Result<(), ConfigError> {
        self.validate().map(|_| ())
    }

    /// Builds the sublayer on `device`.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: burn::tensor::backend::Backend>(
        &self,
        device: &B::Device,
    ) -> MultiHeadSelfAttention<B> {
        let heads = or_panic(self.validate());
        let (q_width, kv_width) = (heads.query_width(), heads.key_value_width());
        let p = |shape| projection(shape, &self.initializer, self.bias, device);
        let (mut query, mut key) = (p([self.d_model, q_width]), p([self.d_model, kv_width]));
        if self.zero_init_query_key {
            zero_weight(&mut query, device);
            zero_weight(&mut key, device);
        }
        let scope = self.qk_norm_scope;
        let norm = |width: usize, heads: usize| {
            let norm = self.qk_norm.as_ref()?;
            Some(norm.with_d_model(scope.width(width, heads)).init(device))
        };
        MultiHeadSelfAttention {
            query,
            key,
            value: p([self.d_model, kv_width]),
            output: p([q_width, self.d_model]),
            qk_norm: norm(q_width, heads.query),
            key_norm: self
                .separate_qk_norms
                .then(|| norm(kv_width, heads.key_value))
                .flatten(),
            head_scale: self
                .head_scale
                .then(|| Initializer::Ones.init([self.n_heads], device)),
            dropout: DropoutConfig::new(self.dropout).init(),
            heads,
            causal: self.causal,
            logit_softcap: self.logit_softcap,
            qk_norm_scope: self.qk_norm_scope,
            rotary: self.rotary.clone(),
            scale: self.scale,
        }
    }

    /// The head counts and width, after checking every option (see
    /// [`check`](Self::check)).
    fn validate(&self) -> Result<Heads, ConfigError> {
        let heads = self.heads()?;
        super::validate_dropout("MultiHeadSelfAttentionConfig", self.dropout)?;
        super::validate_softcap(
            "MultiHeadSelfAttentionConfig.logit_softcap",
            self.logit_softcap,
        )?;
        super::validate_softcap("MultiHeadSelfAttentionConfig.scale", self.scale)?;
        if let Some(rotary) = &self.rotary {
            rotary.validate(heads.d_head)?;
        }
        let (q_width, kv_width) = (heads.query_width(), heads.key_value_width());
        let shared_full_width = self.qk_norm.is_some()
            && !self.separate_qk_norms
            && self.qk_norm_scope == QkNormScope::FullWidth;
        ensure(!shared_full_width || q_width == kv_width, || {
            ConfigError::new(
                "MultiHeadSelfAttentionConfig",
                format!(
                    "MultiHeadSelfAttentionConfig: one full-width QK-norm cannot serve queries \
                     ({q_width} wide) and keys ({kv_width} wide); set separate_qk_norms"
                ),
            )
        })?;
        self.validate_qk_norms(heads)?;
        Ok(heads)
    }

    /// The QK-norms at the widths `init` fits them to: the queries', then the keys' own
    /// with `separate_qk_norms`.
    fn validate_qk_norms(&self, heads: Heads) -> Result<(), ConfigError> {
        let Some(norm) = &self.qk_norm else {
            return Ok(());
        };
        let scope = self.qk_norm_scope;
        let fitted = |width, count| norm.with_d_model(scope.width(width, count)).check();
        fitted(heads.query_width(), heads.query)?;
        if self.separate_qk_norms {
            fitted(heads.key_value_width(), heads.key_value)?;
        }
        Ok(())
    }

    /// The head counts and width, checked.
    fn heads(&self) -> Result<Heads, ConfigError> {
        let query = self.n_heads;
        let d_head = match self.d_head {
            Some(d_head) => {
                let d_model = self.d_model;
                ensure(d_head > 0 && query > 0 && d_model > 0, || {
                    ConfigError::new(
                        "MultiHeadSelfAttentionConfig",
                        format!(
                            "MultiHeadSelfAttentionConfig: d_model ({d_model}), n_heads \
                             ({query}) and d_head ({d_head}) must be positive"
                        ),
                    )
                })?;
                d_head
            }
            None => {
                super::validate_heads("MultiHeadSelfAttentionConfig", self.d_model, query)?;
                self.d_model / query
            }
        };
        let key_value = self.n_kv_heads.unwrap_or(query);
        ensure(key_value > 0 && query.is_multiple_of(key_value), || {
            ConfigError::of_field(
                "MultiHeadSelfAttentionConfig.n_kv_heads",
                format_args!("({key_value}) must divide n_heads ({query})"),
            )
        })?;
        Ok(Heads {
            query,
            key_value,
            d_head,
        })
    }
}

/// The attention's head counts and head width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Heads {
    /// Query heads h.
    query: usize,
    /// Key/value heads g (h for multi-head attention).
    key_value: usize,
    /// Each head's width.
    d_head: usize,
}

impl Heads {
    fn query_width(self) -> usize {
        self.query * self.d_head
    }

    fn key_value_width(self) -> usize {
        self.key_value * self.d_head
    }
}

/// Multi-head self-attention (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct MultiHeadSelfAttention<B: burn::tensor::backend::Backend> {
    /// W^Q, `[d_model, h·d_head]`.
    pub query: Linear<B>,
    /// W^K, `[d_model, g·d_head]` (g key/value heads; g = h without grouped-query attention).
    pub key: Linear<B>,
    /// W^V, `[d_model, g·d_head]`.
    pub value: Linear<B>,
    /// W^O, `[h·d_head, d_model]`.
    pub output: Linear<B>,
    /// The QK-norm over `d_head` (or Q's whole width at `QkNormScope::FullWidth`), if any
    /// (the queries' only, when `key_norm` is set).
    pub qk_norm: Option<Norm<B>>,
    /// The keys' own QK-norm, with `separate_qk_norms`.
    pub key_norm: Option<Norm<B>>,
    /// NormFormer's per-head gains γ, `[n_heads]`, with `head_scale`.
    pub head_scale: Option<Param<Tensor<B, 1>>>,
    dropout: Dropout,
    #[module(skip)]
    heads: Heads,
    #[module(skip)]
    causal: bool,
    #[module(skip)]
    logit_softcap: Option<f64>,
    #[module(skip)]
    qk_norm_scope: QkNormScope,
    #[module(skip)]
    rotary: Option<RotaryConfig>,
    #[module(skip)]
    scale: Option<f64>,
}

impl<B: NormBackend> MultiHeadSelfAttention<B> {
    /// Applies self-attention.
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.attend(x, false, None).0
    }

    /// Applies self-attention and also returns the largest attention logit `max S` over the
    /// positions attended to (a detached `[1]` tensor).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `([batch, seq, d_model], [1])`
    pub fn forward_with_max_logit(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Tensor<B, 1>) {
        let (y, max_logit) = self.attend(x, true, None);
        (y, max_logit.expect("recorded"))
    }

    /// Applies self-attention and adds the result to `residual` (`[batch, seq, d_model]`)
    /// inside W^O's GEMM: `residual + MHSA(x)`, with the bits of that sum and no tensor for
    /// `MHSA(x)` of its own (see [`linear_onto`](addnorm_kernels::linear::linear_onto)).
    ///
    /// # Shapes
    /// - input, `residual` and output: `[batch, seq, d_model]`
    pub fn forward_onto(&self, x: Tensor<B, 3>, residual: Tensor<B, 3>) -> Tensor<B, 3> {
        self.attend(x, false, Some(residual)).0
    }

    /// The attention on `x`, added to `residual` when given one, with the max logit when
    /// `record`.
    pub(crate) fn attend(
        &self,
        x: Tensor<B, 3>,
        record: bool,
        residual: Option<Tensor<B, 3>>,
    ) -> (Tensor<B, 3>, Option<Tensor<B, 1>>) {
        let Heads {
            query: heads,
            key_value: kv_heads,
            d_head,
        } = self.heads;
        let mut spec = AttentionSpec::causal(heads, d_head);
        spec.causal = self.causal;
        spec.max_logit = record;
        spec.softcap = self.logit_softcap;
        spec.scale = self.scale.unwrap_or(spec.scale);
        let (mut q, mut k) = (
            linear::forward(&self.query, x.clone()),
            linear::forward(&self.key, x.clone()),
        );
        let v = linear::forward(&self.value, x);
        if let Some(norm) = &self.qk_norm {
            let scope = self.qk_norm_scope;
            q = normalize(norm, q, heads, scope);
            k = normalize(self.key_norm.as_ref().unwrap_or(norm), k, kv_heads, scope);
        }
        if let Some(rotary) = &self.rotary {
            let rotation = rotary.rotation::<B>(q.dims()[1], d_head, &q.device());
            q = rotation.apply(q, heads);
            k = rotation.apply(k, kv_heads);
        }
        let group = heads / kv_heads;
        let (k, v) = (repeat_kv(k, kv_heads, group), repeat_kv(v, kv_heads, group));
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
        let output = linear::forward_with_residual(&self.output, context, residual);
        (output, max_logit)
    }
}

/// Each of `heads` heads of `x` repeated `group` times in place (head j becomes heads
/// `j·group … (j+1)·group − 1`), Hugging Face's `repeat_kv`: `[batch, seq, heads·d_head]` →
/// `[batch, seq, heads·group·d_head]`. Autodiff sums each copy's gradient back.
fn repeat_kv<B: burn::tensor::backend::Backend>(
    x: Tensor<B, 3>,
    heads: usize,
    group: usize,
) -> Tensor<B, 3> {
    if group == 1 {
        return x;
    }
    let [batch, seq, width] = x.dims();
    let d_head = width / heads;
    x.reshape([batch, seq, heads, 1, d_head])
        .expand([batch, seq, heads, group, d_head])
        .reshape([batch, seq, width * group])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::norm::LayerNormConfig;

    fn refusal(config: MultiHeadSelfAttentionConfig) -> String {
        config.check().unwrap_err().to_string()
    }

    #[test]
    fn check_refuses_head_counts_that_do_not_fit() {
        let new = MultiHeadSelfAttentionConfig::new;
        assert_eq!(
            refusal(new(10, 3)),
            "MultiHeadSelfAttentionConfig.d_model (10) must be a positive multiple of n_heads (3)"
        );
        assert_eq!(
            refusal(new(8, 2).with_d_head(Some(0))),
            "MultiHeadSelfAttentionConfig: d_model (8), n_heads (2) and d_head (0) must be \
             positive"
        );
        let uneven = new(8, 4).with_n_kv_heads(Some(3)).check().unwrap_err();
        assert_eq!(
            uneven.to_string(),
            "MultiHeadSelfAttentionConfig.n_kv_heads (3) must divide n_heads (4)"
        );
        assert_eq!(uneven.field(), "MultiHeadSelfAttentionConfig.n_kv_heads");
        assert_eq!(
            refusal(new(8, 4).with_n_kv_heads(Some(0))),
            "MultiHeadSelfAttentionConfig.n_kv_heads (0) must divide n_heads (4)"
        );
    }

    #[test]
    fn check_refuses_bad_options() {
        let new = || MultiHeadSelfAttentionConfig::new(8, 2);
        assert_eq!(
            refusal(new().with_dropout(-0.5)),
            "MultiHeadSelfAttentionConfig.dropout must lie in [0, 1), got -0.5"
        );
        assert_eq!(
            refusal(new().with_logit_softcap(Some(0.0))),
            "MultiHeadSelfAttentionConfig.logit_softcap must be positive and finite, got 0"
        );
        assert_eq!(
            refusal(new().with_scale(Some(f64::INFINITY))),
            "MultiHeadSelfAttentionConfig.scale must be positive and finite, got inf"
        );
        let odd = MultiHeadSelfAttentionConfig::new(6, 2).with_rotary(Some(RotaryConfig::new()));
        assert_eq!(
            refusal(odd),
            "rotary position embeddings rotate the two halves of each head: d_head must be \
             even, got 3"
        );
        assert_eq!(
            refusal(new().with_rotary(Some(RotaryConfig::new().with_theta(0.5)))),
            "RotaryConfig.theta must be finite and above 1, got 0.5"
        );
    }

    #[test]
    fn check_refuses_qk_norms_that_do_not_fit() {
        let full_width = MultiHeadSelfAttentionConfig::new(8, 4)
            .with_n_kv_heads(Some(2))
            .with_qk_norm(Some(NormConfig::rms(0)))
            .with_qk_norm_scope(QkNormScope::FullWidth);
        assert_eq!(
            refusal(full_width.clone()),
            "MultiHeadSelfAttentionConfig: one full-width QK-norm cannot serve queries (8 wide) \
             and keys (4 wide); set separate_qk_norms"
        );
        assert_eq!(full_width.with_separate_qk_norms(true).check(), Ok(()));
        let bad_norm = LayerNormConfig::new(vec![1]).with_epsilon(-1.0);
        assert_eq!(
            refusal(MultiHeadSelfAttentionConfig::new(8, 2).with_qk_norm(Some(bad_norm.into()))),
            "LayerNormConfig.epsilon must be positive and finite, got -1"
        );
    }

    #[test]
    fn check_accepts_the_defaults_and_grouped_query_attention() {
        assert_eq!(MultiHeadSelfAttentionConfig::new(8, 2).check(), Ok(()));
        let grouped = MultiHeadSelfAttentionConfig::new(16, 4)
            .with_n_kv_heads(Some(1))
            .with_d_head(Some(6))
            .with_rotary(Some(RotaryConfig::new()))
            .with_qk_norm(Some(NormConfig::rms(0)))
            .with_separate_qk_norms(true)
            .with_logit_softcap(Some(50.0));
        assert_eq!(grouped.check(), Ok(()));
    }
}
