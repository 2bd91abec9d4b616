//! The CubeCL kernels: the fused row-norm forward, its backward, and the column sum that
//! finishes dγ and dβ. They compile to WGSL/SPIR-V (wgpu), CUDA and HIP alike.
//!
//! # Formula
//! The same as the [CPU kernels](crate::cpu): with `p` the row's pivot (its first element
//! when centring, else 0), `s` the saved shift and `r` the saved reciprocal denominator,
//!
//! ```text
//! forward:   s = Σ_{j<k} (x_j − p) / k            (0 for RMSNorm)
//!            c_j = (x_j − p) − s                  σ² = Σ_{j<k} c_j² / d
//!            r = 1/√(σ² + ε)  or  1/(√(σ² + STD_FLOOR) + ε)
//!            y_j = c_j·r·γ_j + β_j
//! backward:  g_j = dy_j·γ_j     A = Σ_j g_j     B = Σ_j g_j·c_j
//!            dx_j = r·g_j − [centred]·r·A/k + B·dr/dσ²·2c_j/d      (j < k)
//!            dx_j = r·g_j                                          (k ≤ j < n)
//!            dγ_j = Σ_rows dy_j·c_j·r          dβ_j = Σ_rows dy_j
//! ```
//!
//! Arithmetic is in f32 whatever the storage types (`F` for x, y, dy and dx, `P` for γ and
//! β), so f16 and bf16 tensors accumulate in f32; the saved statistics and the dγ/dβ
//! partial sums are f32.
//!
//! # Work division
//! - Forward: one cube per row (`block` units, a power of two ≤ 256); each unit strides over
//!   the row's features, and the two row sums are tree reductions in shared memory. Rows are
//!   numbered across a 2-D grid of cubes, so more than 65 535 rows fit.
//! - Backward: one cube per block of `rows_per_cube` consecutive rows. For each row the cube
//!   reduces A, B (and σ² for `AddedToStd`) in shared memory, then writes dx and adds the
//!   row's dγ/dβ contributions into the cube's own row of the `[cubes, n]` partial sums.
//!   Each partial entry belongs to exactly one unit, so no atomics are needed.
//! - [`sum_partials_kernel`](fn@sum_partials_kernel) then adds the `cubes` partial rows per
//!   feature: 16 features a cube, 16 lanes per feature, each lane a strided share of the
//!   rows, so a row width of 1024 keeps 64 cubes busy instead of 4 serial walks.
//!
//! # Shapes
//! - `x`, `dy`, `output`, `dx`: `[rows, n]`, any strides
//! - `gamma`, `beta`: `[n]` or `[1]` (or a placeholder, ignored when the flag says absent)
//! - `shift`, `rstd`: `[rows]`, f32
//! - `partial_gamma`, `partial_beta`: `[cubes, n]`, f32; `sums`: `[n]`, f32

// `#[cube(launch)]` generates a launch function and a kernel struct per kernel, which carry
// no doc comments of their own; the kernels' docs are on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

use crate::norm::composite::STD_FLOOR;

/// [`STD_FLOOR`] as the f32 the kernels use (a normal f32).
const STD_FLOOR_F32: f32 = STD_FLOOR as f32;

/// Sums `value` over the cube's units (a power of two) by a tree reduction in `shared` (at
/// least as long as the cube). Every unit gets the total. Must be reached by every unit of
/// the cube.
#[cube]
fn block_sum(shared: &mut SharedMemory<f32>, value: f32) -> f32 {
    let unit = UNIT_POS_X as usize;
    shared[unit] = value;
    sync_cube();
    // A runtime value: a comptime one could not be halved in the loop.
    let mut stride = (CUBE_DIM_X / 2) as usize;
    while stride > 0 {
        if unit < stride {
            shared[unit] += shared[unit + stride];
        }
        sync_cube();
        stride /= 2;
    }
    let total = shared[0];
    sync_cube();
    total
}

