//! Statistics of the study: ranks, Spearman's ρ, and seed-bootstrap percentile intervals.
//!
//! ```text
//! rank(v)_i        average rank of vᵢ in v (1-based; ties share their mean rank)
//! Spearman ρ(x,y)  Pearson correlation of rank(x) and rank(y)
//! bootstrap        B resamples of the n seeds, drawn with replacement; the statistic of
//!                  each; the 95% interval is the 2.5% and 97.5% percentiles of the B values
//! ```
//!
//! The resamples come from [`SplitMix64`] with a fixed seed, so an interval is the same on
//! every machine. One seed has no interval: both ends are NaN (`null` in JSON), and every
//! rule reads that as inconclusive, so no verdict rests on a single seed's point.
//!
//! # Shapes
//! A bootstrap takes `n` per-seed observations (any type) and a statistic of a slice of
//! them; an [`Estimate`] is a point value with its interval.

use serde::{Deserialize, Serialize};

use super::rng::SplitMix64;

/// Resamples per bootstrap interval.
pub const RESAMPLES: usize = 2000;

/// A statistic with its seed-bootstrap 95% percentile interval. A NaN (written `null` in
/// JSON, which has no NaN) reads back as NaN.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The statistic on all the seeds.
    #[serde(deserialize_with = "nan_if_null")]
    pub value: f64,
    /// The 2.5% percentile of the bootstrap distribution (NaN: no interval).
    #[serde(deserialize_with = "nan_if_null")]
    pub low: f64,
    /// The 97.5% percentile of the bootstrap distribution (NaN: no interval).
    #[serde(deserialize_with = "nan_if_null")]
    pub high: f64,
}

/// A number, or NaN for `null` (serde_json writes a NaN as `null`).
fn nan_if_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl Estimate {
    /// `value [low, high]` with `digits` decimals, or `value [no interval]` when an end is
    /// NaN (one seed).
    pub fn show(&self, digits: usize) -> String {
        if self.low.is_nan() || self.high.is_nan() {
            return format!("{:.digits$} [no interval]", self.value);
        }
        format!(
            "{:.digits$} [{:.digits$}, {:.digits$}]",
            self.value, self.low, self.high
        )
    }
}

/// The average ranks of `v` (1-based, ties share their mean rank; NaN ranks last).
pub fn ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let mean_rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = mean_rank;
        }
        i = j + 1;
    }
    ranks
}

/// Pearson's correlation of `x` and `y` (NaN if either is constant).
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let n = x.len().min(y.len()) as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let cov: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let vx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let vy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    cov / (vx * vy).sqrt()
}

/// Spearman's rank correlation of `x` and `y`.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&ranks(x), &ranks(y))
}

/// The `q` quantile (0..=1) of `v`, by linear interpolation between order statistics.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    let mut sorted: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted.sort_by(f64::total_cmp);
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// `statistic` on `samples` (one per seed), with the 95% percentile interval of
/// [`RESAMPLES`] seed resamples drawn with replacement from a generator seeded by `seed`.
/// Fewer than two samples have no interval: both ends are NaN.
pub fn bootstrap<T: Clone>(samples: &[T], seed: u64, statistic: impl Fn(&[T]) -> f64) -> Estimate {
    let value = statistic(samples);
    if samples.len() < 2 {
        return Estimate {
            value,
            low: f64::NAN,
            high: f64::NAN,
        };
    }
    let mut rng = SplitMix64::new(seed);
    let n = samples.len();
    let values: Vec<f64> = (0..RESAMPLES)
        .map(|_| {
            let resample: Vec<T> = (0..n)
                .map(|_| samples[rng.below(n as u64) as usize].clone())
                .collect();
            statistic(&resample)
        })
        .collect();
    Estimate {
        value,
        low: quantile(&values, 0.025),
        high: quantile(&values, 0.975),
    }
}

/// The mean of `v` (NaN when empty).
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_ties() {
        assert_eq!(ranks(&[3.0, 1.0, 3.0, 2.0]), vec![3.5, 1.0, 3.5, 2.0]);
    }

    #[test]
    fn spearman_of_monotone_and_known_data() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        // Any increasing transform keeps ρ = 1; reversing gives −1.
        assert!((spearman(&x, &[1.0, 10.0, 11.0, 50.0, 1e6]) - 1.0).abs() < 1e-12);
        assert!((spearman(&x, &[5.0, 4.0, 3.0, 2.0, 1.0]) + 1.0).abs() < 1e-12);
        // scipy.stats.spearmanr([1,2,3,4,5], [2,1,4,3,5]).statistic = 0.8
        assert!((spearman(&x, &[2.0, 1.0, 4.0, 3.0, 5.0]) - 0.8).abs() < 1e-12);
    }

    #[test]
    fn quantiles_interpolate() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!((quantile(&v, 0.5) - 2.5).abs() < 1e-12);
    }

    #[test]
    fn bootstrap_interval_of_the_mean_covers_it_and_is_reproducible() {
        let mut rng = SplitMix64::new(5);
        let samples: Vec<f64> = (0..40).map(|_| rng.below(1000) as f64 / 1000.0).collect();
        let a = bootstrap(&samples, 1, mean);
        assert_eq!(a, bootstrap(&samples, 1, mean));
        assert!(a.low < a.value && a.value < a.high);
        // The standard error of a uniform mean over 40 draws is about 0.29/√40 = 0.046:
        // a 95% interval is about 4 of them wide.
        let width = a.high - a.low;
        assert!((0.12..0.25).contains(&width), "{width}");
        // A constant sample has a zero-width interval.
        let c = bootstrap(&[2.0; 10], 1, mean);
        assert_eq!((c.low, c.high), (2.0, 2.0));
    }

    #[test]
    fn one_seed_has_no_interval() {
        let one = bootstrap(&[0.4], 1, mean);
        assert_eq!(one.value, 0.4);
        assert!(one.low.is_nan() && one.high.is_nan());
        assert_eq!(one.show(2), "0.40 [no interval]");
        // JSON has no NaN: written as null, read back as NaN.
        let json = serde_json::to_string(&one).unwrap();
        assert_eq!(json, r#"{"value":0.4,"low":null,"high":null}"#);
        let back: Estimate = serde_json::from_str(&json).unwrap();
        assert!(back.low.is_nan() && back.high.is_nan() && back.value == 0.4);
    }
}
