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
//! One unit per row (query row forward and for dQ, key row for dK/dV), [`ROWS`] = 64 rows
//! of one head a cube: cube `(x, y)` takes rows `x·64 .. x·64 + 64` of head
//! `y = b·heads + h`. A unit keeps its row's `d_head` values and accumulators in local
//! arrays (`d_head` is a compile-time constant, at most [`super::launch::MAX_D_HEAD`]).
//! The rows it pairs with (keys and values for a query, queries and output gradients for
//! a key) pass through shared memory `tile` rows at a time: the cube stages a tile with
//! coalesced loads, syncs, and every unit then walks the tile's rows it sees, reading them
//! as broadcasts. Global memory is read once per cube instead of once per unit, which is
//! what a GPU needs (one unit per row reading its keys from global memory ran 28× slower
//! than PyTorch's SDPA at T = 1024 on an H100). `tile = clamp(2048 / d_head, 1, 64)`, so
//! two staged tiles fill at most 16 KiB, the least any Vulkan or WebGPU device offers.
//! Causal cubes stop at their last row's keys (forward, dQ) or start at their first key's
//! queries (dK, dV).
//!
//! The loops over the `d_head` features are unrolled: the arrays then live in registers
//! on a GPU, and the only run-time loops are the ones over tiles and their rows, so the
//! dot products' four interleaved partial sums are independent chains. Unrolling matters
//! on Mesa's llvmpipe too, which stops any shader loop after 65 535 iterations *in
//! total*: with rolled feature loops, rows past `i ≈ 65 536 / (2·d_head)` came out wrong
//! (found by the T = 1000, `d_head` = 64 fixture). The key kernel owns its dK and dV rows
//! outright, so no unit writes where another does: no atomics, and nothing of size `T²`
//! is ever stored.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`, `grad_output`, `dq`, `dk`, `dv`: `[batch, T, d_model]`, any
//!   strides; head `h` is columns `h·d_head .. (h+1)·d_head`
//! - `lse`, `delta`, `row_max`: `[batch·heads·T]`, contiguous (`row_max` in `F`)

// `#[cube(launch)]` generates a launch function and a kernel struct per kernel, which carry
// no doc comments of their own; the kernels' docs are on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

/// Rows (query rows forward and for dQ, key rows for dK/dV) per cube: one unit each.
pub const ROWS: usize = 64;

/// The cube's place: batch element `b`, head `h`, the unit's row `i` of the head, and
/// whether `i < T` (units past the end stage tiles but store nothing).
#[derive(CubeType, Clone, Copy)]
pub struct HeadBlock {
    /// Batch element.
    b: usize,
    /// Head.
    h: usize,
    /// The cube's first row.
    first: usize,
    /// The unit's row (clamped to `T − 1` for a unit past the end, so reads stay inside).
    i: usize,
    /// Whether the unit's row exists.
    active: bool,
    /// The unit's index into `lse`, `Δ` and `row_max`: `(b·heads + h)·T + i`.
    row: usize,
}

/// The cube's [`HeadBlock`]: cube `(x, y)` holds rows `x·ROWS ..` of head `y = b·heads + h`.
#[cube]
fn head_block(heads: usize, seq: usize) -> HeadBlock {
    let bh = CUBE_POS_Y as usize;
    let first = CUBE_POS_X as usize * ROWS;
    let unit_row = first + UNIT_POS_X as usize;
    let active = unit_row < seq;
    let mut i = unit_row;
    if !active {
        i = seq - 1;
    }
    HeadBlock {
        b: bh / heads,
        h: bh % heads,
        first,
        i,
        active,
        row: bh * seq + i,
    }
}

/// How many of a tile's `tile` rows from `start` lie below `limit`.
#[cube]
fn rows_below(limit: usize, start: usize, #[comptime] tile: usize) -> usize {
    let mut count = 0usize;
    if limit > start {
        count = limit - start;
        if count > tile {
            count = tile;
        }
    }
    count
}

/// Where one head's row starts in a `[batch, T, d_model]` tensor, and its column stride.
#[derive(CubeType, Clone, Copy)]
pub struct HeadRow {
    /// The offset of element `(b, i, h·d_head)`.
    start: usize,
    /// The stride between consecutive features.
    step: usize,
}

/// Row `i` of head `h` (columns from `column`) of batch element `b` in `t`.
#[cube]
fn head_row<F: Float>(t: &Tensor<F>, b: usize, i: usize, column: usize) -> HeadRow {
    HeadRow {
        start: b * t.stride(0) + i * t.stride(1) + column * t.stride(2),
        step: t.stride(2),
    }
}

/// The row's `d_head` values, times `factor`, into a fresh local array.
#[cube]
fn load<F: Float>(
    t: &Tensor<F>,
    row: HeadRow,
    factor: f32,
    #[comptime] d_head: usize,
) -> Array<f32> {
    let mut values = Array::<f32>::new(d_head);
    #[unroll]
    for d in 0..d_head {
        values[d] = f32::cast_from(t[row.start + d * row.step]) * factor;
    }
    values
}

