//! LR sensitivity as Wortsman et al. 2023 define it (§2.2): how far a configuration's final
//! loss falls short of its own best over a learning-rate grid.
//!
//! ```text
//! v(η, s)   = ℓ₀(s)                   if seed s diverged at LR η
//!             min(ℓ(η, s), ℓ₀(s))     otherwise
//! ℓ(η)      = mean_s v(η, s)           (the loss-vs-LR curve)
//! ℓ*        = min_η ℓ(η)               (this configuration's best LR)
//! S         = mean_η [ ℓ(η) − ℓ* ]      (lower is more robust)
//! ```
//!
//! ℓ* belongs to the configuration: §2.2 defines it for one training algorithm 𝒜,
//! `ℓ* = min_{η∈[a,b]} ℓ(𝒜(η))`, and `S = E_η[min(ℓ(𝒜(η)), ℓ₀) − ℓ*]`. Comparing two
//! configurations compares the shapes of their own curves, not their losses: with one ℓ*
//! shared across them, S_a − S_b would be a difference of mean losses. (An earlier version
//! shared ℓ*; that was not the paper's statistic.) The paper's App. B adds that S is blind
//! to a model that learns nothing at every LR (S = 0), so read it beside the curves.
//!
//! ℓ(η, s) is the final *validation* loss and ℓ₀(s) the validation loss of the initial
//! model, so both sides of the min measure the same thing. A configuration that diverges at
//! every LR scores `mean ℓ₀ − ℓ*`, the worst possible, not 0.
//!
//! # Shapes
//! A [`LossTable`] is `[learning rates][seeds]`; seed indices select resamples for the
//! bootstrap ([`crate::stats::sample::bootstrap`]).

use serde::{Deserialize, Serialize};

/// What one run at (η, s) ended with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunLoss {
    /// ℓ(η, s): its final validation loss (NaN when it stopped on a non-finite value).
    pub final_loss: f64,
    /// ℓ₀(s): the validation loss of its initial model.
    pub initial_loss: f64,
    /// Whether it diverged.
    pub diverged: bool,
}

impl RunLoss {
    /// v(η, s): ℓ₀ if it diverged, else min(final validation loss, ℓ₀).
    pub fn capped(&self) -> f64 {
        if self.diverged || !self.final_loss.is_finite() {
            self.initial_loss
        } else {
            self.final_loss.min(self.initial_loss)
        }
    }
}

/// The capped losses v(η, s) of one configuration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LossTable {
    /// The LR grid η.
    pub learning_rates: Vec<f64>,
    /// The seeds, in column order.
    pub seeds: Vec<u64>,
    /// v(η, s), `[lr][seed]`; NaN where the run is missing.
    pub capped: Vec<Vec<f64>>,
    /// Whether seed s diverged at η, `[lr][seed]`.
    pub diverged: Vec<Vec<bool>>,
}

impl LossTable {
    /// The table over `learning_rates` × `seeds`; `run(η, s)` is the run at (η, s), if any.
    pub fn new(
        learning_rates: &[f64],
        seeds: &[u64],
        run: impl Fn(f64, u64) -> Option<RunLoss>,
    ) -> Self {
        let capped = per_cell(learning_rates, seeds, |lr, s| {
            run(lr, s).map_or(f64::NAN, |r| r.capped())
        });
        let diverged = per_cell(learning_rates, seeds, |lr, s| {
            run(lr, s).is_some_and(|r| r.diverged)
        });
        Self {
            learning_rates: learning_rates.to_vec(),
            seeds: seeds.to_vec(),
            capped,
            diverged,
        }
    }

    /// ℓ(η) for every η, averaged over the seed columns `seeds` (indices, repeats allowed).
    pub fn curve(&self, seeds: &[usize]) -> Vec<f64> {
        self.capped
            .iter()
            .map(|row| seeds.iter().map(|&s| row[s]).sum::<f64>() / seeds.len() as f64)
            .collect()
    }

    /// Every seed column, once.
    pub fn all_seeds(&self) -> Vec<usize> {
        (0..self.seeds.len()).collect()
    }

    /// The largest η at which no seed diverged, if any.
    pub fn largest_stable_lr(&self) -> Option<f64> {
        self.learning_rates
            .iter()
            .zip(&self.diverged)
            .filter(|(_, d)| !d.iter().any(|&x| x))
            .map(|(&lr, _)| lr)
            .fold(None, |best, lr| Some(best.map_or(lr, |b: f64| b.max(lr))))
    }
}

