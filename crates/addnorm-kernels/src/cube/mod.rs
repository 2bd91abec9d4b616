//! The CubeCL infrastructure every op's GPU kernels share (features `wgpu`, `cuda`), with
//! no op of its own: the kernels live with their op (`crate::norm::cube`,
//! `crate::attention::cube`).
//!
//! - [`launch`]: which dtypes the kernels take, and output allocation.
//! - [`stream`]: what every custom operation of Burn's fusion stream shares.
//! - [`devices`]: how many devices a runtime sees, asked without initializing it.
//! - [`registers`]: `#[cube]` helpers for a unit's local arrays.
//!
//! # Which backends
//! The ops implement their backend traits for `CubeBackend<R, F, I, BT>` (any CubeCL
//! runtime `R`: wgpu, CUDA, HIP; `burn::backend::Wgpu` when Burn's `fusion` feature is
//! off), where the kernels run directly, and for `Fusion<CubeBackend<R, F, I, BT>>`
//! (`burn::backend::Wgpu` with Burn's default features), where they are registered as
//! custom operations in the fusion stream ([`stream`]).
//!
//! # Formula
//! None here: each kernel's formula is in its op's `cube` module.
//!
//! # Shapes
//! As each operation declares them: `inputs` in order, then its `outputs`.

pub mod devices;
pub mod launch;
pub mod registers;
pub mod stream;
