//! The fused CPU attention kernels, on plain row-major `[batch, T, d_model]` slices: the
//! heads are strided views into them (row stride `d_model`), never copied out.
//!
//! - [`forward`]: `O` and the per-row log-sum-exp, rayon over (batch, head, query block).
//! - [`backward`]: dQ, dK, dV, recomputing the probabilities block by block, rayon over
//!   (batch, head) (a head's dK and dV sum over all of its query blocks).
//!
//! The products of a query block with all the keys it sees are strided GEMMs
//! ([`Gemm`]: at these sizes its direct AVX-512 kernel, which does not pack its operands,
//! else `matrixmultiply`, with the same bits). With the causal mask, in blocks that see at
//! least [`CUT_FROM_KEYS`] keys, they run in parts (`Parts`): [`PART_ROWS`] query rows at
//! a time, each part up to the keys its own rows see; `dK` and `dV` for the keys every row
//! sees at once, then [`KEY_PART`] keys at a time from the first row that sees them. So
//! the masked triangle of a block is (nearly) never multiplied; the parts change no bit.
//! `Kᵀ` and `Vᵀ` are copied into contiguous rows once per task ([`Gemm::contiguous_b`]),
//! not by each product. The softmax and its backward are row loops
//! run under [`crate::cpu::dispatch::vectorized`] with the vectorizable
//! [`exp`](crate::cpu::exp::exp_f32).
//!
//! # Formula
//! See [`super::spec`] and [`super::fused`]; per query block `Q_b` (rows `i0..i1`, keys
//! `0..n_k` with `n_k = i1` when causal, else `T`):
//!
//! ```text
//! forward:   S = scale·Q_b·Kᵀ   P = exp(S − m) / l   lse = m + log l   O_b = P·V
//! backward:  P = exp(S − lse)   Δ = rowsum(O_b ∘ dO_b)
//!            dV += Pᵀ·dO_b   dS = P ∘ (dO_b·Vᵀ − Δ)   dQ_b = scale·dS·K   dK += scale·dSᵀ·Q_b
//! ```
//!
//! # Memory
//! Each task holds one or two `[block, padded_row(n_k)]` scratch matrices: `O(T)` per
//! query row, never `[batch, heads, T, T]`.
//!
//! # Shapes
//! - `q`, `k`, `v`, `o`, `do`, gradients: `[batch, T, d_model]` (row-major slices)
//! - `lse`: `[batch, heads, T]`

pub mod backward;
pub mod forward;

use crate::cpu::parallel;
pub(crate) use crate::cpu::parallel::SharedBuffer;

pub use crate::cpu::gemm::{Gemm, Strided};
pub(crate) use crate::cpu::real::{LANES, Real, lane_maxima, larger, largest_lane, max_of};

/// Query rows per task: enough rows for the GEMMs to run at speed, few enough that the
/// `[QUERY_BLOCK, T]` scratch stays in the L2 cache up to T ≈ 1024.
pub const QUERY_BLOCK: usize = 64;

/// The scratch matrices of scores and probabilities keep their rows a multiple of this
/// many elements apart: a row of `n_k` keys takes [`padded_row`]`(n_k)` elements, whole
/// AVX-512 vectors (two AVX2 ones each). The softmax's element loops then run whole vectors
/// with no scalar tail; at the demo model's `T = 17` that made the forward kernel 14% faster
/// (PERFORMANCE.md §20). No GEMM reads the padding.
pub const ROW_ALIGN: usize = 16;

/// The row stride of a `[rows, n_k]` scratch matrix: `n_k` rounded up to [`ROW_ALIGN`].
pub fn padded_row(keys: usize) -> usize {
    keys.next_multiple_of(ROW_ALIGN)
}

/// The leading elements of a scratch row of `len` that the softmax's element loops visit
/// when the first `seen` are the visible keys: `seen` rounded up to [`ROW_ALIGN`] (whole
/// vectors, no scalar tail), at most the row. What lies past `seen` is set to 0 after.
fn vector_extent(seen: usize, len: usize) -> usize {
    seen.next_multiple_of(ROW_ALIGN).min(len)
}

