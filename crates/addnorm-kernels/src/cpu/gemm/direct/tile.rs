//! The direct kernel's loops, written once over an instruction set ([`Isa`]): summation
//! chains of [`KC`] terms, panels of two vectors' columns, micro-tiles of rows, and the
//! join of each chain's sum to C as `matrixmultiply` joins it.
//!
//! # Formula
//! For each chain `k0..k0 + chain` and each micro-tile of rows `i0..i0 + R`, columns
//! `j0..j0 + V·LANES`:
//!
//! ```text
//! p_ij = fma(a_i,k0+chain−1, b_k0+chain−1,j, … fma(a_i,k0, b_k0,j, 0))      k in order
//! C_ij ← join(p_ij, β·C_in_ij)                     first chain (C_in: C itself or a bias)
//! C_ij ← join(p_ij, C_ij)                          later chains (β = 1)
//! ```
//!
//! `join` is [`Isa::join`]: the instruction set's copy of `matrixmultiply`'s epilogue,
//! which differs between the elements inside a whole `TILE × TILE` tile of C and the rest.
//!
//! A tile of `MR` rows whose A has adjacent rows (unit row stride: a weight gradient's
//! `Xᵀ`, each `k` one short run of a row of X) and which meets more than one panel of B
//! first copies its chain of A into a `[chain][MR]` buffer ([`APanel`]): every panel then
//! reads A at constant offsets from one pointer, from L1, instead of walking rows
//! `row_stride` apart (PERFORMANCE.md §29). Copying changes no value, so no bit.
//!
//! # Shapes
//! `A: [m, k]` (any strides), `B: [k, n]` with contiguous rows `b_row` apart, `C: [m, n]`
//! and `C_in: [m, n]` with unit column stride; micro-tiles of `R ≤ Isa::MR` rows × `V ≤ 2`
//! vectors.

use super::super::Strided;
use super::{KC, Operands, copy_runs};

/// One x86 vector instruction set the direct kernel is compiled for: its vector, the
/// lanes a tile's last vector keeps, and `matrixmultiply`'s epilogue on it.
///
/// Every method is `#[inline(always)]` and called only from code inlined into a
/// `#[target_feature]` entry point of the same set ([`super::avx512`], [`super::avx2`]).
pub(super) trait Isa {
    /// A vector of [`Isa::LANES`] f32.
    type V: Copy;
    /// Which lanes of a vector lie in C.
    type Mask: Copy;
    /// f32 lanes per vector; also the side of `matrixmultiply`'s tiles of C on this set
    /// (its `MR = NR`), so a vector starting at a multiple of `LANES` lies in one tile.
    const LANES: usize;

    /// The first `live` lanes (all of them when `live ≥ LANES`).
    unsafe fn mask(live: usize) -> Self::Mask;
    /// A vector of zeros.
    unsafe fn zero() -> Self::V;
    /// `x` in every lane.
    unsafe fn splat(x: f32) -> Self::V;
    /// The lanes of `mask` read from `at`, zero elsewhere (masked-off lanes are not read).
    unsafe fn load(mask: Self::Mask, at: *const f32) -> Self::V;
    /// The lanes of `mask` written to `at`.
    unsafe fn store(at: *mut f32, mask: Self::Mask, v: Self::V);
    /// `a·b + c`, rounded once.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// A chain's sum `p` joined to `C_in` (lanes of `mask` at `at`) as `matrixmultiply`'s
    /// kernel on this set joins it: `at` is not read when `step.beta == 0`; `interior` says
    /// whether the lanes lie in a whole tile of C.
    unsafe fn join(
        p: Self::V,
        at: *const f32,
        mask: Self::Mask,
        step: Step,
        interior: bool,
    ) -> Self::V;
}

/// One summation chain's place in the call: `k0..k0 + chain`, and how it joins C.
#[derive(Clone, Copy)]
pub(super) struct Step {
    /// The chain's first `k`.
    pub k0: usize,
    /// Its length, at most [`KC`].
    pub chain: usize,
    /// `α`.
    pub alpha: f32,
    /// `β` for the first chain, 1 for later ones (they add to what the first left in C).
    pub beta: f32,
}

