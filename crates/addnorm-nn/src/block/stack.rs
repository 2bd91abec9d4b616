//! A decoder-only causal language model: embeddings, N [`TransformerBlock`]s, a final norm
//! where the placement needs one, and an output head.
//!
//! ```text
//! x₀ = E_tok[tokens] + E_pos[0..T]          each embedding ~ N(0, ½): E‖x₀‖²/d = 1
//! x_l = Block_l(x_{l−1})                    l = 1..N
//! logits = Head(FinalNorm(x_N))             FinalNorm where the placement has one
//! logits = Head(x_N + FinalNorm(x_N^d))     ResiDual, its dual stream x^d from x₀
//! logits ← c·tanh(logits / c)               with a final-logit soft cap c (Gemma 2)
//! ```
//!
//! # Shapes
//! - input tokens: `[batch, seq]` (Int), `seq ≤ max_seq_len`
//! - output logits: `[batch, seq, vocab_size]`
//!
//! # Example
//! ```
//! use addnorm_nn::{Placement, TransformerStack, TransformerStackConfig};
//! use burn::backend::NdArray;
//! use burn::tensor::{Int, Tensor};
//!
//! let device = Default::default();
//! let config = TransformerStackConfig::tiny().with_placement(Placement::Post);
//! let model: TransformerStack<NdArray> = config.init(&device);
//! let tokens = Tensor::<NdArray, 2, Int>::from_ints([[1, 2, 3, 4]], &device);
//! let (logits, stats) = model.forward_with_stats(tokens);
//! assert_eq!(logits.dims(), [1, 4, config.vocab_size]);
//! assert_eq!(stats.residual_rms.len(), config.block.n_layers + 1);
//! ```

use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Embedding, EmbeddingConfig, Linear};
use burn::tensor::{ElementConversion, Int, Tensor, backend::Backend};

use addnorm_kernels::NormBackend;
use addnorm_kernels::embedding::embedding;

use super::feed_forward::Activation;
use super::linear::{self, projection};
use super::placement::Placement;
use super::qk_norm::QkNormScope;
use super::rotary::RotaryConfig;
use super::transformer_block::{TransformerBlock, TransformerBlockConfig};
use crate::config_error::{ConfigError, ensure, or_panic};
use crate::norm::{Norm, NormConfig};

/// Configuration of a [`TransformerStack`]: one [`TransformerBlockConfig`] that every block
/// is built from, plus the vocabulary and the longest sequence. The block holds the widths,
/// the depth N (`block.n_layers`, which DeepNorm's α and β read too), the placement, the
/// norm and the rest; the final norm and the output head take the block's norm, width and
/// initializer. `TransformerStackConfig::new()` is the [`tiny`](Self::tiny) preset.
///
/// The `with_*` setters of the block's fields (`with_placement`, `with_d_model`, ...) set
/// them on [`block`](Self::block): `tiny().with_n_layers(4)` is a 4-block tiny stack.
#[derive(Config, Debug)]
pub struct TransformerStackConfig {
    /// The number of token ids. Default: 16
    #[config(default = 16)]
    pub vocab_size: usize,
    /// The longest sequence the positional embedding covers. Default: 64
    #[config(default = 64)]
    pub max_seq_len: usize,
    /// Every block: d_model, n_heads, d_ff, the depth N (`n_layers`), placement, norm,
    /// dropout, activation, QK-norm and initializer. The stack is causal: `causal` must be
    /// true. Default: `TransformerBlockConfig::new(32, 2, 128).with_n_layers(2)`
    #[config(default = "TransformerBlockConfig::new(32, 2, 128).with_n_layers(2)")]
    pub block: TransformerBlockConfig,
    /// Gemma 2's final-logit soft-capping: `logits ← c·tanh(logits/c)` (Gemma 2 uses
    /// c = 30; Gemma Team 2024, §2). Must be positive. Default: None
    #[config(default = "None")]
    pub final_logit_softcap: Option<f64>,
}

/// Setters of the block's fields on the stack: each sets that field of
/// [`block`](TransformerStackConfig::block), so every block gets it.
macro_rules! block_setters {
    ($($setter:ident => $field:ident: $ty:ty),* $(,)?) => {
        impl TransformerStackConfig {
            $(
                #[doc = concat!("Sets `block.", stringify!($field), "`.")]
                pub fn $setter(mut self, $field: $ty) -> Self {
                    self.block.$field = $field;
                    self
                }
            )*
        }
    };
}

