//! One transformer layer: self-attention and a feed-forward network, each inside an
//! [`AddNorm`] residual connection placed as the [`Placement`] says.
//!
//! ```text
//! x = attention_residual(x, F = MHSA)
//! x = feed_forward_residual(x, F = FFN)
//! ```
//! each one the [`Placement`]'s formula with that F (see [`Placement`] for the table). The
//! options of today's open models change the pieces, not this order:
//!
//! ```text
//! NormFormer      MHSA with per-head gains; x + Norm(MHSA(Norm x)); FFN with a norm over d_ff
//! LayerScale      each branch term times λ ∈ ℝ^d_model
//! residual gate   each residual sum x + t replaced by a GRU cell GRU(t, x) (GTrXL)
//! soft cap        the attention logits S ← c·tanh(S/c)
//! ResiDual        (x, x_d) ← (Norm(x + F(x)), x_d + F(x)) per sublayer (forward_dual)
//! adaLN-Zero      x + α ⊙ F(Norm(x) ⊙ (1 + γ) + β), (β, γ, α) from c (forward_conditioned)
//! Parallel        x + MHSA(Norm x) + FFN(Norm x)
//! GQA, RoPE       fewer key/value heads than query heads; rotary position embeddings
//! gated FFN       (act(x·W_g) ⊙ x·W₁)·W₂ (GeGLU, SwiGLU)
//! ```
//!
//! Three presets build the decoder layers of Hugging Face's models, which
//! `addnorm_nn::pytorch::HfDecoderLayer` loads by their checkpoint names:
//!
//! ```text
//! llama    Pre (RMSNorm), SwiGLU, GQA, RoPE, no biases
//! gemma2   Peri (sandwich) with RMSNorm x̂·(1 + γ), GeGLU (tanh GELU), GQA, RoPE,
//!          attention logits soft-capped at 50, no biases
//! olmo2    PostBranch x + Norm(F(x)) (RMSNorm), SwiGLU, GQA, RoPE (θ = 500 000),
//!          full-width RMSNorm QK-norms, no biases
//! ```
//!
//! # Shapes
//! - input: `[batch, seq, d_model]`; output: the same; adaLN-Zero's `c`: `[batch, d_cond]`

use burn::config::Config;
use burn::module::{Initializer, Module, Param};
use burn::nn::Linear;
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::ada_ln::{AdaLnZero, AdaLnZeroConfig};
use super::add_norm::{AddNorm, builds_norms, validate_layer_scale};
use super::attention::{MultiHeadSelfAttention, MultiHeadSelfAttentionConfig};
use super::feed_forward::{Activation, FeedForward, FeedForwardConfig};
use super::linear::xavier_normal;
use super::placement::Placement;
use super::qk_norm::QkNormScope;
use super::rotary::RotaryConfig;
use crate::config_error::{ConfigError, ensure, or_panic};
use crate::norm::{Affine, NormConfig, RmsNormConfig};

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
    /// Where the QK-norm normalizes: each head's `d_head` features, or all `d_model` before
    /// the heads split (OLMo 2). Default: `QkNormScope::PerHead`
    #[config(default = "QkNormScope::PerHead")]
    pub qk_norm_scope: QkNormScope,
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
    /// Residual gating (x-transformers' `gate_residual`; Parisotto et al. 2020, GTrXL): a
    /// GRU cell `GRU(branch, residual)` in place of each residual sum (see
    /// [`ResidualGate`](super::ResidualGate)). Not for `Placement::Parallel` (one sum of two
    /// branches) or a conditioned block. Default: false
    #[config(default = false)]
    pub residual_gate: bool,
    /// NormFormer's post-attention norm (Shleifer et al. 2021, §2, "Post-Attn LN"): a norm
    /// on the attention's output before the residual addition, `x + Norm(MHSA(Norm(x)))` in
    /// a Pre block (see [`AddNorm::with_output_norm`]). Default: false
    #[config(default = false)]
    pub attention_output_norm: bool,
    /// NormFormer's FFN norm ("FFN LN"): the block's norm over the `d_ff` hidden
    /// activations, after the nonlinearity (see [`FeedForward`]). Default: false
    #[config(default = false)]
    pub feed_forward_norm: bool,
    /// NormFormer's head scale: a learnable gain per attention head, 1 at init (see
    /// [`MultiHeadSelfAttention`]). Default: false
    #[config(default = false)]
    pub head_scale: bool,
    /// Gemma 2's attention-logit soft-capping: `S ← c·tanh(S/c)` before the softmax
    /// (Gemma 2 uses c = 50). Default: None
    #[config(default = "None")]
    pub attention_logit_softcap: Option<f64>,
    /// adaLN-Zero (Peebles & Xie 2023, DiT): the width `d_cond` of a conditioning vector
    /// from which each sublayer's norm shift, scale and residual gate are regressed, all zero
    /// at init (see [`AdaLnZero`]); the block then runs through
    /// [`TransformerBlock::forward_conditioned`]. Only for `Placement::Pre`; DiT's norm is
    /// a LayerNorm with `Affine::Off` and ε = 1e-6. Default: None
    #[config(default = "None")]
    pub conditioning: Option<usize>,
    /// Grouped-query attention: the number of key/value heads, dividing `n_heads` (see
    /// [`MultiHeadSelfAttention`]). Default: None (one per query head)
    #[config(default = "None")]
    pub n_kv_heads: Option<usize>,
    /// The width of each attention head. Default: None (`d_model / n_heads`)
    #[config(default = "None")]
    pub d_head: Option<usize>,
    /// Biases on the attention's and the feed-forward network's projections. Default: true
    #[config(default = true)]
    pub bias: bool,
    /// Rotary position embeddings on the queries and keys. Default: None
    #[config(default = "None")]
    pub rotary: Option<RotaryConfig>,
    /// The factor on the attention logits (Gemma 2: `1/√query_pre_attn_scalar`).
    /// Default: None (`1/√d_head`)
    #[config(default = "None")]
    pub attention_scale: Option<f64>,
    /// The gated feed-forward network (GLU: GeGLU with GELU, SwiGLU with SiLU; see
    /// [`FeedForward`]). Default: false
    #[config(default = false)]
    pub gated_feed_forward: bool,
}

