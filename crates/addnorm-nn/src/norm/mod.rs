//! Normalization modules: [`LayerNorm`], [`RmsNorm`], [`DynamicTanh`], and [`Norm`] to choose
//! among them from a config; [`GroupNorm`] and [`InstanceNorm`] for channels-first inputs.
//!
//! The first three map `x: [..., S₀, …, S_m]` to the same shape, normalizing over the
//! trailing `normalized_shape = [S₀, …, S_m]`; GroupNorm and InstanceNorm map `[N, C, …]` to
//! the same shape, normalizing groups of channels. This is the one table of their formulas;
//! each module's docs give its variants in full, and other docs link here:
//!
//! ```text
//! LayerNorm     y = (x − μ) / √(σ² + ε) · γ + β     σ² ÷ n or ÷ (n − 1); ε inside √ or on σ
//! RmsNorm       y = x / √(mean(x²) + ε) · γ (+ β)    optionally over the first ⌈p·n⌉ (pRMSNorm)
//! DynamicTanh   y = γ · tanh(α·x) + β
//! GroupNorm     y = (x − μ_{n,g}) / √(σ²_{n,g} + ε) · γ_c + β_c    statistics per sample and
//!               group of C/G channels, over the group's channels and positions
//! InstanceNorm  GroupNorm with G = C
//! ```
//!
//! With [`Affine::UnitOffset`] the first three multiply by `1 + γ` instead of γ, with γ = 0
//! at initialization (Gemma's RMSNorm).

mod affine;
mod choice;
pub mod dyt;
pub mod group;
pub mod layer;
pub mod rms;
mod row_norm;
mod rows;

pub use affine::Affine;
pub use choice::{Identity, Norm, NormConfig};
pub use dyt::{DynamicTanh, DynamicTanhConfig};
pub use group::{GroupNorm, GroupNormConfig, InstanceNorm, InstanceNormConfig};
pub use layer::{LayerNorm, LayerNormConfig};
pub use rms::{RmsNorm, RmsNormConfig};