/// The most rows of a micro-tile ([`Isa`]'s `MR`): the rows an [`APanel`] holds.
const MAX_MR: usize = 12;

/// One row tile's chain of A copied into `[chain][MR]`: element `(r, k0 + t)` at `t·MR + r`.
struct APanel {
    values: [std::mem::MaybeUninit<f32>; KC * MAX_MR],
}

impl APanel {
    fn new() -> Self {
        Self {
            values: [std::mem::MaybeUninit::uninit(); KC * MAX_MR],
        }
    }

    /// Copies rows `i0..i0 + MR` of A (unit row stride) over `step`'s chain; returns the
    /// first element.
    ///
    /// # Safety
    /// The rows and the chain's columns lie in A, whose row stride is 1.
    #[inline(always)]
    unsafe fn fill<const MR: usize>(
        &mut self,
        a: Strided<f32>,
        i0: usize,
        step: Step,
    ) -> *const f32 {
        const { assert!(MR <= MAX_MR) };
        let to = self.values.as_mut_ptr().cast::<f32>();
        // SAFETY: MR adjacent elements of A at (i0, k0 + t) for each t < chain, col_stride
        // apart, per the caller; the buffer holds KC ≥ chain runs of MR.
        unsafe {
            let from = a.ptr.offset(i0 as isize + step.k0 as isize * a.col_stride);
            copy_runs::<MR>(from, a.col_stride, step.chain, to);
        }
        to
    }
}

/// The whole product: `KC`-long chains, panels of `2·LANES` columns, row tiles of `MR`
/// rows (the set's widest micro-tile, `MR > 4`), then 4, 2 and 1 for the last rows.
///
/// # Safety
/// The instruction set `I` must be enabled in the caller, and `ops` as
/// [`super::super::Gemm::gemm`] asks of its views.
#[inline(always)]
pub(super) unsafe fn gemm<I: Isa, const MR: usize>(
    ops: Operands,
    [m, k, n]: [usize; 3],
    alpha: f32,
    beta: f32,
) {
    // Whether the MR-row tiles copy their A first (see the module docs).
    let copy_a = ops.a.row_stride == 1 && n > 2 * I::LANES && m >= MR;
    let mut panel = copy_a.then(APanel::new);
    for k0 in (0..k).step_by(KC) {
        let step = Step {
            k0,
            chain: KC.min(k - k0),
            alpha,
            beta: if k0 == 0 { beta } else { 1.0 },
        };
        // Row tiles outer: a tile's rows of A stay in L1 while every panel of B passes.
        let mut i0 = 0;
        while i0 < m {
            let rows = [MR, 4, 2].into_iter().find(|&r| r <= m - i0).unwrap_or(1);
            let next = next_tile_a::<MR>(ops, step, [i0, rows, m]);
            if rows == MR
                && let Some(panel) = panel.as_mut()
            {
                // SAFETY: rows i0..i0 + MR of A, unit row stride (`copy_a`), lie in C too.
                unsafe { copied_row_tile::<I, MR>(ops, step, [i0, n], panel, next) };
                i0 += rows;
                continue;
            }
            for j0 in (0..n).step_by(2 * I::LANES) {
                let cols = (n - j0).min(2 * I::LANES);
                let next = next.on_panel(j0);
                let (at, a) = (Tile { i0, j0, cols, next }, std::ptr::null());
                // SAFETY (each arm): rows i0..i0 + rows and columns j0..j0 + cols lie in C.
                unsafe {
                    match (rows, cols > I::LANES) {
                        (r, true) if r == MR => tile::<I, MR, 2, false>(ops, step, at, a),
                        (r, false) if r == MR => tile::<I, MR, 1, false>(ops, step, at, a),
                        (4, true) => tile::<I, 4, 2, false>(ops, step, at, a),
                        (4, false) => tile::<I, 4, 1, false>(ops, step, at, a),
                        (2, true) => tile::<I, 2, 2, false>(ops, step, at, a),
                        (2, false) => tile::<I, 2, 1, false>(ops, step, at, a),
                        (_, true) => tile::<I, 1, 2, false>(ops, step, at, a),
                        (_, false) => tile::<I, 1, 1, false>(ops, step, at, a),
                    }
                }
            }
            i0 += rows;
        }
    }
}

