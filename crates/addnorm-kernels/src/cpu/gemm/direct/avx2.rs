//! The direct kernel on AVX2 with FMA: 8-lane vectors, micro-tiles of up to 6 rows × 16
//! columns (12 accumulators of the 16 registers), and the epilogue of `matrixmultiply`'s
//! FMA kernel (`kernel_target_fma`, 8 × 8 tiles), which it runs on CPUs without AVX-512.
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
