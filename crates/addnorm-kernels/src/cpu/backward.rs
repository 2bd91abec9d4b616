//! The fused backward kernel: dx, dγ and dβ in one visit of each row of `x` and `dy`, rows
//! in parallel, dγ/dβ summed per task and reduced once at the end (no atomics, no second
//! pass over the tensor).
//!
//! # Formula
//! With `c_j`, `r`, `d`, `k` as in [`super::plan`] (recomputed from `x` and the saved shift),
//! `g_j = dy_j·γ_j`, and the two row sums
//!
//! ```text
//! A = Σ_{j<n} g_j                  (only when centring: y depends on μ through every c_j)
//! B = Σ_{j<n} g_j · c_j            (y depends on r through every c_j)
//! ```
//!
//! the gradients are
//!
//! ```text
//! dx_j = r·g_j − [centred]·r·A/k + B · dr/dσ² · 2c_j/d        for j < k
//! dx_j = r·g_j                                                 for k ≤ j < n
//! dγ_j = Σ_rows dy_j · c_j · r          dβ_j = Σ_rows dy_j
//! dr/dσ² = −r³/2 (InsideSqrt)           dr/dσ² = −r² / (2√(σ² + STD_FLOOR)) (AddedToStd)
//! ```
//!
//! Only `x_{<k}` enter μ and σ², which is why the correction terms stop at `k` (partial
//! RMSNorm). The `∂σ²/∂μ` term is absent because `Σ_{j<k} c_j = 0`.
//!
//! # Shapes
//! - `x`, `dy`, `dx`: `[rows, n]`, row-major, contiguous
//! - `gamma`: `[n]` (expanded by the caller)
//! - `shift`, `rstd`: `[rows]`, as the forward saved them
//! - returned dγ, dβ: `[n]` (the caller sums them for a scalar γ/β)

use rayon::prelude::*;

use super::plan::{RowPlan, rows_per_task};
use super::real::{LANES, Real, sum_map};

/// The per-feature parameter gradients of one call: `Σ_rows dy·ĉ` and `Σ_rows dy`.
#[derive(Clone, Debug, PartialEq)]
pub struct FeatureGrads<E> {
    /// dγ per feature, `[n]`.
    pub gamma: Vec<E>,
    /// dβ per feature, `[n]`.
    pub beta: Vec<E>,
}

/// Writes dx into `dx` and returns the per-feature dγ and dβ.
///
/// # Panics
/// If the slice lengths disagree with `plan.n` and the number of rows (`shift.len()`).
#[allow(clippy::too_many_arguments)] // the kernel's inputs, each one a tensor
pub fn backward<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    dy: &[E],
    gamma: &[E],
    shift: &[E],
    rstd: &[E],
    dx: &mut [E],
) -> FeatureGrads<E> {
    let n = plan.n;
    let rows = shift.len();
    assert!(
        x.len() == rows * n && dy.len() == x.len() && dx.len() == x.len(),
        "fused backward: x has {} elements, dy {}, dx {}; expected {rows}×{n}",
        x.len(),
        dy.len(),
        dx.len()
    );
    assert!(
        gamma.len() == n && rstd.len() == rows,
        "fused backward: gamma has {} elements (expected {n}), rstd {} (expected {rows})",
        gamma.len(),
        rstd.len()
    );
    let per_task = rows_per_task(rows, n);
    let partials: Vec<FeatureGrads<E>> = dx
        .par_chunks_mut(per_task * n)
        .zip(x.par_chunks(per_task * n))
        .zip(dy.par_chunks(per_task * n))
        .zip(shift.par_chunks(per_task).zip(rstd.par_chunks(per_task)))
        .map(|(((dx, x), dy), (shift, rstd))| {
            let mut sums = FeatureGrads {
                gamma: vec![E::ZERO; n],
                beta: vec![E::ZERO; n],
            };
            let rows = dx.chunks_exact_mut(n).zip(x.chunks_exact(n));
            for (((dx, x), dy), (&shift, &rstd)) in
                rows.zip(dy.chunks_exact(n)).zip(shift.iter().zip(rstd))
            {
                backward_row(plan, x, dy, gamma, shift, rstd, dx, &mut sums);
            }
            sums
        })
        .collect();
    let mut partials = partials.into_iter();
    let mut total = partials.next().unwrap_or_else(|| FeatureGrads {
        gamma: vec![E::ZERO; n],
        beta: vec![E::ZERO; n],
    });
    for part in partials {
        add_into(&mut total.gamma, &part.gamma);
        add_into(&mut total.beta, &part.beta);
    }
    total
}

