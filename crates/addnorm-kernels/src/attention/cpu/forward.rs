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
//! # Shapes
//! - `q`, `k`, `v`, `output`: `[batch, T, d_model]`; `lse`: `[batch, heads, T]`

use super::{Gemm, QUERY_BLOCK, Shared, Strided, larger, max_of, query_blocks, run_tasks};
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
}

/// Writes `output` and `lse` and returns the largest logit.
///
/// # Panics
/// If a slice's length does not match `layout`.
pub fn forward<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    [q, k, v]: [&[E]; 3],
    output: &mut [E],
    lse: &mut [E],
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
        scores.clear();
        scores.resize(rows * keys, E::ZERO);
        let [q, k, v] = [self.q, self.k, self.v].map(Shared::reading);
        // SAFETY: q and k are read only; `scores` is this task's own buffer of rows × keys.
        unsafe {
            E::gemm(
                [rows, d_head, keys],
                self.scale,
                q.rows(head + i0 * dm, dm),
                k.rows(head, dm).t(),
                E::ZERO,
                Strided::rows(scores.as_mut_ptr(), keys),
            );
        }
        // SAFETY: lse[bh, i0..i1] belongs to this task alone.
        let lse = unsafe { self.lse.slice_mut(bh * layout.seq + i0, rows) };
        let max_logit = vectorized(
            #[inline(always)]
            || {
                softmax_rows(scores, keys, i0, lse, self.cap, |i| {
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
                Strided::rows(scores.as_mut_ptr(), keys),
                v.rows(head, dm),
                E::ZERO,
                self.output.rows(head + i0 * dm, dm),
            );
        }
        max_logit
    }
}

/// Turns each row of logits `scores: [rows, keys]` (row `r` is query `i0 + r`) into
/// probabilities over its `visible(i)` leading keys (the rest set to 0), the logits first
/// capped at `cap` when given, writes the rows' log-sum-exp, and returns the largest
/// (capped) logit.
#[inline(always)]
fn softmax_rows<E: Gemm>(
    scores: &mut [E],
    keys: usize,
    i0: usize,
    lse: &mut [E],
    cap: Option<E>,
    visible: impl Fn(usize) -> usize,
) -> E {
    let mut max_logit = E::from_f64(f64::NEG_INFINITY);
    for (r, (row, lse)) in scores.chunks_exact_mut(keys).zip(lse).enumerate() {
        let (seen, hidden) = row.split_at_mut(visible(i0 + r));
        if let Some(c) = cap {
            soft_cap(seen, c);
        }
        let m = max_of(seen);
        for s in seen.iter_mut() {
            *s = (*s - m).exp();
        }
        let l = sum_map(seen, |p| p);
        let inv = E::ONE / l;
        for p in seen.iter_mut() {
            *p = *p * inv;
        }
        hidden.fill(E::ZERO);
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
