//! The fused attention forward on slices: `O = softmax(scale·Q·Kᵀ + mask)·V` per head,
//! the per-row log-sum-exp, and the largest logit.
//!
//! # Formula
//! Per query block (rows `i0..i1`) of head `h` of batch element `b`, keys `0..n_k`:
//!
//! ```text
//! S = scale·Q_b·Kᵀ                    [rows, n_k], one GEMM per row part
//! S ← c·tanh(S/c)                     with a soft cap c
//! m_i = max_{j visible} S_ij          P_ij = exp(S_ij − m_i) (0 where masked)
//! l_i = Σ_j P_ij    lse_i = m_i + log l_i    P ← P / l
//! O_b = P·V                           one GEMM per row part, into O's rows i0..i1, columns
//!                                     of head h
//! max_logit = max_i m_i
//! ```
//!
//! The block's scores live in a scratch matrix whose rows are
//! [`padded_row`](super::padded_row)`(n_k)` apart; the softmax runs over whole padded rows
//! (the padding and the masked keys set to 0 before the sum, which they leave unchanged),
//! so each element's bits are those of a loop over the visible keys alone.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`

use super::{
    Cut, Gemm, LANES, QUERY_BLOCK, SharedBuffer, Strided, larger, max_of_visible, query_blocks,
    run_tasks, vector_extent,
};
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cpu::aligned::Aligned;
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::sum_lanes;
use crate::cpu::reused::Reused;

/// One query block of one head: `(b·heads + h, i0, i1)`.
type Task = (usize, usize, usize);

/// What every task of one call reads and writes.
struct Call<'a, E> {
    layout: HeadLayout,
    scale: E,
    causal: bool,
    cap: Option<E>,
    q: &'a [E],
    k: &'a [E],
    v: &'a [E],
    output: SharedBuffer<E>,
    lse: SharedBuffer<E>,
    /// The scratch's row stride and the causal blocks' parts.
    cut: Cut,
}

/// Writes `output` and `lse` and returns the largest logit.
///
/// # Panics
/// If a slice's length does not match `layout`.
pub fn forward<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    qkv: [&[E]; 3],
    output: &mut [E],
    lse: &mut [E],
) -> E {
    forward_with(layout, spec, qkv, output, lse, Cut::KERNELS)
}

/// [`forward`] cut as `cut` says (the kernels: [`Cut::KERNELS`]).
pub(crate) fn forward_with<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    [q, k, v]: [&[E]; 3],
    output: &mut [E],
    lse: &mut [E],
    cut: Cut,
) -> E {
    for (name, len) in [("q", q.len()), ("k", k.len()), ("v", v.len())] {
        assert_eq!(
            len,
            layout.len(),
            "attention forward: {name} for {layout:?}"
        );
    }
    assert_eq!(output.len(), layout.len(), "attention forward: output");
    assert_eq!(lse.len(), layout.batch * layout.heads * layout.seq, "lse");
    let call = Call {
        layout,
        scale: E::from_f64(spec.scale),
        causal: spec.causal,
        cap: spec.softcap.map(E::from_f64),
        q,
        k,
        v,
        output: SharedBuffer::new(output),
        lse: SharedBuffer::new(lse),
        cut,
    };
    let tasks: Vec<Task> = (0..layout.batch * layout.heads)
        .flat_map(|bh| query_blocks(layout.seq).map(move |(i0, i1)| (bh, i0, i1)))
        .collect();
    let keys = if spec.causal {
        layout.seq / 2 + 1
    } else {
        layout.seq
    };
    let flops = 2 * QUERY_BLOCK.min(layout.seq) * keys * layout.d_head;
    let lowest = E::from_f64(f64::NEG_INFINITY);
    run_tasks(
        &tasks,
        flops,
        Reused::<Scratch<E>>::take,
        |scratch, &task| call.block(scratch, task),
        lowest,
        larger,
    )
}

/// A task's scratch, reused over its query blocks, and over calls through the pool of
/// [`Reused`] values: the block's scores, then its probabilities
/// (`[rows, padded_row(n_k)]`), and `Kᵀ` in contiguous rows, each starting on a 64-byte
/// line.
struct Scratch<E> {
    scores: Aligned<E>,
    k_t: Aligned<E>,
}

impl<E> Default for Scratch<E> {
    fn default() -> Self {
        Self {
            scores: Aligned::default(),
            k_t: Aligned::default(),
        }
    }
}

