//! The fused CPU GELU kernels on slices: the forward in one pass over `x` (with or without
//! the slope `GELU'(x)`), the backward in one pass over the slope or `x`, and `dy`, in
//! parallel chunks.
//!
//! # Formula
//! ```text
//! Φ(x) = ½·(1 + erf(x/√2))        φ(x) = e^(−x²/2) / √(2π)
//! y  = x·Φ(x)                     slope = Φ(x) + x·φ(x)        dx = dy·slope
//! ```
//!
//! In f32, with `z = x/√2`, one `e^(−z²) = e^(−x²/2)` serves both. For `|z| ≥ 0.75`, erf
//! comes from Abramowitz & Stegun 7.1.26, `erf(z) = 1 − (a₁t + … + a₅t⁵)·e^(−z²)` with
//! `t = 1/(1 + p·|z|)` (odd in z), whose absolute error is below 1.5e-7 (PyTorch's
//! vectorized CPU `erf` uses the same formula everywhere); below 0.75, where that form
//! loses bits to rounding (3e-7 in Φ at 0), from erf's Maclaurin series to z¹⁷. Φ is then
//! within 1.5e-7 (2.5 units in the last place) of the truth over the whole line. It is
//! plain arithmetic with [`exp_f32`](crate::cpu::exp::exp_f32), so the loops vectorize
//! under [`vectorized`]. In f64 the kernels call `libm`'s `erfc` (which keeps Φ's negative
//! tail accurate) and `exp`.
//!
//! The f32 polynomials (the series in `z²`, A&S's in `t`, `1 + p·|z|`) run as fused
//! multiply-adds (`mul_add`: rounded once on every instruction set, so every copy of a
//! loop gives the same bits): the forward with its slope takes 0.68–0.71× the time of
//! separate multiplications and additions (PERFORMANCE.md §38 on an Ice Lake, §43 on a
//! Zen 3).
//!
//! Training takes the slope path: [`forward_with_slope_in_place`] writes `GELU'(x)` beside
//! `y` from the same Φ and φ (3 more operations and one more stored stream per element),
//! and [`backward_from_slope`] is then one multiplication per element. Evaluating Φ and φ
//! again costs about 2 ns per element on the 2-core Zen 3 VM against 0.2 ns for the
//! multiplication (PERFORMANCE.md §21). The slope takes the place of `x` in the autodiff
//! node, so the memory kept for the backward is the same. [`backward`] (from `x`) gives
//! the same bits, for callers that kept `x`.
//!
//! # Shapes
//! `x`, `y`, `slope`, `dy`, `dx`: any number of elements, flat and contiguous, all the
//! same length.
//!
//! # Example
//! ```
//! use addnorm_kernels::gelu::cpu::{backward, forward};
//!
//! let x = [0.0_f64, 1.0, -1.0];
//! let mut y = [0.0; 3];
//! forward(&x, &mut y);
//! assert_eq!(y[0], 0.0);
//! assert!((y[1] - 0.841_344_746_068_542_9).abs() < 1e-15); // 1·Φ(1)
//! assert!((y[2] + 0.158_655_253_931_457_05).abs() < 1e-15); // −1·Φ(−1)
//!
//! let mut dx = [0.0; 3];
//! backward(&x, &[1.0, 1.0, 1.0], &mut dx);
//! assert_eq!(dx[0], 0.5); // Φ(0)
//! ```

use core::mem::MaybeUninit;

use crate::cpu::parallel::{self, ChunksMut, in_chunks};
use crate::cpu::polynomial::horner;

use crate::cpu::dispatch::vectorized;
use crate::cpu::real::Real;

/// A task takes at least this many elements: below it, handing a chunk to rayon's pool
/// (about 0.1 ms on the 2-core development VM) costs more than computing it.
const MIN_TASK_ELEMENTS: usize = 1 << 15;

/// The element types with the normal distribution's `(Φ(x), φ(x))`.
pub trait NormalCdf: Real {
    /// `(Φ(x), φ(x))`: the standard normal CDF and density at `x` (see the
    /// [module docs](self) for how each type computes them).
    fn cdf_and_pdf(self) -> (Self, Self);
}

/// 1/√2.
const FRAC_1_SQRT_2: f64 = core::f64::consts::FRAC_1_SQRT_2;
/// 1/√(2π).
const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;

/// Below this `|x/√2|` the f32 Φ comes from erf's Maclaurin series, above from
/// Abramowitz & Stegun 7.1.26 (whose `1 − poly·e^(−z²)` loses bits near 0).
const SERIES_BELOW: f32 = 0.75;

