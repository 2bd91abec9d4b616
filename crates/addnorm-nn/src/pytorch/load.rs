//! [`LoadPytorch`]: each module reads its parameters from a [`StateDict`] under PyTorch's
//! names (the table is in the [module docs](super)).

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Tensor, backend::Backend};

use super::{PytorchLoadError, StateDict};
use crate::block::{
    AddNorm, FeedForward, MultiHeadSelfAttention, Placement, ResidualGate, TransformerBlock,
};
use crate::norm::{DynamicTanh, GroupNorm, InstanceNorm, LayerNorm, Norm, RmsNorm};

/// A module whose parameters can be replaced by a PyTorch module's.
pub trait LoadPytorch: Sized {
    /// Returns this module with every parameter replaced by the tensor under
    /// `prefix` + PyTorch's name for it (`prefix` is `""` at the top level, or ends with a
    /// dot: `"encoder.layers.0."`). Parameter ids and `require_grad` are kept, so an
    /// optimizer or a recorder treats the loaded module like the initialized one.
    ///
    /// # Errors
    /// A missing key, a shape that differs from the parameter's, or a configuration with no
    /// PyTorch counterpart. Nothing is returned half-loaded.
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError>;
}

/// `param` with its value replaced by `value`, keeping its id and `require_grad`.
fn replace<B: Backend, const D: usize>(
    param: Param<Tensor<B, D>>,
    value: Tensor<B, D>,
) -> Param<Tensor<B, D>> {
    param.map(|old| {
        let value = value.to_device(&old.device());
        if old.is_require_grad() {
            value.require_grad()
        } else {
            value
        }
    })
}

/// A `[n]` parameter from `key`.
fn load_vector<B: Backend>(
    param: Param<Tensor<B, 1>>,
    state: &StateDict,
    key: &str,
) -> Result<Param<Tensor<B, 1>>, PytorchLoadError> {
    let value = state.tensor::<B, 1>(key, [param.shape()[0]], &param.device())?;
    Ok(replace(param, value))
}

/// γ from `{prefix}weight` and β from `{prefix}bias`, for the ones the module has.
type Affine<B> = (Option<Param<Tensor<B, 1>>>, Option<Param<Tensor<B, 1>>>);

fn load_affine<B: Backend>(
    (gamma, beta): Affine<B>,
    state: &StateDict,
    prefix: &str,
) -> Result<Affine<B>, PytorchLoadError> {
    let gamma = gamma
        .map(|g| load_vector(g, state, &format!("{prefix}weight")))
        .transpose()?;
    let beta = beta
        .map(|b| load_vector(b, state, &format!("{prefix}bias")))
        .transpose()?;
    Ok((gamma, beta))
}

/// `module` read from the keys under `{prefix}{name}.`.
pub(super) fn child<M: LoadPytorch>(
    module: M,
    state: &StateDict,
    prefix: &str,
    name: &str,
) -> Result<M, PytorchLoadError> {
    module.load_pytorch(state, &format!("{prefix}{name}."))
}

/// [`child`] for a module the block may lack, under a name the layout may lack.
pub(super) fn optional_child<M: LoadPytorch>(
    module: Option<M>,
    state: &StateDict,
    prefix: &str,
    name: Option<&str>,
) -> Result<Option<M>, PytorchLoadError> {
    match (module, name) {
        (Some(module), Some(name)) => child(module, state, prefix, name).map(Some),
        (module, _) => Ok(module),
    }
}

/// `LoadPytorch` for norms whose parameters are γ and β alone: PyTorch's `weight` and
/// `bias` (`nn.LayerNorm`, `nn.RMSNorm`, `nn.GroupNorm`, `nn.InstanceNorm*d(affine=True)`;
/// Gemma's unit-offset γ is stored as `weight` too).
macro_rules! load_gamma_beta {
    ($($norm:ident),*) => {$(
        impl<B: Backend> LoadPytorch for $norm<B> {
            fn load_pytorch(
                mut self,
                state: &StateDict,
                prefix: &str,
            ) -> Result<Self, PytorchLoadError> {
                (self.gamma, self.beta) = load_affine((self.gamma, self.beta), state, prefix)?;
                Ok(self)
            }
        }
    )*};
}

load_gamma_beta!(LayerNorm, RmsNorm, GroupNorm, InstanceNorm);

impl<B: Backend> LoadPytorch for DynamicTanh<B> {
    fn load_pytorch(mut self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        self.alpha = load_vector(self.alpha, state, &format!("{prefix}alpha"))?;
        (self.gamma, self.beta) = load_affine((self.gamma, self.beta), state, prefix)?;
        Ok(self)
    }
}

impl<B: Backend> LoadPytorch for Norm<B> {
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        Ok(match self {
            Self::Layer(m) => Self::Layer(m.load_pytorch(state, prefix)?),
            Self::Rms(m) => Self::Rms(m.load_pytorch(state, prefix)?),
            Self::DynamicTanh(m) => Self::DynamicTanh(m.load_pytorch(state, prefix)?),
            Self::Identity(m) => Self::Identity(m),
            Self::BurnLayer(_) | Self::BurnRms(_) => {
                return Err(PytorchLoadError::Unsupported(format!(
                    "{prefix}: Burn's own norms load through burn-store's PytorchStore, not here"
                )));
            }
        })
    }
}

