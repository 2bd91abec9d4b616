#![warn(missing_docs)]
//! The compute layer of addnorm: one folder per op, each with its backend extension trait,
//! its composite reference, its fused kernels and their backward, on top of shared CPU and
//! CubeCL infrastructure that holds no op of its own.
//!
//! # Layout
//! The ops, one folder each, every folder laid out the same way (`mod.rs` states the
//! formula; `spec` what one call computes where it has options; `backend` the extension
//! trait, whose defaults are the composite path, and its `NdArray` impl; `composite` the
//! reference in Burn's ops; `fused` what its kernels return; `cpu` the fused CPU kernels
//! on slices; `ndarray` the glue that runs them on `NdArray` tensors; `cube` the CubeCL
//! kernels and their impls for `CubeBackend` and `Fusion<CubeBackend>`; `autodiff` the
//! impl for `Autodiff<B>` with the analytic backward node):
//!
//! - [`norm`]: LayerNorm, RMSNorm and their variants ([`RowNormSpec`]) and Dynamic Tanh,
//!   the [`RowNormBackend`] extension.
//! - [`attention`]: fused (causal) multi-head attention, the [`AttentionBackend`]
//!   extension.
//! - [`linear`]: linear layers as one GEMM per call (rows split over threads), also onto
//!   a residual ([`linear::linear_onto`]), the [`LinearBackend`] extension.
//! - [`gelu`]: exact GELU in one pass each way, the [`GeluBackend`] extension.
//! - [`cross_entropy`]: the masked token cross-entropy with an optional z-loss, the
//!   [`CrossEntropyBackend`] extension.
//! - [`group_norm`]: GroupNorm and InstanceNorm over `[N, C, …]`, the [`GroupNormBackend`]
//!   extension (built on [`norm`]'s row norm, one way).
//! - [`embedding`]: the embedding lookup (one copy per row; the backward adds rows in
//!   Burn's order), the [`EmbeddingBackend`] extension.
//! - [`adamw`]: Burn's AdamW step in one fused pass per parameter, the [`AdamWBackend`]
//!   extension and the [`adamw::FusedAdamW`] optimizer (an optimizer's step, so no
//!   autodiff node).
//!
//! What unites them:
//!
//! - [`kernel_backend`]: [`KernelBackend`], a backend with all seven (old name
//!   [`NormBackend`], the same trait): the one bound model code needs.
//! - [`training`]: [`KernelAutodiffBackend`] (old name [`NormAutodiffBackend`]), the one
//!   bound generic training code needs.
//! - [`fused`]: the dispatch to a backend's fused kernel, and the per-thread counters of
//!   the fused calls ([`fused::fused_calls`]).
//! - [`composite`]: the [`composite::ForceComposite`] guard, which sends a thread's calls
//!   down the composite path.
//! - [`gradient_sum`]: how the fused backward nodes add a parent's gradient into the one it
//!   has already, in place, with the bits of Burn's sum.
//!
//! The shared infrastructure, with no op of its own:
//!
//! - [`cpu`]: run-time SIMD dispatch, the element types and lane-wise reductions, the
//!   vectorizable `exp`/`tanh`, strided GEMMs, huge-page outputs, the `NdArray` glue
//!   ([`cpu::ndarray::NdArrayBackend`], the bound of every op's `NdArray` impl) and the
//!   allocator settings ([`cpu::allocator::keep_freed_memory`]).
//! - `cube` (features `wgpu` or `cuda`): the dtypes the CubeCL kernels take, output
//!   allocation, the plumbing of custom operations in Burn's fusion stream, and device
//!   counts.
//!
//! Imports point from the ops to the shared modules, never back, and no two modules import
//! each other (`group_norm` uses `norm`; nothing uses `group_norm`).
//!
//! # Formula
//! - Norms, on the rows of a `[rows, n]` matrix: `y = (x − μ) / D(σ², ε) · γ + β`, with the
//!   centring, divisor and ε placement given by [`RowNormSpec`]; DyT is
//!   `y = γ·tanh(α·x) + β`.
//! - Attention: `O_h = softmax(scale·Q_h·K_hᵀ + causal mask)·V_h` per head.
//! - Linear: `y = x·W + b` on the last dimension.
//! - GELU: `y = x·Φ(x)`, Φ the standard normal CDF.
//! - GroupNorm: the row norm over each (sample, group) block of `[N, C, S]`, then
//!   `·γ_c + β_c` per channel.
//! - Cross-entropy: `loss = (Σ_r m_r·(lse_r − z_{r,y_r}) + λ·Σ_r m_r·lse_r²) / Σ_r m_r`,
//!   `lse_r = log Σ_v e^(z_rv)`.
//! - AdamW: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
//!   `θ ← θ·(1 − λ·lr) − lr·(m/(1−β₁ᵗ)) / (√(v/(1−β₂ᵗ)) + ε)`, with Burn's rounding.
//!
//! Every op is `fused(x)` where the backend has a kernel for `x` and no
//! [`composite::ForceComposite`] guard is alive, `composite(x)` otherwise; both are
//! differentiable, the fused one by one analytic backward node.
//!
//! # Shapes
//! - norms: `x`, output `[rows, n]` (modules flatten their leading and normalized
//!   dimensions into these); `gamma`, `beta` `[n]` or `[1]`; DyT's `alpha` `[1]`
//! - attention: `q`, `k`, `v`, output `[batch, T, d_model]`, heads read in place
//! - linear: `x` `[..., d_in]`, `weight` `[d_in, d_out]`, `bias` `[d_out]`, output
//!   `[..., d_out]`
//! - GELU: any shape, output the same
//! - GroupNorm: `x`, output `[N, C, …]`; `gamma`, `beta` `[C]`
//! - cross-entropy: `logits` `[..., vocab]`, `targets` (Int) and `mask` `[...]`, output
//!   `[1]`
//! - AdamW: `θ`, `g`, `m`, `v`, any shape, all the same

pub mod adamw;
pub mod attention;
pub mod composite;
pub mod cpu;
pub mod cross_entropy;
#[cfg(feature = "cubecl")]
pub mod cube;
pub mod embedding;
pub mod fused;
pub mod gelu;
pub mod gradient_sum;
pub mod group_norm;
pub mod kernel_backend;
pub mod linear;
pub mod norm;
pub mod training;

pub use adamw::AdamWBackend;
pub use attention::AttentionBackend;
pub use cross_entropy::CrossEntropyBackend;
pub use embedding::EmbeddingBackend;
pub use gelu::GeluBackend;
pub use group_norm::GroupNormBackend;
pub use kernel_backend::KernelBackend;
pub use linear::LinearBackend;
pub use norm::{Centering, EpsilonPlacement, RowNormBackend, RowNormSpec, Variance};
pub use training::KernelAutodiffBackend;

/// The old name of [`KernelBackend`], kept so that `B: NormBackend` bounds (and
/// `addnorm::NormBackend`) compile unchanged: the same trait under a second name (see
/// [`kernel_backend`] for why it was renamed).
pub use kernel_backend::KernelBackend as NormBackend;

/// The old name of [`KernelAutodiffBackend`], kept so that `B: NormAutodiffBackend`
/// bounds (and `addnorm::NormAutodiffBackend`) compile unchanged: the same trait under a
/// second name.
pub use training::KernelAutodiffBackend as NormAutodiffBackend;
