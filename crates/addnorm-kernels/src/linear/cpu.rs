//! The fused CPU linear kernels on row-major slices: the whole `[rows, d_in]` input in one
//! GEMM per task, with the rows split over rayon's threads.
//!
//! Burn 0.21's `linear` on a `[batch, T, d_in]` input runs one GEMM per batch element
//! (`[T, d_in]·[d_in, d_out]`, on one thread in burn-ndarray without its `multi-threads`
//! feature) and its weight gradient as `batch` GEMMs `[d_in, T]·[T, d_out]` summed over a
//! `[batch, d_in, d_out]` intermediate. Here the leading dimensions are rows of one
//! matrix: row blocks of the forward and of dX are GEMMs of their own, one block per
//! thread, and dW is split over the rows (the GEMM's inner dimension), one partial
//! `[d_in, d_out]` sum per block, summed in block order. dW's blocks come from the sizes
//! alone (at most 8), never from the thread count, so every result is bit-identical
//! whatever the thread count. The forward's and dX's blocks share one `W` or `Wᵀ` made
//! ready once per call ([`Gemm::prepare_b`]: on f32, copied into the layout the GEMM reads
//! best), rather than each block's GEMM reading it strided or copying it itself.
//!
//! # Formula
//! ```text
//! forward:   Y = X·W + 1·bᵀ          (forward_onto: Y = R + (X·W + 1·bᵀ))
//! backward:  dX = dY·Wᵀ      dW = Xᵀ·dY      db = Σ_rows dY      (dR = dY)
//! ```
//!
//! # Shapes
//! - `x`, `dx`: `[rows, d_in]`; `w`, `dw`: `[d_in, d_out]`; `b`, `db`: `[d_out]`;
//!   `y`, `dy` and the residual `r`: `[rows, d_out]` (all row-major)

use crate::cpu::aligned::Aligned;
use crate::cpu::dispatch::vectorized;
use crate::cpu::gemm::{Gemm, Strided};
use crate::cpu::memory::{overwritten_output, written_output, zeroed_output};
use crate::cpu::parallel::{self, ChunksMut, SharedBuffer};
use crate::cpu::real::add_into;
use crate::cpu::scratch::Scratch;

/// Below this many multiply-adds a call stays on the calling thread. Since
/// `crate::cpu::parallel` never puts a worker's wake-up on the caller's path, a split call
/// costs the caller only the helper's spawn (microseconds), so the bar is low: 2¹⁸ (it was
/// 2²¹ with rayon's fork-join; lowering it made the `small` training step 5–10% faster,
/// PERFORMANCE.md §8).
const SERIAL_BELOW_FLOPS: usize = 1 << 18;

/// Rows per task are a multiple of this: the height of `matrixmultiply`'s AVX2 f32
/// micro-kernel tile, so no task computes a partial tile it need not. (The direct kernel's
/// tiles are 12 rows on AVX-512 or 6 on AVX2, then 4, 2 and 1; a block's split into them
/// costs nothing extra.)
const ROW_ALIGN: usize = 8;

/// The most row tasks a thread gets in a forward or dX call: with one task a thread, the
/// calling thread, done with its half, waited for the helper's (16–19% of its samples in
/// these calls of the d128/T128 step on the 2-core Ice Lake VM, once helpers came at once);
/// with four it takes another block instead, and waited 7%. The step took 0.96× its time
/// (median of 11 alternated pairs, PERFORMANCE.md §30).
const ROW_TASKS_PER_THREAD: usize = 4;

/// The fewest multiply-adds a row task carries when a call is split into more tasks than
/// threads (2²², a 256-row block of a 128 × 128 projection): smaller tasks made the small
/// and demo models' steps 1.03–1.12× slower.
const ROW_TASK_FLOPS: usize = 1 << 22;

/// The fewest rows of a guided block ([`guided`]) shorter than the call's full ones: four
/// of the direct kernel's 12-row tiles, since every block reads all of the weight for its
/// rows. It matters on many threads, where a quarter of a full block (64 rows for the
/// d128 feed-forward layers on 16 threads) would leave 16.
const GUIDED_MIN_ROWS: usize = 48;

/// The fewest elements of dW a task sums its block partials over (64 KiB of f32).
const PARTIAL_SUM_TASK: usize = 1 << 14;

