//! The fused backward kernel: dx, dγ and dβ in one visit of each row of `x` and `dy`
//! ([`ROW_GROUP`] rows at a time, their row sums first), rows in parallel, dγ/dβ summed per
//! task and reduced once at the end (no atomics, no second pass over the tensor).
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

use crate::cpu::parallel::{self, ChunksMut, chunk};

use super::plan::{ROW_GROUP, RowPlan, rows_per_task};
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::{LANES, Real, add_into, sum_lanes, sum_map};

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
    assert!(
        dy.len() == dx.len(),
        "fused backward: dy has {} elements, dx {}",
        dy.len(),
        dx.len()
    );
    run(plan, x, Some(dy), gamma, shift, rstd, dx)
}

/// [`backward`] with dx written over dy: `grad` holds ∂L/∂y on entry and ∂L/∂x on return.
/// Each row's dy is read (in cache) before its dx is written, so no extra buffer is needed;
/// the backend uses this when it holds the only reference to the incoming gradient.
///
/// # Panics
/// As [`backward`].
pub fn backward_in_place<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    grad: &mut [E],
    gamma: &[E],
    shift: &[E],
    rstd: &[E],
) -> FeatureGrads<E> {
    run(plan, x, None, gamma, shift, rstd, grad)
}

/// Both entry points: `grad` receives dx; it holds dy already when `dy` is `None`, else
/// each row of `dy` is copied into it first (while the row is being worked on).
fn run<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    dy: Option<&[E]>,
    gamma: &[E],
    shift: &[E],
    rstd: &[E],
    grad: &mut [E],
) -> FeatureGrads<E> {
    let n = plan.n;
    let rows = shift.len();
    assert!(
        x.len() == rows * n && grad.len() == x.len(),
        "fused backward: x has {} elements, dx {}; expected {rows}×{n}",
        x.len(),
        grad.len()
    );
    assert!(
        gamma.len() == n && rstd.len() == rows,
        "fused backward: gamma has {} elements (expected {n}), rstd {} (expected {rows})",
        gamma.len(),
        rstd.len()
    );
    let per_task = rows_per_task(rows, n);
    // One task: its first element is `first` of the whole tensor (for the rows of `dy`).
    let task = |first: usize, grad: &mut [E], x: &[E], shift: &[E], rstd: &[E]| {
        let mut sums = FeatureGrads {
            gamma: vec![E::ZERO; n],
            beta: vec![E::ZERO; n],
        };
        vectorized(
            #[inline(always)]
            || {
                let groups = grad
                    .chunks_mut(ROW_GROUP * n)
                    .zip(x.chunks(ROW_GROUP * n))
                    .zip(shift.chunks(ROW_GROUP).zip(rstd.chunks(ROW_GROUP)));
                for (g, ((grad, x), (shift, rstd))) in groups.enumerate() {
                    if let Some(dy) = dy {
                        let start = first + g * ROW_GROUP * n;
                        grad.copy_from_slice(&dy[start..start + grad.len()]);
                    }
                    backward_rows(plan, x, gamma, (shift, rstd), grad, &mut sums);
                }
            },
        );
        sums
    };
    if per_task >= rows {
        return task(0, grad, x, shift, rstd);
    }
    let grads = ChunksMut::new(grad, per_task * n);
    let partials = parallel::map(grads.count(), |i| {
        let (x, shift, rstd) = (
            chunk(x, per_task * n, i),
            chunk(shift, per_task, i),
            chunk(rstd, per_task, i),
        );
        task(i * per_task * n, grads.take(i), x, shift, rstd)
    });
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

/// Up to [`ROW_GROUP`] rows: `grad` holds their dy on entry and their dx on return; adds
/// their dγ/dβ contributions to `sums` in row order.
#[inline(always)]
fn backward_rows<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    gamma: &[E],
    (shift, rstd): (&[E], &[E]),
    grad: &mut [E],
    sums: &mut FeatureGrads<E>,
) {
    let n = plan.n;
    let mut terms = [(E::ZERO, E::ZERO); ROW_GROUP];
    let rows = grad.chunks_exact(n).zip(x.chunks_exact(n));
    for (r, (dy, x)) in rows.enumerate() {
        terms[r] = row_terms(plan, x, dy, gamma, (shift[r], rstd[r]), sums);
    }
    let rows = grad.chunks_exact_mut(n).zip(x.chunks_exact(n));
    for (r, (grad, x)) in rows.enumerate() {
        row_dx(plan, x, gamma, (shift[r], rstd[r]), terms[r], grad);
    }
}

