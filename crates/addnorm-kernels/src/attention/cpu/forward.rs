//! The fused attention forward on slices: `O = softmax(scale·Q·Kᵀ + mask)·V` per head,
//! the per-row log-sum-exp, and the largest logit.
//!
//! # Formula
//! Per query block (rows `i0..i1`) of head `h` of batch element `b`, keys `0..n_k`:
//!
//! ```text
//! S = scale·Q_b·Kᵀ                    one GEMM, [rows, n_k]
//! S ← c·tanh(S/c)                     with a soft cap c
//! m_i = max_{j visible} S_ij          P_ij = exp(S_ij − m_i) (0 where masked)
//! l_i = Σ_j P_ij    lse_i = m_i + log l_i    P ← P / l
//! O_b = P·V                           one GEMM, into O's rows i0..i1, columns of head h
//! max_logit = max_i m_i
//! ```
//!
//! The block's scores live in a scratch matrix whose rows are [`padded_row`]`(n_k)` apart;
//! the softmax runs over whole padded rows (the padding and the masked keys set to 0 before
//! the sum, which they leave unchanged), so each element's bits are those of a loop over
//! the visible keys alone.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`

use super::{
    Gemm, QUERY_BLOCK, RowStride, Shared, Strided, larger, max_of, padded_row, query_blocks,
    run_tasks, vector_extent,
};
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::sum_map;

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
    output: Shared<E>,
    lse: Shared<E>,
    /// The scratch's row stride for a block of `n_k` keys.
    row_stride: RowStride,
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
    forward_with(layout, spec, qkv, output, lse, padded_row)
}

/// [`forward`] with the scratch rows `row_stride(n_k)` apart.
pub(crate) fn forward_with<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    [q, k, v]: [&[E]; 3],
    output: &mut [E],
    lse: &mut [E],
    row_stride: RowStride,
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
        output: Shared::new(output),
        lse: Shared::new(lse),
        row_stride,
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
        Vec::new,
        |scratch, &task| call.block(scratch, task),
        lowest,
        larger,
    )
}

impl<E: Gemm> Call<'_, E> {
    /// Runs one query block; returns its largest logit.
    fn block(&self, scores: &mut Vec<E>, (bh, i0, i1): Task) -> E {
        let layout = self.layout;
        let (b, h) = (bh / layout.heads, bh % layout.heads);
        let (rows, dm, d_head) = (i1 - i0, layout.d_model(), layout.d_head);
        let keys = layout.visible_keys(i1 - 1, self.causal);
        let head = layout.offset(b, h);
        let stride = (self.row_stride)(keys);
        // The GEMM writes every key column (β = 0: it reads none); the padding keeps what
        // the last block left, which the softmax overwrites before anything uses it. So
        // no zeroing pass.
        scores.resize(rows * stride, E::ZERO);
        let [q, k, v] = [self.q, self.k, self.v].map(Shared::reading);
        // SAFETY: q and k are read only; `scores` is this task's own buffer of rows × stride.
        unsafe {
            E::gemm(
                [rows, d_head, keys],
                self.scale,
                q.rows(head + i0 * dm, dm),
                k.rows(head, dm).t(),
                E::ZERO,
                Strided::rows(scores.as_mut_ptr(), stride),
            );
        }
        // SAFETY: lse[bh, i0..i1] belongs to this task alone.
        let lse = unsafe { self.lse.slice_mut(bh * layout.seq + i0, rows) };
        let max_logit = vectorized(
            #[inline(always)]
            || {
                softmax_rows(scores, stride, i0, lse, self.cap, |i| {
                    layout.visible_keys(i, self.causal)
                })
            },
        );
        // SAFETY: v is read only; the output rows i0..i1 of head h (columns
        // h·d_head..(h+1)·d_head) are written by this task alone.
        unsafe {
            E::gemm(
                [rows, keys, d_head],
                E::ONE,
                Strided::rows(scores.as_mut_ptr(), stride),
                v.rows(head, dm),
                E::ZERO,
                self.output.rows(head + i0 * dm, dm),
            );
        }
        max_logit
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
/// already 0: [`sum_map`] adds element `j` into lane `j mod 16` in
/// order of `j`, and adding `+0` changes no partial sum, so every bit is that of a loop
/// over the visible keys alone.
#[inline(always)]
fn softmax_rows<E: Gemm>(
    scores: &mut [E],
    stride: usize,
    i0: usize,
    lse: &mut [E],
    cap: Option<E>,
    visible: impl Fn(usize) -> usize,
) -> E {
    let mut max_logit = E::from_f64(f64::NEG_INFINITY);
    for (r, (row, lse)) in scores.chunks_exact_mut(stride).zip(lse).enumerate() {
        let seen = visible(i0 + r);
        if let Some(c) = cap {
            soft_cap(&mut row[..seen], c);
        }
        let m = max_of(&row[..seen]);
        let whole = vector_extent(seen, row.len());
        for s in row[..whole].iter_mut() {
            *s = (*s - m).exp();
        }
        row[seen..].fill(E::ZERO);
        let l = sum_map(row, |p| p);
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

/// `s ← c·tanh(s/c)` for every logit of `row`.
#[inline(always)]
fn soft_cap<E: Gemm>(row: &mut [E], c: E) {
    let inv = E::ONE / c;
    for s in row.iter_mut() {
        *s = c * (*s * inv).tanh();
    }
}
