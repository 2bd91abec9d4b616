//! Normalization modules: [`LayerNorm`], [`RmsNorm`], [`DynamicTanh`], and [`Norm`] to choose
//! among them from a config.
//!
//! Each one maps `x: [..., S₀, …, S_m]` to the same shape, normalizing over the trailing
//! `normalized_shape = [S₀, …, S_m]`. This is the one table of their formulas; each module's
//! docs give its variants in full, and other docs link here:
//!
//! ```text
//! LayerNorm     y = (x − μ) / √(σ² + ε) · γ + β     σ² ÷ n or ÷ (n − 1); ε inside √ or on σ
//! RmsNorm       y = x / √(mean(x²) + ε) · γ (+ β)    optionally over the first ⌈p·n⌉ (pRMSNorm)
//! DynamicTanh   y = γ · tanh(α·x) + β
//! ```

mod affine;
mod choice;
pub mod dyt;
pub mod layer;
pub mod rms;
mod row_norm;
mod rows;

pub use affine::Affine;
pub use choice::{Identity, Norm, NormConfig};
pub use dyt::{DynamicTanh, DynamicTanhConfig};
pub use layer::{LayerNorm, LayerNormConfig};
pub use rms::{RmsNorm, RmsNormConfig};