/// The most row blocks a weight gradient is summed over. A fixed number, not the thread
/// count: dW = Σ_blocks x_blockᵀ·dy_block rounds by its partition, so a partition that
/// followed the threads would give results that change with the thread count.
const REDUCTION_BLOCKS: usize = 8;

/// The matrix sizes of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinearDims {
    /// Rows of `x` (the product of its leading dimensions).
    pub rows: usize,
    /// Input features.
    pub d_in: usize,
    /// Output features.
    pub d_out: usize,
}

impl LinearDims {
    fn flops(&self) -> usize {
        self.rows * self.d_in * self.d_out
    }

    /// The row blocks `(r0, r1)` of a call whose rows are independent (y = x·w + b and
    /// dx), aligned to [`ROW_ALIGN`]: one block when the call is small or rayon has one
    /// thread; else one a thread, or up to [`ROW_TASKS_PER_THREAD`] a thread while each
    /// keeps [`ROW_TASK_FLOPS`], the blocks of that size first and smaller ones
    /// ([`guided`]) for the last quarter of the rows. Each output row is computed whole in
    /// one block, so the partition does not change the result.
    fn row_blocks(&self) -> Vec<(usize, usize)> {
        let threads = rayon::current_num_threads();
        if self.flops() < SERIAL_BELOW_FLOPS || threads == 1 {
            return self.split(1);
        }
        let tasks = (self.flops() / ROW_TASK_FLOPS).clamp(threads, threads * ROW_TASKS_PER_THREAD);
        guided(self.rows, self.rows.div_ceil(tasks), threads)
    }

    /// The row blocks dW and db are summed over: one block when the call is small, else
    /// [`REDUCTION_BLOCKS`], from the sizes alone, whatever the thread count.
    fn reduction_blocks(&self) -> Vec<(usize, usize)> {
        let tasks = if self.flops() < SERIAL_BELOW_FLOPS {
            1
        } else {
            REDUCTION_BLOCKS
        };
        self.split(tasks)
    }

    /// `rows` in about `tasks` blocks aligned to [`ROW_ALIGN`].
    fn split(&self, tasks: usize) -> Vec<(usize, usize)> {
        let per_task = self.rows.div_ceil(tasks.max(1)).next_multiple_of(ROW_ALIGN);
        (0..self.rows)
            .step_by(per_task.max(1))
            .map(|r0| (r0, (r0 + per_task).min(self.rows)))
            .collect()
    }
}

/// `rows` in blocks of `full` rows (aligned to [`ROW_ALIGN`]) until a quarter of them is
/// left, then of `remaining / (2·threads)` rows, down to a quarter of `full` or
/// [`GUIDED_MIN_ROWS`], whichever is more: the tasks are claimed in order, so the last
/// ones, which a thread may finish while the others wait, are the small ones. With equal
/// blocks the calling thread of the d128 model's step waited for the last block of its
/// linear forward and dX calls for 3% of its samples (PERFORMANCE.md §35).
fn guided(rows: usize, full: usize, threads: usize) -> Vec<(usize, usize)> {
    let full = full.next_multiple_of(ROW_ALIGN).max(ROW_ALIGN);
    let smallest = (full / 4)
        .next_multiple_of(ROW_ALIGN)
        .max(GUIDED_MIN_ROWS)
        .min(full);
    let mut blocks = Vec::new();
    let mut r0 = 0;
    while r0 < rows {
        let remaining = rows - r0;
        let size = if 4 * remaining > rows {
            full
        } else {
            remaining
                .div_ceil(2 * threads)
                .next_multiple_of(ROW_ALIGN)
                .clamp(smallest, full)
        };
        let r1 = (r0 + size).min(rows);
        blocks.push((r0, r1));
        r0 = r1;
    }
    blocks
}

/// A read-only row-major matrix as a strided view (never written through).
fn reading<E>(values: &[E], width: usize, r0: usize) -> Strided<E> {
    Strided::rows(values[r0 * width..].as_ptr().cast_mut(), width)
}

/// Runs `task` on each row block, in parallel when there are several.
fn for_blocks(blocks: &[(usize, usize)], task: impl Fn(usize, usize) + Sync + Send) {
    parallel::for_each(blocks.len(), |i| task(blocks[i].0, blocks[i].1));
}

