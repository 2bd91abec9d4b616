//! The fused Dynamic Tanh kernels (Zhu et al. 2025): the forward in one pass over `x`, and
//! dx, dα, dγ and dβ in one pass over `x` and `dy`, rows in parallel.
//!
//! # Formula
//! ```text
//! t_j  = tanh(α·x_j)                 y_j = γ_j·t_j + β_j
//! s_j  = dy_j·γ_j·(1 − t_j²)         (the gradient reaching α·x_j)
//! dx_j = α·s_j                       dα  = Σ_rows Σ_j s_j·x_j
//! dγ_j = Σ_rows dy_j·t_j             dβ_j = Σ_rows dy_j
//! ```
//!
//! The backward recomputes `t` from `x` rather than saving it: one `tanh` per element costs
//! less than writing and reading back a tensor of the size of `x`. dα and the per-feature
//! sums are accumulated per task and reduced once at the end (no atomics).
//!
//! # Shapes
//! - `x`, `y`, `dy`, `dx`: `[rows, n]`, row-major, contiguous
//! - `alpha`: a scalar; `gamma`, `beta`: `[n]` (a scalar or absent γ/β is expanded by the
//!   caller)
//! - returned dγ, dβ: `[n]` (the caller sums them for a scalar γ/β)
//!
//! # Example
//! ```
//! use addnorm_kernels::norm::cpu::dyt::{backward, forward};
//!
//! let x = [0.0_f64, 1.0];
//! let mut y = [0.0; 2];
//! forward(2, &x, 0.5, &[2.0, 2.0], &[0.0, 1.0], &mut y);
//! assert_eq!(y[0], 0.0);
//! assert!((y[1] - (2.0 * 0.5_f64.tanh() + 1.0)).abs() < 1e-15);
//!
//! let mut dx = [0.0; 2];
//! let grads = backward(2, &x, &[1.0, 1.0], 0.5, &[2.0, 2.0], &mut dx);
//! assert_eq!(dx[0], 0.5 * 2.0); // α·γ·(1 − tanh²(0))
//! assert_eq!(grads.beta, vec![1.0, 1.0]);
//! ```

use crate::cpu::parallel::{self, ChunksMut, chunk};

use super::plan::{forward_rows_per_task, rows_per_task};
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::{Real, sum_map};

/// Writes `y = γ·tanh(α·x) + β` for every row of `x`.
///
/// # Panics
/// If `x` and `y` differ in length or are not a multiple of `n`, or γ/β do not hold `n`
/// values.
pub fn forward<E: Real>(n: usize, x: &[E], alpha: E, gamma: &[E], beta: &[E], y: &mut [E]) {
    check_lengths("forward", n, x, y.len(), gamma, beta.len());
    let task = |y: &mut [E], x: &[E]| {
        vectorized(
            #[inline(always)]
            || {
                for (y, x) in y.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
                    forward_row(x, alpha, gamma, beta, y);
                }
            },
        )
    };
    let per_task = forward_rows_per_task(x.len() / n.max(1), n) * n;
    if per_task >= x.len() {
        return task(y, x);
    }
    let ys = ChunksMut::new(y, per_task);
    parallel::for_each(ys.count(), |i| task(ys.take(i), chunk(x, per_task, i)));
}

/// The parameter gradients of one backward call.
#[derive(Clone, Debug, PartialEq)]
pub struct DynamicTanhGrads<E> {
    /// dα, summed over every element.
    pub alpha: E,
    /// dγ per feature, `[n]`.
    pub gamma: Vec<E>,
    /// dβ per feature, `[n]`.
    pub beta: Vec<E>,
}

impl<E: Real> DynamicTanhGrads<E> {
    fn zeros(n: usize) -> Self {
        Self {
            alpha: E::ZERO,
            gamma: vec![E::ZERO; n],
            beta: vec![E::ZERO; n],
        }
    }

    fn add(mut self, other: Self) -> Self {
        self.alpha += other.alpha;
        for (t, p) in self.gamma.iter_mut().zip(other.gamma) {
            *t += p;
        }
        for (t, p) in self.beta.iter_mut().zip(other.beta) {
            *t += p;
        }
        self
    }
}