/// Rows `i0..i0 + MR` of C over all `n` columns, for one chain, from the tile's A copied
/// into `panel` first (see the module docs).
///
/// # Safety
/// As [`gemm`]; the rows lie in A, whose row stride is 1, and in C.
#[inline(always)]
unsafe fn copied_row_tile<I: Isa, const MR: usize>(
    ops: Operands,
    step: Step,
    [i0, n]: [usize; 2],
    panel: &mut APanel,
    next: NextA,
) {
    // SAFETY: forwarded from the caller.
    let a = unsafe { panel.fill::<MR>(ops.a, i0, step) };
    for j0 in (0..n).step_by(2 * I::LANES) {
        let cols = (n - j0).min(2 * I::LANES);
        let next = next.on_panel(j0);
        let at = Tile { i0, j0, cols, next };
        // SAFETY (both): columns j0..j0 + cols lie in C; `a` holds the tile's chain of A.
        unsafe {
            if cols > I::LANES {
                tile::<I, MR, 2, true>(ops, step, at, a);
            } else {
                tile::<I, MR, 1, true>(ops, step, at, a);
            }
        }
    }
}

/// Asks for the line at `at` in L1 (`prefetcht0`), for a later load. A prefetch never
/// faults, so `at` may lie past B's end (the last rows' look-ahead).
#[inline(always)]
fn prefetch(at: *const f32) {
    // SAFETY: a prefetch reads nothing the program sees and never faults; SSE is part of
    // x86_64.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>())
    }
}

/// Where a micro-tile lies in C: rows `i0..`, columns `j0..j0 + cols`; and the A of the
/// next row tile that its loop asks for ([`NextA`]).
#[derive(Clone, Copy)]
struct Tile {
    i0: usize,
    j0: usize,
    cols: usize,
    next: NextA,
}

/// The next row tile's A, which a tile's loop prefetches for it one line or two a step
/// (`prefetcht0`): `at` is its element `(i0 + MR, k0)`, or null for none.
///
/// A row tile first reads its A where the call's operands come cold (a training step's
/// activations, written long before): `dW`'s panel of `Xᵀ` is short runs of X's rows,
/// `row_stride · 4` bytes apart, and the forward's and `dX`'s tiles read `MR` rows of X or
/// dY side by side. Those reads took most of the weight gradient's extra time cold
/// (PERFORMANCE.md §45). A tile's first panel runs `chain` steps of `2·MR` FMAs, time
/// enough for the next tile's lines to arrive: at step `t` it asks for
/// - A with unit row stride (runs of `MR` down a column of X, copied into an [`APanel`]):
///   both ends of run `t`;
/// - A with unit column stride (rows along `k`): row `t mod MR` at column `t`, so each
///   row is asked for every `MR < 16` columns, every line of it.
///
/// A prefetch changes no value, so no bit.
#[derive(Clone, Copy)]
struct NextA {
    at: *const f32,
    /// Whether A has unit row stride (else unit column stride).
    runs: bool,
}

impl NextA {
    /// No prefetch.
    const NONE: NextA = NextA {
        at: std::ptr::null(),
        runs: false,
    };

    /// What the panel starting at column `j0` asks for: the first panel asks, the others
    /// do not.
    #[inline(always)]
    fn on_panel(self, j0: usize) -> NextA {
        if j0 == 0 { self } else { NextA::NONE }
    }

    /// The lines of step `t` of the next tile (`R` rows), asked for; `row = t mod R`, kept
    /// by the caller's loop (a division per step took an FMA port on Intel). `at` is not
    /// null.
    #[inline(always)]
    fn ask<const R: usize>(self, a: Strided<f32>, t: usize, row: usize) {
        let t = t as isize;
        if self.runs {
            let run = self.at.wrapping_offset(t * a.col_stride);
            prefetch(run);
            prefetch(run.wrapping_add(R - 1));
        } else {
            prefetch(self.at.wrapping_offset(row as isize * a.row_stride + t));
        }
    }
}

