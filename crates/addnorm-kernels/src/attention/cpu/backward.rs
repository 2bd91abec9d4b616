//! The fused attention backward on slices: dQ, dK and dV from Q, K, V, the output O, its
//! gradient dO and the saved log-sum-exp, recomputing the probabilities one query block at
//! a time (flash-attention style), so no `[T, T]` matrix is ever kept.
//!
//! # Formula
//! Per head, for each query block (rows `i0..i1`, keys `0..n_k`):
//!
//! ```text
//! S   = scale·Q_b·Kᵀ                  S ← c·tanh(S/c) with a soft cap c
//! P   = exp(S − lse)                  (0 where masked)
//! Δ_i = Σ_d O_id · dO_id              (= rowsum(P ∘ dP), the softmax's correction)
//! dV += Pᵀ·dO_b
//! dS  = P ∘ (dO_b·Vᵀ − Δ)             ∘ (1 − tanh²(S/c)) with the soft cap
//! dQ_b = scale·dS·K                   dK += scale·dSᵀ·Q_b
//! ```
//!
//! One task per (batch, head): its query blocks run in order because each adds into the
//! head's dK and dV (rows `0..n_k`), which belong to that task alone. The task copies the
//! head's `Kᵀ` and `Vᵀ` into contiguous rows once; with the causal mask each product runs
//! in parts (see the [parent module](super)). `P` and `dS` are scratch matrices with rows
//! [`padded_row`](super::padded_row)`(n_k)` apart, as in the forward.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`, `grad_output`, the gradients: `[batch, T, d_model]`
//! - `lse`: `[batch, heads, T]`

use super::{Cut, Gemm, SharedBuffer, Strided, query_blocks, run_tasks, vector_extent};
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cpu::aligned::Aligned;
use crate::cpu::dispatch::vectorized;
use crate::cpu::real::sum_map2;
use crate::cpu::reused::Reused;

/// The forward's tensors the backward reads.
#[derive(Clone, Copy, Debug)]
pub struct Saved<'a, E> {
    /// The queries, `[batch, T, d_model]`.
    pub q: &'a [E],
    /// The keys, `[batch, T, d_model]`.
    pub k: &'a [E],
    /// The values, `[batch, T, d_model]`.
    pub v: &'a [E],
    /// The forward's output, `[batch, T, d_model]`.
    pub output: &'a [E],
    /// The per-row log-sum-exp, `[batch, heads, T]`.
    pub lse: &'a [E],
}

/// What every task of one call reads and writes.
struct Call<'a, E> {
    layout: HeadLayout,
    scale: E,
    causal: bool,
    cap: Option<E>,
    saved: Saved<'a, E>,
    grad_output: &'a [E],
    /// dQ, dK, dV, whatever they hold on entry: each element is written (dK and dV add
    /// up over the query blocks onto what the first block that sees their key wrote).
    grads: [SharedBuffer<E>; 3],
    /// The scratch's row stride and the causal blocks' parts.
    cut: Cut,
}

/// The scratch of a task: `P` and `dP` (then `dS`), `Δ`, and with a soft cap the slope
/// `1 − tanh²(S/c)` of each capped logit. The GEMMs' operands among them (`P`, `dS`, `Kᵀ`,
/// `Vᵀ`) start on 64-byte lines. Pooled between calls as a [`Reused`] value.
struct Scratch<E> {
    p: Aligned<E>,
    ds: Aligned<E>,
    delta: Vec<E>,
    slope: Vec<E>,
    /// The head's `Kᵀ` and `Vᵀ` in contiguous rows, copied once for all its query blocks.
    k_t: Aligned<E>,
    v_t: Aligned<E>,
}

impl<E> Default for Scratch<E> {
    fn default() -> Self {
        Self {
            p: Aligned::default(),
            ds: Aligned::default(),
            delta: Vec::new(),
            slope: Vec::new(),
            k_t: Aligned::default(),
            v_t: Aligned::default(),
        }
    }
}