/// Multiplies a projection's weight by `scale` (DeepNorm's β).
fn scale_weight<B: Backend>(linear: &mut Linear<B>, scale: f64) {
    if scale != 1.0 {
        linear.weight = Param::from_tensor((linear.weight.val() * scale).detach());
    }
}

impl TransformerBlockConfig {
    /// This configuration with NormFormer's three additions (Shleifer et al. 2021, §2): the
    /// post-attention norm, the FFN norm and the head scale. NormFormer adds them to a Pre-LN
    /// block (`placement` Pre, the default).
    pub fn normformer(self) -> Self {
        self.with_attention_output_norm(true)
            .with_feed_forward_norm(true)
            .with_head_scale(true)
    }

    /// A Llama decoder layer (Touvron et al. 2023; Hugging Face's `LlamaDecoderLayer`): Pre
    /// with RMSNorm (ε = 1e-5), SwiGLU, `n_kv_heads` key/value heads, RoPE (θ = 10 000;
    /// Llama 3 uses 500 000: `with_rotary`), no biases.
    pub fn llama(d_model: usize, n_heads: usize, n_kv_heads: usize, d_ff: usize) -> Self {
        Self::new(d_model, n_heads, d_ff)
            .with_placement(Placement::Pre)
            .with_norm(NormConfig::Rms(
                RmsNormConfig::new(vec![d_model]).with_epsilon(1e-5),
            ))
            .with_hugging_face_layout(n_kv_heads, Activation::Silu)
    }

    /// A Gemma 2 decoder layer (Gemma Team 2024, §2; Hugging Face's `Gemma2DecoderLayer`):
    /// sandwich norms ([`Placement::Peri`]) of RMSNorm with unit-offset gains `x̂·(1 + γ)`
    /// (ε = 1e-6), GeGLU with the tanh GELU, `n_kv_heads` key/value heads of `d_head`
    /// features, RoPE (θ = 10 000), attention logits soft-capped at 50, no biases. Gemma 2
    /// scales the logits by `1/√query_pre_attn_scalar`, which is `1/√d_head` (the default)
    /// in the 2B and 9B models and `1/√(d_model/n_heads)` in the 27B: set it with
    /// `with_attention_scale`. Its sliding-window layers equal this one on sequences no
    /// longer than the window (4096).
    pub fn gemma2(
        d_model: usize,
        n_heads: usize,
        n_kv_heads: usize,
        d_head: usize,
        d_ff: usize,
    ) -> Self {
        Self::new(d_model, n_heads, d_ff)
            .with_placement(Placement::Peri)
            .with_norm(NormConfig::Rms(
                RmsNormConfig::new(vec![d_model]).with_affine(Affine::UnitOffset),
            ))
            .with_hugging_face_layout(n_kv_heads, Activation::GeluTanh)
            .with_d_head(Some(d_head))
            .with_attention_logit_softcap(Some(50.0))
    }

