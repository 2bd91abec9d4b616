//! Polynomials in f32 by Horner's scheme with fused multiply-adds: the one evaluation
//! [`super::exp`], [`super::tanh`] and GELU's Φ (`crate::gelu::cpu`) share.
//!
//! # Formula
//! For coefficients `c = [c₀, c₁, …, c_n]`, highest degree first:
//!
//! ```text
//! p(x) = c₀·xⁿ + c₁·xⁿ⁻¹ + … + c_n
//!      = fma(…fma(fma(c₀, x, c₁), x, c₂)…, x, c_n)
//! ```
//!
//! Each step is one `mul_add`, rounded once on every instruction set, so the baseline,
//! AVX2 and AVX-512 copies of a loop that calls it give the same bits (kernels'
//! PERFORMANCE.md §43). With a constant array the loop unrolls; nothing stops a caller's
//! loop from vectorizing.
//!
//! # Shapes
//! Scalar in, scalar out: `x` and the `N` coefficients; call it inside a loop over a
//! slice. `N = 0` gives 0.

/// `p(x)` for the coefficients `c`, highest degree first (see the [module docs](self)).
#[inline(always)]
pub(crate) fn horner<const N: usize>(x: f32, c: [f32; N]) -> f32 {
    let Some((&first, rest)) = c.split_first() else {
        return 0.0;
    };
    rest.iter().fold(first, |p, &c| p.mul_add(x, c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluates_highest_degree_first() {
        // 2x³ − 3x² + 0.5x + 7 at x = 1.5: 6.75 − 6.75 + 0.75 + 7.
        assert_eq!(horner(1.5, [2.0, -3.0, 0.5, 7.0]), 7.75);
        assert_eq!(horner(3.0, [4.0]), 4.0);
        assert_eq!(horner(3.0, []), 0.0);
    }

    #[test]
    fn each_step_rounds_once() {
        // fma(a, x, c) with a·x not representable: one rounding keeps the low bits that
        // a multiplication then an addition would lose.
        let (a, x) = (1.0 + f32::EPSILON, 1.0 - f32::EPSILON / 2.0);
        let c = -1.0;
        assert_eq!(horner(x, [a, c]), a.mul_add(x, c));
        assert_ne!(horner(x, [a, c]), a * x + c);
    }
}