/// `y = x·w + b` into a new `[rows, d_out]` buffer.
///
/// # Panics
/// If the slices' lengths disagree with `dims`.
pub fn forward<E: Gemm>(dims: LinearDims, x: &[E], w: &[E], b: Option<&[E]>) -> Aligned<E> {
    forward_into(dims, x, w, b, None)
}

/// `y = r + (x·w + b)` into a new `[rows, d_out]` buffer: a linear layer's output added to
/// the residual `r` (`[rows, d_out]`) in the same pass, with the bits of
/// [`forward`] followed by an element-wise `r + y`.
///
/// # Panics
/// If the slices' lengths disagree with `dims`.
pub fn forward_onto<E: Gemm>(
    dims: LinearDims,
    x: &[E],
    w: &[E],
    b: Option<&[E]>,
    r: &[E],
) -> Aligned<E> {
    assert_eq!(
        r.len(),
        dims.rows * dims.d_out,
        "linear forward: residual length"
    );
    forward_into(dims, x, w, b, Some(r))
}

/// [`forward`], then `r + y` row block by row block while the block is in cache.
fn forward_into<E: Gemm>(
    dims: LinearDims,
    x: &[E],
    w: &[E],
    b: Option<&[E]>,
    r: Option<&[E]>,
) -> Aligned<E> {
    let LinearDims { rows, d_in, d_out } = dims;
    assert!(
        x.len() == rows * d_in && w.len() == d_in * d_out,
        "linear forward: lengths"
    );
    if let Some(b) = b {
        assert_eq!(b.len(), d_out, "linear forward: bias length");
    }
    // SAFETY: w is live and unwritten for this call.
    let w = unsafe { E::prepare_b(reading(w, d_out, 0), [d_in, d_out]) };
    let fill = |y: *mut E| {
        // SAFETY: `written_output` hands over rows · d_out elements for the call.
        let out = unsafe { SharedBuffer::from_raw(y, rows * d_out) };
        for_blocks(&dims.row_blocks(), |r0, r1| {
            let dims = [r1 - r0, d_in, d_out];
            let bias = b.map(<[E]>::as_ptr);
            let y = out.rows(r0 * d_out, d_out);
            // SAFETY: x, w and b are live and read only; each task writes all of its own
            // rows of y (nothing is read; the bias is joined in place of C).
            unsafe { E::gemm_prepared(dims, E::ONE, reading(x, d_in, r0), &w, bias, y) }
            if let Some(r) = r {
                let span = r0 * d_out..r1 * d_out;
                // SAFETY: rows r0..r1 of y, written above by this task alone.
                let y = unsafe { out.slice_mut(span.start, span.len()) };
                add_into(y, &r[span]);
            }
        });
    };
    // SAFETY: the row blocks cover every row, and the GEMM writes every column of each.
    unsafe { written_output(rows * d_out, fill) }
}

/// `dx = dy·wᵀ`, `[rows, d_in]`.
///
/// # Panics
/// If the slices' lengths disagree with `dims`.
pub fn backward_input<E: Gemm>(dims: LinearDims, dy: &[E], w: &[E]) -> Aligned<E> {
    let LinearDims { rows, d_in, d_out } = dims;
    assert!(
        dy.len() == rows * d_out && w.len() == d_in * d_out,
        "linear dx: lengths"
    );
    // SAFETY: wᵀ's elements are w's, live and unwritten for this call.
    let wt = unsafe { E::prepare_b(reading(w, d_out, 0).t(), [d_out, d_in]) };
    let fill = |dx: *mut E| {
        // SAFETY: `written_output` hands over rows · d_in elements for the call.
        let out = unsafe { SharedBuffer::from_raw(dx, rows * d_in) };
        for_blocks(&dims.row_blocks(), |r0, r1| {
            // SAFETY: dy and wᵀ are read only; each task writes all of its own rows of dx
            // (nothing is read).
            unsafe {
                E::gemm_prepared(
                    [r1 - r0, d_out, d_in],
                    E::ONE,
                    reading(dy, d_out, r0),
                    &wt,
                    None,
                    out.rows(r0 * d_in, d_in),
                );
            }
        });
    };
    // SAFETY: the row blocks cover every row, and the GEMM writes every column of each.
    unsafe { written_output(rows * d_in, fill) }
}

