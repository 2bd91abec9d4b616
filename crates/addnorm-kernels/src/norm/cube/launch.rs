//! Host side of the CubeCL kernels: checks the inputs, allocates the outputs and launches
//! [`super::kernels`] or [`super::plane_kernels`] on `CubeTensor`s.
//!
//! # Formula
//! See [`super::kernels`]; this file only decides the launch geometry (`Reduction`), for
//! each direction on its own:
//! - on a device with plane operations of one size `plane`, the
//!   [plane kernels](super::plane_kernels), a row per plane and `per_unit = ⌈n / plane⌉`
//!   values a unit, for rows of `n ≤ plane·FORWARD_MAX_PER_UNIT` (forward: cubes of
//!   `FORWARD_PLANES` rows) and `n ≤ plane·BACKWARD_MAX_PER_UNIT` (backward: workers of
//!   `max(⌈rows / MAX_PLANE_WORKERS⌉, MIN_ROWS_PER_WORKER)` rows in cubes of
//!   `BACKWARD_PLANES`);
//! - elsewhere the [tree kernels](super::kernels): `block = clamp(next_pow2(n), 32, 256)`
//!   units per cube, one cube per row forward, and `⌈rows / MAX_BACKWARD_CUBES⌉` rows per
//!   cube backward.
//!
//! The bounds are where the plane kernels ran faster on an H100 (PERFORMANCE.md §17).
//!
//! # Shapes
//! - `x`, `grad_output`: `[rows, n]`, any strides; `gamma`, `beta`: `[n]` or `[1]`
//! - forward returns `y: [rows, n]` (x's dtype) and `shift`, `rstd`: `[rows]` (f32)
//! - backward returns `dx: [rows, n]` (x's dtype), and dγ, dβ shaped as their parameter (f32)

use burn::tensor::{DType, Shape, TensorMetadata, ops::FloatTensorOps};
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use cubecl::{features::Plane, prelude::*};

use super::{kernels, plane_kernels};
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

/// The most values a unit of the plane forward holds in registers per row: rows of up to
/// 512 on 32-wide planes. Wider rows ran faster on the tree kernels (H100, §17).
const FORWARD_MAX_PER_UNIT: usize = 16;

/// The most values a unit of the plane backward holds per row (it keeps four such arrays:
/// c, dy and its dγ, dβ sums): rows of up to 256 on 32-wide planes (H100, §17).
const BACKWARD_MAX_PER_UNIT: usize = 8;

/// Rows (planes) per cube of the plane forward.
const FORWARD_PLANES: usize = 8;

/// Workers (planes) per cube of the plane backward; the cube adds their dγ/dβ sums before
/// it writes its row of partial sums.
const BACKWARD_PLANES: usize = 4;

/// The most workers the plane backward launches.
const MAX_PLANE_WORKERS: usize = 4096;

/// The fewest rows a worker of the plane backward takes, so that the partial sums its
/// cube writes stay small beside the rows it reads.
const MIN_ROWS_PER_WORKER: usize = 4;

/// How a launch takes each row's sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reduction {
    /// [`kernels`]: cubes of `block` units, tree sums in shared memory.
    Tree { block: u32 },
    /// [`plane_kernels`]: a row per plane of `plane` units, `per_unit` values a unit.
    Plane { plane: usize, per_unit: usize },
}

impl Reduction {
    /// The size of `like`'s device's planes, where it has plane operations of one fixed size.
    fn planes<R: CubeRuntime>(like: &CubeTensor<R>) -> Option<usize> {
        let properties = like.client.properties();
        let hardware = &properties.hardware;
        let fixed = hardware.plane_size_min == hardware.plane_size_max;
        (properties.features.plane.contains(Plane::Ops) && fixed)
            .then_some(hardware.plane_size_max as usize)
    }

