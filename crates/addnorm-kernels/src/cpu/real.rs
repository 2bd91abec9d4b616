//! [`Real`]: the two element types the CPU kernels run in (f32, f64), and the lane-wise
//! reductions their inner loops are built from.
//!
//! A floating-point sum written as one running total cannot be vectorized: reordering it
//! changes the result, so the compiler keeps it serial. [`sum_map`] keeps [`LANES`]
//! independent totals instead, which the compiler maps onto SIMD registers, and adds them
//! pairwise at the end (which is also more accurate than one long running sum).
//! [`max_of`] takes a maximum the same way (exact in any order). [`add_into`] is the
//! element-wise `acc += other` the kernels sum partial results and gradients with.
//!
//! ```
//! use addnorm_kernels::cpu::real::sum_map;
//!
//! let x: Vec<f32> = (1..=100).map(|v| v as f32).collect();
//! assert_eq!(sum_map(&x, |v| v), 5050.0);
//! assert_eq!(sum_map(&x[..3], |v| v * v), 14.0);
//! ```

use core::fmt::Debug;
use core::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// The element types the fused CPU kernels are compiled for: `f32` and `f64`.
pub trait Real:
    Copy
    + Send
    + Sync
    + Debug
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `v` rounded to this type.
    fn from_f64(v: f64) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The hyperbolic tangent: [`super::tanh::tanh_f32`] for f32 (vectorizable, within
    /// 2.5e-7), the C library's for f64.
    fn tanh(self) -> Self;
    /// `e^x`: [`super::exp::exp_f32`] for f32 (vectorizable, flushed to 0 below −87), the
    /// C library's for f64.
    fn exp(self) -> Self;
    /// The natural logarithm (the C library's; the kernels call it once per row).
    fn ln(self) -> Self;
    /// Neither infinite nor NaN.
    fn is_finite(self) -> bool;
}

impl Real for f32 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f32::sqrt(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        super::tanh::tanh_f32(self)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        super::exp::exp_f32(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f32::ln(self)
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
    #[inline(always)]
    fn exp(self) -> Self {
        f64::exp(self)
    }
    #[inline(always)]
    fn ln(self) -> Self {
        f64::ln(self)
    }
    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
}

/// How many independent partial sums a reduction keeps: 16 f32 fill two AVX2 (or four
/// SSE) registers, enough to hide the latency of the vector add.
pub const LANES: usize = 16;

/// Adds the lanes pairwise: lane `l` and lane `l + 8`, then `l + 4`, `l + 2` and `l + 1`,
/// written as halves of a vector rather than as a loop. The norm backward's row sums, whose
/// lanes the compiler keeps on the stack, took 0.9× the time with this form
/// (PERFORMANCE.md §51); the additions are the same.
#[inline(always)]
pub(crate) fn sum_lanes<E: Real>(lanes: [E; LANES]) -> E {
    const { assert!(LANES == 16) };
    let h8: [E; 8] = core::array::from_fn(|l| lanes[l] + lanes[l + 8]);
    let h4: [E; 4] = core::array::from_fn(|l| h8[l] + h8[l + 4]);
    let h2: [E; 2] = core::array::from_fn(|l| h4[l] + h4[l + 2]);
    h2[0] + h2[1]
}

/// `Σ f(x_j)` over the slice, in [`LANES`] interleaved partial sums.
///
/// Each block's 16 values `f(x_j)` are formed first and then added to the lanes: with
/// `f` inside the lane update, the norm forward's `Σ (x − p − s)²` compiled to eight
/// 2-lane vectors and shuffles, and took 1.2–1.4× the time (PERFORMANCE.md §44). The
/// additions, and their order, are the same.
#[inline(always)]
pub fn sum_map<E: Real>(x: &[E], f: impl Fn(E) -> E) -> E {
    let mut lanes = [E::ZERO; LANES];
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        let values: [E; LANES] = core::array::from_fn(|l| f(chunk[l]));
        for (lane, v) in lanes.iter_mut().zip(values) {
            *lane += v;
        }
    }
    for (lane, &v) in lanes.iter_mut().zip(tail) {
        *lane += f(v);
    }
    sum_lanes(lanes)
}