/// `(dw, db)`: `dw = xᵀ·dy` (`[d_in, d_out]`) and, when `bias`, `db = Σ_rows dy`.
///
/// # Panics
/// If the slices' lengths disagree with `dims`.
pub fn backward_parameters<E: Gemm>(
    dims: LinearDims,
    x: &[E],
    dy: &[E],
    bias: bool,
) -> (Aligned<E>, Option<Vec<E>>) {
    let LinearDims { rows, d_in, d_out } = dims;
    assert!(
        x.len() == rows * d_in && dy.len() == rows * d_out,
        "linear dw: lengths"
    );
    // Block 0's product goes straight into dW; the others into pooled scratch buffers,
    // added to it in block order.
    let partial = |(r0, r1): (usize, usize), dw: &mut [E]| {
        if r1 > r0 {
            // SAFETY: x and dy are read only; dw is this task's own buffer; with β = 0 the
            // GEMM overwrites it without reading it.
            unsafe {
                E::gemm(
                    [d_in, r1 - r0, d_out],
                    E::ONE,
                    reading(x, d_in, r0).t(),
                    reading(dy, d_out, r0),
                    E::ZERO,
                    Strided::rows(dw.as_mut_ptr(), d_out),
                );
            }
        }
        bias.then(|| column_sums(&dy[r0 * d_out..r1 * d_out], d_out))
    };
    let blocks = dims.reduction_blocks();
    // Block 0's product (β = 0) writes all of dW; only without rows is there none.
    let mut dw = if blocks.first().is_some_and(|&(r0, r1)| r1 > r0) {
        overwritten_output::<E>(d_in * d_out)
    } else {
        zeroed_output::<E>(d_in * d_out)
    };
    let mut scratch: Vec<Scratch<E>> = (1..blocks.len())
        .map(|_| Scratch::take(d_in * d_out))
        .collect();
    let db = {
        let mut targets: Vec<&mut [E]> = std::iter::once(&mut dw[..])
            .chain(scratch.iter_mut().map(|s| &mut s[..]))
            .collect();
        let targets = ChunksMut::new(&mut targets, 1);
        let sums = parallel::map(blocks.len(), |i| partial(blocks[i], targets.take(i)[0]));
        let mut sums = sums.into_iter();
        let first = sums.next().flatten();
        sums.fold(first, |total, part| {
            total.zip(part).map(|(mut total, part)| {
                add_into(&mut total, &part);
                total
            })
        })
    };
    let parts: Vec<&[E]> = scratch.iter().map(|part| &part[..]).collect();
    parallel::add_in_chunks(&mut dw, &parts, PARTIAL_SUM_TASK);
    (dw, db)
}

