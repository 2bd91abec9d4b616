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
//! use addnorm_kernels::cpu::dyt::{backward, forward};
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

use rayon::prelude::*;

use super::plan::rows_per_task;
use super::real::Real;

/// Writes `y = γ·tanh(α·x) + β` for every row of `x`.
///
/// # Panics
/// If `x` and `y` differ in length or are not a multiple of `n`, or γ/β do not hold `n`
/// values.
pub fn forward<E: Real>(n: usize, x: &[E], alpha: E, gamma: &[E], beta: &[E], y: &mut [E]) {
    check_lengths("forward", n, x, y.len(), gamma, beta.len());
    let per_task = rows_per_task(x.len() / n.max(1), n) * n;
    y.par_chunks_mut(per_task)
        .zip(x.par_chunks(per_task))
        .for_each(|(y, x)| {
            for (y, x) in y.chunks_exact_mut(n).zip(x.chunks_exact(n)) {
                for (((y, &x), &g), &b) in y.iter_mut().zip(x).zip(gamma).zip(beta) {
                    *y = g * (alpha * x).tanh() + b;
                }
            }
        });
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
    check_lengths("backward", n, x, dx.len(), gamma, n);
    assert_eq!(
        dy.len(),
        x.len(),
        "fused DyT backward: dy and x differ in length"
    );
    let per_task = rows_per_task(x.len() / n.max(1), n) * n;
    dx.par_chunks_mut(per_task)
        .zip(x.par_chunks(per_task))
        .zip(dy.par_chunks(per_task))
        .map(|((dx, x), dy)| {
            let mut sums = DynamicTanhGrads::zeros(n);
            let rows = dx.chunks_exact_mut(n).zip(x.chunks_exact(n));
            for ((dx, x), dy) in rows.zip(dy.chunks_exact(n)) {
                let mut alpha_sum = E::ZERO;
                let features = dx.iter_mut().zip(x).zip(dy).zip(gamma);
                let per_feature = features.zip(sums.gamma.iter_mut().zip(sums.beta.iter_mut()));
                for ((((dx, &x), &dy), &g), (dgamma, dbeta)) in per_feature {
                    let t = (alpha * x).tanh();
                    let s = dy * g * (E::ONE - t * t);
                    *dx = alpha * s;
                    alpha_sum += s * x;
                    *dgamma += dy * t;
                    *dbeta += dy;
                }
                sums.alpha += alpha_sum;
            }
            sums
        })
        .reduce(|| DynamicTanhGrads::zeros(n), DynamicTanhGrads::add)
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