    /// An OLMo 2 decoder layer (Team OLMo 2024, §3; Hugging Face's `Olmo2DecoderLayer`):
    /// the norms on the sublayers' outputs ([`Placement::PostBranch`]), RMSNorm (ε = 1e-6),
    /// separate full-width RMSNorm QK-norms ([`QkNormScope::FullWidth`]), SwiGLU,
    /// `n_kv_heads` key/value heads, RoPE (θ = 500 000), no biases.
    pub fn olmo2(d_model: usize, n_heads: usize, n_kv_heads: usize, d_ff: usize) -> Self {
        let rms = NormConfig::Rms(RmsNormConfig::new(vec![d_model]));
        Self::new(d_model, n_heads, d_ff)
            .with_placement(Placement::PostBranch)
            .with_norm(rms.clone())
            .with_qk_norm(Some(rms))
            .with_separate_qk_norms(true)
            .with_qk_norm_scope(QkNormScope::FullWidth)
            .with_hugging_face_layout(n_kv_heads, Activation::Silu)
            .with_rotary(Some(RotaryConfig::new().with_theta(500_000.0)))
    }

    /// What the three Hugging Face presets share: grouped-query attention, RoPE (θ =
    /// 10 000), a gated feed-forward network with `activation`, no biases.
    fn with_hugging_face_layout(self, n_kv_heads: usize, activation: Activation) -> Self {
        self.with_n_kv_heads(Some(n_kv_heads))
            .with_rotary(Some(RotaryConfig::new()))
            .with_gated_feed_forward(true)
            .with_activation(activation)
            .with_bias(false)
    }