/// Gives `count` scratch values back to the pool with `len` NaNs in each buffer, as a
/// call on larger shapes could leave them (the tests' stale scratch).
#[cfg(test)]
pub(super) fn pool_stale_scratch(count: usize, len: usize) {
    crate::cpu::reused::pool_spoiled(count, |scratch: &mut Scratch<f32>| {
        for buffer in [
            &mut scratch.p,
            &mut scratch.ds,
            &mut scratch.k_t,
            &mut scratch.v_t,
        ] {
            buffer.resize(len);
            buffer.fill(f32::NAN);
        }
        for buffer in [&mut scratch.delta, &mut scratch.slope] {
            buffer.clear();
            buffer.resize(len, f32::NAN);
        }
    });
}

/// `Kᵀ` and `Vᵀ` of one head (`[d_head, T]` views with unit column stride).
#[derive(Clone, Copy)]
struct Transposed<E> {
    k_t: Strided<E>,
    v_t: Strided<E>,
}

/// Writes dQ, dK and dV (`[dq, dk, dv]`, whatever they hold: each head's task zeroes its
/// dK and dV columns before its query blocks add into them, and writes dQ whole).
///
/// # Panics
/// If a slice's length does not match `layout`.
pub fn backward<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    saved: Saved<'_, E>,
    grad_output: &[E],
    grads: [&mut [E]; 3],
) {
    backward_with(layout, spec, saved, grad_output, grads, Cut::KERNELS);
}

/// [`backward`] cut as `cut` says (the kernels: [`Cut::KERNELS`]).
pub(crate) fn backward_with<E: Gemm>(
    layout: HeadLayout,
    spec: &AttentionSpec,
    saved: Saved<'_, E>,
    grad_output: &[E],
    [dq, dk, dv]: [&mut [E]; 3],
    cut: Cut,
) {
    let Saved {
        q,
        k,
        v,
        output,
        lse,
    } = saved;
    for (name, len) in [
        ("q", q.len()),
        ("k", k.len()),
        ("v", v.len()),
        ("output", output.len()),
        ("grad_output", grad_output.len()),
        ("dq", dq.len()),
        ("dk", dk.len()),
        ("dv", dv.len()),
    ] {
        assert_eq!(
            len,
            layout.len(),
            "attention backward: {name} for {layout:?}"
        );
    }
    assert_eq!(lse.len(), layout.batch * layout.heads * layout.seq, "lse");
    let call = Call {
        layout,
        scale: E::from_f64(spec.scale),
        causal: spec.causal,
        cap: spec.softcap.map(E::from_f64),
        saved,
        grad_output,
        grads: [
            SharedBuffer::new(dq),
            SharedBuffer::new(dk),
            SharedBuffer::new(dv),
        ],
        cut,
    };
    let heads: Vec<usize> = (0..layout.batch * layout.heads).collect();
    let keys = if spec.causal {
        layout.seq / 2 + 1
    } else {
        layout.seq
    };
    let flops = 5 * layout.seq * keys * layout.d_head;
    run_tasks(
        &heads,
        flops,
        Reused::<Scratch<E>>::take,
        |scratch, &bh| call.head(scratch, bh),
        (),
        |(), ()| (),
    );
}

