//! Host side of the CubeCL kernels: checks the inputs, allocates the outputs and launches
//! [`super::kernels`] on `CubeTensor`s.
//!
//! # Formula
//! See [`super::kernels`]; this file only decides the launch geometry:
//! `block = clamp(next_pow2(n), 32, 256)` units per cube, one cube per row forward, and
//! `⌈rows / MAX_BACKWARD_CUBES⌉` rows per cube backward.
//!
//! # Shapes
//! - `x`, `grad_output`: `[rows, n]`, any strides; `gamma`, `beta`: `[n]` or `[1]`
//! - forward returns `y: [rows, n]` (x's dtype) and `shift`, `rstd`: `[rows]` (f32)
//! - backward returns `dx: [rows, n]` (x's dtype), and dγ, dβ shaped as their parameter (f32)

use burn::tensor::{DType, Shape, TensorMetadata, ops::FloatTensorOps};
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use cubecl::prelude::*;

use super::kernels;
use crate::cube::launch::{empty_like, supports};
use crate::norm::cpu::plan::RowPlan;
use crate::norm::spec::RowNormSpec;

/// The most units a cube gets: enough to saturate a row of 1024 features with 4 loads per
/// unit, and within every runtime's limit (llvmpipe and Metal included).
const MAX_BLOCK: u32 = 256;

/// The fewest units a cube gets: one warp/wavefront on most GPUs.
const MIN_BLOCK: u32 = 32;

/// The most cubes the backward launches. More cubes is more parallelism, but each one owns
/// a row of `n` partial sums for dγ and one for dβ, which the column sum then reads.
const MAX_BACKWARD_CUBES: usize = 512;

/// The largest cube count per grid dimension that every runtime accepts.
const MAX_GRID_DIM: usize = 65_535;

/// The per-call constants every kernel launch shares: the CPU kernels' [`RowPlan`] (the
/// spec's constants for rows of `n`, in f32) plus the launch geometry.
#[derive(Clone, Copy, Debug)]
struct LaunchPlan {
    rows: usize,
    block: u32,
    row: RowPlan<f32>,
}

impl LaunchPlan {
    fn new(shape: &Shape, spec: &RowNormSpec) -> Self {
        let [rows, n] = shape.dims::<2>();
        Self {
            rows,
            block: (n.next_power_of_two() as u32).clamp(MIN_BLOCK, MAX_BLOCK),
            row: RowPlan::new(spec, n),
        }
    }
}

/// The dtype the kernels read γ and β in: theirs (they must agree), or x's without them.
/// `None` when γ and β differ or the kernels do not take it.
pub fn parameter_dtype(x: DType, gamma: Option<DType>, beta: Option<DType>) -> Option<DType> {
    let dtype = match (gamma, beta) {
        (Some(g), Some(b)) if g != b => return None,
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => x,
    };
    supports(dtype).then_some(dtype)
}

/// Whether [`forward`] runs the kernel on these inputs (rather than returning `None`).
pub fn takes(shape: &Shape, x: DType, gamma: Option<DType>, beta: Option<DType>) -> bool {
    shape.num_dims() == 2
        && shape.num_elements() > 0
        && supports(x)
        && parameter_dtype(x, gamma, beta).is_some()
}

/// The fused forward on a CubeCL runtime. Returns `None` (the caller then takes the
/// composite path) unless [`takes`] accepts the inputs: f64 tensors, γ and β of different
/// dtypes and empty tensors stay composite.
///
/// # Panics
/// If `x` is not of rank 2 or γ/β do not hold 1 or `n` values.
pub fn forward<R: CubeRuntime>(
    x: &CubeTensor<R>,
    gamma: Option<&CubeTensor<R>>,
    beta: Option<&CubeTensor<R>>,
    spec: &RowNormSpec,
) -> Option<(CubeTensor<R>, CubeTensor<R>, CubeTensor<R>)> {
    let shape = x.shape();
    let dtype_of = |p: Option<&CubeTensor<R>>| p.map(|p| p.dtype);
    let param_dtype = parameter_dtype(x.dtype, dtype_of(gamma), dtype_of(beta));
    if !takes(&shape, x.dtype, dtype_of(gamma), dtype_of(beta)) {
        return None;
    }
    let plan = LaunchPlan::new(&shape, spec);
    check_parameter("gamma", gamma, plan.row.n);
    check_parameter("beta", beta, plan.row.n);

    let output = empty_like(x, shape, x.dtype);
    let shift = empty_like(x, Shape::new([plan.rows]), DType::F32);
    let rstd = empty_like(x, Shape::new([plan.rows]), DType::F32);
    let grid_x = plan.rows.min(MAX_GRID_DIM);
    let grid_y = plan.rows.div_ceil(grid_x);
    // An absent γ/β is never read: the other parameter (or x, when there is none) stands in
    // for the kernel argument, so the argument has the parameters' dtype.
    let placeholder = || gamma.or(beta).unwrap_or(x).clone().into_tensor_arg();
    kernels::norm_rows_forward_kernel::launch::<R>(
        &x.client,
        CubeCount::Static(grid_x as u32, grid_y as u32, 1),
        CubeDim::new_1d(plan.block),
        x.clone().into_tensor_arg(),
        gamma.map_or_else(placeholder, |g| g.clone().into_tensor_arg()),
        beta.map_or_else(placeholder, |b| b.clone().into_tensor_arg()),
        output.clone().into_tensor_arg(),
        shift.clone().into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        plan.row.k as u32,
        plan.row.inv_k,
        plan.row.inv_divisor,
        plan.row.epsilon,
        plan.block,
        plan.row.centered,
        plan.row.added_to_std,
        gamma.is_some(),
        beta.is_some(),
        [x.dtype.into(), param_dtype?.into()],
    );
    Some((output, shift, rstd))
}

