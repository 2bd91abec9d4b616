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
//! One unit per row (query row forward and for dQ, key row for dK/dV), rows numbered
//! `(b·heads + h)·T + i`, 64 units a cube. A unit keeps its row's `d_head` values and
//! accumulators in local arrays (`d_head` is a compile-time constant, at most
//! [`super::launch::MAX_D_HEAD`]) and loops over the keys (or queries) it pairs with.
//! The loops over the `d_head` features are unrolled: the arrays then live in registers
//! on a GPU, and the only run-time loop is the one over keys. That matters on Mesa's
//! llvmpipe too, which stops any shader loop after 65 535 iterations *in total*: with
//! rolled feature loops, rows past `i ≈ 65 536 / (2·d_head)` came out wrong (found by
//! the T = 1000, `d_head` = 64 fixture). Unrolled, the limit is `T ≤ 65 535` on llvmpipe. The
//! key kernel owns its dK and dV rows outright, so no unit writes where another does: no
//! atomics, and nothing of size `T²` is ever stored.
//!
//! # Shapes
//! - `q`, `k`, `v`, `output`, `grad_output`, `dq`, `dk`, `dv`: `[batch, T, d_model]`, any
//!   strides; head `h` is columns `h·d_head .. (h+1)·d_head`
//! - `lse`, `delta`, `row_max`: `[batch·heads·T]`, contiguous (`row_max` in `F`)

// `#[cube(launch)]` generates a launch function and a kernel struct per kernel, which carry
// no doc comments of their own; the kernels' docs are on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

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

/// `Σ_d a[d]·t[row, d]`.
#[cube]
fn dot<F: Float>(a: &Array<f32>, t: &Tensor<F>, row: HeadRow, #[comptime] d_head: usize) -> f32 {
    let mut sum = 0.0f32;
    #[unroll]
    for d in 0..d_head {
        sum += a[d] * f32::cast_from(t[row.start + d * row.step]);
    }
    sum
}

/// `acc[d] = acc[d]·keep + weight·t[row, d]`.
#[cube]
fn scale_add<F: Float>(
    acc: &mut Array<f32>,
    keep: f32,
    weight: f32,
    t: &Tensor<F>,
    row: HeadRow,
    #[comptime] d_head: usize,
) {
    #[unroll]
    for d in 0..d_head {
        acc[d] = acc[d] * keep + weight * f32::cast_from(t[row.start + d * row.step]);
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

/// The unit's `(b, h, i)` from its row number `(b·heads + h)·T + i`.
#[cube]
fn row_position(row: usize, heads: usize, seq: usize) -> (usize, usize, usize) {
    let i = row % seq;
    let bh = row / seq;
    (bh / heads, bh % heads, i)
}

/// The forward: `output`, and per row `lse` and the largest logit `row_max`. One unit per
/// query row (see the [module docs](self)).
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
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= lse.len() {
        terminate!();
    }
    let seq = q.shape(1);
    let (b, h, i) = row_position(row, heads as usize, seq);
    let column = h * d_head;
    let query = load::<F>(q, head_row::<F>(q, b, i, column), scale, d_head);

    // Key 0 is visible to every query: it seeds the running max, sum and output.
    let (mut m, _) = soft_cap(
        dot::<F>(&query, k, head_row::<F>(k, b, 0, column), d_head),
        cap,
        capped,
    );
    let mut l = 1.0f32;
    let mut acc = load::<F>(v, head_row::<F>(v, b, 0, column), 1.0, d_head);
    let visible = if causal { i + 1 } else { seq };
    let mut j = 1usize;
    while j < visible {
        let (s, _) = soft_cap(
            dot::<F>(&query, k, head_row::<F>(k, b, j, column), d_head),
            cap,
            capped,
        );
        let m_new = f32::max(m, s);
        let keep = f32::exp(m - m_new);
        let p = f32::exp(s - m_new);
        l = l * keep + p;
        scale_add::<F>(&mut acc, keep, p, v, head_row::<F>(v, b, j, column), d_head);
        m = m_new;
        j += 1;
    }
    store::<F>(
        output,
        head_row::<F>(output, b, i, column),
        &acc,
        1.0 / l,
        d_head,
    );
    lse[row] = m + f32::ln(l);
    row_max[row] = F::cast_from(m);
}

/// The backward for the queries: `dq` and, per row, `Δ = o·do` for the key kernel. One unit
/// per query row.
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
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= lse.len() {
        terminate!();
    }
    let seq = q.shape(1);
    let (b, h, i) = row_position(row, heads as usize, seq);
    let column = h * d_head;
    let query = load::<F>(q, head_row::<F>(q, b, i, column), scale, d_head);
    let dout = load::<F>(
        grad_output,
        head_row::<F>(grad_output, b, i, column),
        1.0,
        d_head,
    );
    let d_i = dot::<F>(&dout, output, head_row::<F>(output, b, i, column), d_head);
    let lse_i = lse[row];

    let mut acc = Array::<f32>::new(d_head);
    #[unroll]
    for d in 0..d_head {
        acc[d] = 0.0;
    }
    let visible = if causal { i + 1 } else { seq };
    let mut j = 0usize;
    while j < visible {
        let key = head_row::<F>(k, b, j, column);
        let (s, slope) = soft_cap(dot::<F>(&query, k, key, d_head), cap, capped);
        let p = f32::exp(s - lse_i);
        let dp = dot::<F>(&dout, v, head_row::<F>(v, b, j, column), d_head);
        scale_add::<F>(&mut acc, 1.0, p * (dp - d_i) * slope, k, key, d_head);
        j += 1;
    }
    store::<F>(dq, head_row::<F>(dq, b, i, column), &acc, scale, d_head);
    delta[row] = d_i;
}

/// The backward for the keys: `dk` and `dv`. One unit per key row; run after
/// [`attention_backward_query_kernel`](fn@attention_backward_query_kernel), whose `delta` it reads.
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
    #[comptime] causal: bool,
    #[comptime] capped: bool,
    #[define(F)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= lse.len() {
        terminate!();
    }
    let seq = q.shape(1);
    let (b, h, j) = row_position(row, heads as usize, seq);
    let column = h * d_head;
    let key = load::<F>(k, head_row::<F>(k, b, j, column), scale, d_head);
    let value = load::<F>(v, head_row::<F>(v, b, j, column), 1.0, d_head);
    let head_start = row - j;

    let mut acc_k = Array::<f32>::new(d_head);
    let mut acc_v = Array::<f32>::new(d_head);
    #[unroll]
    for d in 0..d_head {
        acc_k[d] = 0.0;
        acc_v[d] = 0.0;
    }
    let mut i = 0usize;
    if causal {
        i = j;
    }
    while i < seq {
        let query = head_row::<F>(q, b, i, column);
        let dout = head_row::<F>(grad_output, b, i, column);
        let (s, slope) = soft_cap(dot::<F>(&key, q, query, d_head), cap, capped);
        let p = f32::exp(s - lse[head_start + i]);
        scale_add::<F>(&mut acc_v, 1.0, p, grad_output, dout, d_head);
        let dp = dot::<F>(&value, grad_output, dout, d_head);
        scale_add::<F>(
            &mut acc_k,
            1.0,
            p * (dp - delta[head_start + i]) * slope,
            q,
            query,
            d_head,
        );
        i += 1;
    }
    store::<F>(dk, head_row::<F>(dk, b, j, column), &acc_k, scale, d_head);
    store::<F>(dv, head_row::<F>(dv, b, j, column), &acc_v, 1.0, d_head);
}
