//! A norm by the name the command line, run names and reports use (`layer`, `rms`, `dyt`,
//! `identity`): one axis of the study's grids.
//!
//! # Shapes
//! Not applicable: names.

use addnorm::nn::NormConfig;
use serde::{Deserialize, Serialize};

/// A norm by the name the command line and reports use: `layer`, `rms`, `dyt`, `identity`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum NormKind {
    /// LayerNorm.
    Layer,
    /// RMSNorm.
    Rms,
    /// Dynamic Tanh.
    Dyt,
    /// No norm.
    Identity,
}

impl NormKind {
    /// Every kind.
    pub const ALL: [NormKind; 4] = [
        NormKind::Layer,
        NormKind::Rms,
        NormKind::Dyt,
        NormKind::Identity,
    ];

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            NormKind::Layer => "layer",
            NormKind::Rms => "rms",
            NormKind::Dyt => "dyt",
            NormKind::Identity => "identity",
        }
    }

    /// Parses [`NormKind::name`] (`layernorm`, `rmsnorm` are accepted too).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "layer" | "layernorm" | "ln" => Some(NormKind::Layer),
            "rms" | "rmsnorm" => Some(NormKind::Rms),
            "dyt" | "dynamic_tanh" => Some(NormKind::Dyt),
            "identity" | "none" => Some(NormKind::Identity),
            _ => None,
        }
    }

    /// The default config of this kind (its width is set by the model).
    pub fn config(self) -> NormConfig {
        match self {
            NormKind::Layer => NormConfig::layer(0),
            NormKind::Rms => NormConfig::rms(0),
            NormKind::Dyt => NormConfig::dynamic_tanh(0),
            NormKind::Identity => NormConfig::Identity,
        }
    }
}