    /// The plane kernels where the device has plane operations of one fixed size
    /// (`planes`, more than one unit) and a row of `n` fits `max_per_unit` values a unit;
    /// the tree kernels otherwise.
    fn choose(n: usize, planes: Option<usize>, max_per_unit: usize) -> Self {
        match planes {
            Some(plane) if plane > 1 && n.div_ceil(plane) <= max_per_unit => Self::Plane {
                plane,
                per_unit: n.div_ceil(plane),
            },
            _ => Self::Tree {
                block: (n.next_power_of_two() as u32).clamp(MIN_BLOCK, MAX_BLOCK),
            },
        }
    }
}

/// The per-call constants every kernel launch shares: the CPU kernels' [`RowPlan`] (the
/// spec's constants for rows of `n`, in f32) plus each direction's launch geometry.
#[derive(Clone, Copy, Debug)]
struct LaunchPlan {
    rows: usize,
    forward: Reduction,
    backward: Reduction,
    row: RowPlan<f32>,
}

impl LaunchPlan {
    fn new<R: CubeRuntime>(shape: &Shape, spec: &RowNormSpec, like: &CubeTensor<R>) -> Self {
        let [rows, n] = shape.dims::<2>();
        let planes = Reduction::planes(like);
        Self {
            rows,
            forward: Reduction::choose(n, planes, FORWARD_MAX_PER_UNIT),
            backward: Reduction::choose(n, planes, BACKWARD_MAX_PER_UNIT),
            row: RowPlan::new(spec, n),
        }
    }
}

/// A 2-D grid of `cubes` cubes (each dimension within [`MAX_GRID_DIM`]).
fn grid(cubes: usize) -> CubeCount {
    let grid_x = cubes.clamp(1, MAX_GRID_DIM);
    CubeCount::Static(grid_x as u32, cubes.div_ceil(grid_x) as u32, 1)
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
    let plan = LaunchPlan::new(&shape, spec, x);
    check_parameter("gamma", gamma, plan.row.n);
    check_parameter("beta", beta, plan.row.n);

    let call = ForwardCall {
        x,
        // An absent γ/β is never read: the other parameter (or x, when there is none)
        // stands in for the kernel argument, so the argument has the parameters' dtype.
        parameters: [gamma, beta].map(|p| p.or(gamma).or(beta).unwrap_or(x).clone()),
        present: [gamma.is_some(), beta.is_some()],
        outputs: [
            empty_like(x, shape, x.dtype),
            empty_like(x, Shape::new([plan.rows]), DType::F32),
            empty_like(x, Shape::new([plan.rows]), DType::F32),
        ],
        dtypes: [x.dtype, param_dtype?],
    };
    match plan.forward {
        Reduction::Tree { block } => call.tree(&plan, block),
        Reduction::Plane { plane, per_unit } => call.plane(&plan, plane, per_unit),
    }
    let [output, shift, rstd] = call.outputs;
    Some((output, shift, rstd))
}

/// What both forward launches take besides their geometry: x, γ and β (or their stand-ins),
/// whether γ and β are present, the outputs `[y, shift, rstd]`, and the dtypes of x and
/// of the parameters.
struct ForwardCall<'a, R: CubeRuntime> {
    x: &'a CubeTensor<R>,
    parameters: [CubeTensor<R>; 2],
    present: [bool; 2],
    outputs: [CubeTensor<R>; 3],
    dtypes: [DType; 2],
}