impl NormalCdf for f32 {
    #[inline(always)]
    fn cdf_and_pdf(self) -> (f32, f32) {
        const P: f32 = 0.327_591_1;
        // a₅, a₄, …, a₁: highest degree first, for `horner`.
        const A: [f32; 5] = [
            1.061_405_4,
            -1.453_152_1,
            1.421_413_7,
            -0.284_496_74,
            0.254_829_6,
        ];
        // erf(z)·√π/2 = Σₙ (−1)ⁿ z^(2n+1) / (n!(2n+1)), n ≤ 8: below 1e-9 off at 0.75.
        // The coefficients of (z²)ⁿ, n = 8 down to 0, for `horner`.
        const SERIES: [f32; 9] = [
            1.0 / 685_440.0,
            -1.0 / 75600.0,
            1.0 / 9360.0,
            -1.0 / 1320.0,
            1.0 / 216.0,
            -1.0 / 42.0,
            1.0 / 10.0,
            -1.0 / 3.0,
            1.0,
        ];
        let z = self * FRAC_1_SQRT_2 as f32;
        let a = z.abs();
        let z2 = z * z;
        let series = horner(z2, SERIES);
        let near_zero = (z * series).mul_add(core::f32::consts::FRAC_2_SQRT_PI * 0.5, 0.5);
        let t = 1.0 / P.mul_add(a, 1.0);
        let poly = t * horner(t, A);
        // e^(−z²) = e^(−x²/2), also φ's exponential.
        let gauss = crate::cpu::exp::exp_f32(-z2);
        // ½·erfc(|z|) = ½·poly·e^(−z²); Φ(x) = 1 − that for x ≥ 0, that itself for x < 0.
        let tail = 0.5 * poly * gauss;
        let away = 0.5 + (0.5 - tail).copysign(self);
        // Both are computed, so this is a select, not a branch.
        let cdf = if a < SERIES_BELOW { near_zero } else { away };
        (cdf, gauss * FRAC_1_SQRT_2PI as f32)
    }
}

impl NormalCdf for f64 {
    #[inline(always)]
    fn cdf_and_pdf(self) -> (f64, f64) {
        // erfc rather than 1 + erf, which cancels for large negative x.
        let cdf = 0.5 * libm::erfc(-self * FRAC_1_SQRT_2);
        (cdf, (-0.5 * self * self).exp() * FRAC_1_SQRT_2PI)
    }
}

/// Writes `y = x·Φ(x)`.
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn forward<E: NormalCdf>(x: &[E], y: &mut [E]) {
    // SAFETY: `MaybeUninit<E>` has `E`'s layout, and `forward_uninit` stores only
    // initialized values, so `y` stays initialized.
    let y = unsafe { &mut *(y as *mut [E] as *mut [MaybeUninit<E>]) };
    forward_uninit(x, y);
}

/// [`forward`] into memory that need not be initialized: every element of `y` is written
/// (so a fresh output needs no zeroing first).
///
/// # Panics
/// If `x` and `y` differ in length.
pub fn forward_uninit<E: NormalCdf>(x: &[E], y: &mut [MaybeUninit<E>]) {
    assert_eq!(x.len(), y.len(), "gelu forward: x and y lengths");
    let ys = ChunksMut::new(y, chunk_len(x.len()));
    in_chunks(&ys, |i, size| {
        let (x, y) = (parallel::chunk(x, size, i), ys.take(i));
        vectorized(
            #[inline(always)]
            || {
                for (y, &x) in y.iter_mut().zip(x) {
                    y.write(value_and_slope(x).0);
                }
            },
        );
    });
}

/// Writes `y = x·Φ(x)`, and the slope `GELU'(x) = Φ(x) + x·φ(x)` over `x_then_slope`,
/// which holds `x` on entry, in one pass; `y` need not be initialized (it is written
/// whole). The training step's forward, when the caller owns `x`'s buffer, allocates only
/// `y`; a caller that must keep `x` passes a copy.
///
/// The slope is what the backward needs: [`backward_from_slope`] then makes `dx` with one
/// multiplication per element instead of evaluating Φ and φ again (the training step's
/// backward, PERFORMANCE.md §21). Its bits are those [`backward`] computes from `x`.
///
/// # Panics
/// If `x_then_slope` and `y` differ in length.
pub fn forward_with_slope_in_place<E: NormalCdf>(x_then_slope: &mut [E], y: &mut [MaybeUninit<E>]) {
    assert_eq!(x_then_slope.len(), y.len(), "gelu forward: x and y lengths");
    let size = chunk_len(y.len());
    let (ys, slopes) = (ChunksMut::new(y, size), ChunksMut::new(x_then_slope, size));
    in_chunks(&ys, |i, _| {
        let (y, slope) = (ys.take(i), slopes.take(i));
        vectorized(
            #[inline(always)]
            || {
                for (y, slope) in y.iter_mut().zip(slope.iter_mut()) {
                    let (value, dydx) = value_and_slope(*slope);
                    y.write(value);
                    *slope = dydx;
                }
            },
        );
    });
}