impl<B: Backend> LoadPytorch for Linear<B> {
    /// PyTorch's `weight` is `[out, in]`; Burn's is `[in, out]`.
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        load_linear(
            self,
            state,
            [&format!("{prefix}weight"), &format!("{prefix}bias")],
        )
    }
}

/// A linear map from PyTorch's `[out, in]` weight under `weight` and its bias under `bias`
/// (when the map has one).
fn load_linear<B: Backend>(
    linear: Linear<B>,
    state: &StateDict,
    [weight_key, bias_key]: [&str; 2],
) -> Result<Linear<B>, PytorchLoadError> {
    let [d_in, d_out] = linear.weight.shape().dims();
    let weight = state.tensor::<B, 2>(weight_key, [d_out, d_in], &linear.weight.device())?;
    let weight = replace(linear.weight, weight.transpose());
    let bias = linear
        .bias
        .map(|b| load_vector(b, state, bias_key))
        .transpose()?;
    Ok(Linear { weight, bias })
}

impl<B: Backend> LoadPytorch for ResidualGate<B> {
    /// `nn.GRUCell`'s names: `weight_ih`, `bias_ih` (the branch term's map) and
    /// `weight_hh`, `bias_hh` (the residual's), each `[3·d_model, d_model]` with rows
    /// (r, z, n).
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        let keys = |part: &str| {
            [
                format!("{prefix}weight_{part}"),
                format!("{prefix}bias_{part}"),
            ]
        };
        let [wi, bi] = keys("ih");
        let [wh, bh] = keys("hh");
        Ok(Self {
            input: load_linear(self.input, state, [&wi, &bi])?,
            hidden: load_linear(self.hidden, state, [&wh, &bh])?,
        })
    }
}

/// The three `[d, d]` (Burn layout) blocks of `in_proj_weight` and `[d]` blocks of
/// `in_proj_bias`, for W^Q, W^K and W^V in this order.
fn split_in_projection<B: Backend>(
    linears: [Linear<B>; 3],
    state: &StateDict,
    prefix: &str,
) -> Result<[Linear<B>; 3], PytorchLoadError> {
    let d = linears[0].weight.shape()[0];
    if let Some(linear) = linears.iter().find(|l| l.weight.dims() != [d, d]) {
        return Err(PytorchLoadError::Unsupported(format!(
            "{prefix}: nn.MultiheadAttention's in_proj_weight holds three [{d}, {d}] maps; this \
             attention has a {:?} one (grouped-query attention, or d_head other than \
             d_model / n_heads)",
            linear.weight.dims()
        )));
    }
    let device = linears[0].weight.device();
    let weight = state.tensor::<B, 2>(&format!("{prefix}in_proj_weight"), [3 * d, d], &device)?;
    let has_bias = linears.iter().all(|l| l.bias.is_some());
    let bias = has_bias
        .then(|| state.tensor::<B, 1>(&format!("{prefix}in_proj_bias"), [3 * d], &device))
        .transpose()?;
    let mut i = 0;
    Ok(linears.map(|linear| {
        let rows = i * d..(i + 1) * d;
        i += 1;
        let w = weight.clone().slice([rows.clone(), 0..d]).transpose();
        Linear {
            weight: replace(linear.weight, w),
            bias: linear
                .bias
                .zip(bias.clone())
                .map(|(param, b)| replace(param, b.slice([rows]))),
        }
    }))
}

impl<B: Backend> LoadPytorch for MultiHeadSelfAttention<B> {
    /// `nn.MultiheadAttention`'s packed `in_proj_weight` (rows W^Q, W^K, W^V) and
    /// `out_proj`; NormFormer's head scale under `head_scale` (`[heads]`; fairseq's `c_attn`
    /// acts after W^O and is another function). QK-norm has no counterpart there and is
    /// refused.
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        if self.qk_norm.is_some() {
            return Err(PytorchLoadError::Unsupported(format!(
                "{prefix}: nn.MultiheadAttention has no QK-norm; build the attention without it"
            )));
        }
        let mut attention = self;
        [attention.query, attention.key, attention.value] = split_in_projection(
            [attention.query, attention.key, attention.value],
            state,
            prefix,
        )?;
        attention.output = child(attention.output, state, prefix, "out_proj")?;
        // NormFormer's per-head gains, `[heads]`, before W^O.
        attention.head_scale = attention
            .head_scale
            .map(|gains| load_vector(gains, state, &format!("{prefix}head_scale")))
            .transpose()?;
        Ok(attention)
    }
}