/// A fresh local array of `d_head` zeros.
#[cube]
fn zeros(#[comptime] d_head: usize) -> Array<f32> {
    let mut values = Array::<f32>::new(d_head);
    #[unroll]
    for d in 0..d_head {
        values[d] = 0.0;
    }
    values
}

/// `Σ_d a[d]·t[row, d]`, from global memory.
#[cube]
fn dot<F: Float>(a: &Array<f32>, t: &Tensor<F>, row: HeadRow, #[comptime] d_head: usize) -> f32 {
    let mut sum = 0.0f32;
    #[unroll]
    for d in 0..d_head {
        sum += a[d] * f32::cast_from(t[row.start + d * row.step]);
    }
    sum
}

/// `Σ_d a[d]·tile[offset + d]`, in four interleaved partial sums (independent chains a GPU
/// can overlap), added pairwise at the end.
#[cube]
fn dot_tile(
    a: &Array<f32>,
    tile: &SharedMemory<f32>,
    offset: usize,
    #[comptime] d_head: usize,
) -> f32 {
    let mut lanes = Array::<f32>::new(4usize);
    #[unroll]
    for lane in 0..4usize {
        lanes[lane] = 0.0;
    }
    #[unroll]
    for d in 0..d_head {
        lanes[d % 4usize] += a[d] * tile[offset + d];
    }
    (lanes[0usize] + lanes[1usize]) + (lanes[2usize] + lanes[3usize])
}

/// `acc[d] = acc[d]·keep + weight·tile[offset + d]`.
#[cube]
fn scale_add_tile(
    acc: &mut Array<f32>,
    keep: f32,
    weight: f32,
    tile: &SharedMemory<f32>,
    offset: usize,
    #[comptime] d_head: usize,
) {
    #[unroll]
    for d in 0..d_head {
        acc[d] = acc[d] * keep + weight * tile[offset + d];
    }
}

/// `t[row, d] = acc[d]·factor`.
#[cube]
fn store<F: Float>(
    t: &mut Tensor<F>,
    row: HeadRow,
    acc: &Array<f32>,
    factor: f32,
    #[comptime] d_head: usize,
) {
    #[unroll]
    for d in 0..d_head {
        t[row.start + d * row.step] = F::cast_from(acc[d] * factor);
    }
}

/// Copies rows `start .. start + tile` of head columns `column ..` of batch element `b` of
/// `t` into `staged` (`[tile, d_head]`, f32; rows past `T` as zeros). Every unit of the cube
/// takes `loads` elements, consecutive units consecutive features, so the reads coalesce.
/// The caller syncs the cube before (nobody still reads `staged`) and after.
#[cube]
#[allow(clippy::too_many_arguments)]
fn stage<F: Float>(
    t: &Tensor<F>,
    staged: &mut SharedMemory<f32>,
    b: usize,
    start: usize,
    column: usize,
    #[comptime] d_head: usize,
    #[comptime] tile: usize,
    #[comptime] loads: usize,
) {
    let seq = t.shape(1);
    let unit = UNIT_POS_X as usize;
    let base = b * t.stride(0) + column * t.stride(2);
    #[unroll]
    for load in 0..loads {
        let e = unit + load * ROWS;
        if e < tile * d_head {
            let key = start + e / d_head;
            let mut value = 0.0f32;
            if key < seq {
                value = f32::cast_from(t[base + key * t.stride(1) + (e % d_head) * t.stride(2)]);
            }
            staged[e] = value;
        }
    }
}

/// A logit through the soft cap `c·tanh(s/c)`, with the cap's slope `1 − tanh²(s/c)`;
/// `(s, 1)` unchanged when not `capped`.
#[cube]
fn soft_cap(raw: f32, cap: f32, #[comptime] capped: bool) -> (f32, f32) {
    let mut s = raw;
    let mut slope = 1.0f32;
    if capped {
        let t = f32::tanh(raw / cap);
        s = cap * t;
        slope = 1.0 - t * t;
    }
    (s, slope)
}

/// The forward: `output`, and per row `lse` and the largest logit `row_max`. One unit per
/// query row, [`ROWS`] a cube; the keys and values its rows see pass through shared memory
/// `tile` rows at a time (see the [module docs](self)).
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
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq);
    let column = at.h * d_head;
    let query = load::<F>(q, head_row::<F>(q, at.b, at.i, column), scale, d_head);
    let mut k_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut v_tile = SharedMemory::<f32>::new(tile * d_head);

    // Key 0 is visible to every query: its logit seeds the running max (any visible logit
    // would do; the max ends as the largest), with nothing summed yet.
    let (mut m, _) = soft_cap(
        dot::<F>(&query, k, head_row::<F>(k, at.b, 0, column), d_head),
        cap,
        capped,
    );
    let mut l = 0.0f32;
    let mut acc = zeros(d_head);
    let visible = if causal { at.i + 1 } else { seq };
    let mut end = seq;
    if causal {
        // No row of the cube sees a key past its last row.
        if at.first + ROWS < seq {
            end = at.first + ROWS;
        }
    }
    let mut start = 0usize;
    while start < end {
        stage::<F>(k, &mut k_tile, at.b, start, column, d_head, tile, loads);
        stage::<F>(v, &mut v_tile, at.b, start, column, d_head, tile, loads);
        sync_cube();
        let count = rows_below(visible, start, tile);
        let mut j = 0usize;
        while j < count {
            let (s, _) = soft_cap(dot_tile(&query, &k_tile, j * d_head, d_head), cap, capped);
            let m_new = f32::max(m, s);
            let keep = f32::exp(m - m_new);
            let p = f32::exp(s - m_new);
            l = l * keep + p;
            scale_add_tile(&mut acc, keep, p, &v_tile, j * d_head, d_head);
            m = m_new;
            j += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        let out = head_row::<F>(output, at.b, at.i, column);
        store::<F>(output, out, &acc, 1.0 / l, d_head);
        lse[at.row] = m + f32::ln(l);
        row_max[at.row] = F::cast_from(m);
    }
}

