//! The CubeCL attention kernels: the forward (online softmax, one pass over the keys), the
//! backward for the queries (dQ and `Δ`), and the backward for the keys (dK and dV). They
//! compile to WGSL/SPIR-V (wgpu), CUDA and HIP alike.
//!
//! # Formula
//! For one head of one batch element, with `s_ij = scale·q_i·k_j` over the keys `j` that
//! query `i` sees (`j ≤ i` when causal):
//!
//! ```text
//! forward:    m_i = max_j s_ij      l_i = Σ_j exp(s_ij − m_i)      lse_i = m_i + ln l_i
//!             o_i = Σ_j exp(s_ij − m_i)·v_j / l_i        (m, l and o updated key by key)
//! queries:    Δ_i = o_i·do_i        p_ij = exp(s_ij − lse_i)      ds_ij = p_ij·(do_i·v_j − Δ_i)
//!             dq_i = scale·Σ_j ds_ij·k_j
//! keys:       dv_j = Σ_i p_ij·do_i                dk_j = scale·Σ_i ds_ij·q_i
//! ```
//!
//! With a soft cap c (`capped`), every `s_ij` above is `c·tanh(s_ij/c)` and every `ds_ij`
//! is multiplied by the cap's slope `1 − tanh²(s_ij/c)` (see `soft_cap` below).
//!
//! Arithmetic is in f32 whatever the storage type `F`; `lse`, `Δ` are f32.
//!
//! # Work division
//! [`ROWS`](super::tiles::ROWS) = 64 rows of one head a cube (query rows forward and for
//! dQ, key rows for dK/dV): cube `(x, y)` takes rows `x·64 .. x·64 + 64` of head
//! `y = b·heads + h`, with `split` units a row (1, or 4 on a device with plane operations
//! and `d_head` a multiple of 4). Unit `p` of a row holds the row's features
//! `d ≡ p (mod split)`, of its own row (query, output gradient, key, value) and of its
//! accumulators, in local arrays unrolled into registers (`d_head` is a compile-time
//! constant, at most [`super::launch::MAX_D_HEAD`]). A dot product over the row is the
//! `split` units' partial sums, exchanged within the plane (`plane_shuffle_xor` with masks
//! 1 and 2): float addition is commutative, so every unit of the row ends with the same
//! bits, `(a₀ + a₁) + (a₂ + a₃)`, and updates the row's running max and sum alike.
//!
//! The rows a row pairs with (keys and values for a query, queries and output gradients
//! for a key) pass through shared memory `tile` rows at a time: the cube stages a tile with
//! coalesced loads, syncs, and every unit then walks every staged row, reading it as
//! broadcasts. A row that its unit does not see (the causal mask) adds nothing, but is
//! walked all the same: the plane exchanges need every unit of a plane, so the loops have
//! the same trip count across the cube. Causal cubes stop at their last row's keys
//! (forward, dQ) or start at their first key's queries (dK, dV). `tile = clamp(2048 /
//! d_head, 1, 64)`, so two staged tiles fill at most 16 KiB, the least any Vulkan or WebGPU
//! device offers.
//!
//! Why: one unit per row reading its keys from global memory ran 28× slower than PyTorch's
//! SDPA at T = 1024 on an H100; staged through shared memory, one unit per row still holds
//! two to four arrays of `d_head` values (240–255 registers at `d_head = 64`), which leaves
//! a multiprocessor 8 warps, and `batch·heads·T` rows are too few units to fill a GPU. Four
//! units a row hold a quarter each, and are four times as many (kernels' PERFORMANCE.md
//! §15).
//!
//! Only the tile and row loops are run-time loops. That matters on Mesa's llvmpipe too,
//! which stops any shader loop after 65 535 iterations *in total*: with rolled feature
//! loops, rows past `i ≈ 65 536 / (2·d_head)` came out wrong (found by the T = 1000,
//! `d_head` = 64 fixture). The key kernel owns its dK and dV rows outright, so no unit
//! writes where another does: no atomics, and nothing of size `T²` is ever stored.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`, `grad_output`, `dq`, `dk`, `dv`: `[batch, T, d_model]`, any
//!   strides; head `h` is columns `h·d_head .. (h+1)·d_head`
//! - `lse`, `delta`, `row_max`: `[batch·heads·T]`, contiguous (`row_max` in `F`)

// `#[cube(launch)]` generates a launch function and a kernel struct per kernel, which carry
// no doc comments of their own; the kernels' docs are on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

use super::tiles::{HeadRow, head_block, head_row, keys_end, rows_below, soft_cap, stage};
use crate::cube::registers::zeros;

/// The unit's share of a row: features `part, part + split, …`, times `factor`.
#[cube]
fn load_share<F: Float>(
    t: &Tensor<F>,
    row: HeadRow,
    part: usize,
    factor: f32,
    #[comptime] share: usize,
    #[comptime] split: usize,
) -> Array<f32> {
    let mut values = Array::<f32>::new(share);
    #[unroll]
    for s in 0..share {
        values[s] = f32::cast_from(t[row.start + (part + s * split) * row.step]) * factor;
    }
    values
}

