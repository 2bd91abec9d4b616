//! The CubeCL norm kernels with a row per plane (warp, subgroup): the same forward and
//! backward as [`super::kernels`], with each row's sums taken by `plane_sum` instead of a
//! tree of barriers in shared memory, and each unit's share of the row held in registers.
//!
//! # Formula
//! As in [`super::kernels`] (`p` the pivot, `s` the saved shift, `r` the saved reciprocal
//! denominator, `k` the features the statistics cover):
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
//! The sums are the same sums in another order, so the results agree with the tree
//! kernels' to rounding, not bit for bit.
//!
//! # Work division
//! - A cube is `planes` planes of `plane` units (the device's one plane size); plane `q` of
//!   cube `c` is worker `c·planes + q`.
//! - Lane `l` of a plane holds features `l, l + plane, …`: `per_unit = ⌈n / plane⌉` values,
//!   a compile-time count, so they live in registers and every load of a row is issued
//!   before its first sum.
//! - Forward: worker `w` normalizes row `w`.
//! - Backward: worker `w` takes rows `w·rows_per_worker ..` in order and keeps its dγ/dβ
//!   contributions in registers. At the end the cube adds its planes' sums in plane order
//!   through shared memory and writes them once, as row `c` of the `[cubes, n]` partial
//!   sums that [`sum_partials_kernel`](fn@super::kernels::sum_partials_kernel) then adds.
//!
//! Every `plane_sum` is reached by every unit of its plane: a plane's units share their
//! row (forward; a whole plane past the last row leaves together) or their rows
//! (backward).
//!
//! # Shapes
//! - `x`, `dy`, `output`, `dx`: `[rows, n]`, any strides, `n ≤ plane·per_unit`
//! - `gamma`, `beta`: `[n]` or `[1]` (or a placeholder, ignored when the flag says absent)
//! - `shift`, `rstd`: `[rows]`, f32
//! - `partial_gamma`, `partial_beta`: `[cubes, n]`, f32

// `#[cube(launch)]` generates a launch function and a kernel struct per kernel, which carry
// no doc comments of their own; the kernels' docs are on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

use super::kernels::{cube_index, dx_terms, parameter, reciprocal_std};
use crate::cube::registers::zeros;

/// The worker (plane) this unit belongs to, numbered across a 2-D grid of cubes.
#[cube]
fn worker(#[comptime] planes: usize) -> usize {
    cube_index() * planes + PLANE_POS as usize
}

/// The fused forward with a row per plane: `output = norm(x)·γ + β` and the per-row
/// `shift`, `rstd` (see the [module docs](self)).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn norm_plane_forward_kernel<F: Float, P: Float>(
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
    #[comptime] plane: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: usize,
    #[comptime] centered: bool,
    #[comptime] added_to_std: bool,
    #[comptime] has_gamma: bool,
    #[comptime] has_beta: bool,
    #[define(F, P)] _dtypes: [StorageType; 2],
) {
    let row = worker(planes);
    if row >= x.shape(0) {
        terminate!();
    }
    let n = x.shape(1);
    let k = statistics_features as usize;
    let lane = UNIT_POS_PLANE as usize;
    let x_row = row * x.stride(0);
    let x_col = x.stride(1);

    let mut pivot = 0.0f32;
    if centered {
        pivot = f32::cast_from(x[x_row]);
    }
    let mut values = Array::<f32>::new(per_unit);
    let mut sum = 0.0f32;
    #[unroll]
    for s in 0..per_unit {
        let j = lane + s * plane;
        let mut value = 0.0f32;
        if j < n {
            value = f32::cast_from(x[x_row + j * x_col]) - pivot;
        }
        values[s] = value;
        if j < k {
            sum += value;
        }
    }
    let mut mean_shift = 0.0f32;
    if centered {
        mean_shift = plane_sum(sum) * inv_k;
    }

    let mut squares = 0.0f32;
    #[unroll]
    for s in 0..per_unit {
        if lane + s * plane < k {
            let c = values[s] - mean_shift;
            squares += c * c;
        }
    }
    let variance = plane_sum(squares) * inv_divisor;
    let r = reciprocal_std(variance, epsilon, added_to_std);

    let out_row = row * output.stride(0);
    let out_col = output.stride(1);
    #[unroll]
    for s in 0..per_unit {
        let j = lane + s * plane;
        if j < n {
            let mut y = (values[s] - mean_shift) * r;
            if has_gamma {
                y *= parameter::<P>(gamma, j);
            }
            if has_beta {
                y += parameter::<P>(beta, j);
            }
            output[out_row + j * out_col] = F::cast_from(y);
        }
    }
    if lane == 0 {
        shift[row] = mean_shift;
        rstd[row] = r;
    }
}

