//! The direct kernel on AVX2 with FMA: 8-lane vectors, micro-tiles of up to 6 rows × 16
//! columns (12 accumulators of the 16 registers), and the epilogue of `matrixmultiply`'s
//! FMA kernel (`kernel_target_fma`, 8 × 8 tiles), which it runs on CPUs without AVX-512.
//! Also the copy of a B read transposed into contiguous rows, by 8 × 8 transposes
//! ([`transposed_rows`]).
//!
//! # Formula
//! A chain's sum `p` joins C (or `C_in`) as that kernel joins it. Inside a whole 8 × 8 tile
//! it adds to `β·C` (or to zero) in one fused multiply-add; elsewhere `matrixmultiply` runs
//! the same kernel with `β = 0` into a buffer and adds `β·C` in scalar code:
//!
//! ```text
//! β = 0:               fma(α, p, 0)                     (C not read)
//! whole 8 × 8 tile:    fma(α, p, β·C)                   β·C rounded first
//! elsewhere:           β·C + fma(α, p, 0)               each rounded, then the sum
//! ```
//!
//! (`fma(α, p, 0)` is `α·p` rounded, except that it turns a product of −0 into +0.)
//!
//! # Shapes
//! As [`super::tile`], with `LANES = 8`.

use std::arch::x86_64::*;

use super::Operands;
use super::tile::{self, Isa, Step};

/// AVX2's 256-bit vectors, with FMA.
struct Avx2;

/// f32 lanes per vector on this set ([`Isa::LANES`]); a panel of B is two vectors wide.
pub(super) const LANES: usize = <Avx2 as Isa>::LANES;

/// Which lanes of an AVX2 vector lie in C: all of them (plain loads and stores), or those
/// whose sign bit is set in the lane mask.
#[derive(Clone, Copy)]
struct Lanes {
    whole: bool,
    mask: __m256i,
}

impl Isa for Avx2 {
    type V = __m256;
    type Mask = Lanes;
    const LANES: usize = 8;

    #[inline(always)]
    unsafe fn mask(live: usize) -> Lanes {
        // SAFETY: the caller enabled the set (`Isa`).
        let mask = unsafe {
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            _mm256_cmpgt_epi32(_mm256_set1_epi32(live.min(8) as i32), lane)
        };
        Lanes {
            whole: live >= 8,
            mask,
        }
    }
    #[inline(always)]
    unsafe fn zero() -> __m256 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm256_setzero_ps() }
    }
    #[inline(always)]
    unsafe fn splat(x: f32) -> __m256 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(lanes: Lanes, at: *const f32) -> __m256 {
        // SAFETY: the caller's lanes under `lanes`.
        unsafe {
            if lanes.whole {
                _mm256_loadu_ps(at)
            } else {
                _mm256_maskload_ps(at, lanes.mask)
            }
        }
    }
    #[inline(always)]
    unsafe fn store(at: *mut f32, lanes: Lanes, v: __m256) {
        // SAFETY: the caller's lanes under `lanes`.
        unsafe {
            if lanes.whole {
                _mm256_storeu_ps(at, v)
            } else {
                _mm256_maskstore_ps(at, lanes.mask, v)
            }
        }
    }
    #[inline(always)]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: the caller enabled the set (`Isa`).
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    unsafe fn join(p: __m256, at: *const f32, lanes: Lanes, step: Step, interior: bool) -> __m256 {
        // SAFETY: the caller enabled the set (`Isa`); C is read only under `lanes`.
        unsafe {
            let alpha = _mm256_set1_ps(step.alpha);
            let zero = _mm256_setzero_ps();
            if step.beta == 0.0 {
                return _mm256_fmadd_ps(alpha, p, zero);
            }
            let scaled_c = _mm256_mul_ps(Self::load(lanes, at), _mm256_set1_ps(step.beta));
            if interior {
                _mm256_fmadd_ps(alpha, p, scaled_c)
            } else {
                _mm256_add_ps(scaled_c, _mm256_fmadd_ps(alpha, p, zero))
            }
        }
    }
}