/// Gives `count` scratch values back to the pool with `len` NaNs in each buffer, as a
/// call on larger shapes could leave them (the tests' stale scratch).
#[cfg(test)]
pub(super) fn pool_stale_scratch(count: usize, len: usize) {
    crate::cpu::reused::pool_spoiled(count, |scratch: &mut Scratch<f32>| {
        for buffer in [&mut scratch.scores, &mut scratch.k_t] {
            buffer.resize(len);
            buffer.fill(f32::NAN);
        }
    });
}

impl<E: Gemm> Call<'_, E> {
    /// Runs one query block; returns its largest logit.
    fn block(&self, scratch: &mut Scratch<E>, (bh, i0, i1): Task) -> E {
        let layout = self.layout;
        let (b, h) = (bh / layout.heads, bh % layout.heads);
        let (head, keys) = (
            layout.offset(b, h),
            layout.visible_keys(i1 - 1, self.causal),
        );
        let stride = (self.cut.row_stride)(keys);
        // Each row part's GEMM writes its key columns (β = 0: it reads none); what lies
        // past them keeps what the last block left, which the softmax overwrites before
        // anything reads it. So no zeroing pass.
        scratch.scores.resize((i1 - i0) * stride);
        let k = SharedBuffer::reading(self.k).rows(head, layout.d_model());
        // SAFETY: k's head h holds `keys` rows of d_head; the copy is this task's own.
        let k_t = unsafe { E::contiguous_b(k.t(), [layout.d_head, keys], &mut scratch.k_t) };
        let scores = Strided::rows(scratch.scores.as_mut_ptr(), stride);
        let parts = || self.cut.parts.rows(self.causal, (i0, i1), keys);
        self.scores(head + i0 * layout.d_model(), k_t, scores, parts());
        // SAFETY: lse[bh, i0..i1] belongs to this task alone.
        let lse = unsafe { self.lse.slice_mut(bh * layout.seq + i0, i1 - i0) };
        let max_logit = vectorized(
            #[inline(always)]
            || {
                softmax_rows(&mut scratch.scores, stride, i0, lse, self.cap, |i| {
                    layout.visible_keys(i, self.causal)
                })
            },
        );
        self.outputs((head, i0), scores, parts());
        max_logit
    }

    /// `S = scale·Q_b·Kᵀ` into `scores`, part by part (`first`: the offset of the block's
    /// first query row of this head).
    fn scores(
        &self,
        first: usize,
        k_t: Strided<E>,
        scores: Strided<E>,
        parts: impl Iterator<Item = (usize, usize, usize)>,
    ) {
        let (dm, q) = (self.layout.d_model(), SharedBuffer::reading(self.q));
        for (r0, r1, n_k) in parts {
            // SAFETY: q and Kᵀ are read only; `scores` is this task's own buffer of
            // rows × stride.
            unsafe {
                E::gemm(
                    [r1 - r0, self.layout.d_head, n_k],
                    self.scale,
                    q.rows(first + r0 * dm, dm),
                    k_t,
                    E::ZERO,
                    scores.from(r0, 0),
                );
            }
        }
    }

    /// `O_b = P·V` from the probabilities in `scores`, part by part, into the output rows
    /// of the block that starts at row `i0` of the head at offset `head`.
    fn outputs(
        &self,
        (head, i0): (usize, usize),
        scores: Strided<E>,
        parts: impl Iterator<Item = (usize, usize, usize)>,
    ) {
        let (dm, v) = (self.layout.d_model(), SharedBuffer::reading(self.v));
        for (r0, r1, n_k) in parts {
            // SAFETY: v is read only; the output rows i0 + r0..i0 + r1 of head h (columns
            // h·d_head..(h+1)·d_head) are written by this task alone.
            unsafe {
                E::gemm(
                    [r1 - r0, n_k, self.layout.d_head],
                    E::ONE,
                    scores.from(r0, 0),
                    v.rows(head, dm),
                    E::ZERO,
                    self.output.rows(head + (i0 + r0) * dm, dm),
                );
            }
        }
    }
}