    /// Checks every option without building anything: the error `init` would panic with,
    /// or `Ok`. It covers the configs `init` builds from this one: the attention, the
    /// feed-forward network, the norms at the widths they are fitted to, and adaLN-Zero.
    ///
    /// # Errors
    /// If `n_layers` is zero, `conditioning` is set on a placement other than Pre,
    /// `residual_gate` is set on a Parallel or conditioned block, `dropout` is outside
    /// [0, 1), the attention's options are invalid (see
    /// [`MultiHeadSelfAttentionConfig::check`]; `d_model` must be a positive multiple of
    /// `n_heads` unless `d_head` is set), `d_ff` is zero or the FFN norm is invalid (see
    /// [`FeedForwardConfig::check`]), the norm is invalid at width `d_model` where the block
    /// builds one (see [`NormConfig::check`]), `layer_scale` is not finite, or
    /// `conditioning` is zero.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.validate_layout()?;
        super::validate_dropout("TransformerBlockConfig", self.dropout)?;
        self.attention_config().check()?;
        self.feed_forward_config().check()?;
        self.validate_residuals()?;
        match self.conditioning {
            Some(d_cond) => AdaLnZeroConfig::new(d_cond, self.d_model).check(),
            None => Ok(()),
        }
    }

    /// Refuses a depth of 0, and conditioning or residual gating on a block that has no
    /// place for it.
    fn validate_layout(&self) -> Result<(), ConfigError> {
        let field = |name: &str| format!("TransformerBlockConfig.{name}");
        ensure(self.n_layers > 0, || {
            ConfigError::of_field(field("n_layers"), "must be at least 1, got 0")
        })?;
        let placement = self.placement;
        let conditioned = self.conditioning.is_some();
        ensure(!conditioned || placement == Placement::Pre, || {
            ConfigError::of_field(
                field("conditioning"),
                format_args!(
                    "(adaLN-Zero) modulates a Pre block's input norms; placement is {placement}"
                ),
            )
        })?;
        let gated = placement != Placement::Parallel && !conditioned;
        ensure(!self.residual_gate || gated, || {
            ConfigError::of_field(
                field("residual_gate"),
                format_args!(
                    "replaces a residual sum x + F(x) by a GRU cell; placement {placement} with \
                     conditioning {:?} has none to replace",
                    self.conditioning
                ),
            )
        })
    }

    /// The residual connections' options, in the order `init` builds them: the norm at
    /// `d_model` where the placement has one, LayerScale, NormFormer's post-attention norm.
    fn validate_residuals(&self) -> Result<(), ConfigError> {
        let norm = self.norm.with_d_model(self.d_model);
        if builds_norms(self.placement) {
            norm.check()?;
        }
        if let Some(init) = self.layer_scale {
            validate_layer_scale(init)?;
        }
        if self.attention_output_norm {
            norm.check()?;
        }
        Ok(())
    }

    /// The attention sublayer's config: this block's heads, QK-norm, soft cap and the rest.
    fn attention_config(&self) -> MultiHeadSelfAttentionConfig {
        MultiHeadSelfAttentionConfig::new(self.d_model, self.n_heads)
            .with_causal(self.causal)
            .with_dropout(self.dropout)
            .with_qk_norm(self.qk_norm.clone())
            .with_separate_qk_norms(self.separate_qk_norms)
            .with_qk_norm_scope(self.qk_norm_scope)
            .with_zero_init_query_key(self.zero_init_query_key)
            .with_initializer(self.initializer.clone())
            .with_head_scale(self.head_scale)
            .with_logit_softcap(self.attention_logit_softcap)
            .with_n_kv_heads(self.n_kv_heads)
            .with_d_head(self.d_head)
            .with_bias(self.bias)
            .with_rotary(self.rotary.clone())
            .with_scale(self.attention_scale)
    }

    /// The feed-forward sublayer's config, with the block's norm over `d_ff` when
    /// `feed_forward_norm` is set.
    fn feed_forward_config(&self) -> FeedForwardConfig {
        FeedForwardConfig::new(self.d_model, self.d_ff)
            .with_activation(self.activation)
            .with_dropout(self.dropout)
            .with_initializer(self.initializer.clone())
            .with_hidden_norm(self.feed_forward_norm.then(|| self.norm.clone()))
            .with_gated(self.gated_feed_forward)
            .with_bias(self.bias)
    }

    /// Builds the block on `device`.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> TransformerBlock<B> {
        or_panic(self.check());
        let mut attention = self.attention_config().init(device);
        let mut feed_forward = self.feed_forward_config().init(device);
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
            let residual = match self.layer_scale {
                Some(init) => residual.with_layer_scale(self.d_model, init, device),
                None => residual,
            };
            if self.residual_gate {
                residual.with_residual_gate(self.d_model, device)
            } else {
                residual
            }
        };
        let mut feed_forward_residual = add_norm();
        if self.placement == Placement::Parallel {
            // Both sublayers read the attention connection's norm.
            feed_forward_residual.input_norm = None;
        }
        let mut attention_residual = add_norm();
        if self.attention_output_norm {
            attention_residual =
                attention_residual.with_output_norm(&self.norm, self.d_model, device);
        }
        TransformerBlock {
            attention,
            attention_residual,
            feed_forward,
            feed_forward_residual,
            ada_ln: self
                .conditioning
                .map(|d_cond| AdaLnZeroConfig::new(d_cond, self.d_model).init(device)),
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
    /// adaLN-Zero's conditioning map, with `conditioning`.
    pub ada_ln: Option<AdaLnZero<B>>,
}