/// Writes `dx = dy·(Φ(x) + x·φ(x))`.
///
/// # Panics
/// If `x`, `dy` and `dx` differ in length.
pub fn backward<E: NormalCdf>(x: &[E], dy: &[E], dx: &mut [E]) {
    scaled(x, dy, dx, derivative);
}

/// [`backward`] with `dx` written over `grad`, which holds `dy` on entry.
///
/// # Panics
/// If `x` and `grad` differ in length.
pub fn backward_in_place<E: NormalCdf>(x: &[E], grad: &mut [E]) {
    scaled_in_place(x, grad, derivative);
}

/// Writes `dx = dy·slope`, the slope from [`forward_with_slope_in_place`]: the same bits
/// as [`backward`] from `x`.
///
/// # Panics
/// If `slope`, `dy` and `dx` differ in length.
pub fn backward_from_slope<E: Real>(slope: &[E], dy: &[E], dx: &mut [E]) {
    scaled(slope, dy, dx, |s| s);
}

/// [`backward_from_slope`] with `dx` written over `grad`, which holds `dy` on entry.
///
/// # Panics
/// If `slope` and `grad` differ in length.
pub fn backward_from_slope_in_place<E: Real>(slope: &[E], grad: &mut [E]) {
    scaled_in_place(slope, grad, |s| s);
}

/// `dx = dy·f(v)`, element by element: the backward from `x` (`f` = [`derivative`]) or
/// from the slope (`f` the identity).
///
/// # Panics
/// If `v`, `dy` and `dx` differ in length.
fn scaled<E: Real>(v: &[E], dy: &[E], dx: &mut [E], f: impl Fn(E) -> E + Copy + Sync) {
    assert!(
        v.len() == dy.len() && v.len() == dx.len(),
        "gelu backward: x (or the slope), dy and dx lengths"
    );
    let dxs = ChunksMut::new(dx, chunk_len(v.len()));
    in_chunks(&dxs, |i, size| {
        let (v, dy, dx) = (
            parallel::chunk(v, size, i),
            parallel::chunk(dy, size, i),
            dxs.take(i),
        );
        vectorized(
            #[inline(always)]
            || {
                for ((dx, &dy), &v) in dx.iter_mut().zip(dy).zip(v) {
                    *dx = dy * f(v);
                }
            },
        );
    });
}

/// [`scaled`] with `dx` written over `grad`, which holds `dy` on entry.
///
/// # Panics
/// If `v` and `grad` differ in length.
fn scaled_in_place<E: Real>(v: &[E], grad: &mut [E], f: impl Fn(E) -> E + Copy + Sync) {
    assert_eq!(
        v.len(),
        grad.len(),
        "gelu backward: x (or the slope) and dy lengths"
    );
    let grads = ChunksMut::new(grad, chunk_len(v.len()));
    in_chunks(&grads, |i, size| {
        let (v, grad) = (parallel::chunk(v, size, i), grads.take(i));
        vectorized(
            #[inline(always)]
            || {
                for (g, &v) in grad.iter_mut().zip(v) {
                    *g = *g * f(v);
                }
            },
        );
    });
}

/// `GELU'(x) = Φ(x) + x·φ(x)`: [`value_and_slope`]'s slope (the value is not computed).
#[inline(always)]
fn derivative<E: NormalCdf>(x: E) -> E {
    value_and_slope(x).1
}

/// `(x·Φ(x), Φ(x) + x·φ(x))` from one evaluation of Φ and φ: every kernel's formula (the
/// forward alone takes the first, the backward from `x` the second; what a loop does not
/// use is not computed).
#[inline(always)]
fn value_and_slope<E: NormalCdf>(x: E) -> (E, E) {
    let (cdf, pdf) = x.cdf_and_pdf();
    (x * cdf, cdf + x * pdf)
}

