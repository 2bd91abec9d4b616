//! AdamW (Loshchilov & Hutter, decoupled weight decay) as one fused pass per parameter,
//! with the bits of Burn's `AdamW`: the [`AdamWBackend`] extension, its fused CPU kernel and
//! the [`FusedAdamW`] optimizer.
//!
//! - [`spec`]: [`AdamWUpdate`], one step's constants.
//! - [`backend`]: the [`AdamWBackend`] trait (default: [`composite`]) and its `NdArray`
//!   impl.
//! - [`composite`]: the reference in Burn's ops, in Burn's `AdamW`'s order.
//! - [`cpu`]: the fused CPU kernel on slices (f32, f64).
//! - [`optimizer`]: [`FusedAdamW`] and [`FusedAdamWConfig`], Burn's `AdamW` and its config
//!   with this step; the state and records are Burn's.
//!
//! # Why
//! Burn's `AdamW` makes each operation of the update its own pass over the parameter, with
//! its own output: about fifteen passes and a dozen allocations per parameter tensor and
//! step, on one thread in burn-ndarray. The fused kernel reads `θ`, `g`, `m` and `v` once
//! and writes `θ`, `m` and `v` back in place: on the demo model it was about 6% of a
//! training step (`PERFORMANCE.md` §22).
//!
//! # Formula
//! With `t` the step number (1 first), `g` the gradient, `lr` the learning rate:
//! ```text
//! m ← β₁·m + (1 − β₁)·g                      v ← β₂·v + (1 − β₂)·g²       (m = v = 0 before t = 1)
//! m̂ = m / (1 − β₁ᵗ)                          v̂ = v / (1 − β₂ᵗ)
//! θ ← θ·(1 − λ·lr) − lr · m̂ / (√v̂ + ε)
//! ```
//! Every operation is rounded as Burn rounds it ([`cpu`] gives the order), so a run with
//! [`FusedAdamW`] has the bits of the same run with Burn's `AdamW`.
//!
//! # Shapes
//! `θ`, `g`, `m`, `v`: any shape, all the same.

pub mod backend;
pub mod composite;
pub mod cpu;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;
pub mod optimizer;
pub mod spec;

pub use backend::{AdamWBackend, AdamWInputs};
pub use optimizer::{FusedAdamW, FusedAdamWConfig};
pub use spec::AdamWUpdate;