/// The largest of `row[..seen]` (`1 ≤ seen ≤ row.len()`), with the bits of
/// [`max_of`]`(&row[..seen])`, reading whole vectors up to [`vector_extent`]: in the last
/// one, each element at or past `seen` (a masked key or padding, read but never chosen) is
/// replaced by its lane's own value, and `larger(l, l)` is `l`.
///
/// `max_of`'s tail of fewer than [`LANES`] elements compiles to a masked store of its lanes
/// and a reload, which waits on store-to-load forwarding once a row: a causal row's `seen`
/// is rarely a whole number of vectors, and that wait took a fifth of the forward's softmax
/// (PERFORMANCE.md §44).
#[inline(always)]
fn max_of_visible<E: Real>(row: &[E], seen: usize) -> E {
    const { assert!(ROW_ALIGN.is_multiple_of(LANES)) };
    let (full, rest) = (seen / LANES * LANES, seen % LANES);
    let Some(last) = row.get(full..full + LANES).filter(|_| rest > 0) else {
        // No partial vector, or a row stride that is not a whole number of vectors (the
        // tests' `Cut`).
        return max_of(&row[..seen]);
    };
    let mut lanes = lane_maxima([row[0]; LANES], row[..full].chunks_exact(LANES));
    for (l, (lane, &v)) in lanes.iter_mut().zip(last).enumerate() {
        let v = if l < rest { v } else { *lane };
        *lane = larger(*lane, v);
    }
    largest_lane(lanes)
}

/// How a kernel lays out its scratch rows: [`padded_row`], or (in the tests, to show the
/// padding changes no bit) `n_k` itself.
pub(crate) type RowStride = fn(usize) -> usize;

/// How a kernel cuts its work: its scratch rows' stride and its causal blocks' parts. The
/// kernels run [`Cut::KERNELS`]; the tests run others to show that neither changes a bit.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cut {
    /// The scratch's row stride for a block of `n_k` keys.
    pub(crate) row_stride: RowStride,
    /// The parts of a causal query block's products.
    pub(crate) parts: Parts,
}

impl Cut {
    /// [`padded_row`] and [`Parts::CAUSAL`].
    pub(crate) const KERNELS: Cut = Cut {
        row_stride: padded_row,
        parts: Parts::CAUSAL,
    };
}

/// Below this many multiply-adds a call stays on the calling thread. Since
/// `crate::cpu::parallel` never puts a worker's wake-up on the caller's path, a split call
/// costs the caller only the helper's spawn (microseconds), so the bar is low: 2¹⁸ (it was
/// 2²¹ with rayon's fork-join; lowering it made the `small` training step 5–10% faster,
/// PERFORMANCE.md §8).
const SERIAL_BELOW_FLOPS: usize = 1 << 18;

/// Multiply-adds one rayon job should at least carry.
const MIN_JOB_FLOPS: usize = 1 << 18;

/// Runs `task` on every item, in parallel when the call carries at least
/// [`SERIAL_BELOW_FLOPS`] multiply-adds (`flops_per_item` each, roughly), and combines the
/// results with `combine`. `scratch` makes each worker's reusable buffer.
fn run_tasks<T: Sync, R, S>(
    items: &[T],
    flops_per_item: usize,
    scratch: impl Fn() -> S + Sync + Send,
    task: impl Fn(&mut S, &T) -> R + Sync + Send,
    identity: R,
    combine: impl Fn(R, R) -> R + Sync + Send,
) -> R
where
    R: Copy + Send + Sync,
{
    if items.len() * flops_per_item < SERIAL_BELOW_FLOPS || rayon::current_num_threads() == 1 {
        let mut buffer = scratch();
        return items
            .iter()
            .fold(identity, |acc, item| combine(acc, task(&mut buffer, item)));
    }
    // Tasks of `per_task` consecutive items, each with its own scratch buffer; their
    // results are combined in task order.
    let per_task = MIN_JOB_FLOPS.div_ceil(flops_per_item.max(1)).max(1);
    parallel::map(items.len().div_ceil(per_task), |t| {
        let mut buffer = scratch();
        parallel::chunk(items, per_task, t)
            .iter()
            .fold(identity, |acc, item| combine(acc, task(&mut buffer, item)))
    })
    .into_iter()
    .fold(identity, &combine)
}

/// Query rows per row part of a causal query block (see the [module docs](self)): each
/// part's products run up to the keys its own rows see, not up to the block's last row's.
/// The direct GEMM's tile height: 6 made the d128 model's attention 1.2× slower, 24 no
/// faster (PERFORMANCE.md §38).
pub const PART_ROWS: usize = 12;

/// Keys per key part of a causal query block's `dK` and `dV`, and the multiple that a row
/// part's key count is rounded up to. A multiple of 16, so that each part's first key lies
/// where a 16 × 16 tile of `matrixmultiply`'s kernel starts in the whole product: the
/// direct GEMM then joins every element to C as it did for the whole block
/// (`dK += scale·dSᵀ·Q_b` has `α ≠ 1`, where whole and edge tiles round differently), and
/// the parts change no bit.
pub const KEY_PART: usize = 16;