/// Like [`block_sum()`] for three values at once (one pass of barriers); `shared` holds at
/// least `3·block` values.
#[cube]
fn block_sum3(
    shared: &mut SharedMemory<f32>,
    a: f32,
    b: f32,
    c: f32,
    #[comptime] block: u32,
) -> (f32, f32, f32) {
    let unit = UNIT_POS_X as usize;
    let width = block as usize;
    shared[unit] = a;
    shared[width + unit] = b;
    shared[2 * width + unit] = c;
    sync_cube();
    // A runtime value: a comptime one could not be halved in the loop.
    let mut stride = (CUBE_DIM_X / 2) as usize;
    while stride > 0 {
        if unit < stride {
            shared[unit] += shared[unit + stride];
            shared[width + unit] += shared[width + unit + stride];
            shared[2 * width + unit] += shared[2 * width + unit + stride];
        }
        sync_cube();
        stride /= 2;
    }
    let totals = (shared[0], shared[width], shared[2 * width]);
    sync_cube();
    totals
}

/// This cube's number in the 2-D grid of cubes that the host lays out row by row
/// (`launch::grid`), so that more than 65 535 cubes fit.
#[cube]
pub(super) fn cube_index() -> usize {
    (CUBE_POS_Y * CUBE_COUNT_X + CUBE_POS_X) as usize
}

/// The affine parameter for feature `j`: `param[j]`, or `param[0]` when it holds one value.
#[cube]
pub(super) fn parameter<P: Float>(param: &Tensor<P>, j: usize) -> f32 {
    let mut index = j;
    if param.len() == 1 {
        index = 0;
    }
    f32::cast_from(param[index])
}

/// The reciprocal denominator `r` from the variance.
#[cube]
pub(super) fn reciprocal_std(variance: f32, epsilon: f32, #[comptime] added_to_std: bool) -> f32 {
    if added_to_std {
        1.0 / (f32::sqrt(variance + STD_FLOOR_F32) + epsilon)
    } else {
        1.0 / f32::sqrt(variance + epsilon)
    }
}

/// A row's terms of dx beside `r·g` (see the [module docs](self)): `(mean_term,
/// variance_term)`, with `mean_term = [centred]·r·A/k` and `variance_term = B·dr/dσ²·2/d`,
/// from the row sums `total_g = Σ g` (A), `total_gc = Σ g·c` (B) and, for `AddedToStd`
/// only, `total_squares = Σ_{j<k} c²`.
#[cube]
#[allow(clippy::too_many_arguments)]
pub(super) fn dx_terms(
    r: f32,
    total_g: f32,
    total_gc: f32,
    total_squares: f32,
    inv_k: f32,
    inv_divisor: f32,
    #[comptime] centered: bool,
    #[comptime] added_to_std: bool,
) -> (f32, f32) {
    let mut mean_term = 0.0f32;
    if centered {
        mean_term = r * total_g * inv_k;
    }
    let derivative = if added_to_std {
        let variance = total_squares * inv_divisor;
        -(r * r) * 0.5 / f32::sqrt(variance + STD_FLOOR_F32)
    } else {
        -(r * r * r) * 0.5
    };
    (mean_term, total_gc * derivative * (2.0 * inv_divisor))
}

