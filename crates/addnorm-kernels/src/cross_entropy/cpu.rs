//! The fused CPU cross-entropy kernels on row-major slices: the forward computes each row's
//! log-partition and the masked loss, the backward writes `∂L/∂z` in one pass over the
//! logits, with the rows in fixed-size chunks spread over rayon's threads.
//!
//! # Formula
//! With `lse_r = log Σ_v e^(z_rv)` (around the row's maximum), targets `y_r`, mask weights
//! `m_r`, `M = Σ_r m_r` and z-loss weight `λ ≥ 0`:
//!
//! ```text
//! loss  = ( Σ_r m_r·(lse_r − z_{r,y_r}) + λ·Σ_r m_r·lse_r² ) / M
//! dz_rv = g·m_r/M · ( (1 + 2λ·lse_r)·e^(z_rv − lse_r) − [v = y_r] )
//! ```
//!
//! The loss's sums are taken in f64 whatever the element type: per chunk of rows, then over
//! the chunks in chunk order. The chunks' size comes from the vocabulary alone
//! ([`rows_per_chunk`]), never from the thread count, so every result is bit-identical
//! whatever the number of threads.
//!
//! # Special values
//! - A target outside `[0, vocab)` panics (in every row, masked or not, as Burn's `gather`
//!   does on `NdArray`), before anything is computed.
//! - Non-finite logits propagate: a NaN or `+∞` anywhere in a row makes its `lse` NaN, and
//!   the loss NaN even where the row's mask is 0 (`0·NaN`); a `−∞` target logit makes the
//!   loss `+∞`. A row of only `−∞` has a NaN `lse`, as in the composite.
//! - The backward writes exact zeros, without reading the logits, in a row whose factor
//!   `g·m_r/M` is exactly 0 (a masked-out row): where such a row holds a NaN the loss is
//!   already NaN.
//! - `M = 0` gives a NaN loss (`0/0`) and NaN gradients, as the composite does.
//!
//! # Shapes
//! - `logits`, `dz`: `[rows, vocab]`, row-major, contiguous
//! - `targets`, `mask`, `lse`: `[rows]`
//!
//! # Example
//! ```
//! use addnorm_kernels::cross_entropy::cpu::{CrossEntropyDims, backward, forward};
//!
//! let dims = CrossEntropyDims { rows: 2, vocab: 2 };
//! let logits = [0.0_f64, 0.0, 5.0, -5.0];
//! let mut lse = [0.0; 2];
//! // Only the first row counts: ln 2 for two equal logits.
//! let loss = forward(dims, &logits, &[1, 0], &[1.0, 0.0], 0.0, &mut lse);
//! assert!((loss - 2f64.ln()).abs() < 1e-15);
//!
//! let mut dz = [0.0; 4];
//! backward(dims, &logits, &[1, 0], &[1.0, 0.0], &lse, 0.0, 1.0, &mut dz);
//! assert_eq!(dz, [0.5, -0.5, 0.0, 0.0]); // softmax − one-hot; the masked row is 0
//! ```

use crate::cpu::dispatch::vectorized;
use crate::cpu::parallel::{self, ChunksMut};
use crate::cpu::real::{Real, max_of, sum_map};

/// A chunk of rows holds about this many logits: a few hundred KiB, enough to outweigh the
/// cost of handing a task to rayon's pool, few enough to spread a call over the threads.
const CHUNK_ELEMENTS: usize = 1 << 15;

/// The element types the kernels run in, with the widening to f64 the loss's sums use.
pub trait LossReal: Real {
    /// `self` as f64 (exact for f32 and f64).
    fn to_f64(self) -> f64;
}

impl LossReal for f32 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl LossReal for f64 {
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}

/// The matrix sizes of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CrossEntropyDims {
    /// Positions (rows of the logits).
    pub rows: usize,
    /// Classes (the logits' last dimension).
    pub vocab: usize,
}

impl CrossEntropyDims {
    /// Asserts that the slices of a call fit these sizes and every target is a class.
    fn check<E>(&self, logits: &[E], targets: &[i64], mask: &[E], lse: usize, what: &str) {
        let Self { rows, vocab } = *self;
        assert!(
            logits.len() == rows * vocab
                && targets.len() == rows
                && mask.len() == rows
                && lse == rows,
            "cross-entropy {what}: logits have {} elements, targets {}, mask {}, lse {}; \
             expected {rows}×{vocab} and {rows}",
            logits.len(),
            targets.len(),
            mask.len(),
            lse
        );
        check_targets(targets, vocab);
    }
}