impl<E: Gemm> Call<'_, E> {
    /// The gradients of one head of one batch element.
    fn head(&self, scratch: &mut Scratch<E>, bh: usize) {
        let layout = self.layout;
        let (b, h) = (bh / layout.heads, bh % layout.heads);
        let (head, dm, dims) = (
            layout.offset(b, h),
            layout.d_model(),
            [layout.d_head, layout.seq],
        );
        let [k, v] = [self.saved.k, self.saved.v].map(SharedBuffer::reading);
        // SAFETY: k's and v's head h hold T rows of d_head; the copies are this task's own
        // and stay unchanged until the head is done.
        let transposed = unsafe {
            Transposed {
                k_t: E::contiguous_b(k.rows(head, dm).t(), dims, &mut scratch.k_t),
                v_t: E::contiguous_b(v.rows(head, dm).t(), dims, &mut scratch.v_t),
            }
        };
        for (i0, i1) in query_blocks(self.layout.seq) {
            self.block(scratch, transposed, (bh, head), (i0, i1));
        }
    }

    /// The keys whose dK and dV rows the query blocks before row `i0` have written: none
    /// before the first block, else every key a row before `i0` sees.
    fn written_before(&self, i0: usize) -> usize {
        match i0 {
            0 => 0,
            _ => self.layout.visible_keys(i0 - 1, self.causal),
        }
    }

    /// How key part `j0..j1` of the block starting at row `i0` joins the head's rows of a
    /// key gradient (`grad`: dK or dV) scaled by `alpha`: `β = 1` onto what earlier blocks
    /// wrote, or `β = 0` where no block has written them yet, so that nothing zeroes them
    /// first. A part whose keys are new only in part (one part per block, in the tests'
    /// cuts), or `α ≤ 0` (where `α·(+0)` would be `−0`, not `0 + α·(+0) = +0`), zeroes its
    /// new rows and adds onto them.
    ///
    /// A chain's sum `p` starts from `+0`, so it is never `−0`: with `α > 0`, `α·p` has
    /// the bits of `0 + α·p` in every join ([`Gemm::gemm`]'s epilogue), so `β = 0` gives
    /// the bits of adding onto zeroed rows. It spares the task a pass over its columns of
    /// dK and dV, whose cache lines it would otherwise first fetch only to zero them.
    fn key_beta(&self, grad: &SharedBuffer<E>, head: usize, (i0, j0, j1): Keys, alpha: E) -> E {
        let new_from = self.written_before(i0).clamp(j0, j1);
        if new_from == j1 {
            return E::ONE;
        }
        if new_from == j0 && alpha > E::ZERO {
            return E::ZERO;
        }
        let (dm, d_head) = (self.layout.d_model(), self.layout.d_head);
        for j in new_from..j1 {
            // SAFETY: dK's and dV's columns of this head are written by this task alone.
            unsafe { grad.slice_mut(head + j * dm, d_head) }.fill(E::ZERO);
        }
        E::ONE
    }

    /// Adds one query block's contributions (`bh = b·heads + h`; `head`: the offset of the
    /// head's first element).
    fn block(
        &self,
        scratch: &mut Scratch<E>,
        transposed: Transposed<E>,
        (bh, head): (usize, usize),
        (i0, i1): (usize, usize),
    ) {
        let keys = self.layout.visible_keys(i1 - 1, self.causal);
        let stride = (self.cut.row_stride)(keys);
        // Each row part's GEMMs write its key columns of P and dP (β = 0: they read none);
        // what lies past them keeps what the last block left, which no GEMM reads and
        // `probabilities` overwrites. So no zeroing pass.
        for buffer in [&mut scratch.p, &mut scratch.ds] {
            buffer.resize((i1 - i0) * stride);
        }
        let block = Block {
            bh,
            head,
            rows: (i0, i1),
            keys,
            stride,
            p: Strided::rows(scratch.p.as_mut_ptr(), stride),
            ds: Strided::rows(scratch.ds.as_mut_ptr(), stride),
        };
        self.scores(&block, transposed);
        self.score_gradients(scratch, &block);
        self.query_gradients(&block);
        self.key_gradients(&block);
    }

    /// `S = scale·Q_b·Kᵀ` into P's rows and `dP = dO_b·Vᵀ` into dS's, part by part.
    fn scores(&self, block: &Block<E>, Transposed { k_t, v_t }: Transposed<E>) {
        let (dm, d_head) = (self.layout.d_model(), self.layout.d_head);
        let [q, dout] = [self.saved.q, self.grad_output].map(SharedBuffer::reading);
        let first = block.head + block.rows.0 * dm;
        for (r0, r1, n_k) in self.parts(block) {
            // SAFETY: q, dO and the transposed copies are read only; P and dS are this
            // task's scratch of rows × stride.
            unsafe {
                E::gemm(
                    [r1 - r0, d_head, n_k],
                    self.scale,
                    q.rows(first + r0 * dm, dm),
                    k_t,
                    E::ZERO,
                    block.p.from(r0, 0),
                );
                E::gemm(
                    [r1 - r0, d_head, n_k],
                    E::ONE,
                    dout.rows(first + r0 * dm, dm),
                    v_t,
                    E::ZERO,
                    block.ds.from(r0, 0),
                );
            }
        }
    }

    /// Δ, then P from the scores and `dS = P ∘ (dP − Δ)` (times the cap's slope), over the
    /// block's scratch rows.
    fn score_gradients(&self, scratch: &mut Scratch<E>, block: &Block<E>) {
        let (layout, (i0, i1)) = (self.layout, block.rows);
        let (dm, d_head, bh) = (layout.d_model(), layout.d_head, block.bh);
        let lse = &self.saved.lse[bh * layout.seq + i0..bh * layout.seq + i1];
        vectorized(
            #[inline(always)]
            || {
                scratch.delta.clear();
                scratch.delta.extend((i0..i1).map(|i| {
                    let row = block.head + i * dm;
                    sum_map2(
                        &self.saved.output[row..row + d_head],
                        &self.grad_output[row..row + d_head],
                        |o, g| o * g,
                    )
                }));
                if let Some(c) = self.cap {
                    cap_with_slope(&mut scratch.p, &mut scratch.slope, c);
                }
                probabilities(&mut scratch.p, block.stride, i0, lse, |i| {
                    layout.visible_keys(i, self.causal)
                });
                let slope = self.cap.map(|_| scratch.slope.as_slice());
                score_gradients(
                    &mut scratch.ds,
                    &scratch.p,
                    block.stride,
                    &scratch.delta,
                    slope,
                )
            },
        );
    }

    /// `dQ_b = scale·dS·K`, part by part.
    fn query_gradients(&self, block: &Block<E>) {
        let dm = self.layout.d_model();
        let k = SharedBuffer::reading(self.saved.k);
        let first = block.head + block.rows.0 * dm;
        for (r0, r1, n_k) in self.parts(block) {
            // SAFETY: k and dS are read only; dQ's rows of this block and head are written
            // by this task (one per batch element and head) alone.
            unsafe {
                E::gemm(
                    [r1 - r0, n_k, self.layout.d_head],
                    self.scale,
                    block.ds.from(r0, 0),
                    k.rows(block.head, dm),
                    E::ZERO,
                    self.grads[0].rows(first + r0 * dm, dm),
                );
            }
        }
    }

    /// `dV += Pᵀ·dO_b` and `dK += scale·dSᵀ·Q_b`, key part by key part, each from the
    /// first row that sees its keys.
    fn key_gradients(&self, block: &Block<E>) {
        let (dm, d_head, (i0, i1)) = (self.layout.d_model(), self.layout.d_head, block.rows);
        let [q, dout] = [self.saved.q, self.grad_output].map(SharedBuffer::reading);
        let [_, dk, dv] = &self.grads;
        let first = block.head + i0 * dm;
        for (j0, j1, r0) in self.cut.parts.keys(self.causal, i0, block.keys) {
            let keys = (i0, j0, j1);
            let dv_beta = self.key_beta(dv, block.head, keys, E::ONE);
            let dk_beta = self.key_beta(dk, block.head, keys, self.scale);
            // SAFETY: P, dS, dO and q are read only; dK's and dV's rows of this head are
            // written by this task (one per batch element and head) alone.
            unsafe {
                E::gemm(
                    [j1 - j0, i1 - i0 - r0, d_head],
                    E::ONE,
                    block.p.t().from(j0, r0),
                    dout.rows(first + r0 * dm, dm),
                    dv_beta,
                    dv.rows(block.head + j0 * dm, dm),
                );
                E::gemm(
                    [j1 - j0, i1 - i0 - r0, d_head],
                    self.scale,
                    block.ds.t().from(j0, r0),
                    q.rows(first + r0 * dm, dm),
                    dk_beta,
                    dk.rows(block.head + j0 * dm, dm),
                );
            }
        }
    }

    /// The block's row parts ([`super::Parts::rows`]).
    fn parts(&self, block: &Block<E>) -> impl Iterator<Item = (usize, usize, usize)> + use<E> {
        self.cut.parts.rows(self.causal, block.rows, block.keys)
    }
}

