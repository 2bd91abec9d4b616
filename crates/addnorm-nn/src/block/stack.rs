//! A decoder-only causal language model: embeddings, N [`TransformerBlock`]s, a final norm
//! where the placement needs one, and an output head.
//!
//! ```text
//! x₀ = E_tok[tokens] + E_pos[0..T]          each embedding ~ N(0, ½): E‖x₀‖²/d = 1
//! x_l = Block_l(x_{l−1})                    l = 1..N
//! logits = Head(FinalNorm(x_N))             FinalNorm only for Pre and Peri
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
//! assert_eq!(stats.residual_rms.len(), config.n_layers + 1);
//! ```

use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Embedding, EmbeddingConfig, Linear};
use burn::tensor::{ElementConversion, Int, Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::feed_forward::Activation;
use super::linear::{self, projection, xavier_normal};
use super::placement::Placement;
use super::transformer_block::{TransformerBlock, TransformerBlockConfig};
use crate::norm::{Norm, NormConfig};

/// Configuration of a [`TransformerStack`]. `TransformerStackConfig::new()` is the
/// [`tiny`](Self::tiny) preset.
#[derive(Config, Debug)]
pub struct TransformerStackConfig {
    /// The number of token ids. Default: 16
    #[config(default = 16)]
    pub vocab_size: usize,
    /// The longest sequence the positional embedding covers. Default: 64
    #[config(default = 64)]
    pub max_seq_len: usize,
    /// The model width. Default: 32
    #[config(default = 32)]
    pub d_model: usize,
    /// The number of attention heads. Default: 2
    #[config(default = 2)]
    pub n_heads: usize,
    /// The feed-forward hidden width. Default: 128
    #[config(default = 128)]
    pub d_ff: usize,
    /// The number of blocks N. Default: 2
    #[config(default = 2)]
    pub n_layers: usize,
    /// Where the norms sit. Default: `Placement::Pre`
    #[config(default = "Placement::Pre")]
    pub placement: Placement,
    /// Which norm, with its options (its width is set to `d_model`).
    /// Default: `NormConfig::layer(0)`
    #[config(default = "NormConfig::layer(0)")]
    pub norm: NormConfig,
    /// Dropout everywhere in the blocks. Default: 0.0
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
    /// Start every W^Q and W^K at zero. Default: false
    #[config(default = false)]
    pub zero_init_query_key: bool,
    /// The initializer of every projection weight (biases start at zero).
    /// Default: Xavier-normal, gain 1
    #[config(default = "xavier_normal(1.0)")]
    pub initializer: Initializer,
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

    /// The configuration of each block.
    pub fn block(&self) -> TransformerBlockConfig {
        TransformerBlockConfig::new(self.d_model, self.n_heads, self.d_ff)
            .with_placement(self.placement)
            .with_norm(self.norm.clone())
            .with_n_layers(self.n_layers)
            .with_causal(true)
            .with_dropout(self.dropout)
            .with_activation(self.activation)
            .with_qk_norm(self.qk_norm.clone())
            .with_separate_qk_norms(self.separate_qk_norms)
            .with_zero_init_query_key(self.zero_init_query_key)
            .with_initializer(self.initializer.clone())
    }

    /// Builds the model on `device`.
    ///
    /// # Panics
    /// If `n_layers`, `vocab_size`, `max_seq_len` or `d_ff` is zero, `d_model` is not a
    /// positive multiple of `n_heads`, or `dropout` is outside [0, 1). The message names the
    /// field and its value.
    pub fn init<B: Backend>(&self, device: &B::Device) -> TransformerStack<B> {
        assert!(
            self.n_layers > 0,
            "TransformerStackConfig.n_layers must be at least 1, got 0"
        );
        assert!(
            self.vocab_size > 0 && self.max_seq_len > 0,
            "TransformerStackConfig.vocab_size ({}) and max_seq_len ({}) must be positive",
            self.vocab_size,
            self.max_seq_len
        );
        super::validate_heads("TransformerStackConfig", self.d_model, self.n_heads);
        super::validate_dropout("TransformerStackConfig", self.dropout);
        let half_variance = Initializer::Normal {
            mean: 0.0,
            std: core::f64::consts::FRAC_1_SQRT_2,
        };
        let embedding = |n| {
            EmbeddingConfig::new(n, self.d_model)
                .with_initializer(half_variance.clone())
                .init(device)
        };
        let block = self.block();
        TransformerStack {
            token_embedding: embedding(self.vocab_size),
            position_embedding: embedding(self.max_seq_len),
            blocks: (0..self.n_layers).map(|_| block.init(device)).collect(),
            final_norm: self
                .placement
                .has_final_norm()
                .then(|| self.norm.with_d_model(self.d_model).init(device)),
            head: projection(self.d_model, self.vocab_size, &self.initializer, device),
        }
    }
}

/// Per-layer measurements of one forward pass, for the gradient-stability study.
#[derive(Clone, Debug, PartialEq)]
pub struct StackStats {
    /// `√(mean(x_l²))` of the residual stream: index 0 is the embeddings x₀, index l the
    /// output of block l (N + 1 values).
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
}

impl<B: NormBackend> TransformerStack<B> {
    /// x₀ = E_tok[tokens] + E_pos[positions].
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
        self.token_embedding.forward(tokens) + self.position_embedding.forward(positions)
    }

    /// Logits from the last residual stream.
    fn logits(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        linear::forward(&self.head, self.normalized(x))
    }

    /// The last residual stream as the head sees it (after the final norm, if any).
    fn normalized(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        match &self.final_norm {
            Some(norm) => norm.forward(x),
            None => x,
        }
    }

    /// The features the output head reads: the last block's output, after the final norm
    /// where the placement has one. DeepNet's (Wang et al. 2022) model output F(x, θ).
    ///
    /// # Shapes
    /// - input: `[batch, seq]` token ids
    /// - output: `[batch, seq, d_model]`
    pub fn features(&self, tokens: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        let x = self
            .blocks
            .iter()
            .fold(self.embed(tokens), |x, block| block.forward(x));
        self.normalized(x)
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
        linear::forward(&self.head, self.features(tokens))
    }

    /// Next-token logits and the per-layer [`StackStats`]. Costs one device sync per layer;
    /// [`forward`](Self::forward) measures nothing.
    ///
    /// # Shapes
    /// - input: `[batch, seq]` token ids
    /// - output: `[batch, seq, vocab_size]`
    pub fn forward_with_stats(&self, tokens: Tensor<B, 2, Int>) -> (Tensor<B, 3>, StackStats) {
        let rms = |x: &Tensor<B, 3>| -> f64 {
            let ms: f64 = x.clone().detach().square().mean().into_scalar().elem();
            ms.sqrt()
        };
        let mut x = self.embed(tokens);
        let mut stats = StackStats {
            residual_rms: vec![rms(&x)],
            max_attention_logit: Vec::with_capacity(self.blocks.len()),
        };
        for block in &self.blocks {
            let (y, max_logit) = block.forward_with_max_logit(x);
            stats
                .max_attention_logit
                .push(max_logit.into_scalar().elem());
            stats.residual_rms.push(rms(&y));
            x = y;
        }
        (self.logits(x), stats)
    }
}