/// [`NextA`] for the row tile after rows `i0..i0 + rows` of `m`, over `step`'s chain:
/// none unless this tile and the next are whole `MR`-row tiles of an A with a unit stride.
#[inline(always)]
fn next_tile_a<const MR: usize>(ops: Operands, step: Step, [i0, rows, m]: [usize; 3]) -> NextA {
    let a = ops.a;
    let runs = a.row_stride == 1;
    if rows != MR || i0 + 2 * MR > m || !(runs || a.col_stride == 1) {
        return NextA::NONE;
    }
    let at = a
        .ptr
        .wrapping_offset((i0 + MR) as isize * a.row_stride + step.k0 as isize * a.col_stride);
    NextA { at, runs }
}

/// `R × (V·LANES)` elements of C from rows `i0..i0 + R` and columns `j0..j0 + cols`
/// (`cols ≤ V·LANES`). With `COPIED`, A's chain is read from `a` (an [`APanel`] of `R`
/// rows), else from A itself (`a` unused).
///
/// # Safety
/// As [`gemm`]; the rows and columns lie in C.
#[inline(always)]
unsafe fn tile<I: Isa, const R: usize, const V: usize, const COPIED: bool>(
    ops: Operands,
    step: Step,
    at: Tile,
    a: *const f32,
) {
    // A tile of whole vectors gets a copy whose masks are constants, so that its loads
    // and stores are plain ones (AVX2's masked loads are slower, and their masks took
    // registers from the accumulators).
    // SAFETY (both): forwarded from the caller.
    if at.cols == V * I::LANES {
        unsafe { tile_of::<I, R, V, true, COPIED>(ops, step, at, a) }
    } else {
        unsafe { tile_of::<I, R, V, false, COPIED>(ops, step, at, a) }
    }
}

/// [`tile`], with `WHOLE` saying that `cols = V·LANES`.
///
/// # Safety
/// As [`tile`].
#[inline(always)]
unsafe fn tile_of<I: Isa, const R: usize, const V: usize, const WHOLE: bool, const COPIED: bool>(
    ops: Operands,
    step: Step,
    Tile { i0, j0, cols, next }: Tile,
    copied: *const f32,
) {
    let cols = if WHOLE { V * I::LANES } else { cols };
    // SAFETY: `super::takes` refuses k = 0, so every chain has at least one term. Said so,
    // the compiler keeps the accumulators in registers from the first FMA; without it, it
    // zeroed a copy of them on the stack with a `memset` call per tile, for the case of no
    // terms (3.7% of a d128/T128 step's samples).
    unsafe { std::hint::assert_unchecked(step.chain > 0) };
    // SAFETY (every block): the caller enabled I; every address is (row, k) of A, (k,
    // column) of B or (row, column) of C or C_in inside the call's views, and masked-off
    // lanes are neither read nor written.
    let masks: [I::Mask; V] =
        std::array::from_fn(|v| unsafe { I::mask(cols.saturating_sub(v * I::LANES)) });
    let a = ops.a;
    // A copied: rows 1 apart and chains of R, constants, so each row's load has a fixed
    // offset from one pointer.
    let a_k = if COPIED {
        (copied, 1_isize, R as isize)
    } else {
        // SAFETY: (i0, k0) lies in A.
        let first = unsafe {
            a.ptr
                .offset(i0 as isize * a.row_stride + step.k0 as isize * a.col_stride)
        };
        (first.cast_const(), a.row_stride, a.col_stride)
    };
    // j0 is a multiple of the panel width.
    let panel = (j0 / (2 * I::LANES)) as isize * ops.b_panel;
    // SAFETY: row k0 of the tile's panel lies in B.
    let b_k = unsafe { ops.b.offset(step.k0 as isize * ops.b_row + panel) };
    let b = (b_k, ops.b_row, ops.b_ahead);
    // Each loop does only the per-step work it needs: the next tile's A in the first
    // panel's, B's rows ahead where B is large.
    // SAFETY (each): forwarded from the caller, with `next` not null where asked.
    let acc = unsafe {
        // Only whole row tiles (`MR > 4` rows) ask for the next one's A (`next_tile_a`).
        match (R > 4 && !next.at.is_null(), ops.b_ahead != 0) {
            (true, _) => chain::<I, R, V, true, true>(a_k, b, masks, (step, next, a)),
            (false, true) => chain::<I, R, V, false, true>(a_k, b, masks, (step, next, a)),
            (false, false) => chain::<I, R, V, false, false>(a_k, b, masks, (step, next, a)),
        }
    };
    for (r, acc) in acc.iter().enumerate() {
        // Whether row i0 + r lies in a whole tile's rows; vector v (LANES-aligned, as
        // `matrixmultiply`'s column tiles are) in a whole tile's columns.
        let whole_rows = ((i0 + r) / I::LANES + 1) * I::LANES <= ops.m;
        for v in 0..V {
            let interior = whole_rows && cols >= (v + 1) * I::LANES;
            let (row, col) = ((i0 + r) as isize, (j0 + v * I::LANES) as isize);
            unsafe {
                let at = ops.c.offset(row * ops.c_row + col);
                // The first chain joins C_in; later ones what the first left in C.
                let from = if step.k0 == 0 {
                    ops.c_in.offset(row * ops.c_in_row + col)
                } else {
                    at
                };
                let out = I::join(acc[v], from, masks[v], step, interior);
                I::store(at, masks[v], out);
            }
        }
    }
}