/// The backward for the queries: `dq` and, per row, `Δ = o·do` for the key kernel. One unit
/// per query row; keys and values staged as in the forward.
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
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq);
    let column = at.h * d_head;
    let query = load::<F>(q, head_row::<F>(q, at.b, at.i, column), scale, d_head);
    let dout = load::<F>(
        grad_output,
        head_row::<F>(grad_output, at.b, at.i, column),
        1.0,
        d_head,
    );
    let d_i = dot::<F>(
        &dout,
        output,
        head_row::<F>(output, at.b, at.i, column),
        d_head,
    );
    let lse_i = lse[at.row];
    let mut k_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut v_tile = SharedMemory::<f32>::new(tile * d_head);

    let mut acc = zeros(d_head);
    let visible = if causal { at.i + 1 } else { seq };
    let mut end = seq;
    if causal {
        // No row of the cube sees a key past its last row.
        if at.first + ROWS < seq {
            end = at.first + ROWS;
        }
    }
    let mut start = 0usize;
    while start < end {
        stage::<F>(k, &mut k_tile, at.b, start, column, d_head, tile, loads);
        stage::<F>(v, &mut v_tile, at.b, start, column, d_head, tile, loads);
        sync_cube();
        let count = rows_below(visible, start, tile);
        let mut j = 0usize;
        while j < count {
            let offset = j * d_head;
            let (s, slope) = soft_cap(dot_tile(&query, &k_tile, offset, d_head), cap, capped);
            let p = f32::exp(s - lse_i);
            let dp = dot_tile(&dout, &v_tile, offset, d_head);
            scale_add_tile(
                &mut acc,
                1.0,
                p * (dp - d_i) * slope,
                &k_tile,
                offset,
                d_head,
            );
            j += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        store::<F>(
            dq,
            head_row::<F>(dq, at.b, at.i, column),
            &acc,
            scale,
            d_head,
        );
        delta[at.row] = d_i;
    }
}

/// The backward for the keys: `dk` and `dv`. One unit per key row; the queries and output
/// gradients that see its keys are staged `tile` rows at a time. Run after
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
    #[comptime] tile: usize,
    #[comptime] loads: usize,
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let seq = q.shape(1);
    let at = head_block(heads as usize, seq);
    let column = at.h * d_head;
    let key = load::<F>(k, head_row::<F>(k, at.b, at.i, column), scale, d_head);
    let value = load::<F>(v, head_row::<F>(v, at.b, at.i, column), 1.0, d_head);
    let head_start = at.row - at.i;
    let mut q_tile = SharedMemory::<f32>::new(tile * d_head);
    let mut do_tile = SharedMemory::<f32>::new(tile * d_head);

    let mut acc_k = zeros(d_head);
    let mut acc_v = zeros(d_head);
    // Causal: no query before the cube's first key sees any of its keys.
    let mut start = 0usize;
    if causal {
        start = at.first;
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
        // Causal: the unit's key is seen from query `at.i` on.
        let mut first_query = 0usize;
        if causal {
            first_query = at.i;
        }
        let mut i = 0usize;
        if first_query > start {
            i = first_query - start;
        }
        while i < count {
            let offset = i * d_head;
            let (s, slope) = soft_cap(dot_tile(&key, &q_tile, offset, d_head), cap, capped);
            let p = f32::exp(s - lse[head_start + start + i]);
            scale_add_tile(&mut acc_v, 1.0, p, &do_tile, offset, d_head);
            let dp = dot_tile(&value, &do_tile, offset, d_head);
            let ds = p * (dp - delta[head_start + start + i]) * slope;
            scale_add_tile(&mut acc_k, 1.0, ds, &q_tile, offset, d_head);
            i += 1;
        }
        sync_cube();
        start += tile;
    }
    if at.active {
        store::<F>(
            dk,
            head_row::<F>(dk, at.b, at.i, column),
            &acc_k,
            scale,
            d_head,
        );
        store::<F>(
            dv,
            head_row::<F>(dv, at.b, at.i, column),
            &acc_v,
            1.0,
            d_head,
        );
    }
}