block_setters! {
    with_d_model => d_model: usize,
    with_n_heads => n_heads: usize,
    with_d_ff => d_ff: usize,
    with_n_layers => n_layers: usize,
    with_placement => placement: Placement,
    with_norm => norm: NormConfig,
    with_dropout => dropout: f64,
    with_activation => activation: Activation,
    with_qk_norm => qk_norm: Option<NormConfig>,
    with_separate_qk_norms => separate_qk_norms: bool,
    with_qk_norm_scope => qk_norm_scope: QkNormScope,
    with_zero_init_query_key => zero_init_query_key: bool,
    with_initializer => initializer: Initializer,
    with_layer_scale => layer_scale: Option<f64>,
    with_residual_gate => residual_gate: bool,
    with_attention_output_norm => attention_output_norm: bool,
    with_feed_forward_norm => feed_forward_norm: bool,
    with_head_scale => head_scale: bool,
    with_attention_logit_softcap => attention_logit_softcap: Option<f64>,
    with_n_kv_heads => n_kv_heads: Option<usize>,
    with_d_head => d_head: Option<usize>,
    with_bias => bias: bool,
    with_rotary => rotary: Option<RotaryConfig>,
    with_attention_scale => attention_scale: Option<f64>,
    with_gated_feed_forward => gated_feed_forward: bool,
}

impl TransformerStackConfig {
    /// d_model 32, 2 heads, d_ff 128, 2 layers, vocabulary 16, sequences up to 64.
    pub fn tiny() -> Self {
        Self::new()
    }

    /// d_model 64, 4 heads, d_ff 256, 4 layers.
    pub fn small() -> Self {
        Self::new()
            .with_d_model(64)
            .with_n_heads(4)
            .with_d_ff(256)
            .with_n_layers(4)
    }

    /// Checks every option without building anything: the error `init` would panic with,
    /// or `Ok`. It covers the block (see [`TransformerBlockConfig::check`]) and the final
    /// norm.
    ///
    /// # Errors
    /// If `block.n_layers`, `vocab_size` or `max_seq_len` is zero, `block.causal` is
    /// false, `block.d_model` is not a positive multiple of `block.n_heads`, `block.dropout`
    /// is outside [0, 1), `block.conditioning` is set, `final_logit_softcap` is not positive
    /// and finite, or the block refuses its own options (`block.d_ff` zero, and the rest).
    /// The message names the field and its value.
    pub fn check(&self) -> Result<(), ConfigError> {
        self.validate_language_model()?;
        let block = &self.block;
        super::validate_heads("TransformerStackConfig.block", block.d_model, block.n_heads)?;
        super::validate_dropout("TransformerStackConfig.block", block.dropout)?;
        ensure(block.conditioning.is_none(), || {
            ConfigError::of_field(
                "TransformerStackConfig.block.conditioning",
                "must be None: the language model has no conditioning input (build adaLN-Zero \
                 blocks with TransformerBlockConfig)",
            )
        })?;
        super::validate_softcap(
            "TransformerStackConfig.final_logit_softcap",
            self.final_logit_softcap,
        )?;
        block.check()?;
        if block.placement.has_final_norm() {
            block.norm.with_d_model(block.d_model).check()?;
        }
        Ok(())
    }

    /// Refuses a stack without blocks, tokens or positions, or whose blocks see the future.
    fn validate_language_model(&self) -> Result<(), ConfigError> {
        ensure(self.block.n_layers > 0, || {
            ConfigError::of_field(
                "TransformerStackConfig.block.n_layers",
                "must be at least 1, got 0",
            )
        })?;
        let (vocab_size, max_seq_len) = (self.vocab_size, self.max_seq_len);
        ensure(vocab_size > 0 && max_seq_len > 0, || {
            ConfigError::new(
                "TransformerStackConfig",
                format!(
                    "TransformerStackConfig.vocab_size ({vocab_size}) and max_seq_len \
                     ({max_seq_len}) must be positive"
                ),
            )
        })?;
        ensure(self.block.causal, || {
            ConfigError::of_field(
                "TransformerStackConfig.block.causal",
                "must be true (the stack is a causal language model), got false",
            )
        })
    }