impl<B: NormBackend> TransformerBlock<B> {
    /// Applies the layer.
    ///
    /// In a ResiDual block this is the Post-LN stream alone; a stack carries the dual stream
    /// through [`forward_dual`](Self::forward_dual).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        self.apply(x, None, false).0
    }

    /// Applies the layer to both of ResiDual's streams (Xie et al. 2023): the Post-LN stream
    /// `x` and the dual stream `dual`, to which each sublayer's branch term is added
    /// unnormalized (see [`Placement::ResiDual`]). In any other placement `dual` comes back
    /// unchanged.
    ///
    /// # Shapes
    /// - input `x`, `dual`: `[batch, seq, d_model]`
    /// - output: `([batch, seq, d_model], [batch, seq, d_model])`
    pub fn forward_dual(
        &self,
        x: Tensor<B, 3>,
        dual: Tensor<B, 3>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        let (x, dual, _) = self.apply(x, Some(dual), false);
        (x, dual.expect("the dual stream goes through"))
    }

    /// Applies the layer and also returns its largest attention logit (a detached `[1]`
    /// tensor).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`
    /// - output: `([batch, seq, d_model], [1])`
    pub fn forward_with_max_logit(&self, x: Tensor<B, 3>) -> (Tensor<B, 3>, Tensor<B, 1>) {
        let (x, _, max_logit) = self.apply(x, None, true);
        (x, max_logit.expect("recorded"))
    }

    /// Applies an adaLN-Zero block to `x` under the conditioning `c` (see [`AdaLnZero`]):
    /// `x ← x + α₁ ⊙ Attn(Norm(x) ⊙ (1 + γ₁) + β₁)`, then the same around the
    /// feed-forward network.
    ///
    /// # Shapes
    /// - input `x`: `[batch, seq, d_model]`; `c`: `[batch, d_cond]`
    /// - output: `[batch, seq, d_model]`
    ///
    /// # Panics
    /// If the block was built without `conditioning`.
    pub fn forward_conditioned(&self, x: Tensor<B, 3>, c: Tensor<B, 2>) -> Tensor<B, 3> {
        let ada_ln = self.ada_ln.as_ref().expect(
            "TransformerBlock::forward_conditioned needs a block built with \
             TransformerBlockConfig.conditioning",
        );
        let [attention, feed_forward] = ada_ln.forward(c);
        let x = self
            .attention_residual
            .forward_modulated(x, &attention, |h| self.attention.forward(h));
        self.feed_forward_residual
            .forward_modulated(x, &feed_forward, |h| self.feed_forward.forward(h))
    }

    /// The layer on `x` and, for ResiDual, the dual stream; with the largest attention logit
    /// when `record`.
    ///
    /// # Panics
    /// If the block is conditioned (it runs through `forward_conditioned`).
    pub(crate) fn apply(
        &self,
        x: Tensor<B, 3>,
        dual: Option<Tensor<B, 3>>,
        record: bool,
    ) -> Stepped<B> {
        assert!(
            self.ada_ln.is_none(),
            "an adaLN-Zero block (TransformerBlockConfig.conditioning) runs through \
             TransformerBlock::forward_conditioned(x, c)"
        );
        let mut max_logit = None;
        let mut attention = |h, residual| {
            let (y, m) = self.attention.attend(h, record, residual);
            max_logit = m;
            y
        };
        let feed_forward = |h, residual| self.feed_forward.apply(h, residual);
        let (r1, r2) = (&self.attention_residual, &self.feed_forward_residual);
        let (x, dual) = match (r1.placement(), dual) {
            (Placement::Parallel, dual) => (self.parallel(x, |h| attention(h, None)), dual),
            (_, Some(dual)) => {
                let (x, dual) = r1.forward_dual(x, dual, |h| attention(h, None));
                let (x, dual) = r2.forward_dual(x, dual, |h| feed_forward(h, None));
                (x, Some(dual))
            }
            (_, None) => (
                r2.forward_onto(r1.forward_onto(x, attention), feed_forward),
                None,
            ),
        };
        (x, dual, max_logit)
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
}