/// Turns each row of logits `scores: [rows, stride]` (row `r` is query `i0 + r`; its
/// first `visible(i)` elements are the keys it sees, the rest masked keys and padding)
/// into probabilities over the visible keys (the rest set to 0), the logits first capped
/// at `cap` when given, writes the rows' log-sum-exp, and returns the largest (capped)
/// logit.
///
/// The exponentials and the scaling run over the visible keys rounded up to whole
/// vectors ([`vector_extent`]), and the sum over the whole row with its masked elements
/// already 0: [`sum_map`](crate::cpu::real::sum_map) adds element `j` into lane
/// `j mod 16` in order of `j`, and adding `+0` changes no partial sum, so every bit is
/// that of a loop over the visible keys alone.
///
/// The rows go through three passes (the block's maxima, then its exponentials and sums,
/// then its probabilities) rather than one row at a time: a row's exponentials wait on its
/// maximum's lane tree, and its scaling on its sum's tree and a division, and with one row
/// at a time nothing else was ready to run meanwhile. Each row's operations are the same;
/// the d128 model's forward took 0.93× the time (PERFORMANCE.md §51).
#[inline(always)]
fn softmax_rows<E: Gemm>(
    scores: &mut [E],
    stride: usize,
    i0: usize,
    lse: &mut [E],
    cap: Option<E>,
    visible: impl Fn(usize) -> usize,
) -> E {
    let rows = scores.len() / stride;
    debug_assert!(rows <= QUERY_BLOCK && lse.len() == rows);
    let (mut maxima, mut sums) = ([E::ZERO; QUERY_BLOCK], [E::ZERO; QUERY_BLOCK]);
    // Pass 1: each row's largest visible logit.
    for (r, row) in scores.chunks_exact_mut(stride).enumerate() {
        let seen = visible(i0 + r);
        if let Some(c) = cap {
            soft_cap(&mut row[..seen], c);
        }
        maxima[r] = max_of_visible(row, seen);
    }
    // Pass 2: the exponentials, the masked keys set to 0, and the row sums.
    for (r, row) in scores.chunks_exact_mut(stride).enumerate() {
        let seen = visible(i0 + r);
        sums[r] = exp_sum(row, seen, maxima[r]);
    }
    // Pass 3: the probabilities and the log-sum-exp.
    let mut max_logit = E::from_f64(f64::NEG_INFINITY);
    for (r, (row, lse)) in scores.chunks_exact_mut(stride).zip(lse).enumerate() {
        let (m, l) = (maxima[r], sums[r]);
        let seen = visible(i0 + r);
        let whole = vector_extent(seen, row.len());
        let inv = E::ONE / l;
        for p in row[..whole].iter_mut() {
            *p = *p * inv;
        }
        if !inv.is_finite() {
            // 0·inv is not 0 here; the masked keys stay 0 as documented.
            row[seen..].fill(E::ZERO);
        }
        *lse = m + l.ln();
        max_logit = larger(max_logit, m);
    }
    max_logit
}

/// `row[j] ← exp(row[j] − m)` for the `seen` visible keys, 0 for the rest of the row;
/// returns the row's sum with the bits of [`sum_map`](crate::cpu::real::sum_map) over the
/// whole row: each whole vector's values are added to the lanes as they are written, the
/// masked ones as 0.
#[inline(always)]
pub(super) fn exp_sum<E: Gemm>(row: &mut [E], seen: usize, m: E) -> E {
    let whole = vector_extent(seen, row.len());
    let (body, rest) = row.split_at_mut(whole);
    rest.fill(E::ZERO);
    let mut lanes = [E::ZERO; LANES];
    let mut blocks = body.chunks_exact_mut(LANES);
    for (b, block) in (&mut blocks).enumerate() {
        let values: [E; LANES] = core::array::from_fn(|l| (block[l] - m).exp());
        let values: [E; LANES] = core::array::from_fn(|l| {
            if b * LANES + l < seen {
                values[l]
            } else {
                E::ZERO
            }
        });
        block.copy_from_slice(&values);
        for (lane, v) in lanes.iter_mut().zip(values) {
            *lane += v;
        }
    }
    let tail = blocks.into_remainder();
    let first = whole - tail.len();
    for (l, p) in tail.iter_mut().enumerate() {
        *p = if first + l < seen {
            (*p - m).exp()
        } else {
            E::ZERO
        };
        lanes[l] += *p;
    }
    sum_lanes(lanes)
}

/// `s ← c·tanh(s/c)` for every logit of `row`.
#[inline(always)]
fn soft_cap<E: Gemm>(row: &mut [E], c: E) {
    let inv = E::ONE / c;
    for s in row.iter_mut() {
        *s = c * (*s * inv).tanh();
    }
}
