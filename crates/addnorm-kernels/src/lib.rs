#![warn(missing_docs)]
//! The compute layer of addnorm: the [`NormBackend`] extension trait, the description of a
//! row-wise normalization ([`RowNormSpec`]), and the composite reference implementation that
//! every backend can run.
//!
//! # Formula
//! Every LayerNorm / RMSNorm variant is `y = (x − μ) / D(σ², ε) · γ + β` on the rows of a
//! `[rows, n]` matrix, with the centring, divisor and ε placement given by [`RowNormSpec`];
//! DyT is `y = γ·tanh(α·x) + β`.
//!
//! # Shapes
//! - `x`: `[rows, n]` (modules flatten their leading and normalized dimensions into these)
//! - `gamma`, `beta`: `[n]` or `[1]`
//! - output: `[rows, n]`

pub mod backend;
pub mod composite;
pub mod spec;

pub use backend::NormBackend;
pub use spec::{Centering, EpsilonPlacement, RowNormSpec, Variance};