/// Writes dx into `dx` and returns dα and the per-feature dγ, dβ.
///
/// # Panics
/// As [`forward`], with `dy` and `dx` in the place of `y`.
pub fn backward<E: Real>(
    n: usize,
    x: &[E],
    dy: &[E],
    alpha: E,
    gamma: &[E],
    dx: &mut [E],
) -> DynamicTanhGrads<E> {
    assert_eq!(
        dy.len(),
        dx.len(),
        "fused DyT backward: dy and dx differ in length"
    );
    run_backward(n, x, Some(dy), alpha, gamma, dx)
}

/// [`backward`] with dx written over dy: `grad` holds ∂L/∂y on entry and ∂L/∂x on return.
///
/// # Panics
/// As [`backward`].
pub fn backward_in_place<E: Real>(
    n: usize,
    x: &[E],
    grad: &mut [E],
    alpha: E,
    gamma: &[E],
) -> DynamicTanhGrads<E> {
    run_backward(n, x, None, alpha, gamma, grad)
}

/// Both entry points: `grad` receives dx; it holds dy already when `dy` is `None`, else
/// each row of `dy` is copied into it first.
fn run_backward<E: Real>(
    n: usize,
    x: &[E],
    dy: Option<&[E]>,
    alpha: E,
    gamma: &[E],
    grad: &mut [E],
) -> DynamicTanhGrads<E> {
    check_lengths("backward", n, x, grad.len(), gamma, n);
    // One task: its first element is `first` of the whole tensor (for the rows of `dy`).
    let task = |first: usize, grad: &mut [E], x: &[E]| {
        let mut sums = DynamicTanhGrads::zeros(n);
        let mut scratch = vec![E::ZERO; n];
        vectorized(
            #[inline(always)]
            || {
                let rows = grad.chunks_exact_mut(n).zip(x.chunks_exact(n));
                for (i, (grad, x)) in rows.enumerate() {
                    if let Some(dy) = dy {
                        let start = first + i * n;
                        grad.copy_from_slice(&dy[start..start + n]);
                    }
                    let row_alpha = backward_row(x, alpha, gamma, grad, &mut sums, &mut scratch);
                    sums.alpha += row_alpha;
                }
            },
        );
        sums
    };
    let per_task = rows_per_task(x.len() / n.max(1), n) * n;
    if per_task >= x.len() {
        return task(0, grad, x);
    }
    // The partial sums are added in task order, whatever thread ran each task.
    let grads = ChunksMut::new(grad, per_task);
    parallel::map(grads.count(), |i| {
        task(i * per_task, grads.take(i), chunk(x, per_task, i))
    })
    .into_iter()
    .fold(DynamicTanhGrads::zeros(n), DynamicTanhGrads::add)
}

/// One row of the forward. Indexed loops over slices of one length, so the compiler
/// vectorizes them (with the vectorizable [`Real::tanh`] of f32).
#[inline(always)]
fn forward_row<E: Real>(x: &[E], alpha: E, gamma: &[E], beta: &[E], y: &mut [E]) {
    let n = y.len();
    let (x, gamma, beta) = (&x[..n], &gamma[..n], &beta[..n]);
    for j in 0..n {
        y[j] = gamma[j] * (alpha * x[j]).tanh() + beta[j];
    }
}

/// One row of the backward: `grad` holds the row's dy on entry and its dx on return; adds
/// to dγ/dβ, and returns the row's `Σ s·x` for dα. `scratch` (a row long) holds the `s·x`
/// terms, so the loop over the row has no running sum and stays vectorizable; [`sum_map`]
/// then adds them in lanes.
#[inline(always)]
fn backward_row<E: Real>(
    x: &[E],
    alpha: E,
    gamma: &[E],
    grad: &mut [E],
    sums: &mut DynamicTanhGrads<E>,
    scratch: &mut [E],
) -> E {
    let n = grad.len();
    let (x, gamma, scratch) = (&x[..n], &gamma[..n], &mut scratch[..n]);
    let (dgamma, dbeta) = (&mut sums.gamma[..n], &mut sums.beta[..n]);
    for j in 0..n {
        let dy = grad[j];
        let t = (alpha * x[j]).tanh();
        let s = dy * gamma[j] * (E::ONE - t * t);
        grad[j] = alpha * s;
        scratch[j] = s * x[j];
        dgamma[j] += dy * t;
        dbeta[j] += dy;
    }
    sum_map(scratch, |v| v)
}

