//! What the CubeCL attention kernels share: where a cube and its units sit in the heads,
//! rows of `[batch, T, d_model]` tensors, staging a tile of rows in shared memory, and the
//! logit soft cap.
//!
//! # Formula
//! - cube `(x, y)` takes rows `x·ROWS .. x·ROWS + ROWS` of head `y = b·heads + h`, `split`
//!   consecutive units a row: unit `u` has row `x·ROWS + u / split` and part `u mod split`
//! - a staged tile holds rows `start .. start + tile` of one head, `staged[r·d_head + d]`
//! - soft cap: `s ← c·tanh(s/c)`, slope `1 − tanh²(s/c)`
//!
//! # Shapes
//! - tensors `[batch, T, d_model]`, any strides; head `h` is columns `h·d_head ..`
//! - a staged tile `[tile, d_head]`, f32, in shared memory

// The `#[cube]` expansions carry no doc comments of their own; the functions' docs are
// on the functions below.
#![allow(missing_docs)]

use cubecl::prelude::*;

/// Rows (query rows forward and for dQ, key rows for dK/dV) per cube.
pub const ROWS: usize = 64;

/// The unit's place: batch element `b`, head `h`, its row `i` of the head, whether
/// `i < T` (units past the end stage tiles but store nothing), and which of its row's
/// units it is.
#[derive(CubeType, Clone, Copy)]
pub struct HeadBlock {
    /// Batch element.
    pub b: usize,
    /// Head.
    pub h: usize,
    /// The cube's first row.
    pub first: usize,
    /// The unit's row (clamped to `T − 1` for a unit past the end, so reads stay inside).
    pub i: usize,
    /// Whether the unit's row exists.
    pub active: bool,
    /// The unit's index into `lse`, `Δ` and `row_max`: `(b·heads + h)·T + i`.
    pub row: usize,
    /// Which of the row's `split` units this is (0 with one unit per row).
    pub part: usize,
}

/// The unit's [`HeadBlock`]: cube `(x, y)` holds rows `x·ROWS ..` of head
/// `y = b·heads + h`, `split` consecutive units a row.
#[cube]
pub fn head_block(heads: usize, seq: usize, #[comptime] split: usize) -> HeadBlock {
    let bh = CUBE_POS_Y as usize;
    let first = CUBE_POS_X as usize * ROWS;
    let unit = UNIT_POS_X as usize;
    let unit_row = first + unit / split;
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
        part: unit % split,
    }
}

/// How many of a tile's `tile` rows from `start` lie below `limit`.
#[cube]
pub fn rows_below(limit: usize, start: usize, #[comptime] tile: usize) -> usize {
    let mut count = 0usize;
    if limit > start {
        count = limit - start;
        if count > tile {
            count = tile;
        }
    }
    count
}

/// One past the last key the cube's query rows see: `T`, or when `causal` one past its
/// last row.
#[cube]
pub fn keys_end(first: usize, seq: usize, #[comptime] causal: bool) -> usize {
    let mut end = seq;
    if causal {
        // No row of the cube sees a key past its last row.
        if first + ROWS < seq {
            end = first + ROWS;
        }
    }
    end
}

/// Where one head's row starts in a `[batch, T, d_model]` tensor, and its column stride.
#[derive(CubeType, Clone, Copy)]
pub struct HeadRow {
    /// The offset of element `(b, i, h·d_head)`.
    pub start: usize,
    /// The stride between consecutive features.
    pub step: usize,
}

/// Row `i` of head `h` (columns from `column`) of batch element `b` in `t`.
#[cube]
pub fn head_row<F: Float>(t: &Tensor<F>, b: usize, i: usize, column: usize) -> HeadRow {
    HeadRow {
        start: b * t.stride(0) + i * t.stride(1) + column * t.stride(2),
        step: t.stride(2),
    }
}

/// Copies rows `start .. start + tile` of head columns `column ..` of batch element `b` of
/// `t` into `staged` (`[tile, d_head]`, f32; rows past `T` as zeros). Every unit of the cube
/// takes `loads ≥ tile·d_head / units` elements, consecutive units consecutive features, so
/// the reads coalesce.
/// The caller syncs the cube before (nobody still reads `staged`) and after.
#[cube]
#[allow(clippy::too_many_arguments)]
pub fn stage<F: Float>(
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
        let e = unit + load * CUBE_DIM_X as usize;
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
pub fn soft_cap(raw: f32, cap: f32, #[comptime] capped: bool) -> (f32, f32) {
    let mut s = raw;
    let mut slope = 1.0f32;
    if capped {
        let t = f32::tanh(raw / cap);
        s = cap * t;
        slope = 1.0 - t * t;
    }
    (s, slope)
}