/// `Σ_rows m[row, ·]` of a row-major `[rows, width]` slice: each column summed over the
/// rows in order (the bits of adding the rows one by one), in one vectorized loop over all
/// rows rather than a dispatched call per row.
fn column_sums<E: Gemm>(m: &[E], width: usize) -> Vec<E> {
    let mut sums = vec![E::ZERO; width];
    vectorized(
        #[inline(always)]
        || {
            for row in m.chunks_exact(width) {
                for (sum, &v) in sums.iter_mut().zip(row) {
                    *sum += v;
                }
            }
        },
    );
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{gradients, inputs, on_threads};

    /// Plain triple loops in f64, the reference.
    fn reference(dims: LinearDims, x: &[f64], w: &[f64], b: &[f64], dy: &[f64]) -> [Vec<f64>; 4] {
        let LinearDims { rows, d_in, d_out } = dims;
        let mut y = vec![0.0; rows * d_out];
        let mut dx = vec![0.0; rows * d_in];
        let mut dw = vec![0.0; d_in * d_out];
        let mut db = vec![0.0; d_out];
        for r in 0..rows {
            for o in 0..d_out {
                y[r * d_out + o] = b[o]
                    + (0..d_in)
                        .map(|i| x[r * d_in + i] * w[i * d_out + o])
                        .sum::<f64>();
                db[o] += dy[r * d_out + o];
                for i in 0..d_in {
                    dx[r * d_in + i] += dy[r * d_out + o] * w[i * d_out + o];
                    dw[i * d_out + o] += x[r * d_in + i] * dy[r * d_out + o];
                }
            }
        }
        [y, dx, dw, db]
    }

    fn values(len: usize, seed: usize) -> Vec<f64> {
        (0..len)
            .map(|i| ((i * 7919 + seed * 104_729) % 1013) as f64 / 506.5 - 1.0)
            .collect()
    }

    /// Every kernel against the triple loops, for a call small enough to run serially and
    /// one split into row blocks (with a short last block).
    #[test]
    fn kernels_match_triple_loops() {
        for dims in [
            LinearDims {
                rows: 5,
                d_in: 3,
                d_out: 4,
            },
            LinearDims {
                rows: 1001,
                d_in: 64,
                d_out: 48,
            },
        ] {
            let LinearDims { rows, d_in, d_out } = dims;
            let (x, w, b, dy) = (
                values(rows * d_in, 1),
                values(d_in * d_out, 2),
                values(d_out, 3),
                values(rows * d_out, 4),
            );
            let [y_ref, dx_ref, dw_ref, db_ref] = reference(dims, &x, &w, &b, &dy);
            let close = |what: &str, a: &[f64], e: &[f64]| {
                let err = a
                    .iter()
                    .zip(e)
                    .map(|(a, e)| (a - e).abs())
                    .fold(0.0, f64::max);
                assert!(err < 1e-9, "{what} {dims:?}: {err:e}");
            };
            close("y", &forward(dims, &x, &w, Some(&b)), &y_ref);
            let y_no_bias: Vec<f64> = y_ref
                .chunks(d_out)
                .flat_map(|row| row.iter().zip(&b).map(|(y, b)| y - b))
                .collect();
            close("y without bias", &forward(dims, &x, &w, None), &y_no_bias);
            let r = values(rows * d_out, 5);
            let y_onto: Vec<f64> = y_ref.iter().zip(&r).map(|(y, r)| r + y).collect();
            close(
                "y onto r",
                &forward_onto(dims, &x, &w, Some(&b), &r),
                &y_onto,
            );
            close("dx", &backward_input(dims, &dy, &w), &dx_ref);
            let (dw, db) = backward_parameters(dims, &x, &dy, true);
            close("dw", &dw, &dw_ref);
            close("db", &db.expect("db"), &db_ref);
            assert!(backward_parameters(dims, &x, &dy, false).1.is_none());
        }
    }

    /// The d128 model's forward and dX calls (2048 rows, blocks of 256 on two threads)
    /// end in smaller blocks; a call whose blocks are a quarter of its rows or more (the
    /// small models' 544 rows in two) keeps equal ones.
    #[test]
    fn guided_blocks_end_small() {
        let sizes = |rows, full, threads| -> Vec<usize> {
            guided(rows, full, threads)
                .iter()
                .map(|(r0, r1)| r1 - r0)
                .collect()
        };
        assert_eq!(
            sizes(2048, 256, 2),
            [256, 256, 256, 256, 256, 256, 128, 96, 72, 64, 64, 64, 24]
        );
        assert_eq!(sizes(2048, 256, 16)[6..], [64; 8]);
        // 16 threads, feed-forward layers (blocks of 64): the tail keeps 48 rows a block.
        assert_eq!(
            sizes(2048, 64, 16)[24..],
            [48, 48, 48, 48, 48, 48, 48, 48, 48, 48, 32]
        );
        assert!(sizes(100, 8, 16).iter().all(|&rows| rows == 8 || rows == 4));
        assert_eq!(sizes(544, 272, 2), [272, 272]);
        assert_eq!(sizes(1001, 501, 2), [504, 497]);
    }

    #[test]
    fn large_calls_are_split_into_aligned_row_blocks() {
        let dims = LinearDims {
            rows: 1001,
            d_in: 64,
            d_out: 48,
        };
        let blocks = dims.row_blocks();
        assert_eq!(blocks.first().map(|b| b.0), Some(0));
        assert_eq!(blocks.last().map(|b| b.1), Some(1001));
        assert!(
            blocks
                .windows(2)
                .all(|w| w[0].1 == w[1].0 && w[0].1 % ROW_ALIGN == 0)
        );
        let threads = rayon::current_num_threads();
        assert!(threads == 1 || blocks.len() > 1, "{blocks:?}");
        let first = blocks[0].1 - blocks[0].0;
        assert!(blocks.iter().all(|(r0, r1)| r1 - r0 <= first), "{blocks:?}");
        let small = LinearDims {
            rows: 17,
            d_in: 8,
            d_out: 8,
        };
        assert_eq!(small.row_blocks(), vec![(0, 17)]);
        assert_eq!(small.reduction_blocks(), vec![(0, 17)]);
        // dW's blocks: 1001 rows in at most 8 aligned blocks of 128, whatever the threads.
        let reduction = dims.reduction_blocks();
        assert_eq!(reduction.len(), 8);
        assert_eq!(reduction[0], (0, 128));
        assert_eq!(reduction[7], (896, 1001));
    }

    /// A dW large enough that its block sums are split into column chunks over the
    /// threads has the same bits on 1, 2 and 3 threads.
    #[test]
    fn large_weight_gradients_sum_their_blocks_alike_on_any_threads() {
        let dims = LinearDims {
            rows: 1001,
            d_in: 256,
            d_out: 160,
        };
        assert!(
            dims.d_in * dims.d_out >= 2 * PARTIAL_SUM_TASK,
            "split into chunks"
        );
        let x = inputs::<f32>(dims.rows * dims.d_in, 1e-3, -0.5);
        let dy = gradients::<f32>(dims.rows * dims.d_out, 2e-3, -1.0);
        let run = |threads| on_threads(threads, || backward_parameters(dims, &x, &dy, true));
        let one = run(1);
        for threads in [2, 3] {
            assert!(one == run(threads), "{threads} threads differ from one");
        }
    }

    /// Every output is bit-identical on pools of 1, 2, 3 and 5 threads (dW and db too,
    /// which are sums over the rows), and `forward_onto` gives the bits of `r + y` on each.
    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let dims = LinearDims {
            rows: 1001,
            d_in: 64,
            d_out: 48,
        };
        assert!(dims.flops() >= SERIAL_BELOW_FLOPS, "large enough to split");
        let (x, w) = (
            inputs::<f32>(1001 * 64, 1e-3, -0.5),
            gradients::<f32>(64 * 48, 1e-3, -0.4),
        );
        let (b, dy) = (
            inputs::<f32>(48, 2e-3, 0.1),
            gradients::<f32>(1001 * 48, 2e-3, -1.0),
        );
        let r = inputs::<f32>(1001 * 48, 1e-3, -0.3);
        let run = |threads: usize| {
            on_threads(threads, || {
                let (dw, db) = backward_parameters(dims, &x, &dy, true);
                let y = forward(dims, &x, &w, Some(&b));
                let summed: Vec<f32> = r.iter().zip(&y).map(|(r, y)| r + y).collect();
                assert!(
                    forward_onto(dims, &x, &w, Some(&b), &r) == summed,
                    "forward_onto has the bits of r + y"
                );
                (y, backward_input(dims, &dy, &w), dw, db.expect("db"))
            })
        };
        let one = run(1);
        for threads in [2, 3, 5] {
            assert!(one == run(threads), "{threads} threads differ from one");
        }
    }

    /// dW is written whole by its first block's product: from a pooled buffer full of NaNs
    /// (the output pool hands out reused buffers as their last output left them), it gets
    /// the bits it gets from a fresh one; with no rows it is zeros.
    #[cfg(feature = "ndarray")]
    #[test]
    fn dw_is_written_whole_over_a_stale_buffer() {
        // Sizes of their own, so that no other test takes the poisoned buffer.
        // 131 × 173 f32 are 90 KB, above the pool's 64 KiB floor.
        let dims = LinearDims {
            rows: 300,
            d_in: 131,
            d_out: 173,
        };
        let x: Vec<f32> = inputs(dims.rows * dims.d_in, 0.013, -1.7);
        let dy: Vec<f32> = gradients(dims.rows * dims.d_out, 0.021, -2.3);
        let poisoned = crate::cpu::test_values::poison_output_pool(dims.d_in * dims.d_out);
        let (stale, _) = backward_parameters(dims, &x, &dy, false);
        assert_eq!(stale.as_ptr(), poisoned, "the stale buffer was not taken");
        let (fresh, _) = backward_parameters(dims, &x, &dy, false);
        assert!(stale.iter().all(|v| v.is_finite()));
        assert_eq!(stale, fresh);
        let empty = LinearDims { rows: 0, ..dims };
        let (zeros, _) = backward_parameters::<f32>(empty, &[], &[], false);
        assert!(zeros.iter().all(|&v| v == 0.0) && zeros.len() == 131 * 173);
    }
}