/// A key part of a query block: the block's first row `i0` and the keys `j0..j1`.
type Keys = (usize, usize, usize);

/// One query block of one head, as its steps see it.
struct Block<E> {
    /// `b·heads + h`.
    bh: usize,
    /// The offset of the head's first element in a `[batch, T, d_model]` tensor.
    head: usize,
    /// The query rows `i0..i1`.
    rows: (usize, usize),
    /// The keys the block sees, and the scratch's row stride for them.
    keys: usize,
    stride: usize,
    /// The task's `P` and `dP`/`dS` scratch, `[rows, stride]`.
    p: Strided<E>,
    ds: Strided<E>,
}

/// Caps every logit of `scores` at `c` (`S ← c·tanh(S/c)`) and writes the cap's slope
/// `1 − tanh²(S/c)` into `slope` (resized to `scores`).
#[inline(always)]
fn cap_with_slope<E: Gemm>(scores: &mut [E], slope: &mut Vec<E>, c: E) {
    let inv = E::ONE / c;
    slope.clear();
    slope.resize(scores.len(), E::ZERO);
    for (s, slope) in scores.iter_mut().zip(slope.iter_mut()) {
        let t = (*s * inv).tanh();
        *s = c * t;
        *slope = E::ONE - t * t;
    }
}

