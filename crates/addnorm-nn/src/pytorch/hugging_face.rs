//! [`HfDecoderLayer`]: one decoder layer of a Hugging Face `transformers` checkpoint (Llama,
//! Gemma 2, OLMo 2), read into a [`TransformerBlock`] built by the matching preset
//! (`TransformerBlockConfig::llama`, `gemma2`, `olmo2`).
//!
//! The keys each layout reads are tabled on [`HfDecoderLayer`].
//!
//! # Shapes
//! PyTorch's `[out, in]`: `q_proj [h·d_head, d_model]`, `k_proj`, `v_proj
//! [g·d_head, d_model]`, `o_proj [d_model, h·d_head]`, `gate_proj`, `up_proj
//! [d_ff, d_model]`, `down_proj [d_model, d_ff]`; norms `[d_model]` (OLMo 2's QK-norms
//! `[h·d_head]` and `[g·d_head]`).

use burn::tensor::backend::Backend;

use super::load::{child, optional_child};
use super::{PytorchLoadError, StateDict};
use crate::block::{AddNorm, FeedForward, MultiHeadSelfAttention, Placement, TransformerBlock};
use crate::norm::Norm;

/// A Hugging Face decoder layer's checkpoint layout. New layouts may be added, so matches
/// need a wildcard arm.
///
/// The keys under `prefix` (`"model.layers.0."` in the models' own files), beside
/// `self_attn.{q,k,v,o}_proj.weight` and `mlp.{gate,up,down}_proj.weight`, which every
/// layout has:
///
/// | layout | attention: input norm, output norm | feed-forward: input norm, output norm | block |
/// |---|---|---|---|
/// | `Llama` | `input_layernorm`, — | `post_attention_layernorm`, — | `Placement::Pre` |
/// | `Gemma2` | `input_layernorm`, `post_attention_layernorm` | `pre_feedforward_layernorm`, `post_feedforward_layernorm` | `Placement::Peri` |
/// | `Olmo2` | —, `post_attention_layernorm` | —, `post_feedforward_layernorm` | `Placement::PostBranch` |
///
/// Each norm's `weight` is its γ (Gemma's unit-offset γ as stored). QK-norms, where the block
/// has them, are read from `self_attn.q_norm` and `self_attn.k_norm` (OLMo 2; Gemma 3).
/// Biases, where the block has them, from each projection's `bias`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HfDecoderLayer {
    /// `LlamaDecoderLayer`, a Pre block.
    Llama,
    /// `Gemma2DecoderLayer`, a Peri (sandwich) block.
    Gemma2,
    /// `Olmo2DecoderLayer`, a PostBranch block.
    Olmo2,
}

