//! The fused forward kernel: statistics, normalization and the affine map of each row in
//! one visit ([`ROW_GROUP`] rows at a time, their statistics first), rows in parallel.
//!
//! # Formula
//! Per row (see [`super::plan`] for `p`, `s`, `c`, `r`):
//!
//! ```text
//! p = x_0 (centred) or 0          s = Σ_{j<k} (x_j − p) / k (centred) or 0
//! σ² = Σ_{j<k} ((x_j − p) − s)² / d
//! y_j = ((x_j − p) − s) · r · γ_j + β_j        for every j < n
//! ```
//!
//! The statistics are two passes over the row while it sits in L1/L2, around the pivot
//! `p`: `x_j − p` is exact for nearby floats, so a row with mean 1e4 and standard deviation
//! 1e-2 keeps its digits in f32 (the one-pass `E[x²] − E[x]²` would lose all of them). Main
//! memory sees one read of `x` and one write of `y`.
//!
//! # Shapes
//! - `x`, `y`: `[rows, n]`, row-major, contiguous
//! - `gamma`, `beta`: `[n]` (a scalar or absent γ/β is expanded by the caller)
//! - `shift`, `rstd` (saved for the backward): `[rows]`
//!
//! # Example
//! ```
//! use addnorm_kernels::RowNormSpec;
//! use addnorm_kernels::norm::cpu::{forward::forward, plan::RowPlan};
//!
//! let x = [1.0_f64, 2.0, 3.0];
//! let (mut y, mut shift, mut rstd) = ([0.0; 3], [0.0], [0.0]);
//! let plan = RowPlan::new(&RowNormSpec::layer_norm(0.0), 3);
//! forward(&plan, &x, &[1.0; 3], &[0.0; 3], &mut y, &mut shift, &mut rstd);
//! assert_eq!(shift, [1.0]); // the mean 2, relative to the pivot x_0 = 1
//! assert!((y[0] + 1.5_f64.sqrt()).abs() < 1e-12 && y[1] == 0.0);
//! ```

use crate::cpu::parallel::{self, ChunksMut, chunk};

use super::plan::{ROW_GROUP, RowPlan, forward_rows_per_task};
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::Real;

/// Normalizes every row of `x` into `y` and saves each row's shift and `r`.
///
/// # Panics
/// If the slice lengths disagree with `plan.n` (`x`, `y`: a multiple of `n`; `gamma`,
/// `beta`: `n`; `shift`, `rstd`: the number of rows).
pub fn forward<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    gamma: &[E],
    beta: &[E],
    y: &mut [E],
    shift: &mut [E],
    rstd: &mut [E],
) {
    let n = plan.n;
    let rows = shift.len();
    assert!(
        x.len() == rows * n && y.len() == x.len() && rstd.len() == rows,
        "fused forward: x has {} elements, y {}, shift {}, rstd {}; expected {rows}×{n}",
        x.len(),
        y.len(),
        shift.len(),
        rstd.len()
    );
    assert!(
        gamma.len() == n && beta.len() == n,
        "fused forward: gamma has {} and beta {} elements, expected {n}",
        gamma.len(),
        beta.len()
    );
    let task = |y: &mut [E], x: &[E], shift: &mut [E], rstd: &mut [E]| {
        vectorized(
            #[inline(always)]
            || {
                let groups = y
                    .chunks_mut(ROW_GROUP * n)
                    .zip(x.chunks(ROW_GROUP * n))
                    .zip(shift.chunks_mut(ROW_GROUP).zip(rstd.chunks_mut(ROW_GROUP)));
                for ((y, x), (shift, rstd)) in groups {
                    normalize_rows(plan, x, (gamma, beta), y, (shift, rstd));
                }
            },
        )
    };
    let per_task = forward_rows_per_task(rows, n);
    if per_task >= rows {
        return task(y, x, shift, rstd);
    }
    let (ys, shifts, rstds) = (
        ChunksMut::new(y, per_task * n),
        ChunksMut::new(shift, per_task),
        ChunksMut::new(rstd, per_task),
    );
    parallel::for_each(ys.count(), |i| {
        let x = chunk(x, per_task * n, i);
        task(ys.take(i), x, shifts.take(i), rstds.take(i));
    });
}

/// Up to [`ROW_GROUP`] rows of `x` into `y`, their shifts `s` and `r` into `shift` and
/// `rstd`.
#[inline(always)]
fn normalize_rows<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    (gamma, beta): (&[E], &[E]),
    y: &mut [E],
    (shift, rstd): (&mut [E], &mut [E]),
) {
    let n = plan.n;
    for ((x, shift), rstd) in x.chunks_exact(n).zip(shift.iter_mut()).zip(rstd.iter_mut()) {
        let (_, s, variance) = plan.statistics(x);
        (*shift, *rstd) = (s, plan.rstd(variance));
    }
    let rows = y.chunks_exact_mut(n).zip(x.chunks_exact(n));
    for ((y, x), (&shift, &rstd)) in rows.zip(shift.iter().zip(rstd.iter())) {
        let pivot = plan.pivot(x);
        for (((y, &x), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
            *y = ((x - pivot) - shift) * rstd * g + b;
        }
    }
}