/// The fused backward with a row per plane: `dx`, and each cube's dγ/dβ partial sums
/// over its planes' rows (see the [module docs](self)).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn norm_plane_backward_kernel<F: Float, P: Float>(
    x: &Tensor<F>,
    grad_output: &Tensor<F>,
    gamma: &Tensor<P>,
    shift: &Tensor<f32>,
    rstd: &Tensor<f32>,
    dx: &mut Tensor<F>,
    partial_gamma: &mut Tensor<f32>,
    partial_beta: &mut Tensor<f32>,
    rows_per_worker: u32,
    statistics_features: u32,
    inv_k: f32,
    inv_divisor: f32,
    #[comptime] plane: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: usize,
    #[comptime] centered: bool,
    #[comptime] added_to_std: bool,
    #[comptime] has_gamma: bool,
    #[define(F, P)] _dtypes: [StorageType; 2],
) {
    let worker = worker(planes);
    let rows = x.shape(0);
    // A worker past the last row takes no rows (`last ≤ first`) but stays for the cube's
    // sum of its planes' dγ/dβ below, which every unit must reach.
    let first = worker * rows_per_worker as usize;
    let mut last = first + rows_per_worker as usize;
    if last > rows {
        last = rows;
    }
    let n = x.shape(1);
    let k = statistics_features as usize;
    let lane = UNIT_POS_PLANE as usize;
    let x_col = x.stride(1);
    let dy_col = grad_output.stride(1);
    let dx_col = dx.stride(1);

    let mut sum_gamma = zeros(per_unit);
    let mut sum_beta = zeros(per_unit);
    let mut centred = Array::<f32>::new(per_unit);
    let mut grads = Array::<f32>::new(per_unit);
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
        #[unroll]
        for s in 0..per_unit {
            let j = lane + s * plane;
            let mut c = 0.0f32;
            let mut dy = 0.0f32;
            if j < n {
                c = (f32::cast_from(x[x_row + j * x_col]) - pivot) - mean_shift;
                dy = f32::cast_from(grad_output[dy_row + j * dy_col]);
            }
            centred[s] = c;
            grads[s] = dy;
            let mut g = dy;
            if has_gamma {
                // Nested: a comptime flag cannot join a runtime test in one condition.
                if j < n {
                    g *= parameter::<P>(gamma, j);
                }
            }
            sum_g += g;
            sum_gc += g * c;
            if added_to_std {
                // Nested: a comptime flag cannot join a runtime test in one condition.
                if j < k {
                    squares += c * c;
                }
            }
        }
        let total_g = plane_sum(sum_g);
        let total_gc = plane_sum(sum_gc);
        let mut total_squares = 0.0f32;
        if added_to_std {
            total_squares = plane_sum(squares);
        }
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
        #[unroll]
        for s in 0..per_unit {
            let j = lane + s * plane;
            if j < n {
                let c = centred[s];
                let dy = grads[s];
                let mut g = dy;
                if has_gamma {
                    g *= parameter::<P>(gamma, j);
                }
                let mut value = r * g;
                if j < k {
                    value += variance_term * c - mean_term;
                }
                dx[dx_row + j * dx_col] = F::cast_from(value);
                sum_gamma[s] += dy * c * r;
                sum_beta[s] += dy;
            }
        }
        row += 1;
    }

    sum_planes(
        &sum_gamma,
        &sum_beta,
        partial_gamma,
        partial_beta,
        n,
        plane,
        per_unit,
        planes,
    );
}

/// Adds the cube's `planes` planes' dγ/dβ sums (`gamma`, `beta`: each unit's
/// `per_unit` values) in plane order through shared memory, and writes them as the cube's
/// row of the partial sums. Every unit of the cube must reach it.
#[cube]
#[allow(clippy::too_many_arguments)]
fn sum_planes(
    gamma: &Array<f32>,
    beta: &Array<f32>,
    partial_gamma: &mut Tensor<f32>,
    partial_beta: &mut Tensor<f32>,
    n: usize,
    #[comptime] plane: usize,
    #[comptime] per_unit: usize,
    #[comptime] planes: usize,
) {
    let width = plane * per_unit;
    let mut shared = SharedMemory::<f32>::new(2 * planes * width);
    let lane = UNIT_POS_PLANE as usize;
    let own = PLANE_POS as usize * width;
    #[unroll]
    for s in 0..per_unit {
        shared[own + s * plane + lane] = gamma[s];
        shared[planes * width + own + s * plane + lane] = beta[s];
    }
    sync_cube();
    if PLANE_POS == 0 {
        let partial_row = cube_index() * n;
        #[unroll]
        for s in 0..per_unit {
            let j = lane + s * plane;
            let mut total_gamma = 0.0f32;
            let mut total_beta = 0.0f32;
            #[unroll]
            for q in 0..planes {
                total_gamma += shared[q * width + s * plane + lane];
                total_beta += shared[planes * width + q * width + s * plane + lane];
            }
            if j < n {
                partial_gamma[partial_row + j] = total_gamma;
                partial_beta[partial_row + j] = total_beta;
            }
        }
    }
}