/// The names of one residual connection's input and output norms.
type NormNames = [Option<&'static str>; 2];

impl HfDecoderLayer {
    /// The placement this layout's layer has.
    pub fn placement(self) -> Placement {
        match self {
            Self::Llama => Placement::Pre,
            Self::Gemma2 => Placement::Peri,
            Self::Olmo2 => Placement::PostBranch,
        }
    }

    /// The attention's and the feed-forward network's norm names.
    fn norm_names(self) -> [NormNames; 2] {
        match self {
            Self::Llama => [
                [Some("input_layernorm"), None],
                [Some("post_attention_layernorm"), None],
            ],
            Self::Gemma2 => [
                [Some("input_layernorm"), Some("post_attention_layernorm")],
                [
                    Some("pre_feedforward_layernorm"),
                    Some("post_feedforward_layernorm"),
                ],
            ],
            Self::Olmo2 => [
                [None, Some("post_attention_layernorm")],
                [None, Some("post_feedforward_layernorm")],
            ],
        }
    }

    /// Returns `block` with every parameter read from the layer under `prefix` (which ends
    /// with a dot, or is empty). Parameter ids and `require_grad` are kept.
    ///
    /// # Errors
    /// A missing key or a wrong shape ([`PytorchLoadError::Missing`], `Shape`), or a block
    /// that is not this layout's: another placement, an ungated feed-forward network, or an
    /// option these layers do not have (LayerScale, residual gates, adaLN-Zero, NormFormer's
    /// norms and head scale, one QK-norm shared by queries and keys)
    /// ([`PytorchLoadError::Unsupported`]). Nothing is returned half-loaded.
    pub fn load<B: Backend>(
        self,
        block: TransformerBlock<B>,
        state: &StateDict,
        prefix: &str,
    ) -> Result<TransformerBlock<B>, PytorchLoadError> {
        self.check(&block, prefix)?;
        let [attention_names, feed_forward_names] = self.norm_names();
        let mut block = block;
        block.attention_residual =
            load_norms(block.attention_residual, attention_names, state, prefix)?;
        block.feed_forward_residual = load_norms(
            block.feed_forward_residual,
            feed_forward_names,
            state,
            prefix,
        )?;
        block.attention = load_attention(block.attention, state, &format!("{prefix}self_attn."))?;
        block.feed_forward = load_mlp(block.feed_forward, state, &format!("{prefix}mlp."))?;
        Ok(block)
    }

    /// An error unless `block` has this layout's structure.
    fn check<B: Backend>(
        self,
        block: &TransformerBlock<B>,
        prefix: &str,
    ) -> Result<(), PytorchLoadError> {
        let unsupported = |what: &str| {
            Err(PytorchLoadError::Unsupported(format!(
                "{prefix}: a {self:?} decoder layer {what}"
            )))
        };
        let placement = block.attention_residual.placement();
        if placement != self.placement() {
            return unsupported(&format!(
                "is a {} block; this one is {placement}",
                self.placement()
            ));
        }
        let residuals = [&block.attention_residual, &block.feed_forward_residual];
        if residuals
            .iter()
            .any(|r| r.layer_scale.is_some() || r.residual_gate.is_some())
        {
            return unsupported("has no LayerScale or residual gate");
        }
        let attention = &block.attention;
        if block.ada_ln.is_some()
            || block.feed_forward.hidden_norm.is_some()
            || attention.head_scale.is_some()
            || (self == Self::Llama && block.attention_residual.output_norm.is_some())
        {
            return unsupported("has no adaLN-Zero, NormFormer norm or head scale");
        }
        if block.feed_forward.gate.is_none() {
            return unsupported("has a gated feed-forward network (gated_feed_forward)");
        }
        if attention.qk_norm.is_some() && attention.key_norm.is_none() {
            return unsupported("has separate q_norm and k_norm (separate_qk_norms)");
        }
        Ok(())
    }
}

/// The connection's input and output norms from `names`, where the layout has them.
fn load_norms<B: Backend>(
    mut residual: AddNorm<B>,
    [input, output]: NormNames,
    state: &StateDict,
    prefix: &str,
) -> Result<AddNorm<B>, PytorchLoadError> {
    residual.input_norm = optional_child(residual.input_norm.take(), state, prefix, input)?;
    residual.output_norm = optional_child(residual.output_norm.take(), state, prefix, output)?;
    Ok(residual)
}

/// `{q,k,v,o}_proj` and, when the attention has them, `q_norm` and `k_norm`.
fn load_attention<B: Backend>(
    mut attention: MultiHeadSelfAttention<B>,
    state: &StateDict,
    prefix: &str,
) -> Result<MultiHeadSelfAttention<B>, PytorchLoadError> {
    attention.query = child(attention.query, state, prefix, "q_proj")?;
    attention.key = child(attention.key, state, prefix, "k_proj")?;
    attention.value = child(attention.value, state, prefix, "v_proj")?;
    attention.output = child(attention.output, state, prefix, "o_proj")?;
    let norm = |norm: Option<Norm<B>>, name| optional_child(norm, state, prefix, Some(name));
    attention.qk_norm = norm(attention.qk_norm.take(), "q_norm")?;
    attention.key_norm = norm(attention.key_norm.take(), "k_norm")?;
    Ok(attention)
}

/// `gate_proj` (W_g), `up_proj` (W₁) and `down_proj` (W₂).
fn load_mlp<B: Backend>(
    mut feed_forward: FeedForward<B>,
    state: &StateDict,
    prefix: &str,
) -> Result<FeedForward<B>, PytorchLoadError> {
    feed_forward.gate = optional_child(feed_forward.gate.take(), state, prefix, Some("gate_proj"))?;
    feed_forward.inner = child(feed_forward.inner, state, prefix, "up_proj")?;
    feed_forward.outer = child(feed_forward.outer, state, prefix, "down_proj")?;
    Ok(feed_forward)
}