/// One chain's sums, a vector per row of the tile and vector of its panel: at step `t`,
/// B's row `k0 + t` (from `b_k`, rows `b_row` apart) times A's column `k0 + t` (from
/// `a_k`: rows `a_row` apart, steps `a_step` apart), as [`tile_of`]'s formula.
///
/// With `ASK` the loop also asks for the next row tile's A ([`NextA`], not null there);
/// with `AHEAD`, for B's row `b_ahead` elements on (under `ASK`, `b_ahead` may be 0: the
/// line about to be read). The tests and the division these took in every step of one
/// shared loop ran on the ports of Intel's two FMA units: with a loop for each case, the
/// d128 model's products ran 3–8% faster on an Emerald Rapids core (PERFORMANCE.md §46).
///
/// # Safety
/// As [`tile_of`]: every `(row, k)` of A and `(k, column)` of B the chain reads lies in
/// the call's views; the CPU has `I`.
#[inline(always)]
unsafe fn chain<I: Isa, const R: usize, const V: usize, const ASK: bool, const AHEAD: bool>(
    (mut a_k, a_row, a_step): (*const f32, isize, isize),
    (mut b_k, b_row, b_ahead): (*const f32, isize, isize),
    masks: [I::Mask; V],
    (step, next, a): (Step, NextA, Strided<f32>),
) -> [[I::V; V]; R] {
    // SAFETY: the caller's CPU has I.
    let mut acc = [[unsafe { I::zero() }; V]; R];
    let mut row = 0;
    for t in 0..step.chain {
        if ASK {
            next.ask::<R>(a, t, row);
            row = if row + 1 == R { 0 } else { row + 1 };
        }
        if AHEAD {
            for v in 0..V {
                prefetch(b_k.wrapping_offset(b_ahead).wrapping_add(v * I::LANES));
            }
        }
        // SAFETY: as the caller's; masked-off lanes are not read.
        unsafe {
            let bv: [I::V; V] = std::array::from_fn(|v| I::load(masks[v], b_k.add(v * I::LANES)));
            for (r, acc) in acc.iter_mut().enumerate() {
                let av = I::splat(*a_k.offset(r as isize * a_row));
                for v in 0..V {
                    acc[v] = I::fmadd(av, bv[v], acc[v]);
                }
            }
        }
        a_k = a_k.wrapping_offset(a_step);
        b_k = b_k.wrapping_offset(b_row);
    }
    acc
}