/// The fused forward: `output = norm(x)·γ + β` and the per-row `shift`, `rstd`. Launch with
/// one cube of `block` units per row (see the [module docs](self)).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn norm_rows_forward_kernel<F: Float, P: Float>(
    x: &Tensor<F>,
    gamma: &Tensor<P>,
    beta: &Tensor<P>,
    output: &mut Tensor<F>,
    shift: &mut Tensor<f32>,
    rstd: &mut Tensor<f32>,
    statistics_features: u32,
    inv_k: f32,
    inv_divisor: f32,
    epsilon: f32,
    #[comptime] block: u32,
    #[comptime] centered: bool,
    #[comptime] added_to_std: bool,
    #[comptime] has_gamma: bool,
    #[comptime] has_beta: bool,
    #[define(F, P)] _dtypes: [StorageType; 2],
) {
    let row = cube_index();
    if row >= x.shape(0) {
        terminate!();
    }
    let n = x.shape(1);
    let k = statistics_features as usize;
    let step = block as usize;
    let unit = UNIT_POS_X as usize;
    let x_row = row * x.stride(0);
    let x_col = x.stride(1);
    let mut shared = SharedMemory::<f32>::new(block as usize);

    let mut pivot = 0.0f32;
    let mut mean_shift = 0.0f32;
    if centered {
        pivot = f32::cast_from(x[x_row]);
        let mut sum = 0.0f32;
        let mut j = unit;
        while j < k {
            sum += f32::cast_from(x[x_row + j * x_col]) - pivot;
            j += step;
        }
        mean_shift = block_sum(&mut shared, sum) * inv_k;
    }

    let mut squares = 0.0f32;
    let mut j = unit;
    while j < k {
        let c = (f32::cast_from(x[x_row + j * x_col]) - pivot) - mean_shift;
        squares += c * c;
        j += step;
    }
    let variance = block_sum(&mut shared, squares) * inv_divisor;
    let r = reciprocal_std(variance, epsilon, added_to_std);

    let out_row = row * output.stride(0);
    let out_col = output.stride(1);
    let mut j = unit;
    while j < n {
        let mut y = ((f32::cast_from(x[x_row + j * x_col]) - pivot) - mean_shift) * r;
        if has_gamma {
            y *= parameter::<P>(gamma, j);
        }
        if has_beta {
            y += parameter::<P>(beta, j);
        }
        output[out_row + j * out_col] = F::cast_from(y);
        j += step;
    }
    if unit == 0 {
        shift[row] = mean_shift;
        rstd[row] = r;
    }
}

/// The fused backward: `dx`, and each cube's dγ/dβ partial sums over its rows. Launch with
/// `⌈rows / rows_per_cube⌉` cubes of `block` units (see the [module docs](self)).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn norm_rows_backward_kernel<F: Float, P: Float>(
    x: &Tensor<F>,
    grad_output: &Tensor<F>,
    gamma: &Tensor<P>,
    shift: &Tensor<f32>,
    rstd: &Tensor<f32>,
    dx: &mut Tensor<F>,
    partial_gamma: &mut Tensor<f32>,
    partial_beta: &mut Tensor<f32>,
    rows_per_cube: u32,
    statistics_features: u32,
    inv_k: f32,
    inv_divisor: f32,
    #[comptime] block: u32,
    #[comptime] centered: bool,
    #[comptime] added_to_std: bool,
    #[comptime] has_gamma: bool,
    #[define(F, P)] _dtypes: [StorageType; 2],
) {
    let cube = CUBE_POS_X as usize;
    let rows = x.shape(0);
    let n = x.shape(1);
    let k = statistics_features as usize;
    let step = block as usize;
    let unit = UNIT_POS_X as usize;
    let first = cube * rows_per_cube as usize;
    let mut last = first + rows_per_cube as usize;
    if last > rows {
        last = rows;
    }
    let x_col = x.stride(1);
    let dy_col = grad_output.stride(1);
    let dx_col = dx.stride(1);
    let partial_row = cube * n;
    let mut shared = SharedMemory::<f32>::new(3 * block as usize);

    let mut row = first;
    while row < last {
        let x_row = row * x.stride(0);
        let dy_row = row * grad_output.stride(0);
        let mut pivot = 0.0f32;
        if centered {
            pivot = f32::cast_from(x[x_row]);
        }
        let mean_shift = shift[row];
        let r = rstd[row];

        // The row sums A = Σ g, B = Σ g·c and (AddedToStd) Σ_{j<k} c².
        let mut sum_g = 0.0f32;
        let mut sum_gc = 0.0f32;
        let mut squares = 0.0f32;
        let mut j = unit;
        while j < n {
            let c = (f32::cast_from(x[x_row + j * x_col]) - pivot) - mean_shift;
            let mut g = f32::cast_from(grad_output[dy_row + j * dy_col]);
            if has_gamma {
                g *= parameter::<P>(gamma, j);
            }
            sum_g += g;
            sum_gc += g * c;
            if added_to_std && j < k {
                squares += c * c;
            }
            j += step;
        }
        let (total_g, total_gc, total_squares) =
            block_sum3(&mut shared, sum_g, sum_gc, squares, block);

        let (mean_term, variance_term) = dx_terms(
            r,
            total_g,
            total_gc,
            total_squares,
            inv_k,
            inv_divisor,
            centered,
            added_to_std,
        );

        let dx_row = row * dx.stride(0);
        let mut j = unit;
        while j < n {
            let c = (f32::cast_from(x[x_row + j * x_col]) - pivot) - mean_shift;
            let dy = f32::cast_from(grad_output[dy_row + j * dy_col]);
            let mut g = dy;
            if has_gamma {
                g *= parameter::<P>(gamma, j);
            }
            let mut value = r * g;
            if j < k {
                value += variance_term * c - mean_term;
            }
            dx[dx_row + j * dx_col] = F::cast_from(value);

            let contribution = dy * c * r;
            if row == first {
                partial_gamma[partial_row + j] = contribution;
                partial_beta[partial_row + j] = dy;
            } else {
                partial_gamma[partial_row + j] += contribution;
                partial_beta[partial_row + j] += dy;
            }
            j += step;
        }
        row += 1;
    }
}

