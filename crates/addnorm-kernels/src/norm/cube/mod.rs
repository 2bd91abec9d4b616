//! The fused norm kernels in CubeCL, and [`RowNormBackend`] for every CubeCL backend
//! (features `wgpu`, `cuda`).
//!
//! - [`kernels`]: the `#[cube]` kernels (forward, backward, column sum of dγ/dβ partials),
//!   a cube per row with tree reductions: any device, any width.
//! - [`plane_kernels`]: the forward and backward with a row per plane (`plane_sum`), for
//!   devices with plane operations of one fixed size and rows of up to 32 values a unit.
//! - [`launch`]: their host side on `CubeTensor`s: launch geometry and output allocation.
//! - [`fusion`]: the same kernels as custom operations of Burn's fusion stream (through
//!   the shared [`crate::cube::stream`]).
//!
//! # Which backends
//! - `CubeBackend<R, F, I, BT>` for any CubeCL runtime `R` (wgpu, CUDA, HIP, CPU-MLIR):
//!   the kernels run directly. This is `burn::backend::Wgpu` when Burn's `fusion` feature
//!   is off.
//! - `Fusion<CubeBackend<R, F, I, BT>>`: `burn::backend::Wgpu` with Burn's default
//!   features. The kernels are registered as custom operations in the fusion stream: the
//!   stream runs what was queued before them, then hands them its buffers.
//!
//! Both take f32, f16, bf16 and flex32 tensors (arithmetic in f32). f64 tensors and empty
//! ones stay on the [composite](super::composite) path.
//!
//! # Formula
//! As in [`kernels`]: `y = (x − μ)·r·γ + β` with `r = 1/√(σ² + ε)` or `1/(σ + ε)`, and the
//! analytic backward `dx = r·g − [centred]·r·A/k + B·dr/dσ²·2c/d`.
//!
//! # Shapes
//! - `x`: `[rows, n]`, any strides; γ, β: `[n]` or `[1]`
//! - saved statistics `shift`, `rstd`: `[rows]`, f32

pub mod fusion;
pub mod kernels;
pub mod launch;
pub mod plane_kernels;

use burn::tensor::ops::FloatTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};

use super::backend::RowNormBackend;
use super::fused::{FusedNormForward, FusedNormGrads, RowStatistics};
use super::spec::RowNormSpec;

impl<R, F, I, BT> RowNormBackend for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn fused_norm_rows(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta: Option<&FloatTensor<Self>>,
        spec: &RowNormSpec,
    ) -> Option<FusedNormForward<Self>> {
        let (output, shift, rstd) = launch::forward(x, gamma, beta, spec)?;
        Some(FusedNormForward {
            output,
            statistics: RowStatistics { shift, rstd },
        })
    }

    fn fused_norm_rows_backward(
        x: &FloatTensor<Self>,
        gamma: Option<&FloatTensor<Self>>,
        beta_features: Option<usize>,
        statistics: &RowStatistics<Self>,
        grad_output: FloatTensor<Self>,
        spec: &RowNormSpec,
    ) -> FusedNormGrads<Self> {
        let (x, gamma, beta) = launch::backward::<R, F, I, BT>(
            x,
            gamma,
            beta_features,
            (&statistics.shift, &statistics.rstd),
            grad_output,
            spec,
        );
        FusedNormGrads { x, gamma, beta }
    }
}
