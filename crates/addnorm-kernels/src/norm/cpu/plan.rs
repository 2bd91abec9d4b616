//! [`RowPlan`]: what every row of one fused call shares (the width, the statistics width,
//! the divisor, ε and its placement), and how the rows are split into parallel tasks.
//!
//! # Formula
//! With `p` the row's pivot (its first element when centring, else 0) and `s` the saved
//! shift (the row mean relative to the pivot, 0 for RMSNorm):
//!
//! ```text
//! c_j = (x_j − p) − s                     the centred value (x_j for RMSNorm)
//! σ²  = Σ_{j<k} c_j² / d                   d = RowNormSpec::variance_divisor(k)
//! r   = 1 / √(σ² + ε)                      InsideSqrt
//! r   = 1 / (√(σ² + STD_FLOOR) + ε)        AddedToStd
//! ```

use crate::norm::composite::STD_FLOOR;
use crate::norm::spec::{Centering, EpsilonPlacement, RowNormSpec};

use crate::cpu::parallel;
use crate::cpu::real::{Real, sum_map};

/// How many elements one parallel task of a backward call should at least touch: 256 KiB
/// of f32. It is part of the partition that orders the dγ/dβ sums, so changing it changes
/// their bits for every shape it newly splits; the forward, which has no such sums, takes
/// [`FORWARD_MIN_TASK_ELEMENTS`]. A call with fewer elements than this runs on the calling
/// thread.
///
/// Until PERFORMANCE.md §35 it was 1 MiB of f32, chosen when a hand-off to rayon's pool
/// cost a thread wake-up on each side (about 0.1 ms a call on the 2-core development VM).
/// Since the caller takes part in its parallel calls and helpers linger between them
/// (`crate::cpu::parallel`, §30), a split costs microseconds, and at 1 MiB the d128
/// model's `[2048, 128]` backward ran as one task on one thread: 0.26–0.36 ms on the
/// 2-core Ice Lake Xeon against torch's 0.19–0.24, now 0.18–0.20 in four tasks. The small
/// and demo models' `[544, 64]` and `[544, 32]` stay one task, with their bits.
const MIN_TASK_ELEMENTS: usize = 64 * 1024;

/// How many elements a task of a forward call should at least touch (128 KiB of f32).
/// A forward computes each row alone, so its partition may follow the thread count; since
/// `crate::cpu::parallel` lets the caller start at once, a split costs the caller only the
/// helper's spawn, and a `[2048, 128]` forward (issue 25's d128 model) no longer runs on one
/// thread (PERFORMANCE.md §28).
const FORWARD_MIN_TASK_ELEMENTS: usize = 32 * 1024;

/// How many tasks a large call is split into: a fixed number (four per thread of an
/// 4-core machine), so that the partition, and with it the rounding of the dγ/dβ sums, is
/// the same on every machine; enough that an unlucky thread does not hold up the rest, and
/// few enough that the per-task partial sums stay negligible.
const BALANCE_TASKS: usize = 16;

/// Rows a kernel works through a pass at a time: the statistics (forward) or row sums
/// (backward) of up to this many rows first, then their outputs. A row's outputs wait on
/// its lane trees (and, forward, a square root and a division); with the group's
/// reductions first, the next rows' work overlaps that wait (PERFORMANCE.md §51: the
/// norms 1.25–1.6× faster alone). Each row's operations, and the backward's dγ/dβ sums
/// in row order, are unchanged, so are the bits.
pub const ROW_GROUP: usize = 8;

/// The per-call constants of a row normalization, in the kernel's element type.
#[derive(Clone, Copy, Debug)]
pub struct RowPlan<E> {
    /// Features per row (`n`).
    pub n: usize,
    /// Features the statistics read (`k ≤ n`).
    pub k: usize,
    /// Whether the mean is removed (LayerNorm) or not (RMSNorm).
    pub centered: bool,
    /// `1 / k`.
    pub inv_k: E,
    /// `1 / d`, the reciprocal of the variance divisor.
    pub inv_divisor: E,
    /// ε.
    pub epsilon: E,
    /// Whether ε is added to the standard deviation rather than under the root.
    pub added_to_std: bool,
    /// [`STD_FLOOR`] in this element type (a normal number in f32 too).
    pub std_floor: E,
}

impl<E: Real> RowPlan<E> {
    /// The plan for rows of `n > 0` features under `spec`.
    pub fn new(spec: &RowNormSpec, n: usize) -> Self {
        let k = spec.statistics_width(n);
        Self {
            n,
            k,
            centered: spec.centering == Centering::MeanRemoved,
            inv_k: E::from_f64(1.0 / k as f64),
            inv_divisor: E::from_f64(1.0 / spec.variance_divisor(k) as f64),
            epsilon: E::from_f64(spec.epsilon),
            added_to_std: spec.epsilon_placement == EpsilonPlacement::AddedToStd,
            std_floor: E::from_f64(STD_FLOOR),
        }
    }

    /// The row's pivot `p`: its first element when centring, else 0.
    #[inline(always)]
    pub fn pivot(&self, row: &[E]) -> E {
        if self.centered { row[0] } else { E::ZERO }
    }

