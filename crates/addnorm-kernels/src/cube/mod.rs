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

/// The composite path of an op on every CubeCL backend: an empty impl of the op's backend
/// trait (its default methods, built from Burn's ops) for `CubeBackend<R, F, I, BT>` and for
/// `Fusion<CubeBackend<R, F, I, BT>>`, where Burn's fusion joins those ops. An op with a
/// CubeCL kernel of its own writes both impls out instead.
macro_rules! composite_on_cubecl {
    ($op:ident) => {
        impl<R, F, I, BT> $op for burn_cubecl::CubeBackend<R, F, I, BT>
        where
            R: burn_cubecl::CubeRuntime,
            F: burn_cubecl::FloatElement,
            I: burn_cubecl::IntElement,
            BT: burn_cubecl::BoolElement,
        {
        }

        impl<R, F, I, BT> $op for burn_fusion::Fusion<burn_cubecl::CubeBackend<R, F, I, BT>>
        where
            R: burn_cubecl::CubeRuntime,
            F: burn_cubecl::FloatElement,
            I: burn_cubecl::IntElement,
            BT: burn_cubecl::BoolElement,
        {
        }
    };
}
pub(crate) use composite_on_cubecl;