/// `t[row, part + s·split] = acc[s]·factor`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn store_share<F: Float>(
    t: &mut Tensor<F>,
    row: HeadRow,
    part: usize,
    acc: &Array<f32>,
    factor: f32,
    #[comptime] share: usize,
    #[comptime] split: usize,
) {
    #[unroll]
    for s in 0..share {
        t[row.start + (part + s * split) * row.step] = F::cast_from(acc[s] * factor);
    }
}

/// The row's total of its `split` units' `partial` sums (1, 2 or 4 units), the same bits
/// in each of them. With more than one unit a row, every unit of the plane must reach it.
#[cube]
fn row_total(partial: f32, #[comptime] split: usize) -> f32 {
    let mut total = partial;
    if split >= 2 {
        total += plane_shuffle_xor(total, 1u32);
    }
    if split >= 4 {
        total += plane_shuffle_xor(total, 2u32);
    }
    total
}

/// `Σ_d a[d]·t[row, d]` over the whole row (global memory), `a` the unit's share.
#[cube]
fn row_dot<F: Float>(
    a: &Array<f32>,
    t: &Tensor<F>,
    row: HeadRow,
    part: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
) -> f32 {
    let mut sum = 0.0f32;
    #[unroll]
    for s in 0..share {
        sum += a[s] * f32::cast_from(t[row.start + (part + s * split) * row.step]);
    }
    row_total(sum, split)
}

/// `Σ_d a[d]·tile[offset + d]` over the whole row (a staged row), `a` the unit's share;
/// each unit's part in four interleaved chains (independent, so a GPU overlaps them),
/// added pairwise.
#[cube]
fn row_dot_tile(
    a: &Array<f32>,
    tile: &SharedMemory<f32>,
    offset: usize,
    part: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
) -> f32 {
    let mut chains = Array::<f32>::new(4usize);
    #[unroll]
    for c in 0..4usize {
        chains[c] = 0.0;
    }
    #[unroll]
    for s in 0..share {
        chains[s % 4usize] += a[s] * tile[offset + part + s * split];
    }
    row_total(
        (chains[0usize] + chains[1usize]) + (chains[2usize] + chains[3usize]),
        split,
    )
}

/// `acc[s] = acc[s]·keep + weight·tile[offset + part + s·split]`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn scale_add_share(
    acc: &mut Array<f32>,
    keep: f32,
    weight: f32,
    tile: &SharedMemory<f32>,
    offset: usize,
    part: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
) {
    #[unroll]
    for s in 0..share {
        acc[s] = acc[s] * keep + weight * tile[offset + part + s * split];
    }
}

/// The forward: `output`, and per row `lse` and the largest logit `row_max`; `split`
/// units a query row (see the [module docs](self)).
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn attention_forward_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    output: &mut Tensor<F>,
    lse: &mut Tensor<f32>,
    row_max: &mut Tensor<F>,
    heads: u32,
    scale: f32,
    cap: f32,
    #[comptime] d_head: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq, split);
    let column = at.h * d_head;
    let query = load_share::<F>(
        q,
        head_row::<F>(q, at.b, at.i, column),
        at.part,
        scale,
        share,
        split,
    );
    let mut k_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut v_tile = SharedMemory::<f32>::new(tile * d_head);

    // Key 0 is visible to every query: its logit seeds the running max (any visible logit
    // would do; the max ends as the largest), with nothing summed yet.
    let first_key = head_row::<F>(k, at.b, 0, column);
    let (mut m, _) = soft_cap(
        row_dot::<F>(&query, k, first_key, at.part, share, split),
        cap,
        capped,
    );
    let mut l = 0.0f32;
    let mut acc = zeros(share);
    let visible = if causal { at.i + 1 } else { seq };
    let end = keys_end(at.first, seq, causal);
    let mut start = 0usize;
    while start < end {
        stage::<F>(k, &mut k_tile, at.b, start, column, d_head, tile, loads);
        stage::<F>(v, &mut v_tile, at.b, start, column, d_head, tile, loads);
        sync_cube();
        let count = rows_below(end, start, tile);
        let mut j = 0usize;
        while j < count {
            let offset = j * d_head;
            let (s, _) = soft_cap(
                row_dot_tile(&query, &k_tile, offset, at.part, share, split),
                cap,
                capped,
            );
            if start + j < visible {
                let m_new = f32::max(m, s);
                let keep = f32::exp(m - m_new);
                let p = f32::exp(s - m_new);
                l = l * keep + p;
                scale_add_share(&mut acc, keep, p, &v_tile, offset, at.part, share, split);
                m = m_new;
            }
            j += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        let out = head_row::<F>(output, at.b, at.i, column);
        store_share::<F>(output, out, at.part, &acc, 1.0 / l, share, split);
        if at.part == 0 {
            lse[at.row] = m + f32::ln(l);
            row_max[at.row] = F::cast_from(m);
        }
    }
}