    /// Builds the model on `device`.
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> TransformerStack<B> {
        or_panic(self.check());
        let block = &self.block;
        let half_variance = Initializer::Normal {
            mean: 0.0,
            std: core::f64::consts::FRAC_1_SQRT_2,
        };
        let embedding = |n| {
            EmbeddingConfig::new(n, block.d_model)
                .with_initializer(half_variance.clone())
                .init(device)
        };
        TransformerStack {
            token_embedding: embedding(self.vocab_size),
            position_embedding: embedding(self.max_seq_len),
            blocks: (0..block.n_layers).map(|_| block.init(device)).collect(),
            final_norm: block
                .placement
                .has_final_norm()
                .then(|| block.norm.with_d_model(block.d_model).init(device)),
            head: projection(
                [block.d_model, self.vocab_size],
                &block.initializer,
                true,
                device,
            ),
            final_logit_softcap: self.final_logit_softcap,
        }
    }
}

/// Per-layer measurements of one forward pass, for the gradient-stability study.
#[derive(Clone, Debug, PartialEq)]
pub struct StackStats {
    /// `√(mean(x_l²))` of the residual stream (ResiDual's Post-LN stream): index 0 is the
    /// embeddings x₀, index l the output of block l (N + 1 values).
    pub residual_rms: Vec<f64>,
    /// The largest attention logit of each block (N values).
    pub max_attention_logit: Vec<f64>,
}

/// A decoder-only causal LM (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct TransformerStack<B: Backend> {
    /// Token embedding, `[vocab_size, d_model]`.
    pub token_embedding: Embedding<B>,
    /// Learned positional embedding, `[max_seq_len, d_model]`.
    pub position_embedding: Embedding<B>,
    /// The N blocks.
    pub blocks: Vec<TransformerBlock<B>>,
    /// The norm before the head (Pre and Peri placements).
    pub final_norm: Option<Norm<B>>,
    /// The output projection to logits, `[d_model, vocab_size]`.
    pub head: Linear<B>,
    #[module(skip)]
    final_logit_softcap: Option<f64>,
}

impl<B: NormBackend> TransformerStack<B> {
    /// `x₀ = E_tok[tokens] + E_pos[positions]`, each lookup through
    /// [`addnorm_kernels::embedding`] (Burn's `Embedding::forward`, with a fused kernel).
    fn embed(&self, tokens: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        let [batch, seq] = tokens.dims();
        let max_seq = self.position_embedding.weight.dims()[0];
        assert!(
            seq <= max_seq,
            "TransformerStack: sequence length {seq} exceeds max_seq_len {max_seq}"
        );
        let positions = Tensor::<B, 1, Int>::arange(0..seq as i64, &tokens.device())
            .unsqueeze::<2>()
            .expand([batch, seq]);
        let lookup = |table: &Embedding<B>, ids| embedding(table.weight.val(), ids);
        lookup(&self.token_embedding, tokens) + lookup(&self.position_embedding, positions)
    }

    /// Logits from the features: the head, then the soft cap where configured.
    fn logits(&self, features: Tensor<B, 3>) -> Tensor<B, 3> {
        let logits = linear::forward(&self.head, features);
        match self.final_logit_softcap {
            Some(cap) => (logits / cap).tanh() * cap,
            None => logits,
        }
    }

    /// Runs the blocks from x₀ and returns what the head reads; pushes each layer's
    /// measurements onto `stats` when given.
    fn run(&self, tokens: Tensor<B, 2, Int>, mut stats: Option<&mut StackStats>) -> Tensor<B, 3> {
        let rms = |x: &Tensor<B, 3>| -> f64 {
            let ms: f64 = x.clone().detach().square().mean().into_scalar().elem();
            ms.sqrt()
        };
        let mut x = self.embed(tokens);
        let resi_dual = self
            .blocks
            .first()
            .is_some_and(|b| b.attention_residual.placement() == Placement::ResiDual);
        let mut dual = resi_dual.then(|| x.clone());
        if let Some(stats) = stats.as_deref_mut() {
            stats.residual_rms.push(rms(&x));
        }
        for block in &self.blocks {
            let (y, d, max_logit) = block.apply(x, dual, stats.is_some());
            if let (Some(stats), Some(m)) = (stats.as_deref_mut(), max_logit) {
                stats.max_attention_logit.push(m.into_scalar().elem());
                stats.residual_rms.push(rms(&y));
            }
            (x, dual) = (y, d);
        }
        let norm = |x| match &self.final_norm {
            Some(norm) => norm.forward(x),
            None => x,
        };
        match dual {
            Some(dual) => x + norm(dual),
            None => norm(x),
        }
    }

    /// The features the output head reads: the last block's output, after the final norm
    /// where the placement has one (for ResiDual, `x_N + FinalNorm(x_N^d)`). DeepNet's (Wang
    /// et al. 2022) model output F(x, θ).
    ///
    /// # Shapes
    /// - input: `[batch, seq]` token ids
    /// - output: `[batch, seq, d_model]`
    pub fn features(&self, tokens: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.run(tokens, None)
    }