/// Turns logits `scores: [rows, stride]` (row `r` is query `i0 + r`; its first
/// `visible(i)` elements are the keys it sees, the rest masked keys and padding) into the
/// forward's probabilities `exp(S − lse)` over the visible keys, 0 elsewhere. The
/// exponentials run over the visible keys rounded up to whole vectors ([`vector_extent`]),
/// and what lies past the visible keys is then set to 0.
#[inline(always)]
fn probabilities<E: Gemm>(
    scores: &mut [E],
    stride: usize,
    i0: usize,
    lse: &[E],
    visible: impl Fn(usize) -> usize,
) {
    for (r, (row, &lse)) in scores.chunks_exact_mut(stride).zip(lse).enumerate() {
        let seen = visible(i0 + r);
        let whole = vector_extent(seen, stride);
        for s in row[..whole].iter_mut() {
            *s = (*s - lse).exp();
        }
        row[seen..].fill(E::ZERO);
    }
}

/// `dS = P ∘ (dP − Δ)` in place of `dP`, row by row (rows `stride` apart, padding
/// included: no GEMM reads it), times the soft cap's `slope` (same layout as `P`) in the
/// same pass when there is one.
#[inline(always)]
fn score_gradients<E: Gemm>(
    dp: &mut [E],
    p: &[E],
    stride: usize,
    delta: &[E],
    slope: Option<&[E]>,
) {
    let rows = dp
        .chunks_exact_mut(stride)
        .zip(p.chunks_exact(stride))
        .zip(delta);
    match slope {
        None => {
            for ((ds, p), &delta) in rows {
                for (ds, &p) in ds.iter_mut().zip(p) {
                    *ds = p * (*ds - delta);
                }
            }
        }
        Some(slope) => {
            for (((ds, p), &delta), slope) in rows.zip(slope.chunks_exact(stride)) {
                for ((ds, &p), &slope) in ds.iter_mut().zip(p).zip(slope) {
                    *ds = p * (*ds - delta) * slope;
                }
            }
        }
    }
}