/// The whole product ([`tile::gemm`]) with micro-tiles of up to 6 rows.
///
/// # Safety
/// The CPU must have avx2 and fma; `ops` as [`super::super::Gemm::gemm`] asks of its views.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn gemm(ops: Operands, dims: [usize; 3], alpha: f32, beta: f32) {
    // SAFETY: avx2 and fma are enabled here; the views are the caller's.
    unsafe { tile::gemm::<Avx2, 6>(ops, dims, alpha, beta) }
}

/// B's `k × n` elements copied into rows of `n` at `to`, for a B that is a row-major matrix
/// read transposed (unit row stride, positive column stride: attention's `Kᵀ` and `Vᵀ`, a
/// weight's `Wᵀ`): each 8 × 8 block is 8 (masked) loads of that matrix's rows, a transpose
/// in registers ([`transpose`]) and 8 (masked) stores. Element by element, this copy took
/// 2.3% of the d128 model's training step on Zen 3 (PERFORMANCE.md §41).
///
/// # Safety
/// `b` must address `k × n` live elements, with `row_stride = 1` and `col_stride > 0`;
/// `to` must have room for `k × n` elements and not overlap them; the CPU must have avx2
/// and fma.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn transposed_rows(b: super::Strided<f32>, k: usize, n: usize, to: *mut f32) {
    let (_, col_stride) = b.strides();
    for r0 in (0..k).step_by(LANES) {
        // SAFETY (each block): the caller enabled avx2; column c0 + i of B holds rows
        // r0..r0 + rows at `column`, adjacent (unit row stride), for the columns that
        // exist; the stores write rows r0..r0 + rows, columns c0..c0 + cols of `to`.
        unsafe {
            let (rows, row_mask) = ((k - r0).min(LANES), Avx2::mask(k - r0));
            for c0 in (0..n).step_by(LANES) {
                let (cols, col_mask) = ((n - c0).min(LANES), Avx2::mask(n - c0));
                let mut block: [__m256; LANES] = std::array::from_fn(|i| {
                    if i < cols {
                        let column = b.ptr().offset((c0 + i) as isize * col_stride + r0 as isize);
                        Avx2::load(row_mask, column)
                    } else {
                        _mm256_setzero_ps()
                    }
                });
                transpose(&mut block);
                for (j, row) in block.iter().take(rows).enumerate() {
                    Avx2::store(to.add((r0 + j) * n + c0), col_mask, *row);
                }
            }
        }
    }
}

/// Transposes the 8 × 8 matrix whose rows are `m`'s vectors: 32-bit interleaves, then
/// 64-bit shuffles within 128-bit lanes, then the 128-bit lanes exchanged.
#[inline(always)]
fn transpose(m: &mut [__m256; LANES]) {
    // SAFETY: register-only shuffles; the caller enabled avx2.
    unsafe {
        // Vector 2g + h: columns 2h, 2h + 1 (and 4 + those) of rows 2g, 2g + 1.
        let pairs: [__m256; LANES] = std::array::from_fn(|i| {
            let (a, b) = (m[i & !1], m[i | 1]);
            if i % 2 == 0 {
                _mm256_unpacklo_ps(a, b)
            } else {
                _mm256_unpackhi_ps(a, b)
            }
        });
        // Vector 4g + j: column j (low lane) and 4 + j (high lane) of rows 4g .. 4g + 3.
        let quads: [__m256; LANES] = std::array::from_fn(|i| {
            let (g, j) = (i / 4 * 4, i % 4);
            let (a, b) = (pairs[g + j / 2], pairs[g + 2 + j / 2]);
            if j % 2 == 0 {
                _mm256_shuffle_ps::<0x44>(a, b)
            } else {
                _mm256_shuffle_ps::<0xee>(a, b)
            }
        });
        for j in 0..4 {
            m[j] = _mm256_permute2f128_ps::<0x20>(quads[j], quads[4 + j]);
            m[4 + j] = _mm256_permute2f128_ps::<0x31>(quads[j], quads[4 + j]);
        }
    }
}