/// How many rows one chunk (one task, one partial sum) holds: from the vocabulary alone,
/// so the loss's summation order never depends on the thread count.
pub fn rows_per_chunk(vocab: usize) -> usize {
    (CHUNK_ELEMENTS / vocab.max(1)).max(1)
}

/// Panics, naming the row, when a target is not in `[0, vocab)`.
fn check_targets(targets: &[i64], vocab: usize) {
    if let Some((row, &target)) = targets
        .iter()
        .enumerate()
        .find(|&(_, &t)| usize::try_from(t).map_or(true, |t| t >= vocab))
    {
        panic!(
            "cross-entropy: target {target} at row {row} is outside the vocabulary [0, {vocab})"
        );
    }
}

/// `M = Σ m_r`, in f64, in row order.
fn mask_total<E: LossReal>(mask: &[E]) -> f64 {
    mask.iter().map(|&m| m.to_f64()).sum()
}

/// `log Σ_v e^(z_v)` around the row's maximum.
#[inline(always)]
fn log_sum_exp<E: Real>(row: &[E]) -> E {
    let max = max_of(row);
    max + sum_map(row, |v| (v - max).exp()).ln()
}

/// Runs `task` on each chunk of `rows_per_chunk` rows with its index and row range, in
/// parallel when there are several chunks and threads (`crate::cpu::parallel`: the calling
/// thread takes part), and returns the results in chunk order.
fn over_chunks<R: Send>(
    dims: CrossEntropyDims,
    task: impl Fn(usize, core::ops::Range<usize>) -> R + Sync + Send,
) -> Vec<R> {
    let size = rows_per_chunk(dims.vocab);
    let chunks = dims.rows.div_ceil(size);
    let range = |c: usize| c * size..((c + 1) * size).min(dims.rows);
    parallel::map(chunks, |c| task(c, range(c)))
}

/// The masked loss (see the [module docs](self)); writes each row's `lse`.
///
/// # Panics
/// If the slice lengths disagree with `dims`, a target is outside `[0, vocab)`, or
/// `z_loss` is negative or not finite.
pub fn forward<E: LossReal>(
    dims: CrossEntropyDims,
    logits: &[E],
    targets: &[i64],
    mask: &[E],
    z_loss: f64,
    lse: &mut [E],
) -> E {
    dims.check(logits, targets, mask, lse.len(), "forward");
    check_z_loss(z_loss);
    let vocab = dims.vocab;
    let lse_chunks = ChunksMut::new(lse, rows_per_chunk(vocab));
    let partials = over_chunks(dims, |c, rows| {
        let lse = lse_chunks.take(c);
        let logits = &logits[rows.start * vocab..rows.end * vocab];
        vectorized(
            #[inline(always)]
            || {
                for (l, row) in lse.iter_mut().zip(logits.chunks_exact(vocab)) {
                    *l = log_sum_exp(row);
                }
            },
        );
        let mut total = 0.0_f64;
        for (((row, &l), &t), &m) in logits
            .chunks_exact(vocab)
            .zip(lse.iter())
            .zip(&targets[rows.clone()])
            .zip(&mask[rows])
        {
            let l = l.to_f64();
            // In range: checked above.
            let mut term = l - row[t as usize].to_f64();
            if z_loss > 0.0 {
                term += z_loss * l * l;
            }
            // Unconditionally, so that a NaN in a masked-out row still reaches the loss.
            total += m.to_f64() * term;
        }
        total
    });
    let total: f64 = partials.into_iter().sum();
    E::from_f64(total / mask_total(mask))
}

/// `dz = ∂L/∂z` of [`forward`]'s loss times the upstream gradient `grad` (see the
/// [module docs](self)), from the `lse` it wrote.
///
/// # Panics
/// If the slice lengths disagree with `dims`, a target is outside `[0, vocab)`, or
/// `z_loss` is negative or not finite.
#[allow(clippy::too_many_arguments)]
pub fn backward<E: LossReal>(
    dims: CrossEntropyDims,
    logits: &[E],
    targets: &[i64],
    mask: &[E],
    lse: &[E],
    z_loss: f64,
    grad: E,
    dz: &mut [E],
) {
    dims.check(logits, targets, mask, lse.len(), "backward");
    assert_eq!(dz.len(), logits.len(), "cross-entropy backward: dz length");
    check_z_loss(z_loss);
    let vocab = dims.vocab;
    let scale = grad.to_f64() / mask_total(mask);
    let dz_chunks = ChunksMut::new(dz, (rows_per_chunk(vocab) * vocab).max(1));
    over_chunks(dims, |c, rows| {
        let dz = dz_chunks.take(c);
        let logits = &logits[rows.start * vocab..rows.end * vocab];
        vectorized(
            #[inline(always)]
            || {
                for ((((dz, row), &l), &t), &m) in dz
                    .chunks_exact_mut(vocab)
                    .zip(logits.chunks_exact(vocab))
                    .zip(&lse[rows.clone()])
                    .zip(&targets[rows.clone()])
                    .zip(&mask[rows.clone()])
                {
                    let s = scale * m.to_f64();
                    if s == 0.0 {
                        dz.fill(E::ZERO);
                        continue;
                    }
                    let softmax_scale = E::from_f64(s * (1.0 + 2.0 * z_loss * l.to_f64()));
                    for (d, &v) in dz.iter_mut().zip(row) {
                        *d = softmax_scale * (v - l).exp();
                    }
                    // In range: checked above.
                    let y = t as usize;
                    dz[y] = dz[y] - E::from_f64(s);
                }
            },
        );
    });
}

