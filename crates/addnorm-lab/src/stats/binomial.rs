//! Exact (Clopper–Pearson) confidence intervals for a success rate: k successes in n
//! independent runs.
//!
//! ```text
//! P(X ≥ k | p) = Σ_{j=k..n} C(n, j) p^j (1 − p)^(n−j)
//! low  = the p with P(X ≥ k | p) = α/2      (0 when k = 0)
//! high = the p with P(X ≤ k | p) = α/2      (1 when k = n)
//! ```
//!
//! The interval covers the true rate with probability at least 1 − α whatever it is, which
//! a bootstrap over seeds cannot do for a rate: 8 successes in 8 runs resample to 8 of 8
//! every time, a `[1.00, 1.00]` interval that claims a certainty 8 runs cannot give. The
//! exact interval for 8 of 8 is about [0.631, 1]. Both tails are found by bisection on the
//! binomial tail, which falls monotonically in p.
//!
//! # Shapes
//! Scalars: `k ≤ n` counts, α in (0, 1).
//!
//! # Example
//! ```
//! use addnorm_lab::stats::binomial::clopper_pearson;
//! let rate = clopper_pearson(8, 8, 0.05);
//! assert!((rate.low - 0.6306).abs() < 1e-4 && rate.high == 1.0 && rate.value == 1.0);
//! ```

use super::sample::Estimate;

/// ln C(n, k).
fn ln_choose(n: usize, k: usize) -> f64 {
    let ln_factorial = |m: usize| (1..=m).map(|i| (i as f64).ln()).sum::<f64>();
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// P(X = j) for X ~ Binomial(n, p), 0 < p < 1.
fn pmf(n: usize, j: usize, p: f64) -> f64 {
    (ln_choose(n, j) + j as f64 * p.ln() + (n - j) as f64 * (1.0 - p).ln()).exp()
}

/// P(X ≥ k) for X ~ Binomial(n, p).
fn upper_tail(n: usize, k: usize, p: f64) -> f64 {
    (k..=n).map(|j| pmf(n, j, p)).sum()
}

/// The p in (0, 1) where the falling function `tail(p)` crosses `target`.
fn solve_falling(tail: impl Fn(f64) -> f64, target: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if tail(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// The rate `successes / runs` with its exact two-sided 1 − `alpha` interval.
///
/// # Panics
/// If `runs` is 0, `successes > runs`, or `alpha` is not in (0, 1).
pub fn clopper_pearson(successes: usize, runs: usize, alpha: f64) -> Estimate {
    assert!(runs > 0, "clopper_pearson: runs must be positive, got 0");
    assert!(
        successes <= runs,
        "clopper_pearson: successes {successes} exceed runs {runs}"
    );
    assert!(
        alpha > 0.0 && alpha < 1.0,
        "clopper_pearson: alpha must be in (0, 1), got {alpha}"
    );
    let (k, n, half) = (successes, runs, alpha / 2.0);
    // P(X ≥ k | p) rises with p: the lower bound is where it reaches α/2.
    let low = if k == 0 {
        0.0
    } else {
        solve_falling(|p| 1.0 - upper_tail(n, k, p), 1.0 - half)
    };
    // P(X ≤ k | p) = 1 − P(X ≥ k + 1 | p) falls with p: the upper bound is where it is α/2.
    let high = if k == n {
        1.0
    } else {
        solve_falling(|p| 1.0 - upper_tail(n, k + 1, p), half)
    };
    Estimate {
        value: k as f64 / n as f64,
        low,
        high,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference values: R's `binom.test(k, n)$conf.int` (the Clopper–Pearson interval).
    #[test]
    fn matches_the_exact_intervals_of_reference_tables() {
        let cases = [
            (8, 8, 0.630_583, 1.0),
            (0, 8, 0.0, 0.369_417),
            (5, 10, 0.187_086, 0.812_914),
            (10, 10, 0.691_503, 1.0),
            (1, 10, 0.002_529, 0.445_016),
            (3, 8, 0.085_233, 0.755_136),
        ];
        for (k, n, low, high) in cases {
            let e = clopper_pearson(k, n, 0.05);
            assert!(
                (e.low - low).abs() < 1e-5 && (e.high - high).abs() < 1e-5,
                "{k}/{n}: [{}, {}], expected [{low}, {high}]",
                e.low,
                e.high
            );
            assert_eq!(e.value, k as f64 / n as f64);
        }
    }

    #[test]
    fn the_interval_is_symmetric_under_swapping_successes_and_failures() {
        for (k, n) in [(2, 7), (4, 9), (0, 3)] {
            let a = clopper_pearson(k, n, 0.05);
            let b = clopper_pearson(n - k, n, 0.05);
            assert!((a.low - (1.0 - b.high)).abs() < 1e-9, "{k}/{n}");
            assert!((a.high - (1.0 - b.low)).abs() < 1e-9, "{k}/{n}");
        }
    }

    #[test]
    #[should_panic(expected = "successes 9 exceed runs 8")]
    fn more_successes_than_runs_is_refused() {
        clopper_pearson(9, 8, 0.05);
    }
}