/// The backward for the queries: `dq` and, per row, `Δ = o·do` for the key kernel; `split`
/// units a query row.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_query_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    output: &Tensor<F>,
    grad_output: &Tensor<F>,
    lse: &Tensor<f32>,
    dq: &mut Tensor<F>,
    delta: &mut Tensor<f32>,
    heads: u32,
    scale: f32,
    cap: f32,
    #[comptime] d_head: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq, split);
    let column = at.h * d_head;
    let query = load_share::<F>(
        q,
        head_row::<F>(q, at.b, at.i, column),
        at.part,
        scale,
        share,
        split,
    );
    let out_row = head_row::<F>(grad_output, at.b, at.i, column);
    let dout = load_share::<F>(grad_output, out_row, at.part, 1.0, share, split);
    let output_row = head_row::<F>(output, at.b, at.i, column);
    let d_i = row_dot::<F>(&dout, output, output_row, at.part, share, split);
    let lse_i = lse[at.row];
    let mut k_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut v_tile = SharedMemory::<f32>::new(tile * d_head);

    let mut acc = zeros(share);
    let visible = if causal { at.i + 1 } else { seq };
    let end = keys_end(at.first, seq, causal);
    let mut start = 0usize;
    while start < end {
        stage::<F>(k, &mut k_tile, at.b, start, column, d_head, tile, loads);
        stage::<F>(v, &mut v_tile, at.b, start, column, d_head, tile, loads);
        sync_cube();
        let count = rows_below(end, start, tile);
        let mut j = 0usize;
        while j < count {
            let offset = j * d_head;
            let (s, slope) = soft_cap(
                row_dot_tile(&query, &k_tile, offset, at.part, share, split),
                cap,
                capped,
            );
            let dp = row_dot_tile(&dout, &v_tile, offset, at.part, share, split);
            if start + j < visible {
                let ds = f32::exp(s - lse_i) * (dp - d_i) * slope;
                scale_add_share(&mut acc, 1.0, ds, &k_tile, offset, at.part, share, split);
            }
            j += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        let dq_row = head_row::<F>(dq, at.b, at.i, column);
        store_share::<F>(dq, dq_row, at.part, &acc, scale, share, split);
        if at.part == 0 {
            delta[at.row] = d_i;
        }
    }
}

/// The backward for the keys: `dk` and `dv`; `split` units a key row. Run after
/// [`attention_backward_query_kernel`](fn@attention_backward_query_kernel), whose `delta` it
/// reads.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
pub fn attention_backward_key_kernel<F: Float>(
    q: &Tensor<F>,
    k: &Tensor<F>,
    v: &Tensor<F>,
    grad_output: &Tensor<F>,
    lse: &Tensor<f32>,
    delta: &Tensor<f32>,
    dk: &mut Tensor<F>,
    dv: &mut Tensor<F>,
    heads: u32,
    scale: f32,
    cap: f32,
    #[comptime] d_head: usize,
    #[comptime] share: usize,
    #[comptime] split: usize,
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq, split);
    let column = at.h * d_head;
    let key = load_share::<F>(
        k,
        head_row::<F>(k, at.b, at.i, column),
        at.part,
        scale,
        share,
        split,
    );
    let value = load_share::<F>(
        v,
        head_row::<F>(v, at.b, at.i, column),
        at.part,
        1.0,
        share,
        split,
    );
    let head_start = at.row - at.i;
    let mut q_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut do_tile = SharedMemory::<f32>::new(tile * d_head);

    let mut acc_k = zeros(share);
    let mut acc_v = zeros(share);
    // Causal: no query before the cube's first key sees any of its keys, and the unit's
    // own key is seen from query `at.i` on.
    let mut start = 0usize;
    let mut first_query = 0usize;
    if causal {
        start = at.first;
        first_query = at.i;
    }
    while start < seq {
        stage::<F>(q, &mut q_tile, at.b, start, column, d_head, tile, loads);
        stage::<F>(
            grad_output,
            &mut do_tile,
            at.b,
            start,
            column,
            d_head,
            tile,
            loads,
        );
        sync_cube();
        let count = rows_below(seq, start, tile);
        let mut i = 0usize;
        while i < count {
            let offset = i * d_head;
            let (s, slope) = soft_cap(
                row_dot_tile(&key, &q_tile, offset, at.part, share, split),
                cap,
                capped,
            );
            let dp = row_dot_tile(&value, &do_tile, offset, at.part, share, split);
            if start + i >= first_query {
                let p = f32::exp(s - lse[head_start + start + i]);
                scale_add_share(&mut acc_v, 1.0, p, &do_tile, offset, at.part, share, split);
                let ds = p * (dp - delta[head_start + start + i]) * slope;
                scale_add_share(&mut acc_k, 1.0, ds, &q_tile, offset, at.part, share, split);
            }
            i += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        let dk_row = head_row::<F>(dk, at.b, at.i, column);
        store_share::<F>(dk, dk_row, at.part, &acc_k, scale, share, split);
        let dv_row = head_row::<F>(dv, at.b, at.i, column);
        store_share::<F>(dv, dv_row, at.part, &acc_v, 1.0, share, split);
    }
}