/// What [`TransformerBlock::apply`] returns: the residual stream, ResiDual's dual stream
/// (when given one) and the largest attention logit (when recorded).
pub(crate) type Stepped<B> = (Tensor<B, 3>, Option<Tensor<B, 3>>, Option<Tensor<B, 1>>);

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;

    use super::*;
    use crate::norm::LayerNormConfig;

    fn refusal(config: TransformerBlockConfig) -> String {
        config.check().unwrap_err().to_string()
    }

    fn block() -> TransformerBlockConfig {
        TransformerBlockConfig::new(8, 2, 16)
    }

    /// A norm whose options are invalid at any width.
    fn bad_norm() -> NormConfig {
        LayerNormConfig::new(vec![1]).with_epsilon(0.0).into()
    }

    #[test]
    fn check_accepts_the_presets_and_the_defaults() {
        let presets = [
            TransformerBlockConfig::llama(64, 8, 2, 96),
            TransformerBlockConfig::gemma2(64, 4, 2, 32, 96),
            TransformerBlockConfig::olmo2(64, 8, 2, 96),
            block(),
            block().normformer(),
            block().with_conditioning(Some(3)),
            block().with_layer_scale(Some(0.1)).with_residual_gate(true),
        ];
        for preset in presets {
            assert_eq!(preset.check(), Ok(()), "{preset:?}");
        }
    }

    #[test]
    fn check_refuses_the_block_layout() {
        assert_eq!(
            refusal(block().with_n_layers(0)),
            "TransformerBlockConfig.n_layers must be at least 1, got 0"
        );
        let post = block().with_placement(Placement::Post);
        assert_eq!(
            refusal(post.with_conditioning(Some(3))),
            "TransformerBlockConfig.conditioning (adaLN-Zero) modulates a Pre block's input \
             norms; placement is post"
        );
        let parallel = block().with_placement(Placement::Parallel);
        let gated = parallel.with_residual_gate(true).check().unwrap_err();
        assert_eq!(
            gated.to_string(),
            "TransformerBlockConfig.residual_gate replaces a residual sum x + F(x) by a GRU \
             cell; placement parallel with conditioning None has none to replace"
        );
        assert_eq!(gated.field(), "TransformerBlockConfig.residual_gate");
        let conditioned = block().with_conditioning(Some(3)).with_residual_gate(true);
        assert_eq!(
            refusal(conditioned),
            "TransformerBlockConfig.residual_gate replaces a residual sum x + F(x) by a GRU \
             cell; placement pre with conditioning Some(3) has none to replace"
        );
        assert_eq!(
            refusal(block().with_dropout(1.5)),
            "TransformerBlockConfig.dropout must lie in [0, 1), got 1.5"
        );
        assert_eq!(
            refusal(block().with_layer_scale(Some(f64::NAN))),
            "TransformerBlockConfig.layer_scale must be finite, got NaN"
        );
        assert_eq!(
            refusal(block().with_conditioning(Some(0))),
            "AdaLnZeroConfig widths must be positive, got d_cond 0 and d_model 8"
        );
    }

    /// The configs the block builds are checked with the widths `init` gives them.
    #[test]
    fn check_refuses_the_sublayers_it_builds() {
        assert_eq!(
            refusal(TransformerBlockConfig::new(10, 3, 8)),
            "MultiHeadSelfAttentionConfig.d_model (10) must be a positive multiple of n_heads (3)"
        );
        assert_eq!(
            refusal(TransformerBlockConfig::llama(64, 8, 3, 96)),
            "MultiHeadSelfAttentionConfig.n_kv_heads (3) must divide n_heads (8)"
        );
        let shared = TransformerBlockConfig::olmo2(64, 8, 2, 96).with_separate_qk_norms(false);
        assert!(refusal(shared).ends_with("set separate_qk_norms"));
        assert_eq!(
            refusal(TransformerBlockConfig::new(8, 2, 0)),
            "FeedForwardConfig widths must be positive, got d_model 8 and d_ff 0"
        );
        let epsilon = "LayerNormConfig.epsilon must be positive and finite, got 0";
        assert_eq!(refusal(block().with_norm(bad_norm())), epsilon);
        assert_eq!(refusal(block().with_qk_norm(Some(bad_norm()))), epsilon);
        // ReZero builds no norm from the config unless an option asks for one.
        let rezero = block()
            .with_placement(Placement::ReZero)
            .with_norm(bad_norm());
        assert_eq!(rezero.check(), Ok(()));
        let _ = rezero.init::<NdArray>(&Default::default());
        let output_norm = rezero.clone().with_attention_output_norm(true);
        assert_eq!(refusal(output_norm), epsilon);
        assert_eq!(refusal(rezero.with_feed_forward_norm(true)), epsilon);
    }

    /// `init` panics with exactly the message of `check`'s error.
    #[test]
    fn init_panics_with_the_message_of_check() {
        let cases = [
            block().with_n_layers(0),
            block()
                .with_placement(Placement::Parallel)
                .with_residual_gate(true),
            TransformerBlockConfig::llama(64, 8, 3, 96),
            block().with_norm(bad_norm()),
            block().with_layer_scale(Some(f64::INFINITY)),
            block().with_conditioning(Some(0)),
        ];
        for config in cases {
            let expected = config.check().unwrap_err().to_string();
            let init = || config.init::<NdArray>(&Default::default());
            let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(init))
                .expect_err("init panics");
            assert_eq!(payload.downcast_ref::<String>(), Some(&expected));
        }
    }
}