fn add_into<E: Real>(total: &mut [E], part: &[E]) {
    for (t, &p) in total.iter_mut().zip(part) {
        *t += p;
    }
}

/// One row: writes its dx and adds its dγ/dβ contributions to `sums`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn backward_row<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    dy: &[E],
    gamma: &[E],
    shift: E,
    rstd: E,
    dx: &mut [E],
    sums: &mut FeatureGrads<E>,
) {
    let pivot = plan.pivot(x);
    let centred = |v: E| (v - pivot) - shift;

    // Pass 1 (the row is now in cache): the row sums A, B and the dγ/dβ contributions.
    let mut a = [E::ZERO; LANES];
    let mut b = [E::ZERO; LANES];
    let split = x.len() - x.len() % LANES;
    let blocks = x[..split]
        .chunks_exact(LANES)
        .zip(dy[..split].chunks_exact(LANES))
        .zip(gamma[..split].chunks_exact(LANES))
        .zip(sums.gamma[..split].chunks_exact_mut(LANES))
        .zip(sums.beta[..split].chunks_exact_mut(LANES));
    for ((((x, dy), gamma), dgamma), dbeta) in blocks {
        for l in 0..LANES {
            let c = centred(x[l]);
            let g = dy[l] * gamma[l];
            a[l] += g;
            b[l] += g * c;
            dgamma[l] += dy[l] * c * rstd;
            dbeta[l] += dy[l];
        }
    }
    let tail = x[split..]
        .iter()
        .zip(&dy[split..])
        .zip(&gamma[split..])
        .zip(&mut sums.gamma[split..])
        .zip(&mut sums.beta[split..]);
    for (l, ((((&x, &dy), &gamma), dgamma), dbeta)) in tail.enumerate() {
        let c = centred(x);
        let g = dy * gamma;
        a[l] += g;
        b[l] += g * c;
        *dgamma += dy * c * rstd;
        *dbeta += dy;
    }
    let (a, b) = (lane_total(a), lane_total(b));

    let variance = if plan.added_to_std {
        // Recomputed rather than saved: the row is in cache, and deriving σ² back from r
        // would cancel catastrophically when ε ≫ σ.
        sum_map(&x[..plan.k], |v| {
            let c = centred(v);
            c * c
        }) * plan.inv_divisor
    } else {
        E::ZERO
    };
    let mean_term = if plan.centered {
        rstd * a * plan.inv_k
    } else {
        E::ZERO
    };
    let variance_term =
        b * plan.rstd_derivative(rstd, variance) * (plan.inv_divisor + plan.inv_divisor);

    // Pass 2: dx.
    let k = plan.k;
    let head = dx[..k]
        .iter_mut()
        .zip(&x[..k])
        .zip(&dy[..k])
        .zip(&gamma[..k]);
    for (((dx, &x), &dy), &gamma) in head {
        *dx = rstd * (dy * gamma) - mean_term + variance_term * centred(x);
    }
    for ((dx, &dy), &gamma) in dx[k..].iter_mut().zip(&dy[k..]).zip(&gamma[k..]) {
        *dx = rstd * (dy * gamma);
    }
}

/// Adds the lanes of a partial sum pairwise.
#[inline(always)]
fn lane_total<E: Real>(lanes: [E; LANES]) -> E {
    sum_map(&lanes, |v| v)
}