/// The fused backward on a CubeCL runtime: `(dx, dγ, dβ)`, with dx in `x`'s dtype, dγ shaped
/// as γ and dβ of `beta_features` values (when there is a β), both in f32.
///
/// # Panics
/// If the shapes disagree with the forward's (`x: [rows, n]`, `shift`, `rstd`: `[rows]`).
pub fn backward<R, F, I, BT>(
    x: &CubeTensor<R>,
    gamma: Option<&CubeTensor<R>>,
    beta_features: Option<usize>,
    (shift, rstd): (&CubeTensor<R>, &CubeTensor<R>),
    grad_output: CubeTensor<R>,
    spec: &RowNormSpec,
) -> (CubeTensor<R>, Option<CubeTensor<R>>, Option<CubeTensor<R>>)
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let shape = x.shape();
    let plan = LaunchPlan::new(&shape, spec);
    assert_eq!(
        grad_output.shape(),
        shape,
        "fused norm_rows backward: grad_output and x differ in shape"
    );
    assert!(
        shift.shape().num_elements() == plan.rows && rstd.shape().num_elements() == plan.rows,
        "fused norm_rows backward: the saved statistics do not have {} rows",
        plan.rows
    );
    check_parameter("gamma", gamma, plan.row.n);

    let rows_per_cube = plan.rows.div_ceil(MAX_BACKWARD_CUBES).max(1);
    let cubes = plan.rows.div_ceil(rows_per_cube);
    let dx = empty_like(x, shape, x.dtype);
    let partial_gamma = empty_like(x, Shape::new([cubes, plan.row.n]), DType::F32);
    let partial_beta = empty_like(x, Shape::new([cubes, plan.row.n]), DType::F32);
    kernels::norm_rows_backward_kernel::launch::<R>(
        &x.client,
        CubeCount::Static(cubes as u32, 1, 1),
        CubeDim::new_1d(plan.block),
        x.clone().into_tensor_arg(),
        grad_output.into_tensor_arg(),
        gamma
            .map_or_else(|| x.clone(), Clone::clone)
            .into_tensor_arg(),
        shift.clone().into_tensor_arg(),
        rstd.clone().into_tensor_arg(),
        dx.clone().into_tensor_arg(),
        partial_gamma.clone().into_tensor_arg(),
        partial_beta.clone().into_tensor_arg(),
        rows_per_cube as u32,
        plan.row.k as u32,
        plan.row.inv_k,
        plan.row.inv_divisor,
        plan.block,
        plan.row.centered,
        plan.row.added_to_std,
        gamma.is_some(),
        [x.dtype.into(), gamma.map_or(x.dtype, |g| g.dtype).into()],
    );

    let finish = |partial: CubeTensor<R>, features: usize| {
        let sums = sum_partials(partial, plan.row.n);
        if features == 1 {
            CubeBackend::<R, F, I, BT>::float_sum(sums)
        } else {
            sums
        }
    };
    let dgamma = gamma.map(|g| finish(partial_gamma, g.shape().num_elements()));
    let dbeta = beta_features.map(|features| finish(partial_beta, features));
    (dx, dgamma, dbeta)
}

/// `Σ_cubes partial[cube, j]` for each of the `n` features, as an f32 `[n]` tensor.
fn sum_partials<R: CubeRuntime>(partial: CubeTensor<R>, n: usize) -> CubeTensor<R> {
    let sums = empty_like(&partial, Shape::new([n]), DType::F32);
    let cube_dim = CubeDim::new_2d(kernels::SUM_FEATURES as u32, kernels::SUM_LANES as u32);
    let blocks = n.div_ceil(kernels::SUM_FEATURES);
    let grid_x = blocks.min(MAX_GRID_DIM);
    let cube_count = CubeCount::Static(grid_x as u32, blocks.div_ceil(grid_x) as u32, 1);
    kernels::sum_partials_kernel::launch::<R>(
        &partial.client,
        cube_count,
        cube_dim,
        partial.clone().into_tensor_arg(),
        sums.clone().into_tensor_arg(),
    );
    sums
}

/// Panics unless `param` (when present) holds 1 or `n` values.
fn check_parameter<R: CubeRuntime>(name: &str, param: Option<&CubeTensor<R>>, n: usize) {
    if let Some(param) = param {
        let len = param.shape().num_elements();
        assert!(
            len == 1 || len == n,
            "fused norm_rows: {name} has {len} values; expected 1 or {n} (the row width)"
        );
    }
}
