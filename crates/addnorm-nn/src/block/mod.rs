//! The transformer: [`MultiHeadSelfAttention`], [`FeedForward`], the residual
//! [`AddNorm`] with every [`Placement`], adaLN-Zero's conditioning ([`AdaLnZero`]),
//! [`TransformerBlock`] and the causal-LM [`TransformerStack`], with grouped-query attention,
//! rotary position embeddings ([`RotaryConfig`]) and gated feed-forward networks for the
//! layers of today's open models. See [`Placement`] for the formulas of the residual placements.
//!
//! # Shapes
//! Blocks map `[batch, seq, d_model]` to itself; the stack maps token ids `[batch, seq]`
//! to logits `[batch, seq, vocab_size]`.

pub mod ada_ln;
pub mod add_norm;
pub mod attention;
pub mod feed_forward;
mod linear;
pub mod placement;
pub mod qk_norm;
pub mod residual_gate;
pub mod rotary;
pub mod stack;
pub mod transformer_block;

pub use ada_ln::{AdaLnZero, AdaLnZeroConfig, Modulation};
pub use add_norm::AddNorm;
pub use attention::{MultiHeadSelfAttention, MultiHeadSelfAttentionConfig};
pub use feed_forward::{Activation, FeedForward, FeedForwardConfig};
pub use linear::xavier_normal;
pub use placement::Placement;
pub use qk_norm::QkNormScope;
pub use residual_gate::ResidualGate;
pub use rotary::RotaryConfig;
pub use stack::{StackStats, TransformerStack, TransformerStackConfig};
pub use transformer_block::{TransformerBlock, TransformerBlockConfig};

use crate::config_error::{ConfigError, ensure};

/// Refuses a `dropout` outside [0, 1); `config` names the config (`"FeedForwardConfig"`).
pub(crate) fn validate_dropout(config: &str, dropout: f64) -> Result<(), ConfigError> {
    ensure((0.0..1.0).contains(&dropout), || {
        ConfigError::of_field(
            format!("{config}.dropout"),
            format_args!("must lie in [0, 1), got {dropout}"),
        )
    })
}

/// Refuses a `d_model` that is not a positive multiple of a positive `n_heads`.
pub(crate) fn validate_heads(
    config: &str,
    d_model: usize,
    n_heads: usize,
) -> Result<(), ConfigError> {
    let valid = n_heads > 0 && d_model > 0 && d_model.is_multiple_of(n_heads);
    ensure(valid, || {
        ConfigError::of_field(
            format!("{config}.d_model"),
            format_args!("({d_model}) must be a positive multiple of n_heads ({n_heads})"),
        )
    })
}

/// Refuses a soft cap `cap` that is set but not positive and finite; the message names
/// `field` (the config and its field) and the value.
pub(crate) fn validate_softcap(field: &str, cap: Option<f64>) -> Result<(), ConfigError> {
    match cap {
        Some(cap) if !(cap.is_finite() && cap > 0.0) => Err(ConfigError::of_field(
            field,
            format_args!("must be positive and finite, got {cap}"),
        )),
        _ => Ok(()),
    }
}