/// Features per cube of [`sum_partials_kernel`](fn@sum_partials_kernel) (its `x` units).
pub const SUM_FEATURES: usize = 16;

/// Lanes per feature of [`sum_partials_kernel`](fn@sum_partials_kernel) (its `y` units):
/// each sums every `SUM_LANES`-th partial row.
pub const SUM_LANES: usize = 16;

/// Column sums of `partial: [cubes, n]` into `sums: [n]`. A cube of `SUM_FEATURES ×
/// SUM_LANES` units takes `SUM_FEATURES` consecutive features; lane `y` adds partial rows
/// `y, y + SUM_LANES, …` four at a time (independent loads a GPU overlaps), and lane 0 adds
/// the lanes' totals through shared memory, in lane order.
#[cube(launch)]
pub fn sum_partials_kernel(partial: &Tensor<f32>, sums: &mut Tensor<f32>) {
    let n = sums.len();
    let feature = UNIT_POS_X as usize;
    let lane = UNIT_POS_Y as usize;
    let block = cube_index();
    let j = block * SUM_FEATURES + feature;
    let cubes = partial.shape(0);
    let mut shared = SharedMemory::<f32>::new(SUM_FEATURES * SUM_LANES);
    let mut total = 0.0f32;
    if j < n {
        let mut cube = lane;
        while cube + 3 * SUM_LANES < cubes {
            let a = partial[cube * n + j];
            let b = partial[(cube + SUM_LANES) * n + j];
            let c = partial[(cube + 2 * SUM_LANES) * n + j];
            let d = partial[(cube + 3 * SUM_LANES) * n + j];
            total += (a + b) + (c + d);
            cube += 4 * SUM_LANES;
        }
        while cube < cubes {
            total += partial[cube * n + j];
            cube += SUM_LANES;
        }
    }
    shared[lane * SUM_FEATURES + feature] = total;
    sync_cube();
    if lane == 0 && j < n {
        let mut sum = 0.0f32;
        #[unroll]
        for other in 0..SUM_LANES {
            sum += shared[other * SUM_FEATURES + feature];
        }
        sums[j] = sum;
    }
}
