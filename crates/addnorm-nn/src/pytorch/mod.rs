//! Loading PyTorch weights into addnorm's modules (feature `pytorch`).
//!
//! A model ported from PyTorch keeps its trained weights: save them with
//! `torch.save(model.state_dict(), "model.pt")`, read the file with [`StateDict::from_file`]
//! (Burn's own PyTorch reader, burn-store), and hand it to [`LoadPytorch::load_pytorch`] with
//! the module's key prefix. Each module reads PyTorch's names for its parameters:
//!
//! | module | keys under `prefix` | PyTorch module |
//! |---|---|---|
//! | [`LayerNorm`](crate::LayerNorm), [`RmsNorm`](crate::RmsNorm) | `weight`, `bias` | `nn.LayerNorm`, `nn.RMSNorm`; with [`Affine::UnitOffset`](crate::Affine::UnitOffset), Gemma's RMSNorm, whose `weight` is the γ of `1 + γ` |
//! | [`DynamicTanh`](crate::DynamicTanh) | `alpha`, `weight`, `bias` | the DyT paper's module |
//! | [`GroupNorm`](crate::GroupNorm), [`InstanceNorm`](crate::InstanceNorm) | `weight`, `bias` `[C]` | `nn.GroupNorm`, `nn.InstanceNorm*d(affine=True)` |
//! | `burn::nn::Linear` | `weight` `[out, in]` (transposed to Burn's `[in, out]`), `bias` | `nn.Linear` |
//! | [`ResidualGate`](crate::ResidualGate) | `weight_ih`, `bias_ih`, `weight_hh`, `bias_hh` (`[3d, d]`, `[3d]`; rows r, z, n) | `nn.GRUCell(d, d)` (x-transformers' `GRUGating.gru`) |
//! | [`MultiHeadSelfAttention`](crate::MultiHeadSelfAttention) | `in_proj_weight` `[3d, d]`, `in_proj_bias`, `out_proj.{weight,bias}` | `nn.MultiheadAttention` |
//! | [`TransformerBlock`](crate::TransformerBlock) (`Post`, `Pre`, `PostBranch`, `Parallel`) | `self_attn.…`, `linear1.…`, `linear2.…`, `norm1.…`, `norm2.…`; with LayerScale `ls1.gamma`, `ls2.gamma` (timm's names); with residual gating `gate1.…`, `gate2.…` (GRU cells) | `nn.TransformerEncoderLayer(norm_first=False / True)` |
//!
//! Safetensors files, the format Hugging Face ships (`model.safetensors`, in bf16 for most
//! models), read through [`StateDict::from_safetensors`]; each tensor is converted to the
//! backend's float type when a module takes it.
//!
//! A decoder layer of a Hugging Face checkpoint (Llama, Gemma 2, OLMo 2: `model.layers.N.…`,
//! `q_proj`, `gate_proj`, `input_layernorm`, …) loads through [`HfDecoderLayer::load`] into
//! the block that `TransformerBlockConfig::llama`, `gemma2` or `olmo2` builds; the names are
//! tabled on [`HfDecoderLayer`].
//!
//! Every tensor's shape is checked against the module's parameter, and a missing key or a
//! wrong shape is an error that names the key: nothing is loaded half-way silently. The
//! configuration (widths, ε, activation, placement) is the caller's to match, as with
//! PyTorch's `load_state_dict`.
//!
//! ```no_run
//! use addnorm_nn::pytorch::{LoadPytorch, StateDict};
//! use addnorm_nn::{NormConfig, LayerNormConfig, Placement, TransformerBlockConfig};
//!
//! type B = burn::backend::NdArray;
//! let device = Default::default();
//! // torch.nn.TransformerEncoderLayer(64, 4, 256, norm_first=True), saved with
//! // torch.save(model.state_dict(), "encoder.pt"); its first layer has keys "layers.0.…".
//! let state = StateDict::from_file("encoder.pt")?;
//! let block = TransformerBlockConfig::new(64, 4, 256)
//!     .with_placement(Placement::Pre)
//!     .with_norm(NormConfig::Layer(LayerNormConfig::new(vec![64])))
//!     .init::<B>(&device)
//!     .load_pytorch(&state, "layers.0.")?;
//! # Ok::<(), addnorm_nn::pytorch::PytorchLoadError>(())
//! ```
//!
//! # Shapes
//! PyTorch's: `Linear.weight` `[out, in]`, `in_proj_weight` `[3·d_model, d_model]` (rows:
//! W^Q, W^K, W^V), norm parameters `[normalized elements]` (`[1]` for `Affine::Scalar`).

mod error;
mod hugging_face;
mod load;
mod state_dict;

pub use error::PytorchLoadError;
pub use hugging_face::HfDecoderLayer;
pub use load::LoadPytorch;
pub use state_dict::StateDict;