impl<R: CubeRuntime> ForwardCall<'_, R> {
    /// The tree forward: a cube of `block` units per row.
    fn tree(&self, plan: &LaunchPlan, block: u32) {
        let [gamma, beta] = self.parameters.clone();
        let [output, shift, rstd] = self.outputs.clone();
        let row = plan.row;
        kernels::norm_rows_forward_kernel::launch::<R>(
            &self.x.client,
            grid(plan.rows),
            CubeDim::new_1d(block),
            self.x.clone().into_tensor_arg(),
            gamma.into_tensor_arg(),
            beta.into_tensor_arg(),
            output.into_tensor_arg(),
            shift.into_tensor_arg(),
            rstd.into_tensor_arg(),
            row.k as u32,
            row.inv_k,
            row.inv_divisor,
            row.epsilon,
            block,
            row.centered,
            row.added_to_std,
            self.present[0],
            self.present[1],
            self.dtypes.map(Into::into),
        );
    }

    /// The plane forward: a row per plane of `plane` units, `per_unit` values a unit.
    fn plane(&self, plan: &LaunchPlan, plane: usize, per_unit: usize) {
        let [gamma, beta] = self.parameters.clone();
        let [output, shift, rstd] = self.outputs.clone();
        let row = plan.row;
        plane_kernels::norm_plane_forward_kernel::launch::<R>(
            &self.x.client,
            grid(plan.rows.div_ceil(FORWARD_PLANES)),
            CubeDim::new_1d((plane * FORWARD_PLANES) as u32),
            self.x.clone().into_tensor_arg(),
            gamma.into_tensor_arg(),
            beta.into_tensor_arg(),
            output.into_tensor_arg(),
            shift.into_tensor_arg(),
            rstd.into_tensor_arg(),
            row.k as u32,
            row.inv_k,
            row.inv_divisor,
            row.epsilon,
            plane,
            per_unit,
            FORWARD_PLANES,
            row.centered,
            row.added_to_std,
            self.present[0],
            self.present[1],
            self.dtypes.map(Into::into),
        );
    }
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
    let plan = LaunchPlan::new(&shape, spec, x);
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

    let call = BackwardCall {
        x,
        grad_output,
        // An absent γ is never read: x stands in for the kernel argument.
        gamma: gamma.unwrap_or(x).clone(),
        has_gamma: gamma.is_some(),
        statistics: [shift.clone(), rstd.clone()],
        dx: empty_like(x, shape, x.dtype),
        dtypes: [x.dtype, gamma.map_or(x.dtype, |g| g.dtype)],
    };
    let (dx, partial_gamma, partial_beta) = match plan.backward {
        Reduction::Tree { block } => call.tree(&plan, block),
        Reduction::Plane { plane, per_unit } => call.plane(&plan, plane, per_unit),
    };
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

/// dx, then the dγ and dβ partial sums, as a backward launch returns them.
type BackwardOutputs<R> = (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>);

/// What both backward launches take besides their geometry: x, dy, γ (or its stand-in) and
/// whether it is present, the forward's `[shift, rstd]`, the output dx, and the dtypes of x
/// and of γ.
struct BackwardCall<'a, R: CubeRuntime> {
    x: &'a CubeTensor<R>,
    grad_output: CubeTensor<R>,
    gamma: CubeTensor<R>,
    has_gamma: bool,
    statistics: [CubeTensor<R>; 2],
    dx: CubeTensor<R>,
    dtypes: [DType; 2],
}

