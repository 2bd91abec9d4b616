//! A branch-free f32 `exp` the compiler can vectorize: the softmax of the fused attention
//! kernels, and the large-argument branch of [`super::tanh`].
//!
//! `f32::exp` calls the C library one element at a time; a softmax row of 1024 logits
//! then spends more time in calls than in arithmetic. This one is plain arithmetic with no
//! branches, so a loop over it becomes SIMD code under [`super::dispatch::vectorized`].
//!
//! # Formula
//! ```text
//! e^t = 2^k · Q(r),  k = round(t / ln 2) (by the 1.5·2^23 trick),  r = t − k·ln 2
//!       (ln 2 split in two parts so that k·LN2_HI is exact),  Q = Taylor to degree 7
//!       on |r| ≤ ln2 / 2 (remainder < 1e-8)
//! ```
//!
//! `k`, the two steps of `r` and each step of `Q`'s Horner scheme are fused multiply-adds
//! (`mul_add`: rounded once, on every instruction set, so the baseline, AVX2 and AVX-512
//! copies of a loop give the same bits). Against a multiplication and an addition each,
//! that is fewer instructions and one rounding fewer per step (PERFORMANCE.md §43).
//!
//! [`exp_f32`] clamps `t` to `[−87, 88]` (2^k stays a normal number) and returns 0 below
//! −87 (e^−87 ≈ 1.6e-38, at the bottom of f32's normal range). Its error is below 2 units
//! in the last place over that range (tested). NaN propagates.
//!
//! # Shapes
//! Scalar in, scalar out; call it inside a loop over a slice.

use super::polynomial::horner;

/// Below this argument the result is flushed to 0.
const FLUSH_BELOW: f32 = -87.0;
/// Above this argument the result saturates at e^88 (f32::MAX is about e^88.7).
const SATURATE_ABOVE: f32 = 88.0;

/// `e^t` for f32, vectorizable (see the [module docs](self)).
#[inline(always)]
pub fn exp_f32(t: f32) -> f32 {
    // Comparisons rather than `clamp`/`min`/`max`, which would turn NaN into a bound.
    let clamped = if t > SATURATE_ABOVE {
        SATURATE_ABOVE
    } else {
        t
    };
    let clamped = if clamped < FLUSH_BELOW {
        FLUSH_BELOW
    } else {
        clamped
    };
    let e = exp_reduced(clamped);
    // A bitwise select rather than `if`, which LLVM would keep as a branch. NaN fails
    // the comparison, so it is kept (and propagates).
    let flush = 0_u32.wrapping_sub(u32::from(t < FLUSH_BELOW));
    f32::from_bits(e.to_bits() & !flush)
}

/// `e^t` for `t` in `[−87, 88]`: `2^k · Q(r)` with `r` in `[−ln2/2, ln2/2]`.
#[inline(always)]
pub(crate) fn exp_reduced(t: f32) -> f32 {
    const LOG2_E: f32 = core::f32::consts::LOG2_E;
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with few enough bits that k·LN2_HI is exact.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Round to nearest by adding and removing 1.5·2^23 (exact for |v| < 2^22): `round` is
    // a library call on baseline x86-64 (no SSE4.1), which would stop the vectorization.
    // The sum's low mantissa bits are k itself (two's complement for k < 0), which gives
    // 2^k without a float-to-int conversion (another thing that keeps the loop scalar).
    const ROUNDER: f32 = 12_582_912.0;
    let shifted = t.mul_add(LOG2_E, ROUNDER);
    let k = shifted - ROUNDER;
    let r = (-k).mul_add(LN2_LO, (-k).mul_add(LN2_HI, t));
    let q = horner(
        r,
        [
            1.0 / 5040.0,
            1.0 / 720.0,
            1.0 / 120.0,
            1.0 / 24.0,
            1.0 / 6.0,
            0.5,
            1.0,
            1.0,
        ],
    );
    // 2^k for k in [−126, 127]: k + 127 in the exponent field.
    let k_bits = shifted.to_bits().wrapping_sub(ROUNDER.to_bits());
    let scale = f32::from_bits(k_bits.wrapping_add(127) << 23);
    q * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_f64_exp_to_two_units_in_the_last_place() {
        let mut worst = (0.0_f64, 0.0_f32);
        for i in -870_000..=880_000 {
            let t = i as f32 * 1e-4;
            let exact = f64::from(t).exp();
            let relative = (f64::from(exp_f32(t)) / exact - 1.0).abs();
            if relative > worst.0 {
                worst = (relative, t);
            }
        }
        assert!(
            worst.0 < 2.5e-7,
            "max relative error {:.3e} at t = {}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn flushes_saturates_and_propagates_nan() {
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-87.5), 0.0);
        assert_eq!(exp_f32(-1e30), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert!(exp_f32(f32::INFINITY).is_finite());
        assert!(exp_f32(f32::NAN).is_nan());
    }
}