/// Panics unless `z_loss` is finite and ≥ 0.
pub(crate) fn check_z_loss(z_loss: f64) {
    assert!(
        z_loss.is_finite() && z_loss >= 0.0,
        "cross-entropy: z_loss must be finite and ≥ 0, got {z_loss}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{inputs, on_threads};

    /// The loss and gradient in plain f64 loops, straight from the formula.
    fn reference(
        dims: CrossEntropyDims,
        logits: &[f64],
        targets: &[i64],
        mask: &[f64],
        z_loss: f64,
        grad: f64,
    ) -> (f64, Vec<f64>) {
        let CrossEntropyDims { rows, vocab } = dims;
        let total_mask: f64 = mask.iter().sum();
        let (mut loss, mut dz) = (0.0, vec![0.0; rows * vocab]);
        for r in 0..rows {
            let row = &logits[r * vocab..(r + 1) * vocab];
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
            let y = targets[r] as usize;
            loss += mask[r] * (lse - row[y] + z_loss * lse * lse);
            for v in 0..vocab {
                let p = (row[v] - lse).exp();
                let one_hot = if v == y { 1.0 } else { 0.0 };
                dz[r * vocab + v] =
                    grad * mask[r] / total_mask * (p - one_hot + 2.0 * z_loss * lse * p);
            }
        }
        (loss / total_mask, dz)
    }

    /// A call's inputs: logits spread over about ±6, targets in range, and a mask with
    /// zeros (every third row) and one fractional weight.
    fn call(dims: CrossEntropyDims) -> (Vec<f64>, Vec<i64>, Vec<f64>) {
        let CrossEntropyDims { rows, vocab } = dims;
        let logits = inputs::<f64>(rows * vocab, 0.012, -6.0);
        let targets = (0..rows).map(|r| ((r * 7919) % vocab) as i64).collect();
        let mut mask: Vec<f64> = (0..rows)
            .map(|r| if r % 3 == 2 { 0.0 } else { 1.0 })
            .collect();
        mask[0] = 0.5;
        (logits, targets, mask)
    }

    fn run<E: LossReal>(
        dims: CrossEntropyDims,
        (logits, targets, mask): (&[E], &[i64], &[E]),
        z_loss: f64,
        grad: E,
    ) -> (E, Vec<E>, Vec<E>) {
        let mut lse = vec![E::ZERO; dims.rows];
        let loss = forward(dims, logits, targets, mask, z_loss, &mut lse);
        let mut dz = vec![E::ZERO; logits.len()];
        backward(dims, logits, targets, mask, &lse, z_loss, grad, &mut dz);
        (loss, lse, dz)
    }

    fn worst(a: impl IntoIterator<Item = f64>, e: &[f64]) -> f64 {
        a.into_iter()
            .zip(e)
            .map(|(a, e)| (a - e).abs())
            .fold(0.0, f64::max)
    }

    /// f64 and f32 kernels against the f64 loops, with the z-loss off and on, for a call in
    /// one chunk and one of several chunks (a short last one).
    #[test]
    fn kernels_match_the_f64_reference() {
        for dims in [
            CrossEntropyDims { rows: 7, vocab: 5 },
            CrossEntropyDims {
                rows: 301,
                vocab: 257,
            },
        ] {
            let (logits, targets, mask) = call(dims);
            for z_loss in [0.0, 1e-2] {
                let (loss_ref, dz_ref) = reference(dims, &logits, &targets, &mask, z_loss, 0.7);
                let (loss, _, dz) = run(dims, (&logits, &targets, &mask), z_loss, 0.7);
                assert!(
                    (loss - loss_ref).abs() < 1e-12,
                    "f64 loss {dims:?} z {z_loss}"
                );
                assert!(worst(dz, &dz_ref) < 1e-15, "f64 dz {dims:?} z {z_loss}");

                let to_f32 = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
                let (l32, m32) = (to_f32(&logits), to_f32(&mask));
                let (loss, _, dz) = run(dims, (&l32, &targets, &m32), z_loss, 0.7_f32);
                let loss_err = (f64::from(loss) - loss_ref).abs();
                assert!(
                    loss_err < 2e-6,
                    "f32 loss {dims:?} z {z_loss}: {loss_err:e}"
                );
                let dz_err = worst(dz.iter().map(|&v| f64::from(v)), &dz_ref);
                assert!(dz_err < 1e-7, "f32 dz {dims:?} z {z_loss}: {dz_err:e}");
            }
        }
    }

    /// Loss, lse and dz are bit-identical on pools of 1, 2 and 3 threads, for a call of
    /// many chunks (f32 and f64).
    #[test]
    fn results_do_not_depend_on_the_thread_count() {
        let dims = CrossEntropyDims {
            rows: 1003,
            vocab: 300,
        };
        assert!(
            dims.rows.div_ceil(rows_per_chunk(dims.vocab)) > 3,
            "many chunks"
        );
        let (logits, targets, mask) = call(dims);
        let l32: Vec<f32> = logits.iter().map(|&v| v as f32).collect();
        let m32: Vec<f32> = mask.iter().map(|&v| v as f32).collect();
        let f64_on =
            |threads| on_threads(threads, || run(dims, (&logits, &targets, &mask), 1e-3, 1.0));
        let f32_on =
            |threads| on_threads(threads, || run(dims, (&l32, &targets, &m32), 1e-3, 1.0_f32));
        let (one64, one32) = (f64_on(1), f32_on(1));
        for threads in [2, 3] {
            assert!(
                one64 == f64_on(threads),
                "f64: {threads} threads differ from one"
            );
            assert!(
                one32 == f32_on(threads),
                "f32: {threads} threads differ from one"
            );
        }
    }

    #[test]
    fn masked_rows_get_exact_zeros_and_nan_reaches_the_loss() {
        let dims = CrossEntropyDims { rows: 2, vocab: 3 };
        let logits = [1.0_f32, 2.0, 3.0, f32::NAN, 0.0, 0.0];
        let (loss, lse, dz) = run(dims, (&logits, &[2, 0], &[1.0, 0.0]), 0.0, 1.0);
        assert!(
            lse[1].is_nan() && loss.is_nan(),
            "NaN in a masked row reaches the loss"
        );
        assert_eq!(&dz[3..], &[0.0; 3]);
        assert!(dz[..3].iter().all(|v| v.is_finite()));

        let infinite = [f32::INFINITY, 0.0, 0.0, f32::NEG_INFINITY];
        let dims = CrossEntropyDims { rows: 1, vocab: 2 };
        let (loss, lse, _) = run(dims, (&infinite[..2], &[1], &[1.0]), 0.0, 1.0);
        assert!(loss.is_nan() && lse[0].is_nan(), "+∞ logit: {loss}");
        let (loss, lse, _) = run(dims, (&infinite[2..], &[1], &[1.0]), 1e-3, 1.0);
        assert_eq!((loss, lse[0]), (f32::INFINITY, 0.0), "−∞ target logit");
    }

    #[test]
    #[should_panic(expected = "target 3 at row 1 is outside the vocabulary [0, 3)")]
    fn a_target_past_the_vocabulary_panics() {
        let dims = CrossEntropyDims { rows: 2, vocab: 3 };
        let mut lse = [0.0; 2];
        forward(dims, &[0.0_f64; 6], &[0, 3], &[1.0, 0.0], 0.0, &mut lse);
    }

    #[test]
    #[should_panic(expected = "target -100 at row 0")]
    fn a_negative_target_panics_even_when_masked() {
        let dims = CrossEntropyDims { rows: 1, vocab: 3 };
        let mut dz = [0.0; 3];
        backward(
            dims,
            &[0.0_f64; 3],
            &[-100],
            &[0.0],
            &[0.0],
            0.0,
            1.0,
            &mut dz,
        );
    }

    #[test]
    #[should_panic(expected = "z_loss must be finite and ≥ 0, got -0.1")]
    fn a_negative_z_loss_panics() {
        let dims = CrossEntropyDims { rows: 1, vocab: 1 };
        forward(dims, &[0.0_f64], &[0], &[1.0], -0.1, &mut [0.0]);
    }
}