    /// Next-token logits.
    ///
    /// # Shapes
    /// - input: `[batch, seq]` token ids
    /// - output: `[batch, seq, vocab_size]`
    ///
    /// # Panics
    /// If `seq > max_seq_len`.
    pub fn forward(&self, tokens: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.logits(self.features(tokens))
    }

    /// Next-token logits and the per-layer [`StackStats`]. Costs one device sync per layer;
    /// [`forward`](Self::forward) measures nothing.
    ///
    /// # Shapes
    /// - input: `[batch, seq]` token ids
    /// - output: `[batch, seq, vocab_size]`
    pub fn forward_with_stats(&self, tokens: Tensor<B, 2, Int>) -> (Tensor<B, 3>, StackStats) {
        let mut stats = StackStats {
            residual_rms: Vec::with_capacity(self.blocks.len() + 1),
            max_attention_logit: Vec::with_capacity(self.blocks.len()),
        };
        let features = self.run(tokens, Some(&mut stats));
        (self.logits(features), stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::norm::LayerNormConfig;

    fn refusal(config: TransformerStackConfig) -> String {
        config.check().unwrap_err().to_string()
    }

    #[test]
    fn check_accepts_the_presets() {
        let llama = TransformerBlockConfig::llama(64, 8, 2, 96);
        for config in [
            TransformerStackConfig::tiny(),
            TransformerStackConfig::small(),
            TransformerStackConfig::new().with_block(llama),
            TransformerStackConfig::tiny().with_placement(Placement::ReZero),
        ] {
            assert_eq!(config.check(), Ok(()), "{config:?}");
        }
    }

    #[test]
    fn check_refuses_what_init_panics_on() {
        let tiny = TransformerStackConfig::tiny;
        let heads = tiny().with_d_model(30).with_n_heads(4).check().unwrap_err();
        assert_eq!(
            heads.to_string(),
            "TransformerStackConfig.block.d_model (30) must be a positive multiple of n_heads (4)"
        );
        assert_eq!(heads.field(), "TransformerStackConfig.block.d_model");
        assert_eq!(
            refusal(tiny().with_n_layers(0)),
            "TransformerStackConfig.block.n_layers must be at least 1, got 0"
        );
        assert_eq!(
            refusal(tiny().with_vocab_size(0)),
            "TransformerStackConfig.vocab_size (0) and max_seq_len (64) must be positive"
        );
        let mut bidirectional = tiny();
        bidirectional.block.causal = false;
        assert_eq!(
            refusal(bidirectional),
            "TransformerStackConfig.block.causal must be true (the stack is a causal language \
             model), got false"
        );
        assert_eq!(
            refusal(tiny().with_dropout(1.0)),
            "TransformerStackConfig.block.dropout must lie in [0, 1), got 1"
        );
        let mut conditioned = tiny();
        conditioned.block.conditioning = Some(3);
        assert_eq!(
            refusal(conditioned),
            "TransformerStackConfig.block.conditioning must be None: the language model has no \
             conditioning input (build adaLN-Zero blocks with TransformerBlockConfig)"
        );
        assert_eq!(
            refusal(tiny().with_final_logit_softcap(Some(0.0))),
            "TransformerStackConfig.final_logit_softcap must be positive and finite, got 0"
        );
    }

    /// The block's own rules, and the final norm, are the stack's too.
    #[test]
    fn check_refuses_the_block_and_the_final_norm() {
        let tiny = TransformerStackConfig::tiny;
        let parallel = tiny().with_placement(Placement::Parallel);
        let gated = parallel.with_residual_gate(true).check().unwrap_err();
        assert_eq!(gated.field(), "TransformerBlockConfig.residual_gate");
        assert!(gated.message().contains("placement parallel"), "{gated}");
        assert_eq!(
            refusal(tiny().with_d_ff(0)),
            "FeedForwardConfig widths must be positive, got d_model 32 and d_ff 0"
        );
        let bad_norm: NormConfig = LayerNormConfig::new(vec![1]).with_epsilon(0.0).into();
        assert_eq!(
            refusal(tiny().with_norm(bad_norm.clone())),
            "LayerNormConfig.epsilon must be positive and finite, got 0"
        );
        let rezero = tiny().with_placement(Placement::ReZero).with_norm(bad_norm);
        assert_eq!(
            rezero.check(),
            Ok(()),
            "ReZero has neither block norms nor a final norm"
        );
    }
}