/// The chunk length of a call over `len` elements ([`parallel::elementwise_chunk`]).
fn chunk_len(len: usize) -> usize {
    parallel::elementwise_chunk(len, MIN_TASK_ELEMENTS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Φ(x) to double precision, independently of `libm`: erf's Maclaurin series for
    /// |x/√2| ≤ 2, erfc's continued fraction beyond (no cancellation in either tail).
    fn cdf_reference(x: f64) -> f64 {
        let z = x / 2f64.sqrt();
        let a = z.abs();
        if a <= 2.0 {
            let (mut term, mut sum, mut n) = (a, a, 0.0);
            while term.abs() > 1e-18 * sum.abs() {
                n += 1.0;
                term *= -a * a / n;
                sum += term / (2.0 * n + 1.0);
            }
            0.5 + (sum / core::f64::consts::PI.sqrt()).copysign(z)
        } else {
            // erfc(a) = e^(−a²)/√π · 1/(a + (1/2)/(a + 1/(a + (3/2)/(a + …))))
            let mut fraction = a;
            for k in (1..400).rev() {
                fraction = a + (k as f64 / 2.0) / fraction;
            }
            let half_erfc = 0.5 * (-a * a).exp() / core::f64::consts::PI.sqrt() / fraction;
            if z > 0.0 { 1.0 - half_erfc } else { half_erfc }
        }
    }

    fn gelu_reference(x: f64) -> (f64, f64) {
        let cdf = cdf_reference(x);
        let pdf = (-0.5 * x * x).exp() / (2.0 * core::f64::consts::PI).sqrt();
        (x * cdf, cdf + x * pdf)
    }

    fn inputs() -> Vec<f64> {
        (-2000..=2000).map(|i| i as f64 * 0.007).collect()
    }

    #[test]
    fn the_kernels_give_the_same_bits_under_every_instruction_set() {
        use crate::cpu::dispatch::{
            assert_every_copy_gives_the_baseline_bits, under_every_instruction_set,
        };
        // Both sides of the series' cut at |x/√2| = 0.75, the exponential's flush to 0 and
        // a tail after every vector width.
        let x: Vec<f32> = (0..4099).map(|i| (i as f32 - 2049.0) * 7.3e-3).collect();
        let dy: Vec<f32> = (0..x.len()).map(|i| 1.0 - i as f32 * 3e-4).collect();
        let run = || {
            let mut y = vec![0.0; x.len()];
            forward(&x, &mut y);
            let mut dx = vec![0.0; x.len()];
            backward(&x, &dy, &mut dx);
            let mut slope = x.clone();
            let mut with_slope = vec![MaybeUninit::uninit(); x.len()];
            forward_with_slope_in_place(&mut slope, &mut with_slope);
            // SAFETY: the forward wrote every element.
            let with_slope: Vec<f32> = with_slope
                .iter()
                .map(|v| unsafe { v.assume_init() })
                .collect();
            [y, dx, slope, with_slope]
        };
        let results = under_every_instruction_set(run);
        let baseline = &results[0].1;
        assert_eq!(
            baseline[0], baseline[3],
            "forward with and without the slope"
        );
        assert_every_copy_gives_the_baseline_bits(&results, |outputs| {
            outputs.iter().flatten().copied().collect()
        });
    }

    #[test]
    fn f64_kernels_match_the_series_to_double_precision() {
        let x = inputs();
        let mut y = vec![0.0; x.len()];
        let mut dx = vec![0.0; x.len()];
        forward(&x, &mut y);
        backward(&x, &vec![1.0; x.len()], &mut dx);
        for ((&x, &y), &d) in x.iter().zip(&y).zip(&dx) {
            let (y_ref, d_ref) = gelu_reference(x);
            assert!((y - y_ref).abs() <= 1e-14 * (1.0 + y_ref.abs()), "y({x})");
            assert!((d - d_ref).abs() <= 1e-14, "dx({x})");
        }
    }

    #[test]
    fn f32_kernels_are_within_the_approximations_bound() {
        let x: Vec<f32> = inputs().iter().map(|&v| v as f32).collect();
        let mut y = vec![0.0; x.len()];
        let mut dx = vec![0.0; x.len()];
        forward(&x, &mut y);
        backward(&x, &vec![1.0; x.len()], &mut dx);
        let (mut worst_y, mut worst_dx) = (0.0_f64, 0.0_f64);
        for ((&x, &y), &d) in x.iter().zip(&y).zip(&dx) {
            let (y_ref, d_ref) = gelu_reference(f64::from(x));
            // |ΔΦ| ≤ 1.5e-7 with f32 rounding: y is off by at most that times |x|.
            worst_y = worst_y.max((f64::from(y) - y_ref).abs() / (1.0 + f64::from(x).abs()));
            worst_dx = worst_dx.max((f64::from(d) - d_ref).abs());
        }
        assert!(worst_y < 2e-7, "worst |Δy|/(1+|x|) = {worst_y:e}");
        assert!(worst_dx < 4e-7, "worst |Δdx| = {worst_dx:e}");
    }

    #[test]
    fn limits_and_specials() {
        let x = [
            0.0_f32,
            -0.0,
            30.0,
            -30.0,
            f32::INFINITY,
            f32::NAN,
            1e-30,
            -1e-30,
        ];
        let mut y = [0.0; 8];
        let mut dx = [0.0; 8];
        forward(&x, &mut y);
        backward(&x, &[1.0; 8], &mut dx);
        assert_eq!(&y[..5], &[0.0, 0.0, 30.0, 0.0, f32::INFINITY]);
        assert_eq!(&dx[2..4], &[1.0, 0.0]);
        assert!(y[5].is_nan() && dx[5].is_nan(), "NaN propagates");
        assert_eq!((y[6], y[7]), (0.5e-30, -0.5e-30));
        assert_eq!(dx[0], 0.5);
    }

    /// Every path (serial, chunked over threads, in place) computes the same bits.
    #[test]
    fn chunked_and_in_place_paths_agree_with_the_serial_one() {
        let len = 5 * MIN_TASK_ELEMENTS + 77;
        let x: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.013).sin() * 4.0).collect();
        let dy: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.007).cos()).collect();
        let mut y = vec![0.0; len];
        let mut dx = vec![0.0; len];
        forward(&x, &mut y);
        backward(&x, &dy, &mut dx);
        let mut in_place = dy.clone();
        backward_in_place(&x, &mut in_place);
        assert_eq!(dx, in_place);
        for i in (0..len).step_by(997) {
            let mut y1 = [0.0];
            let mut dx1 = [0.0];
            forward(&x[i..=i], &mut y1);
            backward(&x[i..=i], &dy[i..=i], &mut dx1);
            assert_eq!((y1[0], dx1[0]), (y[i], dx[i]), "element {i}");
        }
    }

    /// The forward with the slope writes `forward`'s bits and, as the slope, those of
    /// `backward` with `dy = 1`; the backward from that slope writes `backward`'s bits,
    /// serial and chunked, in place or not, specials included.
    fn slope_path_equals_the_path_from_x<E: NormalCdf + Into<f64>>(x: &[E], dy: &[E]) {
        let bits = |v: &[E]| v.iter().map(|&e| e.into().to_bits()).collect::<Vec<u64>>();
        let len = x.len();
        let (mut y, mut dx) = (vec![E::ZERO; len], vec![E::ZERO; len]);
        forward(x, &mut y);
        backward(x, dy, &mut dx);
        let mut dx_unit = vec![E::ZERO; len];
        backward(x, &vec![E::ONE; len], &mut dx_unit);
        let (mut y2, mut slope) = (vec![MaybeUninit::uninit(); len], x.to_vec());
        forward_with_slope_in_place(&mut slope, &mut y2);
        // SAFETY: `forward_with_slope_in_place` wrote every element of y2.
        let y2: Vec<E> = unsafe { y2.into_iter().map(|v| v.assume_init()).collect() };
        assert_eq!(bits(&y2), bits(&y), "y");
        assert_eq!(bits(&slope), bits(&dx_unit), "slope");
        let mut dx2 = vec![E::ZERO; len];
        backward_from_slope(&slope, dy, &mut dx2);
        assert_eq!(bits(&dx2), bits(&dx), "dx");
        let mut in_place = dy.to_vec();
        backward_from_slope_in_place(&slope, &mut in_place);
        assert_eq!(bits(&in_place), bits(&dx), "dx in place");
    }

    #[test]
    fn the_slope_path_computes_the_bits_of_the_path_from_x() {
        // Chunked over threads where there are several, with a ragged end, and specials.
        let len = 5 * MIN_TASK_ELEMENTS + 77;
        let mut x: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.013).sin() * 6.0).collect();
        let dy: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.007).cos()).collect();
        let specials = [
            0.0,
            -0.0,
            30.0,
            -30.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-30,
            -1e-30,
        ];
        x[..specials.len()].copy_from_slice(&specials);
        x[len - 1] = f32::NAN;
        slope_path_equals_the_path_from_x(&x, &dy);
        slope_path_equals_the_path_from_x(&x[..1000], &dy[..1000]);
        let x64: Vec<f64> = inputs();
        let dy64: Vec<f64> = x64.iter().map(|v| (v * 0.3).cos()).collect();
        slope_path_equals_the_path_from_x(&x64, &dy64);
        slope_path_equals_the_path_from_x::<f32>(&[], &[]);
    }
}