/// `Σ f(a_j, b_j)` over two equally long slices, in [`LANES`] interleaved partial sums,
/// each block's values formed first as in [`sum_map`].
#[inline(always)]
pub fn sum_map2<E: Real>(a: &[E], b: &[E], f: impl Fn(E, E) -> E) -> E {
    debug_assert_eq!(a.len(), b.len());
    let mut lanes = [E::ZERO; LANES];
    let chunks = a.chunks_exact(LANES).zip(b.chunks_exact(LANES));
    let split = a.len() - a.len() % LANES;
    for (ca, cb) in chunks {
        let values: [E; LANES] = core::array::from_fn(|l| f(ca[l], cb[l]));
        for (lane, v) in lanes.iter_mut().zip(values) {
            *lane += v;
        }
    }
    for ((lane, &va), &vb) in lanes.iter_mut().zip(&a[split..]).zip(&b[split..]) {
        *lane += f(va, vb);
    }
    sum_lanes(lanes)
}

/// The larger of two values (the second when they are unordered, so a NaN `b` is kept).
#[inline(always)]
pub fn larger<E: Real>(a: E, b: E) -> E {
    if a > b { a } else { b }
}

/// The largest element of a non-empty slice, in [`LANES`] interleaved lanes so that it
/// vectorizes.
///
/// # Panics
/// If `x` is empty.
#[inline(always)]
pub fn max_of<E: Real>(x: &[E]) -> E {
    let chunks = x.chunks_exact(LANES);
    let tail = chunks.remainder();
    let mut lanes = lane_maxima([x[0]; LANES], chunks);
    for (lane, &v) in lanes.iter_mut().zip(tail) {
        *lane = larger(*lane, v);
    }
    largest_lane(lanes)
}

/// [`max_of`]'s lanes over whole blocks of [`LANES`]: `lanes[l]` compared with element `l`
/// of each block in turn.
#[inline(always)]
pub(crate) fn lane_maxima<E: Real>(
    mut lanes: [E; LANES],
    blocks: core::slice::ChunksExact<'_, E>,
) -> [E; LANES] {
    for block in blocks {
        for (lane, &v) in lanes.iter_mut().zip(block) {
            *lane = larger(*lane, v);
        }
    }
    lanes
}

/// [`max_of`]'s result from its lanes: [`larger`] folded over them in order.
#[inline(always)]
pub(crate) fn largest_lane<E: Real>(lanes: [E; LANES]) -> E {
    lanes.into_iter().fold(lanes[0], larger)
}

/// `acc[j] += other[j]` for every `j` (over the shorter of the two), at the widest vector
/// width the CPU has ([`vectorized`](super::dispatch::vectorized)). Each element is one
/// addition, so the result has the same bits at every width, and whichever of the two
/// operands is written over (IEEE addition is commutative).
pub fn add_into<E: Real>(acc: &mut [E], other: &[E]) {
    super::dispatch::vectorized(
        #[inline(always)]
        || {
            for (a, &o) in acc.iter_mut().zip(other) {
                *a += o;
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_maxima_cover_every_element_of_odd_lengths() {
        for len in [1, 15, 16, 17, 33, 1000] {
            let x: Vec<f32> = (0..len).map(|v| ((v * 37) % 101) as f32 - 50.0).collect();
            let expected = x.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            assert_eq!(max_of(&x), expected, "len {len}");
        }
    }

    #[test]
    fn lane_sums_cover_every_element_of_odd_lengths() {
        for len in [0, 1, 15, 16, 17, 33, 1000] {
            let a: Vec<f64> = (0..len).map(|v| v as f64).collect();
            let b: Vec<f64> = (0..len).map(|v| 2.0 * v as f64 + 1.0).collect();
            let expected_a: f64 = a.iter().sum();
            let expected_ab: f64 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(sum_map(&a, |v| v), expected_a, "len {len}");
            assert_eq!(sum_map2(&a, &b, |x, y| x * y), expected_ab, "len {len}");
        }
    }
}