/// The norm `nn.TransformerEncoderLayer` calls `norm{index}` in this residual connection:
/// after the sum (Post) or on the sublayer's input (Pre).
fn load_residual<B: Backend>(
    residual: AddNorm<B>,
    state: &StateDict,
    key: &str,
) -> Result<AddNorm<B>, PytorchLoadError> {
    let load = |norm: Option<Norm<B>>| norm.map(|n| n.load_pytorch(state, key)).transpose();
    let mut residual = residual;
    match residual.placement() {
        Placement::Post | Placement::ResiDual => residual.sum_norm = load(residual.sum_norm)?,
        // Parallel: norm1 on the attention connection; the feed-forward one has no norm.
        Placement::Pre | Placement::Parallel => residual.input_norm = load(residual.input_norm)?,
        Placement::PostBranch => residual.output_norm = load(residual.output_norm)?,
        other => {
            return Err(PytorchLoadError::Unsupported(format!(
                "{key}: nn.TransformerEncoderLayer's names hold Post-LN, Pre-LN (norm_first), \
                 PostBranch (norm1, norm2 on the sublayers' outputs), Parallel (norm1 for \
                 both) or ResiDual (norm1, norm2 after the sums, as Post-LN) norms; this block \
                 is {other}"
            )));
        }
    }
    Ok(residual)
}

impl<B: Backend> LoadPytorch for TransformerBlock<B> {
    /// `nn.TransformerEncoderLayer`'s names; the block must be `Post` (`norm_first=False`),
    /// `Pre` (`norm_first=True`), `PostBranch` (the same modules with `norm1`, `norm2` on
    /// the attention's and the feed-forward network's outputs) or `Parallel` (`norm1` for both
    /// sublayers, `norm2` unused) or `ResiDual` (`norm1`, `norm2` as in Post); with
    /// LayerScale, its gains under timm's `ls1.gamma` and `ls2.gamma`; with NormFormer's
    /// norms, fairseq's names `attn_ln` (post-attention) and `ffn_layernorm` (FFN); with
    /// adaLN-Zero, DiT's `adaLN_modulation.1` (its linear map); with residual gating, each
    /// gate's `nn.GRUCell` under `gate1` (attention) and `gate2` (feed-forward).
    fn load_pytorch(self, state: &StateDict, prefix: &str) -> Result<Self, PytorchLoadError> {
        let mut block = self;
        if block.feed_forward.gate.is_some() {
            return Err(PytorchLoadError::Unsupported(format!(
                "{prefix}: nn.TransformerEncoderLayer's feed-forward network is not gated; a \
                 gated block loads from Hugging Face's names (HfDecoderLayer)"
            )));
        }
        let key = |name: &str| format!("{prefix}{name}.");
        let load =
            |norm: Option<Norm<B>>, name: &str| optional_child(norm, state, prefix, Some(name));
        if block.attention_residual.placement() == Placement::Pre {
            // NormFormer's post-attention norm, on a Pre connection's output.
            let residual = &mut block.attention_residual;
            residual.output_norm = load(residual.output_norm.take(), "attn_ln")?;
        }
        block.feed_forward.hidden_norm =
            load(block.feed_forward.hidden_norm.take(), "ffn_layernorm")?;
        block.attention_residual = load_residual(block.attention_residual, state, &key("norm1"))?;
        block.feed_forward_residual =
            load_residual(block.feed_forward_residual, state, &key("norm2"))?;
        block.attention = child(block.attention, state, prefix, "self_attn")?;
        block.feed_forward = load_feed_forward(block.feed_forward, state, prefix)?;
        if let Some(mut ada_ln) = block.ada_ln.take() {
            // DiT's name: adaLN_modulation = Sequential(SiLU, Linear).
            ada_ln.modulation = child(ada_ln.modulation, state, prefix, "adaLN_modulation.1")?;
            block.ada_ln = Some(ada_ln);
        }
        // The residual gates (GRU cells) under gate1 and gate2, when the block has them.
        for (residual, name) in [
            (&mut block.attention_residual, "gate1"),
            (&mut block.feed_forward_residual, "gate2"),
        ] {
            residual.residual_gate =
                optional_child(residual.residual_gate.take(), state, prefix, Some(name))?;
        }
        // LayerScale's λ under timm's names, when the block has it.
        for (residual, name) in [
            (&mut block.attention_residual, "ls1.gamma"),
            (&mut block.feed_forward_residual, "ls2.gamma"),
        ] {
            if let Some(lambda) = residual.layer_scale.take() {
                residual.layer_scale =
                    Some(load_vector(lambda, state, &format!("{prefix}{name}"))?);
            }
        }
        Ok(block)
    }
}

/// `linear1` and `linear2` sit directly in `nn.TransformerEncoderLayer`, not in a
/// feed-forward submodule.
fn load_feed_forward<B: Backend>(
    mut feed_forward: FeedForward<B>,
    state: &StateDict,
    prefix: &str,
) -> Result<FeedForward<B>, PytorchLoadError> {
    feed_forward.inner = child(feed_forward.inner, state, prefix, "linear1")?;
    feed_forward.outer = child(feed_forward.outer, state, prefix, "linear2")?;
    Ok(feed_forward)
}
