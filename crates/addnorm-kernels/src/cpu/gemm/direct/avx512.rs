//! The direct kernel on AVX-512F: 16-lane vectors, micro-tiles of up to 12 rows × 32
//! columns (24 accumulators), and `matrixmultiply`'s AVX-512 epilogue.
//!
//! # Formula
//! A chain's sum `p` joins C (or `C_in`) as `matrixmultiply`'s 16 × 16 AVX-512 kernel joins
//! it:
//!
//! ```text
//! β = 0:               α·p                       (C not read)
//! whole 16 × 16 tile:  fma(α, p, β·C)            β·C rounded first
//! elsewhere:           β·C + α·p                 each product rounded, then the sum
//! ```
//!
//! # Shapes
//! As [`super::tile`], with `LANES = 16`.

use std::arch::x86_64::*;

use super::Operands;
use super::tile::{self, Isa, Step};

/// AVX-512F's 512-bit vectors.
struct Avx512;

/// f32 lanes per vector on this set ([`Isa::LANES`]); a panel of B is two vectors wide.
pub(super) const LANES: usize = <Avx512 as Isa>::LANES;

impl Isa for Avx512 {
    type V = __m512;
    type Mask = __mmask16;
    const LANES: usize = 16;

    #[inline(always)]
    unsafe fn mask(live: usize) -> __mmask16 {
        ((1u32 << live.min(16)) - 1) as __mmask16
    }
    #[inline(always)]
    unsafe fn zero() -> __m512 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm512_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m512 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(mask: __mmask16, at: *const f32) -> __m512 {
        // SAFETY: the caller's lanes under `mask`.
        unsafe { _mm512_maskz_loadu_ps(mask, at) }
    }
    #[inline(always)]
    unsafe fn store(at: *mut f32, mask: __mmask16, v: __m512) {
        // SAFETY: the caller's lanes under `mask`.
        unsafe { _mm512_mask_storeu_ps(at, mask, v) }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn join(
        p: __m512,
        at: *const f32,
        mask: __mmask16,
        step: Step,
        interior: bool,
    ) -> __m512 {
        // SAFETY: the caller enabled the set (`Isa`); C is read only under `mask`.
        unsafe {
            let alpha = _mm512_set1_ps(step.alpha);
            if step.beta == 0.0 {
                return _mm512_mul_ps(alpha, p);
            }
            let c = _mm512_maskz_loadu_ps(mask, at);
            let scaled_c = _mm512_mul_ps(c, _mm512_set1_ps(step.beta));
            if interior {
                _mm512_fmadd_ps(alpha, p, scaled_c)
            } else {
                _mm512_add_ps(scaled_c, _mm512_mul_ps(alpha, p))
            }
        }
    }
}

/// The whole product ([`tile::gemm`]) with micro-tiles of up to 12 rows.
///
/// # Safety
/// The CPU must have avx512f; `ops` as [`super::super::Gemm::gemm`] asks of its views.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn gemm(ops: Operands, dims: [usize; 3], alpha: f32, beta: f32) {
    // SAFETY: avx512f is enabled here; the views are the caller's.
    unsafe { tile::gemm::<Avx512, 12>(ops, dims, alpha, beta) }
}

/// B's `k × n` elements copied into rows of `n` at `to`: by 16 × 16 transposes in
/// registers when B is a row-major matrix read transposed (unit row stride: `Wᵀ`, `Kᵀ`,
/// `Vᵀ`), else 16 columns at a time by a gather.
///
/// # Safety
/// `b` must address `k × n` live elements, `n · |col_stride|` must fit 32-bit offsets
/// ([`super::takes`]), `to` must have room for `k × n` elements, and the CPU must have
/// avx512f.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn contiguous_rows(b: super::Strided<f32>, k: usize, n: usize, to: *mut f32) {
    // SAFETY (both): forwarded from the caller; each writes all k·n elements at `to`.
    unsafe {
        if b.row_stride == 1 && b.col_stride > 0 {
            transposed_rows(b, k, n, to);
        } else {
            gathered_rows(b, k, n, to);
        }
    }
}