fn check_lengths<E>(what: &str, n: usize, x: &[E], out: usize, gamma: &[E], beta: usize) {
    assert!(
        n > 0 && x.len().is_multiple_of(n) && out == x.len(),
        "fused DyT {what}: x has {} elements and the output {out}; expected a multiple of {n}",
        x.len()
    );
    assert!(
        gamma.len() == n && beta == n,
        "fused DyT {what}: gamma has {} and beta {beta} values, expected {n}",
        gamma.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{gradients, inputs};

    #[test]
    fn in_place_matches_separate_buffers_and_central_differences() {
        let (rows, n) = (9, 37);
        let x: Vec<f64> = inputs(rows * n, 4e-3, -2.0);
        let dy: Vec<f64> = gradients(rows * n, 1e-3, 0.0);
        let gamma: Vec<f64> = (0..n).map(|j| 1.0 + j as f64 * 1e-2).collect();
        let alpha = 0.7;
        let mut dx = vec![0.0; rows * n];
        let separate = backward(n, &x, &dy, alpha, &gamma, &mut dx);
        let mut grad = dy.clone();
        let in_place = backward_in_place(n, &x, &mut grad, alpha, &gamma);
        assert_eq!(grad, dx);
        assert_eq!(in_place, separate);

        // dα against a central difference of L = Σ y·dy.
        let loss = |alpha: f64| {
            let mut y = vec![0.0; rows * n];
            forward(n, &x, alpha, &gamma, &vec![0.0; n], &mut y);
            y.iter().zip(&dy).map(|(y, dy)| y * dy).sum::<f64>()
        };
        let h = 1e-6;
        let numeric = (loss(alpha + h) - loss(alpha - h)) / (2.0 * h);
        assert!((numeric - separate.alpha).abs() < 1e-6 * numeric.abs().max(1.0));
    }

    #[test]
    fn tasks_in_parallel_match_one_row_at_a_time() {
        let (rows, n) = (1600, 512);
        assert!(
            rows_per_task(rows, n) < rows / 2,
            "the test needs several tasks"
        );
        let x: Vec<f64> = inputs(rows * n, 4e-3, -2.0);
        let dy: Vec<f64> = gradients(rows * n, 1e-3, -0.5);
        let gamma: Vec<f64> = (0..n).map(|j| 1.0 + j as f64 * 1e-3).collect();
        let beta = vec![0.25; n];
        let alpha = 0.7;
        let mut y = vec![0.0; rows * n];
        forward(n, &x, alpha, &gamma, &beta, &mut y);
        let mut dx = vec![0.0; rows * n];
        let grads = backward(n, &x, &dy, alpha, &gamma, &mut dx);

        let mut expected = DynamicTanhGrads::zeros(n);
        for r in 0..rows {
            let row = r * n..(r + 1) * n;
            let mut y_row = vec![0.0; n];
            forward(n, &x[row.clone()], alpha, &gamma, &beta, &mut y_row);
            assert_eq!(y_row, &y[row.clone()], "row {r}");
            let mut dx_row = vec![0.0; n];
            let part = backward(
                n,
                &x[row.clone()],
                &dy[row.clone()],
                alpha,
                &gamma,
                &mut dx_row,
            );
            assert_eq!(dx_row, &dx[row], "row {r}");
            expected = expected.add(part);
        }
        let close = |g: f64, w: f64| (g - w).abs() <= 1e-9 * w.abs().max(1.0);
        assert!(close(grads.alpha, expected.alpha), "dα");
        for j in 0..n {
            assert!(close(grads.gamma[j], expected.gamma[j]), "dγ[{j}]");
            assert!(close(grads.beta[j], expected.beta[j]), "dβ[{j}]");
        }
    }
}
