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
        for c0 in (0..n).step_by(16) {
            // SAFETY: element (r, c0 + l) for the live lanes l of the caller's view; the
            // store writes those lanes of row r inside the capacity.
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
    // SAFETY: the loops wrote every one of the k·n elements (each row's chunks cover it).
    unsafe { out.set_len(k * n) };
    out
}