/// `cell(η, s)` for every η (rows) and s (columns).
fn per_cell<T>(learning_rates: &[f64], seeds: &[u64], cell: impl Fn(f64, u64) -> T) -> Vec<Vec<T>> {
    learning_rates
        .iter()
        .map(|&lr| seeds.iter().map(|&s| cell(lr, s)).collect())
        .collect()
}

/// S of `table` on the seed columns `seeds`, against its own best ℓ* (§2.2); NaN when a
/// seed column is missing at some η.
pub fn sensitivity(table: &LossTable, seeds: &[usize]) -> f64 {
    let curve = table.curve(seeds);
    let best = curve
        .iter()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f64::INFINITY, f64::min);
    curve.iter().map(|l| l - best).sum::<f64>() / curve.len() as f64
}

/// The sensitivities S of `tables`, each against its own ℓ*, on the seed columns `seeds`
/// (the same columns for every table, so a bootstrap resample pairs the seeds).
pub fn sensitivities(tables: &[&LossTable], seeds: &[usize]) -> Vec<f64> {
    tables.iter().map(|t| sensitivity(t, seeds)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(final_loss: f64, diverged: bool) -> Option<RunLoss> {
        Some(RunLoss {
            final_loss,
            initial_loss: 2.0,
            diverged,
        })
    }

    #[test]
    fn a_configuration_diverging_everywhere_is_the_least_robust() {
        let lrs = [1e-3, 1e-2];
        let seeds = [0, 1];
        let t_good = LossTable::new(&lrs, &seeds, |lr, s| match (lr == 1e-3, s) {
            (true, 0) => run(0.5, false),
            (true, _) => run(0.7, false),
            (false, 0) => run(1.0, false),
            (false, _) => run(0.0, true),
        });
        let t_bad = LossTable::new(&lrs, &seeds, |_, _| run(f64::NAN, true));
        // ℓ(1e-3) = 0.6, ℓ(1e-2) = (1.0 + ℓ₀ = 2.0)/2 = 1.5: the diverged seed counts as ℓ₀.
        assert_eq!(t_good.curve(&t_good.all_seeds()), vec![0.6, 1.5]);
        let s = sensitivities(&[&t_good, &t_bad], &[0, 1]);
        // Each against its own ℓ*: S_good = (0 + (1.5 − 0.6))/2; t_bad's curve is ℓ₀ at
        // every η, so its own S is 0 (App. B: S cannot see a model that never trains).
        assert!((s[0] - 0.45).abs() < 1e-12 && s[1] == 0.0, "{s:?}");
        assert_eq!(t_good.largest_stable_lr(), Some(1e-3));
        assert_eq!(t_bad.largest_stable_lr(), None);
        // A final loss above ℓ₀ is capped at ℓ₀; a missing run is NaN.
        assert_eq!(run(3.0, false).unwrap().capped(), 2.0);
        assert!(LossTable::new(&lrs, &seeds, |_, _| None).capped[0][0].is_nan());
    }

    #[test]
    fn each_configuration_is_measured_against_its_own_best_lr() {
        // Two configurations with curves of the same shape, one lower by 0.5 everywhere.
        // A shared ℓ* (0.5, the lower curve's best) would give S 0.5 and 1.0, a difference of
        // mean losses; per configuration (§2.2) both are 0.5.
        let lrs = [1e-3, 1e-2, 1e-1];
        let low = LossTable::new(&lrs, &[0], |lr, _| {
            let l = if lr == 1e-2 { 0.5 } else { 1.25 };
            Some(RunLoss {
                final_loss: l,
                initial_loss: 3.0,
                diverged: false,
            })
        });
        let high = LossTable::new(&lrs, &[0], |lr, _| {
            let l = if lr == 1e-2 { 1.0 } else { 1.75 };
            Some(RunLoss {
                final_loss: l,
                initial_loss: 3.0,
                diverged: false,
            })
        });
        assert_eq!(sensitivities(&[&low, &high], &[0]), vec![0.5, 0.5]);
        assert_eq!(sensitivity(&high, &[0]), 0.5);
        // A seed column resampled twice counts twice.
        let two = LossTable::new(&lrs, &[0, 1], |lr, s| {
            let l = if (lr == 1e-2) == (s == 0) { 0.0 } else { 1.5 };
            Some(RunLoss {
                final_loss: l,
                initial_loss: 3.0,
                diverged: false,
            })
        });
        // Columns [0, 0]: curve 1.5, 0, 1.5 → S = 1; all seeds: 0.75 flat → S = 0.
        assert_eq!(sensitivity(&two, &[0, 0]), 1.0);
        assert_eq!(sensitivity(&two, &[0, 1]), 0.0);
    }
}