/// One row's pass 1 (the row is now in cache): the row sums A and B, turned into dx's
/// mean and variance terms, and the row's dγ/dβ contributions added to `sums`.
#[inline(always)]
fn row_terms<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    dy: &[E],
    gamma: &[E],
    (shift, rstd): (E, E),
    sums: &mut FeatureGrads<E>,
) -> (E, E) {
    let pivot = plan.pivot(x);
    let centred = |v: E| (v - pivot) - shift;
    // Each block reads all it needs before it stores dγ and dβ, and A's and B's lanes are
    // new arrays rather than updated in place: with `dgamma[l] += …` among the loads, the
    // compiler could not prove the stores miss `x` and `dy`, and kept A's and B's lanes on
    // the stack, each block waiting on a store and its reload (PERFORMANCE.md §44). The
    // same operations run in the same order on every lane.
    let split = x.len() - x.len() % LANES;
    let blocks = x[..split]
        .chunks_exact(LANES)
        .zip(dy[..split].chunks_exact(LANES))
        .zip(gamma[..split].chunks_exact(LANES))
        .zip(sums.gamma[..split].chunks_exact_mut(LANES))
        .zip(sums.beta[..split].chunks_exact_mut(LANES));
    let (mut a, mut b) = ([E::ZERO; LANES], [E::ZERO; LANES]);
    for ((((x, dy), gamma), dgamma), dbeta) in blocks {
        let c: [E; LANES] = core::array::from_fn(|l| centred(x[l]));
        let g: [E; LANES] = core::array::from_fn(|l| dy[l] * gamma[l]);
        let next_dgamma: [E; LANES] = core::array::from_fn(|l| dgamma[l] + dy[l] * c[l] * rstd);
        let next_dbeta: [E; LANES] = core::array::from_fn(|l| dbeta[l] + dy[l]);
        dgamma.copy_from_slice(&next_dgamma);
        dbeta.copy_from_slice(&next_dbeta);
        a = core::array::from_fn(|l| a[l] + g[l]);
        b = core::array::from_fn(|l| b[l] + g[l] * c[l]);
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
    let (a, b) = (sum_lanes(a), sum_lanes(b));

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
    (mean_term, variance_term)
}

/// One row's pass 2: dx over dy (each dy_j is read before dx_j is written), from the
/// row's `(mean_term, variance_term)`.
#[inline(always)]
fn row_dx<E: Real>(
    plan: &RowPlan<E>,
    x: &[E],
    gamma: &[E],
    (shift, rstd): (E, E),
    (mean_term, variance_term): (E, E),
    grad: &mut [E],
) {
    let pivot = plan.pivot(x);
    let centred = |v: E| (v - pivot) - shift;
    let k = plan.k;
    let (head, tail) = grad.split_at_mut(k);
    for ((g, &x), &gamma) in head.iter_mut().zip(&x[..k]).zip(&gamma[..k]) {
        *g = rstd * (*g * gamma) - mean_term + variance_term * centred(x);
    }
    for (g, &gamma) in tail.iter_mut().zip(&gamma[k..]) {
        *g = rstd * (*g * gamma);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{gradients, inputs, on_threads};
    use crate::norm::spec::RowNormSpec;

    #[test]
    fn in_place_matches_separate_buffers() {
        let (rows, n) = (37, 70);
        let x: Vec<f64> = inputs(rows * n, 1e-2, 0.0);
        let dy: Vec<f64> = gradients(rows * n, 1e-3, 0.0);
        let gamma: Vec<f64> = (0..n).map(|j| 1.0 + j as f64 * 1e-2).collect();
        for spec in [RowNormSpec::layer_norm(1e-5), RowNormSpec::rms_norm(1e-6)] {
            let plan = RowPlan::<f64>::new(&spec, n);
            let (mut y, mut shift, mut rstd) =
                (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows]);
            let beta = vec![0.0; n];
            super::super::forward::forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
            let mut dx = vec![0.0; rows * n];
            let separate = backward(&plan, &x, &dy, &gamma, &shift, &rstd, &mut dx);
            let mut grad = dy.clone();
            let in_place = backward_in_place(&plan, &x, &mut grad, &gamma, &shift, &rstd);
            assert_eq!(grad, dx, "{spec:?}: dx");
            assert_eq!(in_place, separate, "{spec:?}: dγ, dβ");
        }
    }

    #[test]
    fn tasks_in_parallel_match_one_row_at_a_time() {
        // Enough rows for several tasks, each with its own dγ/dβ partial sums.
        let (rows, n) = (1600, 512);
        assert!(
            rows_per_task(rows, n) < rows / 2,
            "the test needs several tasks"
        );
        let x: Vec<f64> = inputs(rows * n, 1e-2, -5.0);
        let dy: Vec<f64> = gradients(rows * n, 1e-3, -0.5);
        let gamma: Vec<f64> = (0..n).map(|j| 1.0 + j as f64 * 1e-3).collect();
        let beta = vec![0.25; n];
        let plan = RowPlan::<f64>::new(&RowNormSpec::layer_norm(1e-5), n);
        let (mut y, mut shift, mut rstd) = (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows]);
        super::super::forward::forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
        let mut dx = vec![0.0; rows * n];
        let grads = backward(&plan, &x, &dy, &gamma, &shift, &rstd, &mut dx);

        let mut expected = FeatureGrads {
            gamma: vec![0.0; n],
            beta: vec![0.0; n],
        };
        for r in 0..rows {
            let row = r * n..(r + 1) * n;
            let (mut y_row, mut s, mut q) = (vec![0.0; n], [0.0], [0.0]);
            let x_row = &x[row.clone()];
            super::super::forward::forward(&plan, x_row, &gamma, &beta, &mut y_row, &mut s, &mut q);
            assert_eq!(
                (y_row.as_slice(), s[0], q[0]),
                (&y[row.clone()], shift[r], rstd[r])
            );
            let mut dx_row = vec![0.0; n];
            let part = backward(&plan, x_row, &dy[row.clone()], &gamma, &s, &q, &mut dx_row);
            assert_eq!(dx_row, &dx[row], "row {r}");
            add_into(&mut expected.gamma, &part.gamma);
            add_into(&mut expected.beta, &part.beta);
        }
        for (name, got, want) in [
            ("dγ", &grads.gamma, &expected.gamma),
            ("dβ", &grads.beta, &expected.beta),
        ] {
            for (j, (g, w)) in got.iter().zip(want.iter()).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-9 * w.abs().max(1.0),
                    "{name}[{j}]: {g} vs {w}"
                );
            }
        }
    }

    /// dx, dγ and dβ are bit-identical on pools of 1, 2, 3 and 5 threads: the tasks, and
    /// so the order of the dγ/dβ sums, come from the sizes alone. (40 000 rows of 64: with
    /// tasks of rows / (4 · threads) rows, as before, 1 and 2 threads would differ.)
    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let (rows, n) = (40_000, 64);
        assert!(rows_per_task(rows, n) < rows / 2, "several tasks");
        let x: Vec<f32> = inputs(rows * n, 1e-2, -5.0);
        let dy: Vec<f32> = gradients(rows * n, 1e-3, -0.5);
        let gamma: Vec<f32> = (0..n).map(|j| 1.0 + j as f32 * 1e-3).collect();
        let plan = RowPlan::<f32>::new(&RowNormSpec::layer_norm(1e-5), n);
        let run = |threads: usize| {
            on_threads(threads, || {
                let (mut y, mut shift, mut rstd) =
                    (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows]);
                let beta = vec![0.25; n];
                super::super::forward::forward(
                    &plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd,
                );
                let mut dx = vec![0.0; rows * n];
                let grads = backward(&plan, &x, &dy, &gamma, &shift, &rstd, &mut dx);
                (y, dx, grads.gamma, grads.beta)
            })
        };
        let one = run(1);
        for threads in [2, 3, 5] {
            assert!(one == run(threads), "{threads} threads differ from one");
        }
    }
}