    /// The row's `(p, s, σ²)` (see the [module docs](self)): its pivot, its shift (0 for
    /// RMSNorm) and its variance, in two lane-wise passes over the first `k` values while
    /// the row sits in L1/L2. Every row kernel takes its statistics from here.
    #[inline(always)]
    pub fn statistics(&self, row: &[E]) -> (E, E, E) {
        let statistics = &row[..self.k];
        let pivot = self.pivot(row);
        if !self.centered {
            return (
                pivot,
                E::ZERO,
                sum_map(statistics, |v| v * v) * self.inv_divisor,
            );
        }
        let shift = sum_map(statistics, |v| v - pivot) * self.inv_k;
        let sum_sq = sum_map(statistics, |v| {
            let c = (v - pivot) - shift;
            c * c
        });
        (pivot, shift, sum_sq * self.inv_divisor)
    }

    /// The reciprocal denominator `r` for the variance `σ²`.
    #[inline(always)]
    pub fn rstd(&self, variance: E) -> E {
        if self.added_to_std {
            E::ONE / ((variance + self.std_floor).sqrt() + self.epsilon)
        } else {
            E::ONE / (variance + self.epsilon).sqrt()
        }
    }

    /// `dr/dσ²`, from `r` and `σ²`.
    #[inline(always)]
    pub fn rstd_derivative(&self, rstd: E, variance: E) -> E {
        let half = E::from_f64(0.5);
        if self.added_to_std {
            // r = 1/(√(σ²+δ) + ε): dr/dσ² = −r² / (2√(σ²+δ)). δ keeps a constant row finite.
            -(rstd * rstd) * half / (variance + self.std_floor).sqrt()
        } else {
            // r = (σ²+ε)^(−1/2): dr/dσ² = −r³ / 2.
            -(rstd * rstd * rstd) * half
        }
    }
}

/// How many rows each parallel task of a forward call takes, for `rows` rows of `n`
/// features: up to four tasks a thread, each at least 32 Ki elements
/// ([`parallel::elementwise_chunk`] over rows), or `rows` (one task, on the calling
/// thread) for a small call or one thread. Only for kernels that compute each row alone,
/// whose bits no partition changes; a backward, which sums dγ and dβ over the rows, takes
/// [`rows_per_task`].
pub fn forward_rows_per_task(rows: usize, n: usize) -> usize {
    // Rows as the elements of `elementwise_chunk`, which splits over the threads: tasks of
    // at least 32 Ki elements' worth of rows, their row counts a multiple of 64.
    parallel::elementwise_chunk(rows, FORWARD_MIN_TASK_ELEMENTS.div_ceil(n.max(1)))
}

/// How many rows each parallel task takes, for `rows` rows of `n` features. When it is
/// `rows` or more, the drivers run their one task on the calling thread, without rayon.
///
/// It depends on the sizes alone, never on the thread count: the backward sums dγ and dβ
/// per task and then over the tasks in order, so a partition that followed the threads
/// would round differently on a machine with another core count.
pub fn rows_per_task(rows: usize, n: usize) -> usize {
    let by_size = MIN_TASK_ELEMENTS.div_ceil(n.max(1));
    let by_balance = rows.div_ceil(BALANCE_TASKS);
    by_size.max(by_balance).clamp(1, rows.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{inputs, on_threads};

    /// The backward's partition, which orders the dγ/dβ sums, comes from the sizes alone:
    /// four tasks for the d128 model's `[2048, 128]`, one for the small and demo models'
    /// rows, sixteen for a large call, on any thread count.
    #[test]
    fn backward_tasks_come_from_the_sizes_alone() {
        for threads in [1, 2, 16] {
            let per_task = |rows, n| on_threads(threads, || rows_per_task(rows, n));
            assert_eq!(per_task(2048, 128), 512);
            assert_eq!(per_task(544, 64), 544);
            assert_eq!(per_task(544, 32), 544);
            assert_eq!(per_task(40_000, 64), 2500);
        }
    }

    /// A forward's tasks follow the threads, at least [`FORWARD_MIN_TASK_ELEMENTS`] each,
    /// and its bits do not: the d128 model's `[2048, 128]` LayerNorm splits into eight
    /// tasks over 2, 3 and 16 threads (four a thread at most) with the bits of one, while
    /// the demo model's `[544, 32]` stays one task.
    #[test]
    fn forward_tasks_follow_the_threads_with_the_bits_of_one() {
        let per_task = |threads, rows, n| on_threads(threads, || forward_rows_per_task(rows, n));
        assert_eq!(per_task(1, 2048, 128), 2048);
        assert_eq!(per_task(2, 2048, 128), 256);
        assert_eq!(per_task(3, 2048, 128), 256);
        assert_eq!(per_task(16, 2048, 128), 256);
        assert_eq!(per_task(2, 1024, 64), 512);
        assert_eq!(per_task(16, 544, 32), 544);
        let (rows, n) = (2048, 128);
        let x: Vec<f32> = inputs(rows * n, 1e-2, -5.0);
        let gamma: Vec<f32> = (0..n).map(|j| 1.0 + j as f32 * 1e-3).collect();
        let beta = vec![0.25; n];
        let plan = RowPlan::<f32>::new(&RowNormSpec::layer_norm(1e-5), n);
        let run = |threads| {
            on_threads(threads, || {
                let (mut y, mut shift, mut rstd) = (
                    vec![f32::NAN; rows * n],
                    vec![f32::NAN; rows],
                    vec![0.0; rows],
                );
                super::super::forward::forward(
                    &plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd,
                );
                (y, shift, rstd)
            })
        };
        let one = run(1);
        assert!(one.0.iter().all(|y| y.is_finite()), "every row written");
        for threads in [2, 3, 16] {
            assert!(one == run(threads), "{threads} threads differ from one");
        }
    }
}
