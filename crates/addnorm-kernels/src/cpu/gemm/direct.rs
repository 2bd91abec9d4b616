//! A GEMM without packing, for the small and thin products of small models: attention's
//! per-head products (`[17, 16]·[16, 17]` in the demo's model) and projections whose inner
//! or outer width is 16–128. It computes the same bits as `matrixmultiply`'s `sgemm`, which
//! [`super::Gemm`] calls for every other product, so which of the two ran never shows in a
//! result.
//!
//! `matrixmultiply` copies ("packs") A and B into tiles before its micro-kernel runs. At
//! these widths each packed element feeds only 16–128 multiply-adds, so the packing and the
//! per-call set-up cost about as much as the arithmetic (PERFORMANCE.md §11). Here the
//! micro-kernel reads A where it lies (one broadcast per element and row) and B's rows
//! where they lie when they are contiguous; only a B with strided rows (`Wᵀ`, `Kᵀ`) is
//! copied first, `k × n` elements against the `m × k × n` multiply-adds it feeds.
//!
//! # Formula
//! `C ← α·A·B + β·C`, each element the way `matrixmultiply`'s AVX-512 kernel forms it: the
//! products are summed in `k` order by fused multiply-adds from zero, in chains of at most
//! [`KC`] terms (its `kc` block). The first chain `p₁` gives `C ← β·C + α·p₁` (just `α·p₁`
//! when `β = 0`, without reading C), each later chain `C ← C + α·pᵢ`. `β·C` and `α·p` are
//! each rounded once, and so is their sum; but inside a whole 16 × 16 tile of C (`MR = NR =
//! 16` there) `α·p + β·C` is one fused multiply-add, so no rounding of `α·p` of its own.
//! With `α = 1` the two agree.
//!
//! `sgemm_onto` reads the first chain's `β·C` from another matrix `C_in` (a linear layer's
//! bias, its rows 0 apart): `C ← α·A·B + 1·C_in`, the bits of copying `C_in` into C first.
//!
//! # Shapes
//! `A: [m, k]` (any strides), `B: [k, n]`, `C: [m, n]` with unit column stride; micro-tiles
//! of up to 12 rows × 32 columns (24 AVX-512 accumulators).

use super::Strided;
use crate::cpu::dispatch::{InstructionSet, detected};

/// `matrixmultiply`'s `kc` for `f32` (`S_KC`): the length of one summation chain.
pub(crate) const KC: usize = 256;

/// Runs `C ← α·A·B + β·C` here and returns `Some(())`, or returns `None` without touching
/// anything when this kernel does not take the call: not [`enabled`], an empty
/// dimension, a C with strided columns, or a B too large for its loop order ([`takes`]).
///
/// # Safety
/// As [`super::Gemm::gemm`].
pub(crate) unsafe fn sgemm(
    dims: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: Strided<f32>,
    beta: f32,
    c: Strided<f32>,
) -> Option<()> {
    // SAFETY: forwarded from the caller; C is its own input.
    unsafe { run(dims, alpha, [a, b], (beta, c), c) }
}

/// Runs `C ← α·A·B + 1·C_in` here, as [`sgemm`] with `β = 1` on a C that held `C_in`
/// (the same bits), reading `C_in` in place: a linear layer's bias as a `C_in` whose rows
/// are 0 apart. `None` as [`sgemm`]'s, and also when `C_in` has strided columns.
///
/// # Safety
/// As [`super::Gemm::gemm`]; `c_in` addresses `m × n` live elements (rows may repeat) that
/// the call does not write.
pub(crate) unsafe fn sgemm_onto(
    dims: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: Strided<f32>,
    c_in: Strided<f32>,
    c: Strided<f32>,
) -> Option<()> {
    if c_in.col_stride != 1 {
        return None;
    }
    // SAFETY: forwarded from the caller.
    unsafe { run(dims, alpha, [a, b], (1.0, c_in), c) }
}