/// The fewest keys a causal query block must see to be cut into parts. Below it the
/// masked triangle is small against the cost of more, smaller products: at the demo
/// model's `T = 17`, parts would skip 12 of 289 products, and they made its forward
/// 1.1–1.2× slower on one thread (PERFORMANCE.md §38).
pub const CUT_FROM_KEYS: usize = 2 * KEY_PART;

/// How a causal query block's products are cut: `rows` query rows per row part, and
/// `keys` keys per key part (also the multiple a row part's key count is rounded up to),
/// for blocks that see at least `from_keys` keys. Any other block is one part.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Parts {
    rows: usize,
    keys: usize,
    from_keys: usize,
}

impl Parts {
    /// The kernels' cut: [`PART_ROWS`] and [`KEY_PART`].
    pub(crate) const CAUSAL: Parts = Parts {
        rows: PART_ROWS,
        keys: KEY_PART,
        from_keys: CUT_FROM_KEYS,
    };

    /// One part per block (the tests compare the bits of [`Parts::CAUSAL`] with it).
    #[cfg(test)]
    pub(crate) const WHOLE: Parts = Parts {
        rows: usize::MAX,
        keys: usize::MAX,
        from_keys: usize::MAX,
    };

    /// Whether a block that sees `keys` keys is cut.
    fn cuts(self, causal: bool, keys: usize) -> bool {
        causal && keys >= self.from_keys
    }

    /// The row parts `(r0, r1, n_k)` of query rows `i0..i1` (`r` counted from `i0`) that
    /// see `keys` keys in all, and the keys each part's products read: in a block that is
    /// cut, `self.rows` rows a part, up to its last row's keys rounded up to `self.keys`
    /// (at most `keys`), parts that would read as many keys as the next joined into one.
    ///
    /// A row's keys past its own are masked (probability 0), so leaving them out of a
    /// part's `P·V` or `dS·K` leaves out terms `±0` at the end of each sum: the same bits
    /// (save the sign of an exactly zero sum) for finite inputs. (A non-finite key or value
    /// now reaches fewer of the rows that do not see it: `0·∞` is NaN.) The rounding up
    /// makes every score gradient a key part reads ([`Parts::keys`]) one that its row's
    /// part computed.
    fn rows(
        self,
        causal: bool,
        (i0, i1): (usize, usize),
        keys: usize,
    ) -> impl Iterator<Item = (usize, usize, usize)> {
        let (rows, cut) = (i1 - i0, self.cuts(causal, keys));
        let step = if cut { self.rows.min(rows) } else { rows }.max(1);
        let seen_to = move |r1: usize| match cut {
            true => (i0 + r1)
                .checked_next_multiple_of(self.keys)
                .map_or(keys, |seen| seen.min(keys)),
            false => keys,
        };
        let mut r0 = 0;
        std::iter::from_fn(move || {
            let mut r1 = (r0 + step).min(rows);
            while r1 < rows && seen_to((r1 + step).min(rows)) == seen_to(r1) {
                r1 = (r1 + step).min(rows);
            }
            let part = (r0 < rows).then_some((r0, r1, seen_to(r1)));
            r0 = r1;
            part
        })
    }

    /// The key parts `(j0, j1, r0)` of the `keys` keys that query rows from `i0` on see,
    /// and the first row (counted from `i0`) that sees any of them. In a block that is cut:
    /// the keys before the block's first row, which every row sees, as one part (down to a
    /// multiple of `self.keys`), then `self.keys` keys a part, whose `dK` and `dV` sums
    /// skip the rows before `j0` (their probabilities, so their score gradients, are 0
    /// there: terms `±0` at the start of a sum that starts from `+0`, so the same bits; a
    /// block's rows are one chain, being fewer than the GEMM's `KC`).
    fn keys(
        self,
        causal: bool,
        i0: usize,
        keys: usize,
    ) -> impl Iterator<Item = (usize, usize, usize)> {
        let cut = self.cuts(causal, keys);
        let (seen_by_all, step) = match cut {
            true => ((i0 - i0 % self.keys).min(keys), self.keys),
            false => (keys, keys),
        };
        let whole = (seen_by_all > 0).then_some((0, seen_by_all, 0));
        let diagonal = (seen_by_all..keys).step_by(step.max(1)).map(move |j0| {
            let first_row = if cut { j0.saturating_sub(i0) } else { 0 };
            (j0, (j0 + step).min(keys), first_row)
        });
        whole.into_iter().chain(diagonal)
    }
}

/// The query blocks `(i0, i1)` of a sequence of `seq` rows.
fn query_blocks(seq: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..seq)
        .step_by(QUERY_BLOCK)
        .map(move |i0| (i0, (i0 + QUERY_BLOCK).min(seq)))
}

#[cfg(test)]
mod tests;