/// [`contiguous_rows`] of a B whose element `(r, c)` lies at `r + c·col_stride`: B's
/// columns are the rows of a row-major matrix. Each 16 × 16 block is 16 (masked) loads of
/// those rows, a transpose in registers ([`transpose`]) and 16 (masked) stores.
///
/// # Safety
/// As [`contiguous_rows`], with `row_stride = 1`, `col_stride > 0`; `to` has room for
/// `k × n` elements.
#[target_feature(enable = "avx512f")]
unsafe fn transposed_rows(b: super::Strided<f32>, k: usize, n: usize, to: *mut f32) {
    for r0 in (0..k).step_by(16) {
        // SAFETY: the caller enabled avx512f.
        let (rows, row_mask) = ((k - r0).min(16), unsafe { Avx512::mask(k - r0) });
        for c0 in (0..n).step_by(16) {
            // SAFETY: as above.
            let (cols, col_mask) = ((n - c0).min(16), unsafe { Avx512::mask(n - c0) });
            // SAFETY: column c0 + i of B, rows r0..r0 + rows, for the columns that exist;
            // the stores write rows r0..r0 + rows, columns c0..c0 + cols of `to`.
            unsafe {
                let mut block: [__m512; 16] = std::array::from_fn(|i| {
                    if i < cols {
                        let column = b.ptr.offset((c0 + i) as isize * b.col_stride + r0 as isize);
                        _mm512_maskz_loadu_ps(row_mask, column)
                    } else {
                        _mm512_setzero_ps()
                    }
                });
                transpose(&mut block);
                for (j, row) in block.iter().take(rows).enumerate() {
                    _mm512_mask_storeu_ps(to.add((r0 + j) * n + c0), col_mask, *row);
                }
            }
        }
    }
}

/// Transposes the 16 × 16 matrix whose rows are `m`'s vectors: 32-bit and 64-bit
/// interleaves within 128-bit lanes, then two rounds of 128-bit lane shuffles.
#[inline(always)]
fn transpose(m: &mut [__m512; 16]) {
    // SAFETY: register-only shuffles; the caller enabled avx512f.
    unsafe {
        let pairs: [__m512; 16] = std::array::from_fn(|i| {
            let (a, b) = (m[i & !1], m[i | 1]);
            if i % 2 == 0 {
                _mm512_unpacklo_ps(a, b)
            } else {
                _mm512_unpackhi_ps(a, b)
            }
        });
        // Vector 4g + j: in 128-bit lane L, column 4L + j of rows 4g .. 4g + 3.
        let quads: [__m512; 16] = std::array::from_fn(|i| {
            let (g, j) = (i / 4 * 4, i % 4);
            let (a, b) = (
                _mm512_castps_pd(pairs[g + j / 2]),
                _mm512_castps_pd(pairs[g + 2 + j / 2]),
            );
            _mm512_castpd_ps(if j % 2 == 0 {
                _mm512_unpacklo_pd(a, b)
            } else {
                _mm512_unpackhi_pd(a, b)
            })
        });
        for j in 0..4 {
            let even_lanes = |a, b| _mm512_shuffle_f32x4::<0x88>(a, b);
            let odd_lanes = |a, b| _mm512_shuffle_f32x4::<0xdd>(a, b);
            let (u0, u1) = (
                even_lanes(quads[j], quads[4 + j]),
                odd_lanes(quads[j], quads[4 + j]),
            );
            let (u2, u3) = (
                even_lanes(quads[8 + j], quads[12 + j]),
                odd_lanes(quads[8 + j], quads[12 + j]),
            );
            m[j] = even_lanes(u0, u2);
            m[4 + j] = even_lanes(u1, u3);
            m[8 + j] = odd_lanes(u0, u2);
            m[12 + j] = odd_lanes(u1, u3);
        }
    }
}

/// [`contiguous_rows`] of any B, 16 columns at a time by a gather.
///
/// # Safety
/// As [`contiguous_rows`]; `to` has room for `k × n` elements.
#[target_feature(enable = "avx512f")]
unsafe fn gathered_rows(b: super::Strided<f32>, k: usize, n: usize, to: *mut f32) {
    let lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    // Lane l of a chunk reads column v·16 + l: l·col_stride past the chunk's first.
    let offsets = _mm512_mullo_epi32(lane, _mm512_set1_epi32(b.col_stride as i32));
    for r in 0..k {
        for c0 in (0..n).step_by(16) {
            // SAFETY: element (r, c0 + l) for the live lanes l of the caller's view; the
            // store writes those lanes of row r inside `to`.
            unsafe {
                let mask = Avx512::mask(n - c0);
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
}