/// `C ← α·A·B + β·C_in` for [`sgemm`] and [`sgemm_onto`].
///
/// # Safety
/// As theirs.
unsafe fn run(
    [m, k, n]: [usize; 3],
    alpha: f32,
    [a, b]: [Strided<f32>; 2],
    (beta, c_in): (f32, Strided<f32>),
    c: Strided<f32>,
) -> Option<()> {
    if !enabled() || !takes([m, k, n], b, c) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        // A B whose rows are not contiguous is copied into one that is.
        let packed: Vec<f32>;
        let (b_ptr, b_row) = if b.col_stride == 1 {
            (b.ptr as *const f32, b.row_stride)
        } else {
            // SAFETY: `detected` saw avx512f; the caller guarantees b addresses k × n live
            // elements.
            packed = unsafe { x86::contiguous_rows(b, k, n) };
            (packed.as_ptr(), n as isize)
        };
        let operands = Operands {
            m,
            a,
            b: b_ptr,
            b_row,
            c: c.ptr,
            c_row: c.row_stride,
            c_in: c_in.ptr,
            c_in_row: c_in.row_stride,
        };
        // SAFETY: `detected` saw avx512f; the pointers are the caller's (or `packed`, alive
        // until the end of this block).
        unsafe { x86::gemm(operands, [m, k, n], alpha, beta) };
        Some(())
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// Whether this kernel may run at all: the CPU has AVX-512 ([`detected`]) and the
/// environment variable `ADDNORM_GEMM` was not set to `packed` before the first call, which
/// sends every product to `matrixmultiply` (to compare the two, or rule this one out when
/// debugging; the bits are the same either way).
fn enabled() -> bool {
    static PACKED_ONLY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let packed_only =
        *PACKED_ONLY.get_or_init(|| std::env::var("ADDNORM_GEMM").as_deref() == Ok("packed"));
    !packed_only && detected() == InstructionSet::Avx512
}

/// Whether [`sgemm`] takes a call of these sizes and strides.
///
/// It takes products whose B has at most [`LARGEST_B`] elements: the row tiles run outer, so
/// every tile of 12 rows reads all of B, which must stay in L2 for that to be cheap. Above it
/// (the d = 512 model's projections) `matrixmultiply`'s cache blocking is faster
/// (PERFORMANCE.md §11).
fn takes([m, k, n]: [usize; 3], b: Strided<f32>, c: Strided<f32>) -> bool {
    // The copy of a strided B gathers with 32-bit offsets.
    let offsets_fit = n as isize * b.col_stride.abs() < i32::MAX as isize / 4;
    m > 0 && k > 0 && n > 0 && c.col_stride == 1 && k * n <= LARGEST_B && offsets_fit
}

/// The most elements of B [`sgemm`] takes: 256 KiB of f32, half of a 2-core Xeon's or
/// Zen's per-core L2.
const LARGEST_B: usize = 1 << 16;

/// The pointers and strides of one call: A's as given, B's rows contiguous (`b_row` apart),
/// C's `m` rows `c_row` apart with unit column stride, and the C that the first summation
/// chain joins (`c_in`, rows `c_in_row` apart: C itself, or a bias repeated with stride 0).
#[derive(Clone, Copy)]
struct Operands {
    m: usize,
    a: Strided<f32>,
    b: *const f32,
    b_row: isize,
    c: *mut f32,
    c_row: isize,
    c_in: *const f32,
    c_in_row: isize,
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{KC, Operands};
    use std::arch::x86_64::*;

    /// Rows of the widest micro-tile.
    const MR: usize = 12;
    /// Lanes of one vector.
    const LANES: usize = 16;
    /// The side of `matrixmultiply`'s AVX-512 tiles of C (its `MR` and `NR`).
    const TILE: usize = 16;

    /// The whole product: `KC`-long chains, 32-column panels, 12-row tiles (then 4, 2, 1).
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn gemm(ops: Operands, [m, k, n]: [usize; 3], alpha: f32, beta: f32) {
        for k0 in (0..k).step_by(KC) {
            let chain = KC.min(k - k0);
            let step = Step {
                k0,
                chain,
                alpha,
                // Later chains add to what the first left in C.
                beta: if k0 == 0 { beta } else { 1.0 },
            };
            // Row tiles outer: a tile's rows of A stay in L1 while every panel of B passes.
            let mut i0 = 0;
            while i0 < m {
                let rows = match m - i0 {
                    MR.. => MR,
                    4.. => 4,
                    2.. => 2,
                    _ => 1,
                };
                for j0 in (0..n).step_by(2 * LANES) {
                    let cols = (n - j0).min(2 * LANES);
                    // SAFETY (each arm): rows i0..i0 + rows and columns j0..j0 + cols lie
                    // in C.
                    unsafe {
                        match (rows, cols > LANES) {
                            (MR, true) => tile::<MR, 2>(ops, step, i0, j0, cols),
                            (MR, false) => tile::<MR, 1>(ops, step, i0, j0, cols),
                            (4, true) => tile::<4, 2>(ops, step, i0, j0, cols),
                            (4, false) => tile::<4, 1>(ops, step, i0, j0, cols),
                            (2, true) => tile::<2, 2>(ops, step, i0, j0, cols),
                            (2, false) => tile::<2, 1>(ops, step, i0, j0, cols),
                            (_, true) => tile::<1, 2>(ops, step, i0, j0, cols),
                            (_, false) => tile::<1, 1>(ops, step, i0, j0, cols),
                        }
                    }
                }
                i0 += rows;
            }
        }
    }

    /// B's `k × n` elements copied into rows of `n`, 16 columns at a time by a gather.
    ///
    /// # Safety
    /// `b` must address `k × n` live elements, `n · |col_stride|` must fit 32-bit offsets
    /// ([`super::takes`]), and the CPU must have avx512f.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn contiguous_rows(b: super::Strided<f32>, k: usize, n: usize) -> Vec<f32> {
        let mut out: Vec<f32> = Vec::with_capacity(k * n);
        let lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
        // Lane l of a chunk reads column v·16 + l: l·col_stride past the chunk's first.
        let offsets = _mm512_mullo_epi32(lane, _mm512_set1_epi32(b.col_stride as i32));
        let to = out.as_mut_ptr();
        for r in 0..k {
            for c0 in (0..n).step_by(LANES) {
                let mask = mask(n - c0, 0);
                // SAFETY: element (r, c0 + l) for the live lanes l of the caller's view; the
                // store writes those lanes of row r inside the capacity.
                unsafe {
                    let base = b
                        .ptr
                        .offset(r as isize * b.row_stride + c0 as isize * b.col_stride);
                    let values = _mm512_mask_i32gather_ps::<4>(
                        _mm512_setzero_ps(),
                        mask,
                        offsets,
                        base as *const f32,
                    );
                    _mm512_mask_storeu_ps(to.add(r * n + c0), mask, values);
                }
            }
        }
        // SAFETY: the loops wrote every one of the k·n elements (each row's chunks cover it).
        unsafe { out.set_len(k * n) };
        out
    }

    /// One summation chain's place in the call: `k0..k0 + chain`, and how it joins C.
    #[derive(Clone, Copy)]
    struct Step {
        k0: usize,
        chain: usize,
        alpha: f32,
        beta: f32,
    }

    /// The lanes of vector `v` of a `cols`-wide tile that lie in C.
    #[inline(always)]
    fn mask(cols: usize, v: usize) -> __mmask16 {
        let live = cols.saturating_sub(v * LANES).min(LANES);
        ((1u32 << live) - 1) as __mmask16
    }

    /// `R × (V·16)` elements of C from rows `i0..` and columns `j0..j0 + cols`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile<const R: usize, const V: usize>(
        ops: Operands,
        step: Step,
        i0: usize,
        j0: usize,
        cols: usize,
    ) {
        let masks: [__mmask16; V] = std::array::from_fn(|v| mask(cols, v));
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        let a = ops.a;
        // SAFETY (the loop): every address is (row, k) of A or (k, column) of B inside the
        // call's view; masked-off lanes are not read.
        unsafe {
            let mut a_k = a
                .ptr
                .offset(i0 as isize * a.row_stride + step.k0 as isize * a.col_stride);
            let mut b_k = ops.b.offset(step.k0 as isize * ops.b_row + j0 as isize);
            for _ in 0..step.chain {
                let bv: [__m512; V] =
                    std::array::from_fn(|v| _mm512_maskz_loadu_ps(masks[v], b_k.add(v * LANES)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let av = _mm512_set1_ps(*a_k.offset(r as isize * a.row_stride));
                    for v in 0..V {
                        acc[v] = _mm512_fmadd_ps(av, bv[v], acc[v]);
                    }
                }
                a_k = a_k.wrapping_offset(a.col_stride);
                b_k = b_k.wrapping_offset(ops.b_row);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            // Whether row i0 + r lies in a whole tile's rows; vector v (16-aligned, as
            // `matrixmultiply`'s column tiles are) in a whole tile's columns.
            let whole_rows = ((i0 + r) / TILE + 1) * TILE <= ops.m;
            for v in 0..V {
                let interior = whole_rows && cols >= (v + 1) * LANES;
                // SAFETY: row i0 + r, columns of vector v inside C under its mask.
                unsafe {
                    let (row, col) = ((i0 + r) as isize, (j0 + v * LANES) as isize);
                    let at = ops.c.offset(row * ops.c_row + col);
                    // The first chain joins C_in; later ones what the first left in C.
                    let from = if step.k0 == 0 {
                        ops.c_in.offset(row * ops.c_in_row + col)
                    } else {
                        at
                    };
                    let out = join(acc[v], from, masks[v], step, interior);
                    _mm512_mask_storeu_ps(at, masks[v], out);
                }
            }
        }
    }

    /// A chain's sum `p` joined to the lanes of C (or `C_in`) at `at` as `matrixmultiply`
    /// joins it (module doc): `α·p` when `β = 0` (C unread); else `β·C` rounded, then one
    /// fused `α·p + β·C` in an `interior` tile, or `α·p` rounded and added elsewhere.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn join(
        p: __m512,
        at: *const f32,
        mask: __mmask16,
        step: Step,
        interior: bool,
    ) -> __m512 {
        let alpha = _mm512_set1_ps(step.alpha);
        if step.beta == 0.0 {
            return _mm512_mul_ps(alpha, p);
        }
        // SAFETY: the caller's lanes of C under `mask`.
        let c = unsafe { _mm512_maskz_loadu_ps(mask, at) };
        let scaled_c = _mm512_mul_ps(c, _mm512_set1_ps(step.beta));
        if interior {
            _mm512_fmadd_ps(alpha, p, scaled_c)
        } else {
            _mm512_add_ps(scaled_c, _mm512_mul_ps(alpha, p))
        }
    }
}

#[cfg(test)]
mod tests;