impl<R: CubeRuntime> BackwardCall<'_, R> {
    /// Two `[cubes, n]` f32 tensors for the dγ and dβ partial sums.
    fn partials(&self, cubes: usize, n: usize) -> (CubeTensor<R>, CubeTensor<R>) {
        let partial = || empty_like(self.x, Shape::new([cubes, n]), DType::F32);
        (partial(), partial())
    }

    /// The tree backward: returns dx and the `[cubes, n]` dγ and dβ partial sums.
    fn tree(self, plan: &LaunchPlan, block: u32) -> BackwardOutputs<R> {
        let rows_per_cube = plan.rows.div_ceil(MAX_BACKWARD_CUBES).max(1);
        let cubes = plan.rows.div_ceil(rows_per_cube);
        let (partial_gamma, partial_beta) = self.partials(cubes, plan.row.n);
        let [shift, rstd] = self.statistics;
        kernels::norm_rows_backward_kernel::launch::<R>(
            &self.x.client,
            CubeCount::Static(cubes as u32, 1, 1),
            CubeDim::new_1d(block),
            self.x.clone().into_tensor_arg(),
            self.grad_output.into_tensor_arg(),
            self.gamma.into_tensor_arg(),
            shift.into_tensor_arg(),
            rstd.into_tensor_arg(),
            self.dx.clone().into_tensor_arg(),
            partial_gamma.clone().into_tensor_arg(),
            partial_beta.clone().into_tensor_arg(),
            rows_per_cube as u32,
            plan.row.k as u32,
            plan.row.inv_k,
            plan.row.inv_divisor,
            block,
            plan.row.centered,
            plan.row.added_to_std,
            self.has_gamma,
            self.dtypes.map(Into::into),
        );
        (self.dx, partial_gamma, partial_beta)
    }

    /// The plane backward: returns dx and the `[cubes, n]` dγ and dβ partial sums.
    fn plane(self, plan: &LaunchPlan, plane: usize, per_unit: usize) -> BackwardOutputs<R> {
        let rows_per_worker = plan
            .rows
            .div_ceil(MAX_PLANE_WORKERS)
            .max(MIN_ROWS_PER_WORKER);
        let cubes = plan.rows.div_ceil(rows_per_worker * BACKWARD_PLANES);
        let (partial_gamma, partial_beta) = self.partials(cubes, plan.row.n);
        let [shift, rstd] = self.statistics;
        plane_kernels::norm_plane_backward_kernel::launch::<R>(
            &self.x.client,
            grid(cubes),
            CubeDim::new_1d((plane * BACKWARD_PLANES) as u32),
            self.x.clone().into_tensor_arg(),
            self.grad_output.into_tensor_arg(),
            self.gamma.into_tensor_arg(),
            shift.into_tensor_arg(),
            rstd.into_tensor_arg(),
            self.dx.clone().into_tensor_arg(),
            partial_gamma.clone().into_tensor_arg(),
            partial_beta.clone().into_tensor_arg(),
            rows_per_worker as u32,
            plan.row.k as u32,
            plan.row.inv_k,
            plan.row.inv_divisor,
            plane,
            per_unit,
            BACKWARD_PLANES,
            plan.row.centered,
            plan.row.added_to_std,
            self.has_gamma,
            self.dtypes.map(Into::into),
        );
        (self.dx, partial_gamma, partial_beta)
    }
}

/// `Σ_cubes partial[cube, j]` for each of the `n` features, as an f32 `[n]` tensor.
fn sum_partials<R: CubeRuntime>(partial: CubeTensor<R>, n: usize) -> CubeTensor<R> {
    let sums = empty_like(&partial, Shape::new([n]), DType::F32);
    let cube_dim = CubeDim::new_2d(kernels::SUM_FEATURES as u32, kernels::SUM_LANES as u32);
    let blocks = n.div_ceil(kernels::SUM_FEATURES);
    kernels::sum_partials_kernel::launch::<R>(
        &partial.client,
        grid(blocks),
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

#[cfg(test)]
mod tests {
    use super::Reduction;

    #[test]
    fn rows_of_up_to_the_most_values_a_unit_take_a_plane_each() {
        let plane = |n, size, most| Reduction::choose(n, Some(size), most);
        assert_eq!(
            plane(512, 32, 16),
            Reduction::Plane {
                plane: 32,
                per_unit: 16
            }
        );
        assert_eq!(
            plane(17, 32, 8),
            Reduction::Plane {
                plane: 32,
                per_unit: 1
            }
        );
        assert_eq!(
            plane(256, 32, 8),
            Reduction::Plane {
                plane: 32,
                per_unit: 8
            }
        );
        assert_eq!(
            plane(1024, 64, 16),
            Reduction::Plane {
                plane: 64,
                per_unit: 16
            }
        );
        // One value more than the most a unit, a device without (fixed-size) planes, and
        // planes of one unit all take the tree kernels, with the block of the row's width.
        assert_eq!(plane(257, 32, 8), Reduction::Tree { block: 256 });
        assert_eq!(plane(1024, 32, 16), Reduction::Tree { block: 256 });
        assert_eq!(
            Reduction::choose(64, None, 16),
            Reduction::Tree { block: 64 }
        );
        assert_eq!(plane(64, 1, 16), Reduction::Tree { block: 64 });
        assert_eq!(
            Reduction::choose(5, None, 16),
            Reduction::Tree { block: 32 }
        );
    }
}
